// SPDX-License-Identifier: MIT
/*
 * Per process, its recent CUDA API calls and CPU samples: what CPU samples inside a call
 * link to (sampled_in) and what the timestamp strategy joins GPU records to when the exact
 * join found no launch. Table, allocated in recent__init:
 *
 *   procs[]     per process (at most RECENT_PIDS; more are not remembered), open-addressed
 *               (linear probing) by pid, 2 * RECENT_PIDS slots: rings of its last RECENT_N
 *               calls (start, end, thread, event id) and, with the timestamp strategy, of its
 *               last RECENT_SAMPLES CPU samples with their user stacks, the strategy's
 *               fallback when no call is near
 *
 * Bounded by RECENT_PIDS and never shrunk: no slot is freed when a process exits (a process
 * that comes later than the first RECENT_PIDS keeps no calls).
 */
#include "actors/correlator/join_engines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RECENT_PIDS 2048
#define RECENT_N 64
#define RECENT_SAMPLES 4

struct recent {
	__u32 pid; /* 0: empty slot */
	__u32 n; /* calls stored, up to RECENT_N */
	__u32 next; /* where the next one goes */
	__u32 n_samples, next_sample;
	__u64 ts[RECENT_N], end[RECENT_N], id[RECENT_N];
	__u32 tid[RECENT_N];
	struct recent_sample samples[RECENT_SAMPLES];
};

static struct recent *recent_get(struct recent_calls *rc, __u32 pid, bool create)
{
	__u32 mask = 2 * RECENT_PIDS - 1, i = (__u32)xpu_mix64(pid) & mask;

	for (;; i = (i + 1) & mask) {
		struct recent *r = &rc->procs[i];

		if (r->pid == pid)
			return r;
		if (!r->pid) {
			if (!create || rc->n >= RECENT_PIDS)
				return NULL;
			rc->n++;
			r->pid = pid;
			return r;
		}
	}
}

void recent__add_call(struct recent_calls *rc, const struct xpu_cevent *api)
{
	struct recent *r = recent_get(rc, api->pid, true);

	if (!r)
		return;
	r->ts[r->next] = api->ts_ns;
	r->end[r->next] = api->end_ns;
	r->id[r->next] = api->id;
	r->tid[r->next] = api->tid;
	r->next = (r->next + 1) % RECENT_N;
	if (r->n < RECENT_N)
		r->n++;
}

/* The latest call that began no later than ts and at most the window before it. */
__u64 recent__find_call(struct recent_calls *rc, __u32 pid, __u64 ts)
{
	struct recent *r = recent_get(rc, pid, false);
	__u64 best = 0, best_ts = 0;
	__u32 i;

	for (i = 0; r && i < r->n; i++)
		if (r->ts[i] <= ts && ts - r->ts[i] <= rc->window_ns && r->ts[i] >= best_ts) {
			best_ts = r->ts[i];
			best = r->id[i];
		}
	return best;
}

/*
 * A CPU sample taken inside a CUDA API call of its thread (the API call's enter/exit
 * interval: its entry and exit) is that call's child: sampled_in link, parent the call.
 * Only calls whose record has already arrived can be found; CUPTI sends a call at its exit,
 * so a sample read before it stays without the link. A sample the join held (for its
 * thread's ranges) brings the call it was in when it arrived: the calls after it may have
 * pushed that one out of the few kept since.
 */
__u64 recent__call_at(struct recent_calls *rc, __u32 pid, __u32 tid, __u64 ts)
{
	struct recent *r = recent_get(rc, pid, false);
	__u32 i;

	for (i = 0; r && i < r->n; i++)
		if (r->tid[i] == tid && r->ts[i] <= ts && ts <= r->end[i])
			return r->id[i];
	return 0;
}

void recent__annotate_sample(struct recent_calls *rc, struct xpu_cevent *ev, __u64 call)
{
	__u64 id = recent__call_at(rc, ev->pid, ev->tid, ev->ts_ns);

	if (!id)
		id = call;
	if (!id)
		return;
	add_link(ev, XPU_LINK_SAMPLED_IN, id);
	ev->parent_id = id;
	if (!ev->root_id)
		ev->root_id = id;
	if (ev->corr_type == XPU_CORR_NONE) {
		ev->corr_type = XPU_CORR_NESTING;
		ev->confidence = 1.0f;
	}
	rc->env->st.sampled_in++;
}

/* Remember a CPU sample and its user stack for the timestamp strategy. */
void recent__remember_sample(struct recent_calls *rc, const struct xpu_cevent *ev)
{
	struct recent *r = recent_get(rc, ev->pid, true);
	struct recent_sample *rs;

	if (!r)
		return;
	rs = &r->samples[r->next_sample];
	r->next_sample = (r->next_sample + 1) % RECENT_SAMPLES;
	if (r->n_samples < RECENT_SAMPLES)
		r->n_samples++;
	rs->ts = ev->ts_ns;
	rs->id = ev->id;
	rs->tid = ev->tid;
	rs->n_user = ev->n_user < SAMPLE_FRAMES ? ev->n_user : SAMPLE_FRAMES;
	memcpy(rs->ips, ev->stack + ev->n_kernel, 8u * rs->n_user);
}

/* The latest remembered sample of the process (of the thread, when the GPU record names
 * one) taken no later than ts and at most the window before it. */
const struct recent_sample *recent__find_sample(struct recent_calls *rc, __u32 pid, __u32 tid,
						__u64 ts)
{
	struct recent *r = recent_get(rc, pid, false);
	const struct recent_sample *best = NULL;
	__u32 i;

	for (i = 0; r && i < r->n_samples; i++) {
		const struct recent_sample *rs = &r->samples[i];

		if ((!tid || rs->tid == tid) && rs->ts <= ts && ts - rs->ts <= rc->window_ns &&
		    (!best || rs->ts >= best->ts))
			best = rs;
	}
	return best;
}

int recent__init(struct recent_calls *rc, struct join_env *env, __u64 window_ns)
{
	rc->env = env;
	rc->window_ns = window_ns;
	rc->procs = calloc(2 * RECENT_PIDS, sizeof(*rc->procs));
	return rc->procs ? 0 : -ENOMEM;
}

void recent__fini(struct recent_calls *rc)
{
	free(rc->procs);
}
