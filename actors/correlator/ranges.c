// SPDX-License-Identifier: MIT
/*
 * Range nesting (docs/correlator.md, Nesting) and per-thread range history. Tables, all allocated
 * in ranges__init:
 *
 *   threads[]   per thread (pid, tid) with ranges, open-addressed (linear probing, deletion
 *               through common/oatab.h), 2 * THREADS_MAX slots: its depth. Probed on every
 *               CPU-side record, so kept small (16 bytes) to stay in cache; the stacks live in
 *               parallel arrays by slot, touched only inside ranges
 *   stacks[]    by thread slot, the event ids of its open ranges (at most NEST_MAX deep): what
 *               parent_id, root_id and inside_range links come from; stack_ts[] beside it
 *               when each began, for the counters over a range and for placing a CPU sample
 *               by its timestamp
 *   hist[]      by thread slot, for a thread that has closed ranges, the last HIST_N of them
 *               (allocated at its first pop, at most HIST_THREADS at once); horizon[] the
 *               newest end that no history holds any more; seen[] the newest time its range
 *               records have reached, up to which a CPU sample of it can be placed (the join
 *               holds the others a while: join.c, range_wait_ns)
 *   pids        pid set: processes that may have threads, so an exit scans only for them
 *
 * A thread's PROC_EXIT closes its open ranges; its slot goes when its process's exit grace
 * has passed (ranges__drop_pid); when the table is full new threads get no nesting.
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define THREADS_MAX 16384
#define THREAD_MASK (2 * THREADS_MAX - 1)

/*
 * The last ranges that closed on a thread, for CPU samples that arrive after the ranges
 * around them closed: CPU samples come from the eBPF CPU source tens of ms after they were
 * taken, while a program's range records come within its 10 ms batches. Kept in pop order
 * (a ring), so a search from the newest stops at the first range that ended before the
 * event. HIST_N = 128 covers about 64 ms of back-to-back 0.5 ms ranges. 4 KiB a thread, at
 * most HIST_THREADS threads at once (16 MiB); a thread that finds them all taken keeps no
 * history, and its samples older than its last pop are counted as too old.
 */
#define HIST_N 128
#define HIST_THREADS 4096

struct closed {
	__u64 id; /* the push's event id */
	__u64 root; /* the outermost range around it (itself for an outermost one) */
	__u64 push_ts, pop_ts;
};

struct hist {
	__u32 n; /* held, up to HIST_N */
	__u32 next; /* where the next one goes */
	struct closed c[HIST_N];
};

struct nest {
	__u32 pid, tid; /* pid 0: empty slot */
	__u32 depth;
	__u32 reserved;
};

static __u32 thread_home(__u32 pid, __u32 tid)
{
	return (__u32)xpu_mix64((__u64)pid << 32 | tid) & THREAD_MASK;
}

static struct nest *thread_get(struct ranges *r, __u32 pid, __u32 tid, bool create)
{
	__u32 i = thread_home(pid, tid);

	for (;; i = (i + 1) & THREAD_MASK) {
		struct nest *t = &r->threads[i];

		if (t->pid == pid && t->tid == tid)
			return t;
		if (!t->pid) {
			if (!create || r->n_threads >= THREADS_MAX)
				return NULL;
			r->n_threads++;
			*t = (struct nest){ .pid = pid, .tid = tid };
			pidset__add(r->pids, pid);
			return t;
		}
	}
}

/* The thread table's slots for common/oatab.h: a member moves with its parallel arrays. */
static bool thread_empty(const void *tab, uint32_t slot)
{
	return !((const struct ranges *)tab)->threads[slot].pid;
}

static uint32_t thread_slot_home(const void *tab, uint32_t slot)
{
	const struct nest *t = &((const struct ranges *)tab)->threads[slot];

	return thread_home(t->pid, t->tid);
}

static void thread_move(void *tab, uint32_t to, uint32_t from)
{
	struct ranges *r = tab;

	r->threads[to] = r->threads[from];
	memcpy(r->stacks[to], r->stacks[from], r->threads[from].depth * sizeof(r->stacks[0][0]));
	memcpy(r->stack_ts[to], r->stack_ts[from],
	       r->threads[from].depth * sizeof(r->stack_ts[0][0]));
	r->hist[to] = r->hist[from];
	r->horizon[to] = r->horizon[from];
	r->seen[to] = r->seen[from];
}

static void thread_clear(void *tab, uint32_t slot)
{
	struct ranges *r = tab;

	r->threads[slot].pid = 0;
	r->hist[slot] = NULL;
	r->horizon[slot] = 0;
	r->seen[slot] = 0;
}

