/* SPDX-License-Identifier: MIT */
/*
 * What the engines of one correlator shard's join share (private to actors/correlator/):
 *
 *   join.c      the exact (pid, correlation id) join and the orchestration: a record comes
 *               in, becomes an event, goes through the engines below, and goes out
 *   ranges.c    range nesting (per-thread stacks of open ranges) and per-thread history
 *   recent.c    per process, the recent CUDA API calls and CPU samples (sampled_in links,
 *               the timestamp strategy)
 *   streams.c   per-(pid, device, stream) state and its idle queue (same_stream_prev)
 *   counters.c  per-process counter readings and the deltas over an event's window
 *   graph.c     CUDA graph node creation stacks
 *   exits.c     the gone list: processes waiting out their exit grace; when it has passed,
 *               every engine's drop hook forgets the process
 *
 * Each engine owns its state struct (embedded in struct join, set up by its __init, freed by
 * its __fini, which accepts a zeroed or half-built one) and reads the record being processed
 * through the shard's struct join_env. Engines never call each other: join.c calls them in
 * the order a record needs.
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_JOIN_ENGINES_H
#define XPUSUP_ACTORS_CORRELATOR_JOIN_ENGINES_H

#include <stddef.h>
#include <stdint.h>

#include "actors/correlator/join.h"
#include "common/mix.h"
#include "common/oatab.h"

#define NIL 0xffffffffu

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* The shard's view of the record being processed, and the counters every engine adds to. */
struct join_env {
	struct join_stats st;
	join_name_fn name; /* NULL: names are not resolved */
	void *ctx; /* of the emit, name and gone callbacks */
	__u64 now_ns; /* shard time of the record being processed */
	unsigned int enrich; /* CONF_ENRICH_* of the record being emitted */
};

static inline __u32 pow2_at_least(__u64 n)
{
	__u64 p = 16;

	while (p < n)
		p <<= 1;
	return (__u32)p;
}

/* A (pid, 64-bit id) pair's hash: keys and graph nodes. Correlation and node ids are small
 * per process, so the pid takes the high half; xpu_mix64 spreads the rest. */
static inline __u64 pid_id_hash(__u32 pid, __u64 id)
{
	return xpu_mix64(id ^ (__u64)pid << 32);
}

static inline void add_link(struct xpu_cevent *ev, __u32 type, __u64 target)
{
	if (target && ev->n_links < XPU_WIRE_LINKS_MAX)
		ev->links[ev->n_links++] = (struct xpu_link){ .type = type, .target = target };
}

/* ---- pid sets: a bit per pid & 0xffff, "may have state here" (a set bit may be stale), so
 * that an exit scans a table only for a process that may be in it ---- */

#define PIDSET_WORDS (65536 / 64)

static inline void pidset__add(__u64 *set, __u32 pid)
{
	set[(pid & 0xffff) / 64] |= 1ull << (pid % 64);
}

static inline bool pidset__may_have(const __u64 *set, __u32 pid)
{
	return set[(pid & 0xffff) / 64] & 1ull << (pid % 64);
}

/* ---- index tables: open-addressed slots holding an array index + 1 (0: empty), over an
 * engine's array of members; the engine's oatab ops take the struct idx_slots and give the
 * home slot of a member through container_of ---- */

struct idx_slots {
	__u32 *slot;
	__u32 mask;
};

static inline bool idx_slots__empty(const void *tab, uint32_t slot)
{
	return !((const struct idx_slots *)tab)->slot[slot];
}

static inline void idx_slots__move(void *tab, uint32_t to, uint32_t from)
{
	struct idx_slots *t = tab;

	t->slot[to] = t->slot[from];
}

static inline void idx_slots__clear(void *tab, uint32_t slot)
{
	((struct idx_slots *)tab)->slot[slot] = 0;
}

/* The member index in `slot`, NIL for an empty slot. */
static inline __u32 idx_slots__at(const struct idx_slots *t, __u32 slot)
{
	return t->slot[slot] - 1;
}

/* ---- deadline queues: FIFOs of (deadline, member, generation). Members are queued in time
 * order, so deadlines come out sorted and expiry pops only what is due. An item whose
 * generation no longer matches its member (matched away, evicted, reused) is stale: skipped
 * when it reaches the head ---- */

struct qitem {
	__u64 deadline;
	__u32 entry;
	__u32 gen;
};

typedef bool (*qitem_live_fn)(const void *owner, const struct qitem *it);

