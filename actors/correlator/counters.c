// SPDX-License-Identifier: MIT
/*
 * Counter readings for the `counters` stage: a GPU kernel and a range end (pop, end) get the
 * deltas of up to XPU_WIRE_COUNTERS_MAX of their process's counters over their window,
 * interpolated between readings (docs/correlator.md). Tables, allocated in counters__init:
 *
 *   procs[]     per process with process-scope counter readings (at most CTR_PIDS at once;
 *               when full, the one read least recently goes), a free list through `next`:
 *               per counter (at most CTR_PER_PID, in the order of their first reading), the
 *               last CTR_READINGS readings as (time, scaled total), sorted by time; and the
 *               starts of its last CTR_STARTS start/end ranges (start ranges may end on
 *               another thread: the nesting stacks of ranges.c cannot)
 *   idx         open-addressed (linear probing, deletion through common/oatab.h) on pid ->
 *               procs index, 2 * CTR_PIDS slots
 *
 * 32 readings at the default 100 ms interval reach 3.2 s back, about as late as CUPTI
 * delivers activity in its buffers. A process's readings go once its exit grace has passed
 * (counters__drop_pid).
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

#define CTR_PIDS 1024
#define CTR_MASK (2 * CTR_PIDS - 1)
#define CTR_PER_PID 16
#define CTR_READINGS 32
#define CTR_STARTS 16
#define CTR_REACH 2 /* extrapolate at most this many intervals past the readings */

enum ctr_role {
	CTR_OTHER,
	CTR_INSTRUCTIONS,
	CTR_CYCLES,
};

struct ctr_series {
	__u64 counter_id;
	__u32 n; /* readings held */
	__u32 reserved;
	__u64 ts[CTR_READINGS];
	double total[CTR_READINGS]; /* value * time_enabled / time_running */
};

struct ctr_proc {
	__u32 pid; /* 0: free */
	__u32 n; /* counters */
	__u32 next; /* free list */
	__u32 n_starts, next_start;
	__u64 touched_ns; /* shard time of its last reading: the least recent goes first */
	__u64 start_id[CTR_STARTS], start_ts[CTR_STARTS];
	struct ctr_series s[CTR_PER_PID];
};

static __u32 ctr_home(__u32 pid)
{
	return (__u32)xpu_mix64(pid) & CTR_MASK;
}

static uint32_t ctr_slot_home(const void *tab, uint32_t slot)
{
	const struct counters *c = container_of(tab, const struct counters, idx);

	return ctr_home(c->procs[idx_slots__at(&c->idx, slot)].pid);
}

static const struct oatab_ops ctr_ops = {
	.empty = idx_slots__empty,
	.home = ctr_slot_home,
	.move = idx_slots__move,
	.clear = idx_slots__clear,
};

/* The slot of pid's state in idx: its own, or the empty one where it belongs. */
static __u32 ctr_slot(const struct counters *c, __u32 pid)
{
	__u32 i = ctr_home(pid), e;

	for (;; i = (i + 1) & CTR_MASK) {
		e = idx_slots__at(&c->idx, i);
		if (e == NIL || c->procs[e].pid == pid)
			return i;
	}
}

static struct ctr_proc *ctr_find(const struct counters *c, __u32 pid)
{
	__u32 e = idx_slots__at(&c->idx, ctr_slot(c, pid));

	return e != NIL ? &c->procs[e] : NULL;
}

/* Free the state in table slot `slot`. */
static void ctr_remove_slot(struct counters *c, __u32 slot)
{
	__u32 e = idx_slots__at(&c->idx, slot);

	c->procs[e].pid = 0;
	c->procs[e].next = c->free;
	c->free = e;
	c->env->st.counter_pids--;
	oatab__delete(&c->idx, CTR_MASK, slot, &ctr_ops);
}

/* pid's state, made when it has none; when every one is taken, the process read least
 * recently goes (its exit was never seen, or it stopped being counted). */
static struct ctr_proc *ctr_get(struct counters *c, __u32 pid)
{
	__u32 slot = ctr_slot(c, pid), e = idx_slots__at(&c->idx, slot), i, oldest = 0;
	struct ctr_proc *p;