static const struct oatab_ops thread_ops = {
	.empty = thread_empty,
	.home = thread_slot_home,
	.move = thread_move,
	.clear = thread_clear,
};

/* A thread of the exited process: its history goes, then oatab__delete_if empties its slot. */
static bool thread_of_pid(void *tab, uint32_t slot, void *ctx)
{
	struct ranges *r = tab;

	if (r->threads[slot].pid != *(const __u32 *)ctx)
		return false;
	if (r->hist[slot]) {
		free(r->hist[slot]);
		r->n_hist--;
	}
	r->n_threads--;
	return true;
}

/* Drop every thread of pid once its exit grace has passed: its late samples have come. A
 * scan of the table, only for a process that may have had ranges. */
void ranges__drop_pid(void *ranges, __u32 pid)
{
	struct ranges *r = ranges;

	if (!pidset__may_have(r->pids, pid) || !r->n_threads)
		return;
	oatab__delete_if(r, THREAD_MASK, &thread_ops, thread_of_pid, &pid);
}

static __u64 *stack_of(struct ranges *r, const struct nest *t)
{
	return r->stacks[t - r->threads];
}

static void nest_set(struct xpu_cevent *ev, __u64 parent, __u64 root)
{
	ev->parent_id = parent;
	ev->root_id = root;
	ev->corr_type = XPU_CORR_NESTING;
	ev->confidence = 1.0f;
	add_link(ev, XPU_LINK_INSIDE_RANGE, parent);
}

/* A range record, API call or launch inside the thread's open ranges when it arrives: range
 * records of a thread come in order, so for them what is open now is what was open then. */
void ranges__annotate(struct ranges *r, struct xpu_cevent *ev)
{
	struct nest *t = thread_get(r, ev->pid, ev->tid, false);

	if (t && t->depth)
		nest_set(ev, stack_of(r, t)[t->depth - 1], stack_of(r, t)[0]);
}

/*
 * A CPU sample placed by its own timestamp: the innermost of the ranges around ev->ts_ns,
 * open or closed. Ranges nest per thread, so of all the ranges that contain ts the innermost
 * is the one pushed last: the deepest open range pushed by ts, or a closed range [push, pop]
 * around ts pushed later than that one. (Equal push times: the later event id, that is the
 * later push, is inner.) A sample newer than everything the thread's ranges have said so far
 * gets the open ranges, as on arrival; one at or before the horizon (a range that ended then
 * is no longer held: the sample may have been inside it) is not nested rather than nested too
 * shallow, and counted.
 */
void ranges__place(struct ranges *r, struct xpu_cevent *ev)
{
	struct nest *t = thread_get(r, ev->pid, ev->tid, false);
	__u64 ts = ev->ts_ns, id = 0, push = 0, root = 0;
	const struct closed *c, *inner = NULL;
	const struct hist *h;
	__u32 i, d, k;

	if (!t)
		return;
	i = (__u32)(t - r->threads);
	if (r->horizon[i] && ts <= r->horizon[i]) {
		r->env->st.nest_too_old++;
		return;
	}
	for (d = t->depth; d && r->stack_ts[i][d - 1] > ts; d--)
		;
	if (d) {
		id = r->stacks[i][d - 1];
		push = r->stack_ts[i][d - 1];
		root = r->stacks[i][0];
	}
	/* Newest first: pops come in time order, so once one ended before ts, so did all the
	 * older ones. */
	for (h = r->hist[i], k = 0; h && k < h->n; k++) {
		c = &h->c[(h->next + HIST_N - 1 - k) % HIST_N];
		if (c->pop_ts < ts)
			break;
		if (c->push_ts <= ts && (c->push_ts > push || (c->push_ts == push && c->id > id))) {
			inner = c;
			push = c->push_ts;
			id = c->id;
		}
	}
	if (inner) {
		root = inner->root;
		r->env->st.nest_closed++;
	}
	if (id)
		nest_set(ev, id, root);
}

/* Remember a range that closed on thread slot i, [push_ts, pop_ts]; the oldest one held goes
 * when the history is full, and moves the horizon. */
static void hist_add(struct ranges *r, __u32 i, __u64 id, __u64 root, __u64 push_ts, __u64 pop_ts)
{
	struct hist *h = r->hist[i];

	if (!h && r->n_hist < HIST_THREADS && (h = malloc(sizeof(*h)))) {
		h->n = h->next = 0;
		r->hist[i] = h;
		r->n_hist++;
	}
	if (!h) { /* no room for a history: what closed is lost to the samples before it */
		if (pop_ts > r->horizon[i])
			r->horizon[i] = pop_ts;
		return;
	}
	if (h->n == HIST_N) {
		if (h->c[h->next].pop_ts > r->horizon[i])
			r->horizon[i] = h->c[h->next].pop_ts;
	} else {
		h->n++;
	}
	h->c[h->next] = (struct closed){ id, root, push_ts, pop_ts };
	h->next = (h->next + 1) % HIST_N;
}

