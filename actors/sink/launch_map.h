/* SPDX-License-Identifier: MIT */
/*
 * The recent launches of the sinks: the last max CUDA_API and LAUNCH events a format puts, by
 * (producer, id), which a GPU activity's launched_by links name (ids are unique per producer).
 * The stats format takes the queue delay from them (calls, and the LAUNCH markers of calls it
 * did not see), the timeline format the start of its flow arrows (calls).
 *
 * Bounded: the entries are a ring of max in arrival order, the oldest forgotten when a new one
 * needs its place (counted in evicted). The index is open addressing over 8-byte slots (an
 * entry's index + 1 and its key's hash), at most a quarter full, deletion by backward shift
 * (common/oatab.h): lookups stay short however long the session runs, and a probe or a shift
 * reads the entries only where the hash matches, so the part it touches stays in the cache.
 * A quarter, not a half: with the slots a put reads prefetched, most of its samples still fell
 * on the probe's and the shift's "is the next slot taken" tests, which at half load go either
 * way (mispredicted branches, by all signs; no PMU here to count them); at a quarter they go
 * the same way three times in four (fmt_bench, lossless capture: 5 % less of the timeline
 * format's time, for 16 more bytes of slots a launch).
 */
#ifndef XPUSUP_ACTORS_SINK_LAUNCH_MAP_H
#define XPUSUP_ACTORS_SINK_LAUNCH_MAP_H

#include <stdbool.h>

#include <linux/types.h>

#include "common/mix.h"
#include "common/wire.h"

/* One launch-side event: what either format needs of it. */
struct recent_launch {
	__u64 id, ts;
	__u32 producer;
	__u32 pid;
	__u32 tid; /* timeline: the track its slice went to (its thread's or an overlap lane) */
	__u32 gen; /* timeline: the file its event is in, 0 none */
	__u32 kind; /* XPU_REC_CUDA_API or XPU_REC_LAUNCH */
	__u32 hash; /* launch_map's own: its key's hash, where eviction's probe for its slot starts */
	__u64 pos; /* timeline, mode = ring: position + 1 of its event's record, 0 none */
};

struct launch_slot {
	__u32 idx1; /* index + 1 in launch_map.e, 0: empty */
	__u32 hash; /* of the entry's key: its home is hash & mask */
};

struct launch_map {
	struct launch_slot *slots; /* mask + 1 */
	struct recent_launch *e; /* max, the oldest at head */
	__u32 mask, max, head, n;
	__u64 evicted; /* launches forgotten to make room */
};

/* The hash of (producer, id): its low bits are its home slot. */
static inline __u32 launch_map__hash(__u32 producer, __u64 id)
{
	return (__u32)xpu_mix64(id ^ ((__u64)producer << 48));
}

/* Start loading p's cache line. GCC 12 drops __builtin_prefetch in this code (at -O2 always,
 * at -O3 in timeline.c: checked with objdump), so on x86-64 the instruction is written out. */
static inline void launch_map__prefetch_line(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p);
#endif
}

/*
 * launch_map__prefetch - start loading the slot where (producer, id) would be found, for a
 * put or a find a few events later. A full map of the default size is megabytes, so the slot
 * is a cache miss: its latency was most of a put (docs/performance.md).
 */
static inline void launch_map__prefetch(const struct launch_map *m, __u32 producer, __u64 id)
{
	launch_map__prefetch_line(&m->slots[launch_map__hash(producer, id) & m->mask]);
}

/* How many events ahead a format's loop calls launch_map__prefetch_event: enough for the
 * line to arrive (a few hundred ns of work an event), not so many that it is pushed out. */
#define LAUNCH_MAP_PREFETCH_AHEAD 6

/* The slot e will look at when its turn comes: a call's own (its put; with launches, a
 * LAUNCH's too, for a map that keeps them), a GPU activity's launching call's (its find). */
static inline void launch_map__prefetch_event(const struct launch_map *m, __u32 producer,
					      const struct xpu_cevent *e, bool launches)
{
	if (e->kind == XPU_REC_CUDA_API || (launches && e->kind == XPU_REC_LAUNCH))
		launch_map__prefetch(m, producer, e->id);
	else if (e->n_links && e->links[0].type == XPU_LINK_LAUNCHED_BY)
		launch_map__prefetch(m, producer, e->links[0].target);
}

/* Room for max launches (1 or more), in huge pages where the kernel gives them
 * (common/big_alloc.h). 0 or -ENOMEM (then launch_map__free it). */
int launch_map__init(struct launch_map *m, __u32 max);
void launch_map__free(struct launch_map *m);

/*
 * launch_map__put - the entry of (producer, id) for the caller to fill: the one already
 * there (a batch delivered twice: the same event again), or a new one, zeroed but for its
 * key, after the oldest was forgotten if the map was full. Never NULL.
 */
struct recent_launch *launch_map__put(struct launch_map *m, __u32 producer, __u64 id);

/* The entry of (producer, id), or NULL. Valid until the next put. */
const struct recent_launch *launch_map__find(const struct launch_map *m, __u32 producer, __u64 id);

#endif /* XPUSUP_ACTORS_SINK_LAUNCH_MAP_H */