	if (e != NIL)
		return &c->procs[e];
	if (c->free == NIL && c->hw == CTR_PIDS) {
		for (i = 1; i < CTR_PIDS; i++) /* a scan, only when a new process finds it full */
			if (c->procs[i].touched_ns < c->procs[oldest].touched_ns)
				oldest = i;
		ctr_remove_slot(c, ctr_slot(c, c->procs[oldest].pid));
		c->env->st.counter_pids_evicted++;
		slot = ctr_slot(c, pid); /* the table changed */
	}
	if (c->free != NIL) {
		e = c->free;
		c->free = c->procs[e].next;
	} else {
		e = c->hw++;
	}
	p = &c->procs[e];
	p->pid = pid;
	p->n = p->n_starts = p->next_start = 0;
	p->touched_ns = c->env->now_ns;
	c->idx.slot[slot] = e + 1;
	c->env->st.counter_pids++;
	return p;
}

void counters__drop_pid(void *counters, __u32 pid)
{
	struct counters *c = counters;
	__u32 slot = ctr_slot(c, pid);

	if (c->idx.slot[slot])
		ctr_remove_slot(c, slot);
}

/* Keep one process-scope reading. Its total is perf's estimate for the whole time the
 * counter was enabled (value * enabled / running); a counter that never ran has none. */
void counters__reading(struct counters *cs, const struct xpu_pmu_counter *c)
{
	__u64 t = c->hdr.ts_ns;
	double total = (double)c->value;
	struct ctr_series *s;
	struct ctr_proc *p;
	__u32 i, k;

	if (c->scope != XPU_PMU_SCOPE_PROCESS || !c->hdr.pid)
		return;
	if (!c->time_running) {
		cs->env->st.readings_dropped++;
		return;
	}
	if (c->time_running < c->time_enabled)
		total *= (double)c->time_enabled / (double)c->time_running;
	p = ctr_get(cs, c->hdr.pid);
	p->touched_ns = cs->env->now_ns;
	for (i = 0; i < p->n && p->s[i].counter_id != c->counter_id; i++)
		;
	if (i == p->n) {
		if (p->n == CTR_PER_PID) {
			cs->env->st.readings_dropped++;
			return;
		}
		p->s[i].counter_id = c->counter_id;
		p->s[i].n = 0;
		p->n++;
	}
	s = &p->s[i];
	for (k = 0; k < s->n && s->ts[k] < t; k++)
		;
	if (k < s->n && s->ts[k] == t) { /* the same reading again */
		s->total[k] = total;
	} else if (s->n == CTR_READINGS) {
		if (!k) { /* older than every reading held */
			cs->env->st.readings_dropped++;
			return;
		}
		k--; /* the oldest goes */
		memmove(s->ts, s->ts + 1, k * sizeof(s->ts[0]));
		memmove(s->total, s->total + 1, k * sizeof(s->total[0]));
	} else {
		memmove(s->ts + k + 1, s->ts + k, (s->n - k) * sizeof(s->ts[0]));
		memmove(s->total + k + 1, s->total + k, (s->n - k) * sizeof(s->total[0]));
		s->n++;
	}
	s->ts[k] = t;
	s->total[k] = total;
	cs->env->st.readings++;
}

/*
 * A counter's total at t: interpolated between the readings around t; past the newest (or
 * before the oldest) reading, extrapolated at the rate of the interval next to it, at most
 * CTR_REACH such intervals out, and *estimated set. false: fewer than two readings, or t
 * farther out.
 */
static bool series_at(const struct ctr_series *s, __u64 t, double *total, bool *estimated)
{
	__u32 n = s->n, i;
	__u64 span, out;
	double rate;

	if (n < 2)
		return false;
	if (t > s->ts[n - 1] || t < s->ts[0]) {
		i = t > s->ts[n - 1] ? n - 1 : 1; /* the interval [i - 1, i] next to t */
		span = s->ts[i] - s->ts[i - 1];
		out = t > s->ts[n - 1] ? t - s->ts[n - 1] : s->ts[0] - t;
		if (out / CTR_REACH > span)
			return false;
		rate = (s->total[i] - s->total[i - 1]) / (double)span;
		if (!(rate > 0)) /* multiplexing estimates may go back a little */
			rate = 0;
		*total = t > s->ts[n - 1] ? s->total[n - 1] + rate * (double)out :
					    s->total[0] - rate * (double)out;
		*estimated = true;
		return true;
	}
	for (i = 1; s->ts[i] < t; i++) /* ts[0] <= t <= ts[n - 1]: ends at n - 1 at most */
		;
	*total = s->total[i - 1] + (s->total[i] - s->total[i - 1]) * (double)(t - s->ts[i - 1]) /
					   (double)(s->ts[i] - s->ts[i - 1]);
	return true;
}

/* "cycles:u" is cycles with a modifier: the part before ':' says what it counts. */
static enum ctr_role ctr_role(const char *name, __u32 len)
{
	const char *colon = memchr(name, ':', len);
	__u32 n = colon ? (__u32)(colon - name) : len;