/* The thread ended at ts: its open ranges end there too (innermost first, as pops would),
 * for its samples still on their way. */
void ranges__thread_exit(struct ranges *r, __u32 pid, __u32 tid, __u64 ts)
{
	struct nest *t = thread_get(r, pid, tid, false);
	__u32 i;

	if (!t)
		return;
	i = (__u32)(t - r->threads);
	r->seen[i] = ~0ull; /* nothing more comes from it */
	while (t->depth) {
		t->depth--;
		hist_add(r, i, r->stacks[i][t->depth], r->stacks[i][0], r->stack_ts[i][t->depth],
			 ts);
	}
}

/* A range record of the thread at ts came: its ranges are known up to there. */
static void seen(struct ranges *r, const struct nest *t, __u64 ts)
{
	__u64 *s = &r->seen[t - r->threads];

	if (ts > *s)
		*s = ts;
}

bool ranges__known(const struct ranges *r, __u32 pid, __u32 tid, __u64 ts)
{
	const struct nest *t = thread_get((struct ranges *)r, pid, tid, false);

	return t && r->seen[t - r->threads] >= ts;
}

bool ranges__may_have(const struct ranges *r, __u32 pid)
{
	return pidset__may_have(r->pids, pid);
}

/* RANGE push/pop move the thread's stack; start/end ranges and marks do not nest. */
bool ranges__range(struct ranges *r, struct xpu_cevent *ev, __u64 *push_ts)
{
	struct nest *t;
	__u32 i;

	if (ev->sub_kind == XPU_RANGE_PUSH) {
		t = thread_get(r, ev->pid, ev->tid, true);
		if (!t) {
			r->env->st.nest_lost++;
			return false;
		}
		ranges__annotate(r, ev);
		seen(r, t, ev->ts_ns);
		if (!ev->root_id)
			ev->root_id = ev->id; /* an outermost range is its own root */
		if (t->depth < NEST_MAX) {
			r->stack_ts[t - r->threads][t->depth] = ev->ts_ns;
			stack_of(r, t)[t->depth++] = ev->id;
		} else {
			r->env->st.nest_lost++;
		}
		return false;
	}
	t = thread_get(r, ev->pid, ev->tid, false);
	if (t)
		seen(r, t, ev->ts_ns);
	if (ev->sub_kind != XPU_RANGE_POP) {
		ranges__annotate(r, ev);
		return false;
	}
	if (!t || !t->depth) {
		r->env->st.nest_lost++; /* a pop without its push (dropped, or before we started) */
		return false;
	}
	i = (__u32)(t - r->threads);
	ev->root_id = stack_of(r, t)[0];
	add_link(ev, XPU_LINK_COMPLETES, stack_of(r, t)[--t->depth]);
	ev->parent_id = t->depth ? stack_of(r, t)[t->depth - 1] : 0;
	ev->corr_type = XPU_CORR_NESTING;
	ev->confidence = 1.0f;
	*push_ts = r->stack_ts[i][t->depth];
	hist_add(r, i, stack_of(r, t)[t->depth], ev->root_id, *push_ts, ev->ts_ns);
	return true;
}

int ranges__init(struct ranges *r, struct join_env *env)
{
	r->env = env;
	r->threads = calloc(2 * THREADS_MAX, sizeof(*r->threads));
	r->stacks = calloc(2 * THREADS_MAX, sizeof(*r->stacks));
	r->stack_ts = calloc(2 * THREADS_MAX, sizeof(*r->stack_ts));
	r->hist = calloc(2 * THREADS_MAX, sizeof(*r->hist));
	r->horizon = calloc(2 * THREADS_MAX, sizeof(*r->horizon));
	r->seen = calloc(2 * THREADS_MAX, sizeof(*r->seen));
	r->pids = calloc(PIDSET_WORDS, sizeof(*r->pids));
	if (!r->threads || !r->stacks || !r->stack_ts || !r->hist || !r->horizon || !r->seen ||
	    !r->pids)
		return -ENOMEM;
	return 0;
}

void ranges__fini(struct ranges *r)
{
	__u32 i;

	if (r->hist)
		for (i = 0; i <= THREAD_MASK; i++)
			free(r->hist[i]);
	free(r->hist);
	free(r->threads);
	free(r->stacks);
	free(r->stack_ts);
	free(r->horizon);
	free(r->seen);
	free(r->pids);
}