struct fifo {
	struct qitem *items;
	__u32 cap, head, len;
	qitem_live_fn live; /* whether an item is not stale, given owner */
	const void *owner;
};

/*
 * Each live member has at most one live item per queue, and capacity is twice the members,
 * so a full queue holds at least as many stale items as members: dropping them, in order,
 * frees at least half. Amortised O(1) a push.
 */
static inline void fifo_compact(struct fifo *q)
{
	__u32 i, n = 0;

	for (i = 0; i < q->len; i++) {
		struct qitem it = q->items[(q->head + i) % q->cap];

		if (q->live(q->owner, &it))
			q->items[(q->head + n++) % q->cap] = it;
	}
	q->len = n;
}

static inline void fifo_push(struct fifo *q, __u64 deadline, __u32 entry, __u32 gen)
{
	if (q->len == q->cap)
		fifo_compact(q);
	q->items[(q->head + q->len) % q->cap] = (struct qitem){ deadline, entry, gen };
	q->len++;
}

static inline struct qitem *fifo_peek(struct fifo *q)
{
	return q->len ? &q->items[q->head] : NULL;
}

static inline void fifo_pop(struct fifo *q)
{
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

/* ---- ranges.c: range nesting and per-thread history ---- */

#define NEST_MAX 32 /* open ranges per thread */

struct nest;
struct hist;

struct ranges {
	struct join_env *env;
	struct nest *threads; /* 2 * THREADS_MAX slots */
	__u64 (*stacks)[NEST_MAX]; /* the open ranges of threads[i] */
	__u64 (*stack_ts)[NEST_MAX]; /* when each of stacks[] began */
	struct hist **hist; /* by thread slot: its closed ranges, NULL: none yet */
	__u64 *horizon; /* by thread slot: the newest pop ts no history holds any more */
	__u64 *seen; /* by thread slot: the newest ts of its range records, ~0 once it ended */
	__u32 n_threads, n_hist;
	__u64 *pids; /* pid set: may have threads */
};

int ranges__init(struct ranges *r, struct join_env *env);
void ranges__fini(struct ranges *r);
/* A range record, API call or launch: nested in its thread's open ranges. */
void ranges__annotate(struct ranges *r, struct xpu_cevent *ev);
/* A RANGE record: push/pop move its thread's stack. Returns true for a pop that closed a
 * range, with *push_ts when it opened (the counters' window). */
bool ranges__range(struct ranges *r, struct xpu_cevent *ev, __u64 *push_ts);
/* A CPU sample: nested by its own timestamp, in open or recently closed ranges. */
void ranges__place(struct ranges *r, struct xpu_cevent *ev);
/* Thread tid of pid ended at ts: its open ranges close there. */
void ranges__thread_exit(struct ranges *r, __u32 pid, __u32 tid, __u64 ts);
/* Whether every range record of the thread up to ts has come (one at or after ts has: a
 * thread's range records come in order), so that a CPU sample taken at ts can be placed. */
bool ranges__known(const struct ranges *r, __u32 pid, __u32 tid, __u64 ts);
/* Whether pid may have threads with ranges (a set bit may be stale). */
bool ranges__may_have(const struct ranges *r, __u32 pid);
void ranges__drop_pid(void *ranges, __u32 pid);

/* ---- recent.c: recent API calls and CPU samples per process ---- */

#define SAMPLE_FRAMES 48 /* user frames a remembered sample keeps */

struct recent;

struct recent_sample {
	__u64 ts, id;
	__u32 tid, n_user;
	__u64 ips[SAMPLE_FRAMES];
};

struct recent_calls {
	struct join_env *env;
	struct recent *procs; /* 2 * RECENT_PIDS slots */
	__u32 n;
	__u64 window_ns; /* the timestamp strategy's, 0: off */
};

int recent__init(struct recent_calls *rc, struct join_env *env, __u64 window_ns);
void recent__fini(struct recent_calls *rc);
void recent__add_call(struct recent_calls *rc, const struct xpu_cevent *api);
/* The event id of the latest call of pid that began no later than ts, within the window. */
__u64 recent__find_call(struct recent_calls *rc, __u32 pid, __u64 ts);
/* The event id of the call of tid in pid around ts, 0: none (of those kept). */
__u64 recent__call_at(struct recent_calls *rc, __u32 pid, __u32 tid, __u64 ts);
/* A CPU sample inside a CUDA API call of its thread: sampled_in link, parent the call; call:
 * the one it was found in before (when it was held), taken when none is found now. */
void recent__annotate_sample(struct recent_calls *rc, struct xpu_cevent *ev, __u64 call);
void recent__remember_sample(struct recent_calls *rc, const struct xpu_cevent *ev);
/* The latest remembered sample of pid (of tid, when not 0) no later than ts, within the
 * window (valid until the next record), NULL: none. */
const struct recent_sample *recent__find_sample(struct recent_calls *rc, __u32 pid, __u32 tid,
						__u64 ts);

/* ---- streams.c: per-(pid, device, stream) state ---- */

struct stream;

struct streams {
	struct join_env *env;
	struct stream *members; /* max */
	struct idx_slots idx;
	__u32 max, free, hw;
	__u64 idle_ns;
	struct fifo idle_q;
	__u64 *pids; /* pid set: may have streams */
};

int streams__init(struct streams *s, struct join_env *env, __u32 max, __u64 idle_ns);
void streams__fini(struct streams *s);
/* A GPU activity event: same_stream_prev link to the one before it on its stream. */
void streams__link(struct streams *s, struct xpu_cevent *ev);
/* Drop the streams idle since before now_ns - idle_ns (~0: every one). */
void streams__expire(struct streams *s, __u64 now_ns);
void streams__drop_pid(void *streams, __u32 pid);

/* ---- counters.c: counter readings ---- */

struct ctr_proc;

struct counters {
	struct join_env *env;
	struct ctr_proc *procs; /* CTR_PIDS */
	struct idx_slots idx; /* 2 * CTR_PIDS */
	__u32 free, hw;
};

int counters__init(struct counters *c, struct join_env *env);
void counters__fini(struct counters *c);
/* Keep a process-scope PMU_COUNTER reading. */
void counters__reading(struct counters *cs, const struct xpu_pmu_counter *c);
/* ev gets its process's counter deltas over [start, end] (counters stage). */
void counters__attach(struct counters *c, struct xpu_cevent *ev, __u64 start, __u64 end);
/* A start/end range of a process with counters: start remembered, end gets the deltas. */
void counters__range_start(struct counters *c, const struct xpu_cevent *ev);
void counters__range_end(struct counters *c, struct xpu_cevent *ev);
void counters__drop_pid(void *counters, __u32 pid);

/* ---- graph.c: CUDA graph node creation stacks ---- */

struct gnode;

struct graph {
	struct join_env *env;
	struct gnode *nodes; /* max, a ring: head is the next to fill */
	struct idx_slots idx;
	__u32 max, head;
	__u64 *pids; /* pid set: may have node stacks */
};

int graph__init(struct graph *g, struct join_env *env, __u32 max);
void graph__fini(struct graph *g);
/* Keep the creation stack of node `node` of pid (a LAUNCH with XPU_LAUNCH_GRAPH_NODE). */
void graph__put(struct graph *g, __u32 pid, __u64 node, const __u64 *ips, __u32 n);
/* A graph kernel joined to its graph launch: its node's creation stack, or approximate. */
void graph__attribute(struct graph *g, struct xpu_cevent *ev);
void graph__drop_pid(void *graph, __u32 pid);

/* ---- exits.c: the gone list ---- */

/* What an engine forgets of a process once its exit grace has passed. */
struct exit_hook {
	void (*drop_pid)(void *engine, __u32 pid);
	void *engine;
};

#define EXIT_HOOKS_MAX 8

struct gone;

struct exits {
	struct gone *gone; /* GONE_MAX, a ring in exit order */
	__u32 head, len;
	struct exit_hook hooks[EXIT_HOOKS_MAX];
	__u32 n_hooks;
};

int exits__init(struct exits *x);
void exits__fini(struct exits *x);
/* Call drop_pid(engine, pid) when a process's exit grace has passed, after the hooks added
 * before it. 0, or -ENOSPC past EXIT_HOOKS_MAX. */
int exits__add_hook(struct exits *x, void (*drop_pid)(void *engine, __u32 pid), void *engine);
/* pid exited: its state goes at deadline. */
void exits__push(struct exits *x, __u32 pid, __u64 deadline);
/* Drop the processes whose deadline is at most now_ns. */
void exits__expire(struct exits *x, __u64 now_ns);

#endif /* XPUSUP_ACTORS_CORRELATOR_JOIN_ENGINES_H */