	if (n == 12 && !memcmp(name, "instructions", 12))
		return CTR_INSTRUCTIONS;
	if ((n == 6 && !memcmp(name, "cycles", 6)) || (n == 10 && !memcmp(name, "cpu-cycles", 10)))
		return CTR_CYCLES;
	return CTR_OTHER;
}

/*
 * The counters stage: ev gets the deltas of its process's counters over [start, end], at most
 * XPU_WIRE_COUNTERS_MAX of them: instructions first, cycles next (IPC comes from that pair),
 * then the others in the order of their first reading. Counters travel by name, so one whose
 * STRING record never came is left out; so is one without readings near the window.
 */
void counters__attach(struct counters *c, struct xpu_cevent *ev, __u64 start, __u64 end)
{
	static const int pass_role[3] = { CTR_INSTRUCTIONS, CTR_CYCLES, -1 };
	const char *names[CTR_PER_PID];
	__u32 lens[CTR_PER_PID], i, pass, k = 0;
	enum ctr_role roles[CTR_PER_PID];
	bool taken[CTR_PER_PID] = { false }, estimated = false;
	double by_role[3] = { -1, -1, -1 }, t0, t1, d;
	struct ctr_proc *p;

	if (!(c->env->enrich & CONF_ENRICH_COUNTERS) || !c->env->name || end <= start ||
	    !(p = ctr_find(c, ev->pid)))
		return;
	for (i = 0; i < p->n; i++) {
		names[i] = c->env->name(ev->pid, p->s[i].counter_id, XPU_STR_COUNTER, &lens[i],
					c->env->ctx);
		if (!names[i] || !lens[i] || lens[i] > XPU_WIRE_COUNTER_NAME_MAX)
			taken[i] = true; /* cannot travel */
		else
			roles[i] = ctr_role(names[i], lens[i]);
	}
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < p->n && k < XPU_WIRE_COUNTERS_MAX; i++) {
			bool e = false;

			if (taken[i] || (pass < 2 && (int)roles[i] != pass_role[pass]))
				continue;
			taken[i] = true;
			if (!series_at(&p->s[i], start, &t0, &e) ||
			    !series_at(&p->s[i], end, &t1, &e))
				continue;
			d = t1 > t0 ? t1 - t0 : 0;
			if (!isfinite(d))
				continue;
			ev->counters[k++] = (struct xpu_wire_counter){ .name = names[i],
								       .name_len = lens[i],
								       .delta = d };
			estimated |= e;
			if (pass < 2) { /* one instructions, one cycles; more count as others */
				by_role[pass] = d;
				break;
			}
		}
	}
	if (!k)
		return;
	ev->n_counters = k;
	if (by_role[0] >= 0 && by_role[1] > 0)
		ev->ipc = by_role[0] / by_role[1];
	ev->counter_flags = estimated ? XPU_COUNTERS_F_ESTIMATED : 0;
	c->env->st.counted++;
	c->env->st.counted_estimated += estimated;
}

/* A start/end range of a process with counters: its start, for the counters over it. */
void counters__range_start(struct counters *c, const struct xpu_cevent *ev)
{
	struct ctr_proc *p = ctr_find(c, ev->pid);

	if (!p || !(c->env->enrich & CONF_ENRICH_COUNTERS))
		return;
	p->start_id[p->next_start] = ev->correlation_id;
	p->start_ts[p->next_start] = ev->ts_ns;
	p->next_start = (p->next_start + 1) % CTR_STARTS;
	if (p->n_starts < CTR_STARTS)
		p->n_starts++;
}

void counters__range_end(struct counters *c, struct xpu_cevent *ev)
{
	struct ctr_proc *p = ctr_find(c, ev->pid);
	__u32 i;

	for (i = 0; p && i < p->n_starts; i++) {
		if (!p->start_ts[i] || p->start_id[i] != ev->correlation_id)
			continue;
		counters__attach(c, ev, p->start_ts[i], ev->ts_ns);
		p->start_ts[i] = 0; /* taken: a second end finds no start */
		return;
	}
}

int counters__init(struct counters *c, struct join_env *env)
{
	c->env = env;
	c->free = NIL;
	c->idx.mask = CTR_MASK;
	c->procs = calloc(CTR_PIDS, sizeof(*c->procs));
	c->idx.slot = calloc(2 * CTR_PIDS, sizeof(*c->idx.slot));
	return c->procs && c->idx.slot ? 0 : -ENOMEM;
}

void counters__fini(struct counters *c)
{
	free(c->procs);
	free(c->idx.slot);
}
