/* SPDX-License-Identifier: MIT */
/*
 * SM-active time from kernel intervals (docs/stats.md, SM active): the share of a window during which at
 * least one kernel of an entity (a process, or a device) ran. Kernels overlap (streams run
 * concurrently), so durations are not summed: each entity's intervals are merged, clamped
 * to fixed windows of event time, and the merged length over the window's length, capped
 * at 100 %, is the window's SM-active. Windows partition time, so the busy time of the run
 * is the sum of its windows' busy times: the union of every kernel interval, once.
 *
 * Kernels arrive out of order (CUPTI delivers buffers, shards interleave), so a window
 * stays open until the watermark (the latest kernel end seen) is lateness_ns past its end;
 * a kernel piece for a window closed by then is counted as late, not added (adding it
 * unmerged could count time twice). Windows are made only when a kernel touches them.
 *
 * Bounded memory: at most SM_OPEN_MAX open windows (a kernel that needs one more closes
 * the oldest first), at most SM_INTERVALS_MAX disjoint intervals per entity and window (past
 * that, the earliest half is folded into a sum: exact while kernels come in time order; a
 * piece of a kernel that comes after later ones were folded is counted, up to the folded
 * span's length, which over-counts busy time by at most filled_ns, reported), at most SM_ENTITIES_MAX entities (the kernels of others are counted in
 * untracked), and the last SM_WINDOWS_KEPT closed windows kept for output.
 *
 * Not thread-safe: one owner. Calling order: sm_active__new, then sm_active__add and
 * sm_active__close in any order, then sm_active__free.
 */
#ifndef XPUSUP_ACTORS_SINK_SM_ACTIVE_H
#define XPUSUP_ACTORS_SINK_SM_ACTIVE_H

#include <stdbool.h>

#include <linux/types.h>

#define SM_OPEN_MAX 64
#define SM_INTERVALS_MAX 512
#define SM_ENTITIES_MAX 4096
#define SM_WINDOWS_KEPT 1024
/* a kernel longer than this many windows is bad data, not work: counted in skipped */
#define SM_SPAN_WINDOWS_MAX 65536

/* Entity keys: a device or a process, in one 64-bit key. */
#define SM_DEVICE(dev) ((__u64)(dev))
#define SM_PROCESS(pid) ((1ull << 32) | (__u64)(pid))
#define SM_IS_PROCESS(key) (((key) >> 32) == 1)
#define SM_ID(key) ((__u32)(key))

/* Sorted, disjoint, non-touching [start, end) intervals. */
struct busy {
	__u64 (*iv)[2]; /* the intervals from floor on */
	__u32 n, cap;
	/* Past SM_INTERVALS_MAX the earliest half of the intervals is folded: its merged length
	 * goes to settled_ns, and floor is where it ends. Kernels come nearly in time order, so
	 * a later one rarely starts before floor; the part of one that does cannot be merged
	 * with what was folded, and is counted busy and in filled_ns (over-counted by at most
	 * that much). */
	__u64 settled_ns; /* at most floor - first: the folded span */
	__u64 floor; /* 0: nothing folded */
	__u64 first; /* the earliest start added: what the folded span starts at */
	__u64 filled_ns; /* time counted busy that may not have been */
};

/* busy__add - merge [start, end) into b (an empty interval is ignored). 0 or -ENOMEM. */
int busy__add(struct busy *b, __u64 start, __u64 end);
/* busy__ns - the merged length. */
__u64 busy__ns(const struct busy *b);
void busy__free(struct busy *b);

struct sm_entity_busy {
	__u64 key; /* SM_DEVICE() or SM_PROCESS() */
	__u64 busy_ns;
	__u64 filled_ns;
};

/* A closed window: the busy time of every entity that ran a kernel in it. */
struct sm_window {
	__u64 ordinal; /* 0 for the first window closed, then 1, 2, ... */
	__u64 start_ns; /* a multiple of window_ns */
	__u32 n;
	struct sm_entity_busy *e; /* sorted by key */
};

/* An entity over the run. */
struct sm_total {
	__u64 key;
	__u64 busy_ns; /* over its closed windows */
	__u64 filled_ns;
	__u64 windows; /* closed windows where it ran */
	__u64 peak_busy_ns; /* its busiest window's busy time, and that window's start */
	__u64 peak_start_ns;
	__u64 late, late_ns; /* kernels (pieces) that came after their window closed */
};

struct sm_active;

/*
 * sm_active__new - windows of window_ns (> 0) that close lateness_ns after their end in
 * event time. NULL with errno on failure.
 */
struct sm_active *sm_active__new(__u64 window_ns, __u64 lateness_ns);
void sm_active__free(struct sm_active *a);

/*
 * sm_active__add - kernel [start, end) of entity key. Returns 0; -ENOSPC when the entity
 * table is full (counted in untracked); -ENOMEM (counted in nomem); -EINVAL for an empty or
 * absurdly long interval (counted in skipped). A piece for a closed window is counted in the
 * entity's late; that is not an error.
 */
int sm_active__add(struct sm_active *a, __u64 key, __u64 start, __u64 end);

/* sm_active__close - close the windows the watermark has passed by lateness, or every
 * open window when all (at stop). */
void sm_active__close(struct sm_active *a, bool all);

/* Reading the results. Totals are sorted by key; the kept windows are oldest first, and
 * sm_active__window(a, i) for i < sm_active__windows_kept(a) is valid until the next add or
 * close. */
__u32 sm_active__n_totals(const struct sm_active *a);
const struct sm_total *sm_active__total(const struct sm_active *a, __u32 i);
__u32 sm_active__windows_kept(const struct sm_active *a);
/* sm_active__open_busy_ns - total i's busy time in the windows still open: what closing them
 * would add to its busy_ns (the metrics format shows the run so far, before stop closes them). */
__u64 sm_active__open_busy_ns(const struct sm_active *a, __u32 i);
const struct sm_window *sm_active__window(const struct sm_active *a, __u32 i);

struct sm_counts {
	__u64 windows_closed; /* also the ordinal of the next window to close */
	__u64 open; /* windows open now */
	__u64 forced; /* closed early because SM_OPEN_MAX were open */
	__u64 late, late_ns; /* all entities */
	__u64 untracked, skipped, nomem;
	__u64 filled_ns;
	__u64 watermark_ns;
	__u64 closed_until; /* every window that starts before this is closed */
};

void sm_active__counts(const struct sm_active *a, struct sm_counts *c);

#endif /* XPUSUP_ACTORS_SINK_SM_ACTIVE_H */
