// SPDX-License-Identifier: MIT
/*
 * The exact join against an answer key: every GPU record must be joined to the launch side
 * of its own (pid, correlation id), whatever the arrival order, never to another; state must
 * expire by TTL and by process exit, stay within max_pending, and every record must go out
 * exactly once.
 */
#include "actors/correlator/join.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "tests/tap.h"

#define MAX_EVENTS 400000

struct sink {
	struct xpu_cevent ev[MAX_EVENTS];
	__u64 stack0[MAX_EVENTS]; /* the first stack frame of each event (stacks are borrowed) */
	unsigned int n;
};

static struct sink out;

static void collect(const struct xpu_cevent *ev, void *ctx)
{
	struct sink *s = ctx;

	if (s->n < MAX_EVENTS) {
		s->ev[s->n] = *ev;
		s->stack0[s->n] = ev->stack && (ev->n_kernel + ev->n_user) ? ev->stack[0] : 0;
		s->ev[s->n].stack = NULL;
		s->n++;
	}
}

static _Alignas(8) unsigned char buf[2048];

static void *launch(__u32 pid, __u64 corr, __u32 frames)
{
	__u64 ips[8] = { 0 };
	__u32 i;

	for (i = 0; i < frames && i < 8; i++)
		ips[i] = 0x400000 + corr * 16 + i; /* the answer key: frame 0 encodes corr */
	xpu_launch__build(buf, sizeof(buf), corr, pid, pid, corr, 211, ips, frames);
	return buf;
}

static void *api(__u32 pid, __u64 corr)
{
	struct xpu_cuda_api *a = (void *)buf;

	xpu_rec__init(a, XPU_REC_CUDA_API, sizeof(*a), corr, pid, pid);
	a->end_ns = corr + 5;
	a->correlation_id = corr;
	a->api_id = 211;
	a->domain = XPU_API_RUNTIME;
	return buf;
}

/* A copy of 10 ns from ts, on stream 0. */
static void *copy(__u32 pid, __u64 corr, __u64 ts)
{
	struct xpu_gpu_memcpy *m = (void *)buf;

	memset(buf, 0, sizeof(*m));
	xpu_rec__init(m, XPU_REC_GPU_MEMCPY, sizeof(*m), ts, pid, 0);
	m->start_ns = ts;
	m->end_ns = ts + 10;
	m->correlation_id = corr;
	return buf;
}

/* A launch API call the CUPTI library marked: its LAUNCH is on its way. */
static void *marked_api(__u32 pid, __u64 corr)
{
	struct xpu_cuda_api *a = api(pid, corr);

	a->hdr.flags |= XPU_API_F_LAUNCH_MARKED;
	return a;
}

static void *kernel(__u32 pid, __u64 corr)
{
	struct xpu_gpu_kernel *k = (void *)buf;

	xpu_rec__init(k, XPU_REC_GPU_KERNEL, sizeof(*k), corr + 10, pid, 0);
	k->start_ns = corr + 10;
	k->end_ns = corr + 20;
	k->correlation_id = corr;
	k->stream_id = 7;
	k->grid[0] = 128;
	return buf;
}

static void *proc_exit(__u32 pid)
{
	struct xpu_proc_exit *e = (void *)buf;

	xpu_rec__init(e, XPU_REC_PROC_EXIT, sizeof(*e), 1, pid, pid);
	return buf;
}

static void offer(struct join *j, void *rec, __u64 now)
{
	join__record(j, rec, ((struct xpu_rec *)rec)->size, now);
}

static struct join *fresh(__u32 max_pending, __u32 max_waiting, __u64 ttl)
{
	struct join_opts o = { .ttl_ns = ttl,
			       .exit_grace_ns = 100,
			       .linger_ns = ttl,
			       .max_pending = max_pending,
			       .max_waiting = max_waiting };

	out.n = 0;
	return join__new(&o, collect, &out);
}

static const struct xpu_cevent *find(__u16 kind, __u32 pid, __u64 corr, unsigned int *idx)
{
	unsigned int i;

	for (i = 0; i < out.n; i++)
		if (out.ev[i].kind == kind && out.ev[i].pid == pid &&
		    out.ev[i].correlation_id == corr) {
			if (idx)
				*idx = i;
			return &out.ev[i];
		}
	return NULL;
}

static void test_orders(void)
{
	static const char *const names[] = { "launch, api, kernel", "kernel, launch, api",
					     "api, kernel, launch" };
	struct join_stats st;
	const struct xpu_cevent *k, *l, *a;
	unsigned int order, ki = 0;

	for (order = 0; order < 3; order++) {
		struct join *j = fresh(64, 64, 1000);

		if (order == 0) {
			offer(j, launch(10, 5, 3), 1);
			offer(j, api(10, 5), 2);
			offer(j, kernel(10, 5), 3);
		} else if (order == 1) {
			offer(j, kernel(10, 5), 1);
			offer(j, launch(10, 5, 3), 2);
			offer(j, api(10, 5), 3);
		} else {
			offer(j, api(10, 5), 1);
			offer(j, kernel(10, 5), 2);
			offer(j, launch(10, 5, 3), 3);
		}
		k = find(XPU_REC_GPU_KERNEL, 10, 5, &ki);
		l = find(XPU_REC_LAUNCH, 10, 5, NULL);
		a = find(XPU_REC_CUDA_API, 10, 5, NULL);
		tap_ok(out.n == 3 && k && l && a, "%s: three events out, once each", names[order]);
		if (!k || !l || !a)
			continue;
		tap_ok(k->corr_type == XPU_CORR_EXACT_ID && k->confidence == 1.0f,
		       "%s: kernel joined by exact id, confidence 1", names[order]);
		tap_ok(k->links[0].type == XPU_LINK_LAUNCHED_BY &&
			       (k->links[0].target == a->id || k->links[0].target == l->id),
		       "%s: kernel linked to its launch side", names[order]);
		if (order == 0)
			tap_ok(k->n_links == 2 && k->parent_id == l->id && k->n_user == 3 &&
				       out.stack0[ki] == 0x400000 + 5 * 16,
			       "launch first: both links, parent is the LAUNCH, its stack attached");
		if (order == 2)
			tap_ok(k->n_links == 1 && k->links[0].target == a->id && k->n_user == 0,
			       "api first: the kernel goes out at once with the API link only");
		join__stats(j, &st);
		tap_eq_u64(st.matched, 1, "%s: matched counted", names[order]);
		if (order == 2)
			tap_eq_u64(st.late_launch, 1,
				   "a LAUNCH after its kernel went out is counted late");
		join__free(j);
	}
}

/* N keys over P processes, each with LAUNCH, CUDA_API and 1-3 kernels (graph launches),
 * offered in a random order: every kernel joins its own key, none another. run: how many
 * consecutive correlation ids each process takes in turn; 1 spreads a process's keys out,
 * longer runs are what CUPTI makes (a process numbers its calls in order), and fill the key
 * table's blocks (join.c, key_home) at up to 38 % load. */
static void test_shuffled(unsigned int run, const char *what)
{
	enum { KEYS = 50000, PROCS = 7 };
	struct rec_ref {
		__u32 pid;
		__u64 corr;
		__u8 what; /* 0 launch, 1 api, 2 kernel */
	} *refs = malloc(sizeof(*refs) * KEYS * 5);
	__u64 *launch_id = calloc(KEYS + 1, sizeof(__u64)), *api_id = calloc(KEYS + 1, 8);
	unsigned int n = 0, i, kernels = 0, good = 0, wrong = 0, exact = 0, stacks = 0;
	__u64 rng = 42;
	struct join_stats st;
	struct join *j = fresh(KEYS, KEYS, ~0ull / 2);

	for (i = 1; i <= KEYS; i++) {
		__u32 pid = 100 + (i / run) % PROCS, k, nk = 1 + i % 3;

		refs[n++] = (struct rec_ref){ pid, i, 0 };
		refs[n++] = (struct rec_ref){ pid, i, 1 };
		for (k = 0; k < nk; k++)
			refs[n++] = (struct rec_ref){ pid, i, 2 };
		kernels += nk;
	}
	for (i = n - 1; i > 0; i--) { /* Fisher-Yates */
		struct rec_ref t;
		unsigned int r;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		r = (unsigned int)((rng >> 33) % (i + 1));
		t = refs[i];
		refs[i] = refs[r];
		refs[r] = t;
	}
	for (i = 0; i < n; i++) {
		void *rec = refs[i].what == 0 ? launch(refs[i].pid, refs[i].corr, 2) :
			    refs[i].what == 1 ? api(refs[i].pid, refs[i].corr) :
						kernel(refs[i].pid, refs[i].corr);
		offer(j, rec, i);
	}
	join__flush(j);
	for (i = 0; i < out.n; i++) {
		if (out.ev[i].kind == XPU_REC_LAUNCH)
			launch_id[out.ev[i].correlation_id] = out.ev[i].id;
		else if (out.ev[i].kind == XPU_REC_CUDA_API)
			api_id[out.ev[i].correlation_id] = out.ev[i].id;
	}
	for (i = 0; i < out.n; i++) {
		const struct xpu_cevent *e = &out.ev[i];
		__u64 c = e->correlation_id;
		unsigned int l, ok = e->n_links > 0;

		if (e->kind != XPU_REC_GPU_KERNEL)
			continue;
		exact += e->corr_type == XPU_CORR_EXACT_ID;
		for (l = 0; l < e->n_links; l++)
			if (e->links[l].type == XPU_LINK_LAUNCHED_BY &&
			    e->links[l].target != launch_id[c] && e->links[l].target != api_id[c])
				ok = 0;
		if (ok)
			good++;
		else
			wrong += e->n_links > 0;
		if (e->n_user && out.stack0[i] == 0x400000 + c * 16)
			stacks++;
	}
	join__stats(j, &st);
	tap_eq_u64(out.n, n, "%s: every one of %u records went out exactly once", what, n);
	tap_eq_u64(good, kernels, "%s: all %u kernels joined to their own key", what, kernels);
	tap_eq_u64(wrong, 0, "%s: zero false joins", what);
	tap_eq_u64(exact, kernels, "%s: all by exact id", what);
	tap_ok(stacks > kernels / 3, "%s: kernels after their LAUNCH carry its stack (%u)", what,
	       stacks);
	tap_ok(st.waited > 0, "%s: some kernels waited for their launch side (%llu)", what,
	       (unsigned long long)st.waited);
	tap_eq_u64(st.pending, 0, "%s: nothing pending after flush", what);
	tap_eq_u64(st.waiting, 0, "%s: nothing waiting after flush", what);
	join__free(j);
	free(refs);
	free(launch_id);
	free(api_id);
}

/* What a pipeline does to the key table: each process numbers its calls in order, each
 * call's kernel comes W calls later, and a matched key goes linger_ns after (join__expire):
 * inserts, finds and deletions (backward shifts through the table's full blocks, join.c's
 * key_home) interleaved at a steady 37 % load. Every kernel joins its own call. */
static void test_window(void)
{
	enum { PROCS = 4, CALLS = 20000, W = 3000 };
	struct join_opts o = { .ttl_ns = 1ull << 40,
			       .exit_grace_ns = 100,
			       .linger_ns = 50,
			       .max_pending = PROCS * (W + 64),
			       .max_waiting = 1024 };
	static __u64 api_id[PROCS][CALLS + 1];
	unsigned int i, p, good = 0, kernels = 0;
	struct join_stats st;
	struct join *j;
	__u64 now = 0;

	out.n = 0;
	j = join__new(&o, collect, &out);
	for (i = 0; i < CALLS + W; i++) {
		for (p = 0; p < PROCS; p++) {
			if (i < CALLS)
				offer(j, api(200 + p, i + 1), now);
			if (i >= W)
				offer(j, kernel(200 + p, i - W + 1), now);
		}
		now += 10;
		join__expire(j, now);
	}
	for (i = 0; i < out.n; i++)
		if (out.ev[i].kind == XPU_REC_CUDA_API && out.ev[i].pid - 200 < PROCS &&
		    out.ev[i].correlation_id <= CALLS)
			api_id[out.ev[i].pid - 200][out.ev[i].correlation_id] = out.ev[i].id;
	for (i = 0; i < out.n; i++) {
		const struct xpu_cevent *e = &out.ev[i];

		if (e->kind != XPU_REC_GPU_KERNEL)
			continue;
		kernels++;
		good += e->corr_type == XPU_CORR_EXACT_ID && e->n_links &&
			e->links[0].type == XPU_LINK_LAUNCHED_BY && e->pid - 200 < PROCS &&
			e->correlation_id <= CALLS &&
			e->links[0].target == api_id[e->pid - 200][e->correlation_id];
	}
	join__stats(j, &st);
	tap_eq_u64(kernels, PROCS * CALLS, "window: every kernel went out");
	tap_eq_u64(good, PROCS * CALLS, "window: each joined to its own call, by exact id");
	tap_eq_u64(st.evicted, 0, "window: nothing evicted (the load stays under the bound)");
	tap_ok(st.expired >= PROCS * (CALLS - 10),
	       "window: matched keys removed as they lingered "
	       "out (%llu)",
	       (unsigned long long)st.expired);
	join__free(j);
}

static void test_ttl(void)
{
	struct join_stats st;
	struct join *j = fresh(16, 16, 1000);
	const struct xpu_cevent *k;

	offer(j, kernel(1, 9), 0);
	join__stats(j, &st);
	tap_ok(out.n == 0 && st.waiting == 1, "a kernel without its launch waits");
	join__expire(j, 999);
	tap_eq_u64(out.n, 0, "not yet at ttl - 1");
	join__expire(j, 1000);
	k = find(XPU_REC_GPU_KERNEL, 1, 9, NULL);
	tap_ok(k && k->corr_type == XPU_CORR_NONE && k->n_links == 0,
	       "at the TTL it goes out unmatched");
	join__stats(j, &st);
	tap_ok(st.expired == 1 && st.unmatched == 1 && st.pending == 0,
	       "counted expired, unmatched");
	offer(j, launch(1, 9, 1), 1001);
	join__stats(j, &st);
	tap_ok(st.pending == 1 && st.late_launch == 0, "a launch after expiry starts new state");
	join__free(j);
}

static void test_bounds(void)
{
	struct join_stats st;
	struct join *j = fresh(100, 10, 1000000);
	unsigned int i;

	for (i = 1; i <= 250; i++)
		offer(j, launch(1, i, 1), i);
	join__stats(j, &st);
	tap_eq_u64(st.pending, 100, "pending state stays at max_pending");
	tap_eq_u64(st.evicted, 150, "the oldest keys were evicted, and counted");
	offer(j, kernel(1, 250), 300);
	offer(j, kernel(1, 1), 301);
	join__stats(j, &st);
	tap_ok(st.matched == 1 && st.unmatched == 0 && st.waiting == 1,
	       "the newest key still joins; an evicted one's kernel waits again");
	for (i = 0; i < 20; i++)
		offer(j, kernel(2, 1000 + i), 400 + i);
	join__stats(j, &st);
	tap_eq_u64(st.waiting, 10, "waiting GPU records stay at max_waiting");
	tap_ok(st.unmatched >= 10, "the overflow went out unmatched at once (%llu)",
	       (unsigned long long)st.unmatched);
	join__flush(j);
	join__stats(j, &st);
	tap_ok(st.pending == 0 && st.waiting == 0, "flush empties everything");
	tap_eq_u64(out.n, st.in, "every record went out exactly once (%llu)",
		   (unsigned long long)st.in);
	tap_ok(join__entry_size() < 256, "state per pending key: %zu bytes plus its stack",
	       join__entry_size());
	join__free(j);
}

/* LAUNCH stack blocks a burst left on the free lists go back to malloc, half of what a second
 * did not use at each trim; blocks in use again within the second stay. */
static void stacks_are(struct join *j, __u64 kept, __u64 trimmed, const char *what)
{
	struct join_stats st;

	join__stats(j, &st);
	tap_ok(st.pending == 0 && st.stacks_kept == kept && st.stacks_trimmed == trimmed,
	       "%s (kept %llu, trimmed %llu)", what, (unsigned long long)st.stacks_kept,
	       (unsigned long long)st.stacks_trimmed);
}

static void test_stack_trim(void)
{
	struct join *j = fresh(100000, 10, 1000000);
	__u64 t = 1000000000ull, trim;
	unsigned int i;

	for (i = 1; i <= 1000; i++)
		offer(j, launch(1, i, 4), t);
	trim = t + 2000000;
	join__expire(j, trim); /* the keys expire; the first trim has no second behind it */
	stacks_are(j, 1000, 0, "a burst's 1000 stacks are kept for reuse");
	trim += 1000000000ull;
	join__expire(j, trim);
	stacks_are(j, 500, 500, "a second later half of them go");
	for (i = 1001; i <= 1400; i++)
		offer(j, launch(1, i, 4), trim + 1);
	join__expire(j, trim + 3000000);
	stacks_are(j, 500, 500, "400 of them reused and back within the second: none trimmed yet");
	trim += 1000000000ull;
	join__expire(j, trim);
	stacks_are(j, 450, 550, "then half of the 100 that second never needed go");
	for (i = 0; i < 20; i++) {
		trim += 1000000000ull;
		join__expire(j, trim);
	}
	stacks_are(j, 0, 1000, "an idle shard gives back every block within 20 seconds");
	join__free(j);
}

static void test_exit(void)
{
	struct join_stats st;
	struct join *j = fresh(64, 64, 1000000);

	offer(j, launch(5, 1, 1), 1);
	offer(j, launch(5, 2, 1), 2);
	offer(j, kernel(5, 3), 3); /* waits */
	offer(j, launch(6, 1, 1), 4);
	offer(j, proc_exit(5), 10);
	offer(j, kernel(5, 1), 50); /* late, within the grace period: still joins */
	join__stats(j, &st);
	tap_ok(st.matched == 1 && st.pending == 4,
	       "within the exit grace a late kernel still joins");
	join__expire(j, 109);
	join__stats(j, &st);
	tap_eq_u64(st.pending, 4, "nothing removed before the grace period ends");
	join__expire(j, 110);
	join__stats(j, &st);
	tap_ok(st.pending == 1 && st.expired == 3,
	       "after it, the process's state is gone (3 keys)");
	tap_ok(st.unmatched == 1 && st.waiting == 0, "its waiting kernel went out unmatched");
	offer(j, kernel(6, 1), 120);
	join__stats(j, &st);
	tap_eq_u64(st.matched, 2, "another process is untouched");
	join__free(j);
}

static void *range(__u32 pid, __u32 tid, __u32 phase, const char *name)
{
	xpu_range__build(buf, sizeof(buf), 1, pid, tid, phase, 0, 0, 0, name,
			 name ? strlen(name) : 0);
	return buf;
}

static const struct xpu_cevent *find_range(__u32 phase, unsigned int nth)
{
	unsigned int i;

	for (i = 0; i < out.n; i++)
		if (out.ev[i].kind == XPU_REC_RANGE && out.ev[i].sub_kind == phase && !nth--)
			return &out.ev[i];
	return NULL;
}

static bool has_link(const struct xpu_cevent *ev, __u32 type, __u64 target)
{
	__u32 i;

	for (i = 0; i < ev->n_links; i++)
		if (ev->links[i].type == type && ev->links[i].target == target)
			return true;
	return false;
}

/* Seed 001's per-thread stacks: ranges nest, API calls and samples sit inside them, kernels
 * inherit their launch's scope, another thread is unaffected. */
static void test_nesting(void)
{
	const struct xpu_cevent *outer, *inner, *a, *k, *pop_in, *pop_out, *other;
	struct join_stats st;
	struct join *j = fresh(64, 64, 1000000);
	__u64 ips[1] = { 0x400000 };

	offer(j, range(7, 70, XPU_RANGE_PUSH, "train_step"), 1);
	offer(j, range(7, 70, XPU_RANGE_PUSH, "forward"), 2);
	api(7, 42);
	((struct xpu_rec *)buf)->tid = 70; /* the launching thread */
	offer(j, buf, 3);
	offer(j, kernel(7, 42), 4);
	xpu_cpu_sample__build(buf, sizeof(buf), 5, 7, 71, 0, 1, "x", NULL, 0, ips, 1);
	offer(j, buf, 5); /* another thread of the same process */
	offer(j, range(7, 70, XPU_RANGE_POP, NULL), 6);
	offer(j, range(7, 70, XPU_RANGE_POP, NULL), 7);
	offer(j, range(7, 70, XPU_RANGE_POP, NULL), 8); /* one pop too many */
	outer = find_range(XPU_RANGE_PUSH, 0);
	inner = find_range(XPU_RANGE_PUSH, 1);
	pop_in = find_range(XPU_RANGE_POP, 0);
	pop_out = find_range(XPU_RANGE_POP, 1);
	a = find(XPU_REC_CUDA_API, 7, 42, NULL);
	k = find(XPU_REC_GPU_KERNEL, 7, 42, NULL);
	other = NULL;
	for (unsigned int i = 0; i < out.n; i++)
		if (out.ev[i].kind == XPU_REC_CPU_SAMPLE)
			other = &out.ev[i];
	if (!outer || !inner || !pop_in || !pop_out || !a || !k || !other) {
		tap_ok(0, "nesting: every event went out");
		join__free(j);
		return;
	}
	tap_ok(outer->root_id == outer->id && outer->parent_id == 0,
	       "an outermost range is its own root, without a parent");
	tap_ok(inner->parent_id == outer->id && inner->root_id == outer->id &&
		       has_link(inner, XPU_LINK_INSIDE_RANGE, outer->id),
	       "a nested range: parent and root the outer one, inside_range link");
	tap_ok(a->parent_id == inner->id && a->root_id == outer->id &&
		       a->corr_type == XPU_CORR_NESTING &&
		       has_link(a, XPU_LINK_INSIDE_RANGE, inner->id),
	       "an API call inside both: parent the inner range, root the outer");
	tap_ok(k->parent_id == a->id && k->root_id == outer->id &&
		       has_link(k, XPU_LINK_LAUNCHED_BY, a->id) &&
		       has_link(k, XPU_LINK_INSIDE_RANGE, inner->id),
	       "its kernel: launched_by the API, inside the launch's range, rooted in the user scope");
	tap_ok(other->parent_id == 0 && other->n_links == 0,
	       "a sample on another thread is not inside this thread's ranges");
	tap_ok(has_link(pop_in, XPU_LINK_COMPLETES, inner->id) && pop_in->parent_id == outer->id &&
		       has_link(pop_out, XPU_LINK_COMPLETES, outer->id) && pop_out->parent_id == 0,
	       "pops complete their pushes, innermost first");
	join__stats(j, &st);
	tap_eq_u64(st.nest_lost, 1, "a pop without a push is counted, not a crash");
	join__free(j);
}

static void test_linger(void)
{
	struct join_opts o = { .ttl_ns = 1000,
			       .exit_grace_ns = 100,
			       .linger_ns = 50,
			       .max_pending = 16,
			       .max_waiting = 16 };
	struct join_stats st;
	struct join *j;

	out.n = 0;
	j = join__new(&o, collect, &out);
	offer(j, api(3, 1), 0);
	offer(j, kernel(3, 1), 10); /* first kernel of a graph launch */
	offer(j, kernel(3, 1), 40); /* another one, within the linger */
	join__expire(j, 59);
	join__stats(j, &st);
	tap_ok(st.matched == 2 && st.pending == 1, "graph kernels within linger_ns all join");
	join__expire(j, 60);
	join__stats(j, &st);
	tap_ok(st.pending == 0 && st.expired == 1,
	       "a matched key is dropped linger_ns after its first match, long before its TTL");
	join__free(j);
}

/* The timestamp strategy: a GPU record without a launch by id takes the latest API call of
 * its process that began within the window before it, with confidence 0.5. */
static void test_timestamp(void)
{
	struct join_opts o = { .ttl_ns = 1000,
			       .exit_grace_ns = 100,
			       .linger_ns = 100,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .time_window_ns = 2000000 };
	const struct xpu_cevent *a1, *k;
	struct join_stats st;
	struct kernel_ts {
		__u64 corr, start;
	} cases[] = { { 0, 1500000 }, { 0, 9000000 } };
	struct join *j;
	unsigned int i;

	out.n = 0;
	j = join__new(&o, collect, &out);
	api(3, 77); /* at ts 77 + its own corr: enter ts is 77 */
	((struct xpu_rec *)buf)->ts_ns = 1000000;
	offer(j, buf, 1);
	for (i = 0; i < 2; i++) {
		struct xpu_gpu_kernel *kr = kernel(3, cases[i].corr);

		kr->start_ns = kr->hdr.ts_ns = cases[i].start;
		offer(j, kr, 2 + i);
	}
	a1 = find(XPU_REC_CUDA_API, 3, 77, NULL);
	k = find(XPU_REC_GPU_KERNEL, 3, 0, NULL);
	tap_ok(a1 && k && k->corr_type == XPU_CORR_TIMESTAMP && k->confidence == 0.5f &&
		       k->links[0].type == XPU_LINK_LAUNCHED_BY && k->links[0].target == a1->id,
	       "timestamp: a kernel 0.5 ms after an API call of its process joins it, confidence 0.5");
	join__stats(j, &st);
	tap_ok(st.time_matched == 1 && st.unmatched == 1,
	       "timestamp: one 8 ms after it (window 2 ms) stays unmatched");
	join__free(j);
}

static void *kernel_on(__u32 pid, __u32 stream, __u64 start, __u64 end)
{
	struct xpu_gpu_kernel *k = kernel(pid, 0); /* correlation id 0: out at once */

	k->hdr.ts_ns = k->start_ns = start;
	k->end_ns = end;
	k->stream_id = stream;
	return buf;
}

static __u32 gone_pids[8], n_gone;

static void on_gone(__u32 pid, void *ctx)
{
	(void)ctx;
	if (n_gone < 8)
		gone_pids[n_gone++] = pid;
}

/* The id of the last event out, and whether it links same_stream_prev to `prev`. */
static __u64 last_id(void)
{
	return out.ev[out.n - 1].id;
}

static bool prev_is(__u64 prev)
{
	const struct xpu_cevent *ev = &out.ev[out.n - 1];

	return prev ? has_link(ev, XPU_LINK_SAME_STREAM_PREV, prev) :
		      !has_link(ev, XPU_LINK_SAME_STREAM_PREV, 0) && ev->n_links == 0;
}

/* Seed 002's per-(pid, stream) state: order on a stream whatever the arrival order within
 * the window, overlaps counted, cleanup at exit grace and after inactivity, a bound. */
static void test_streams(void)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 100,
			       .linger_ns = 100,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .max_streams = 16,
			       .stream_idle_ns = 1000 };
	__u64 k100, k200, k300, k400;
	struct join_stats st;
	struct join *j;
	__u32 i;

	out.n = 0;
	j = join__new(&o, collect, &out);
	join__set_gone(j, on_gone);
	offer(j, kernel_on(5, 7, 100, 150), 1);
	k100 = last_id();
	tap_ok(prev_is(0), "the first kernel on a stream has no same_stream_prev");
	offer(j, kernel_on(5, 7, 300, 350), 2); /* 200 is late, as CUPTI buffers deliver */
	k300 = last_id();
	tap_ok(prev_is(k100), "the next one links to it");
	offer(j, kernel_on(5, 7, 200, 250), 3);
	k200 = last_id();
	tap_ok(prev_is(k100), "a late one links to the one before it by start time");
	offer(j, kernel_on(5, 8, 210, 260), 4);
	tap_ok(prev_is(0), "another stream of the same process is separate");
	offer(j, kernel_on(6, 7, 220, 270), 5);
	tap_ok(prev_is(0), "so is the same stream number in another process");
	offer(j, kernel_on(5, 7, 400, 500), 6);
	k400 = last_id();
	tap_ok(prev_is(k300) && k200 != k300, "order resumes after the late one");
	offer(j, kernel_on(5, 7, 450, 600), 7);
	tap_ok(prev_is(k400), "an overlapping kernel still links");
	join__stats(j, &st);
	tap_ok(st.stream_unordered == 1 && st.stream_overlaps == 1 && st.streams == 3,
	       "one late arrival, one overlap, three streams counted");

	offer(j, proc_exit(5), 10);
	join__expire(j, 109);
	join__stats(j, &st);
	tap_ok(st.streams == 3 && n_gone == 0, "a process's streams stay for its exit grace");
	join__expire(j, 110);
	join__stats(j, &st);
	tap_ok(st.streams == 1 && st.streams_dropped == 2 && n_gone == 1 && gone_pids[0] == 5,
	       "then they go, and the shard is told the process is gone");
	offer(j, kernel_on(5, 7, 700, 800), 120);
	tap_ok(prev_is(0), "a new stream state starts for a reused pid");

	offer(j, kernel_on(6, 7, 300, 310), 900); /* pid 6 stream 7 active until 900 */
	join__expire(j, 1005);
	join__stats(j, &st);
	tap_eq_u64(st.streams, 2, "an active stream is not dropped when first due");
	join__expire(j, 1200);
	join__stats(j, &st);
	tap_eq_u64(st.streams, 1, "an idle one is (pid 5's new stream, idle since 120)");
	join__expire(j, 2100);
	join__stats(j, &st);
	tap_eq_u64(st.streams, 0, "within two idle periods every idle stream is gone");

	for (i = 0; i < 17; i++)
		offer(j, kernel_on(9, i, 100, 110), 3000);
	join__stats(j, &st);
	tap_ok(st.streams == 16 && st.streams_full == 1, "at most max_streams, the rest counted");
	join__free(j);
}

static void *sample_at(__u32 pid, __u32 tid, __u64 ts)
{
	__u64 kips[2] = { 0xffffffff81000000ull, 0xffffffff81000010ull };
	__u64 uips[3] = { 0x401000, 0x402000, 0x403000 };

	xpu_cpu_sample__build(buf, sizeof(buf), ts, pid, tid, 0, 1, "t", kips, 2, uips, 3);
	return buf;
}

/* Seed 001's entry/exit for API calls: a CPU sample inside a call of its thread is its child.
 * The timestamp strategy's fallback: the CPU sample just before GPU work with no call near. */
static void test_samples(void)
{
	struct join_opts o = { .ttl_ns = 1000,
			       .exit_grace_ns = 100,
			       .linger_ns = 100,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .time_window_ns = 2000000 };
	const struct xpu_cevent *a, *ev;
	struct xpu_gpu_kernel *kr;
	struct join_stats st;
	struct join *j;

	out.n = 0;
	j = join__new(&o, collect, &out);
	api(3, 77); /* pid 3, tid 3, 77 .. 82 */
	offer(j, buf, 1);
	a = find(XPU_REC_CUDA_API, 3, 77, NULL);
	offer(j, sample_at(3, 3, 80), 2);
	ev = &out.ev[out.n - 1];
	tap_ok(a && has_link(ev, XPU_LINK_SAMPLED_IN, a->id) && ev->parent_id == a->id &&
		       ev->corr_type == XPU_CORR_NESTING,
	       "a CPU sample inside an API call of its thread is its child (sampled_in)");
	offer(j, sample_at(3, 4, 80), 3);
	tap_ok(out.ev[out.n - 1].n_links == 0, "a sample of another thread at that time is not");
	offer(j, sample_at(3, 3, 90), 4);
	tap_ok(out.ev[out.n - 1].n_links == 0, "nor one after the call returned");

	offer(j, sample_at(3, 3, 5000000), 5);
	ev = &out.ev[out.n - 1];
	kr = kernel(3, 0);
	kr->start_ns = kr->hdr.ts_ns = 5500000; /* no API call within 2 ms; the sample is */
	kr->hdr.tid = 0;
	offer(j, kr, 6);
	tap_ok(out.ev[out.n - 1].corr_type == XPU_CORR_TIMESTAMP &&
		       out.ev[out.n - 1].confidence == 0.25f &&
		       has_link(&out.ev[out.n - 1], XPU_LINK_LAUNCHED_BY, ev->id) &&
		       out.stack0[out.n - 1] == 0x401000 && out.ev[out.n - 1].n_user == 3,
	       "timestamp: GPU work with no call near takes the sample just before, its user stack, confidence 0.25");
	kr = kernel(3, 0);
	kr->start_ns = kr->hdr.ts_ns = 9000000;
	offer(j, kr, 7);
	join__stats(j, &st);
	tap_ok(st.sampled_in == 1 && st.time_matched_samples == 1 && st.unmatched == 1,
	       "counted: one sampled_in, one joined to a sample, one too far from both");
	join__free(j);
}

/* ---- nesting by timestamp ---- */

static void *range_at(__u32 pid, __u32 tid, __u32 phase, const char *name, __u64 ts)
{
	xpu_range__build(buf, sizeof(buf), ts, pid, tid, phase, 0, 0, 0, name,
			 name ? strlen(name) : 0);
	return buf;
}

static void *thread_exit(__u32 pid, __u32 tid, __u64 ts)
{
	struct xpu_proc_exit *e = (void *)buf;

	xpu_rec__init(e, XPU_REC_PROC_EXIT, sizeof(*e), ts, pid, tid);
	return buf;
}

static const struct xpu_cevent *last(void)
{
	return &out.ev[out.n - 1];
}

/* Push a range and return its event id. */
static __u64 push_at(struct join *j, __u32 pid, __u32 tid, const char *name, __u64 ts)
{
	offer(j, range_at(pid, tid, XPU_RANGE_PUSH, name, ts), 1);
	return last()->id;
}

static bool nested_in(const struct xpu_cevent *ev, __u64 parent, __u64 root)
{
	return ev->parent_id == parent && ev->root_id == root &&
	       ev->corr_type == XPU_CORR_NESTING && has_link(ev, XPU_LINK_INSIDE_RANGE, parent);
}

static bool not_nested(const struct xpu_cevent *ev)
{
	return !ev->parent_id && !ev->root_id && !ev->n_links && ev->corr_type == XPU_CORR_NONE;
}

/*
 * CPU samples come through the CPU source's ring tens of ms after they were taken, when the
 * program's range records (another ring) have long said that the ranges around them closed:
 * a sample is placed by its own timestamp, among the open ranges and the thread's history
 * of closed ones.
 */
static void test_nest_by_ts(void)
{
	__u64 outer, inner, epoch = 0, open2, worker, again;
	struct join_stats st;
	struct join *j = fresh(64, 64, 1000000);
	unsigned int i;

	/* outer [100, 200] { inner [110, 150] }, then open2 from 300, all before any sample */
	outer = push_at(j, 7, 70, "outer", 100);
	inner = push_at(j, 7, 70, "inner", 110);
	offer(j, range_at(7, 70, XPU_RANGE_POP, NULL, 150), 3);
	offer(j, range_at(7, 70, XPU_RANGE_POP, NULL, 200), 4);
	open2 = push_at(j, 7, 70, "open2", 300);

	offer(j, sample_at(7, 70, 120), 6);
	tap_ok(nested_in(last(), inner, outer),
	       "by ts: a sample inside a closed inner range: parent the inner, root the outer");
	offer(j, sample_at(7, 70, 105), 7);
	tap_ok(nested_in(last(), outer, outer),
	       "by ts: one inside the outer range only: parent and root the outer");
	offer(j, sample_at(7, 70, 150), 8);
	tap_ok(nested_in(last(), inner, outer), "by ts: a range's end is still inside it");
	offer(j, sample_at(7, 70, 250), 9);
	tap_ok(not_nested(last()), "by ts: a sample between two closed ranges is not nested");
	offer(j, sample_at(7, 70, 90), 10);
	tap_ok(not_nested(last()), "by ts: nor one before the first range");
	offer(j, sample_at(7, 70, 310), 11);
	tap_ok(nested_in(last(), open2, open2),
	       "by ts: one newer than every range record: the open ranges, as on arrival");
	offer(j, sample_at(7, 71, 120), 12);
	tap_ok(not_nested(last()), "by ts: another thread's sample at that time is not nested");

	/* an inner range pushed after the sample: the sample is in the outer one only */
	push_at(j, 7, 70, "late", 400);
	offer(j, sample_at(7, 70, 350), 16);
	tap_ok(nested_in(last(), open2, open2),
	       "by ts: an open range pushed after the sample does not hold it");
	offer(j, range_at(7, 70, XPU_RANGE_POP, NULL, 410), 17);
	offer(j, range_at(7, 70, XPU_RANGE_POP, NULL, 420), 18);
	join__stats(j, &st);
	tap_ok(st.nest_closed == 3 && st.nest_too_old == 0,
	       "by ts: placements in closed ranges counted (%llu)",
	       (unsigned long long)st.nest_closed);

	/* the history holds the last 128 closed ranges of a thread: older samples are lost */
	for (i = 0; i < 200; i++) {
		epoch = push_at(j, 7, 70, "epoch", 1000 + 10 * i);
		offer(j, range_at(7, 70, XPU_RANGE_POP, NULL, 1005 + 10 * i), 21);
	}
	offer(j, sample_at(7, 70, 120), 22);
	tap_ok(not_nested(last()), "too old: a sample older than the history is not nested");
	offer(j, sample_at(7, 70, 1000 + 10 * 60 + 2), 23);
	tap_ok(not_nested(last()), "too old: nor one inside a range the history dropped");
	offer(j, sample_at(7, 70, 1000 + 10 * 199 + 2), 24);
	tap_ok(nested_in(last(), epoch, epoch), "a sample inside a range still held is nested");
	offer(j, sample_at(7, 70, 1000 + 10 * 199 + 7), 25);
	tap_ok(not_nested(last()), "after the last range: not nested, not too old");
	join__stats(j, &st);
	tap_eq_u64(st.nest_too_old, 2, "too old: counted");

	/* a thread's exit ends its open ranges: its late samples still find them */
	worker = push_at(j, 7, 72, "worker", 5000);
	offer(j, thread_exit(7, 72, 5100), 31);
	offer(j, sample_at(7, 72, 5050), 32);
	tap_ok(nested_in(last(), worker, worker),
	       "a late sample of an exited thread is inside the ranges open at its exit");
	offer(j, sample_at(7, 72, 5200), 33);
	tap_ok(not_nested(last()), "one after the exit is not");
	/* the process's threads go with its exit grace */
	offer(j, thread_exit(7, 7, 6000), 40);
	offer(j, sample_at(7, 72, 5050), 50);
	tap_ok(nested_in(last(), worker, worker), "within the process's exit grace, still found");
	join__expire(j, 40 + 100);
	offer(j, sample_at(7, 72, 5050), 150);
	tap_ok(not_nested(last()), "after it, the thread's state is gone");
	again = push_at(j, 7, 70, "again", 7000);
	offer(j, sample_at(7, 70, 7001), 152);
	tap_ok(nested_in(last(), again, again), "a thread seen again starts afresh");
	join__free(j);
}

/*
 * A program's range records come in its batches (the annotate library's), often after the CPU
 * samples taken inside them: with range_wait_ns, a sample of a process with ranges waits until
 * its thread's range records reach its time, or range_wait_ns at most.
 */
static void test_range_wait(void)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 100000,
			       .linger_ns = 100,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .range_wait_ns = 1000 };
	__u64 epoch, fwd, n0;
	struct join_stats st;
	struct join *j;
	unsigned int i, n;

	out.n = 0;
	j = join__new(&o, collect, &out);
	offer(j, sample_at(8, 80, 50), 1);
	tap_ok(out.n == 1 && not_nested(last()), "range wait: a process without ranges: at once");
	epoch = push_at(j, 8, 80, "epoch", 100); /* the program's first record, flushed at once */
	n = out.n;
	offer(j, sample_at(8, 80, 120), 2);
	offer(j, sample_at(8, 80, 130), 3);
	offer(j, sample_at(8, 81, 125), 3); /* a thread of it that never pushes */
	tap_ok(out.n == n, "range wait: samples past its thread's range records are held");
	fwd = push_at(j, 8, 80, "fwd", 110); /* the batch: fwd [110, 140] */
	tap_ok(out.n == n + 1, "range wait: a push before them lets none go");
	offer(j, range_at(8, 80, XPU_RANGE_POP, NULL, 140), 5);
	tap_ok(out.n == n + 4 && out.ev[n + 2].kind == XPU_REC_CPU_SAMPLE &&
		       out.ev[n + 2].ts_ns == 120 && nested_in(&out.ev[n + 2], fwd, epoch) &&
		       out.ev[n + 3].ts_ns == 130 && nested_in(&out.ev[n + 3], fwd, epoch),
	       "range wait: the pop past them lets them go, inside the range they missed");
	join__stats(j, &st);
	tap_ok(st.range_waited == 3 && st.range_held == 1 && st.range_wait_expired == 0,
	       "range wait: counted: 3 held, 1 still held");
	join__expire(j, 3 + 999);
	tap_ok(out.n == n + 4, "range wait: the other thread's waits its time");
	join__expire(j, 3 + 1000);
	join__stats(j, &st);
	tap_ok(out.n == n + 5 && out.ev[n + 4].tid == 81 && not_nested(&out.ev[n + 4]) &&
		       st.range_wait_expired == 1 && st.range_held == 0,
	       "range wait: then goes as it is, counted as expired");
	offer(j, sample_at(8, 80, 135), 10);
	tap_ok(out.n == n + 6 && nested_in(last(), fwd, epoch),
	       "range wait: a sample the records have passed goes at once");

	/* a process's exit: its held samples go out before the exit does */
	n0 = out.n;
	offer(j, sample_at(8, 80, 150), 20);
	offer(j, thread_exit(8, 8, 160), 21);
	tap_ok(out.n == n0 + 2 && out.ev[n0].kind == XPU_REC_CPU_SAMPLE &&
		       nested_in(&out.ev[n0], epoch, epoch) &&
		       out.ev[n0 + 1].kind == XPU_REC_PROC_EXIT,
	       "range wait: an exit lets its process's samples go first, nested");

	/* bounded: past HOLD_MAX (8192) the oldest goes early, counted */
	push_at(j, 9, 90, "epoch", 100);
	for (i = 0; i <= 8192; i++)
		offer(j, sample_at(9, 90, 200 + i), 30);
	join__stats(j, &st);
	tap_ok(st.range_wait_full == 1 && st.range_held == 8192,
	       "range wait: at most 8192 held, the oldest let go early and counted (%llu, %llu)",
	       (unsigned long long)st.range_wait_full, (unsigned long long)st.range_held);
	join__flush(j);
	join__stats(j, &st);
	tap_ok(st.range_held == 0, "range wait: a flush lets every held sample go");
	for (i = 0; i < 4; i++) /* held at the end: join__free frees them (ASan) */
		offer(j, sample_at(9, 90, 20000 + i), 40);
	join__free(j);
}

/* ---- CUDA graphs ---- */

#define NODE_FRAME(node) (0x700000 + (node)*16)

/* A graph node's creation: the marker's LAUNCH with the node id as its correlation id. */
static void *node_launch(__u32 pid, __u64 node)
{
	__u64 ips[4] = { NODE_FRAME(node), 0x700008, 0x700010, 0x700018 };

	xpu_launch__build(buf, sizeof(buf), 50, pid, pid, XPU_LAUNCH_GRAPH_NODE | node,
			  XPU_LAUNCH_API_GRAPH_NODE, ips, 4);
	return buf;
}

static void *graph_kernel(__u32 pid, __u64 corr, __u64 node)
{
	struct xpu_gpu_kernel *k = kernel(pid, corr);

	k->hdr.flags = XPU_KERNEL_F_GRAPH;
	k->graph_node_id = node;
	return buf;
}

/* Kernels of a graph launch share its correlation id; each one takes the stack that created
 * its node, or, without one, the graph launch's, marked approximate. */
static void test_graph(void)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 100,
			       .linger_ns = 1000000,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .max_graph_nodes = 4 };
	const struct xpu_cevent *n, *l, *a, *k;
	struct join_stats st;
	struct join *j = fresh(64, 64, 1000000);
	unsigned int ki = 0, i;
	bool ok;

	offer(j, node_launch(9, 0x55), 1);
	n = find(XPU_REC_LAUNCH, 9, XPU_LAUNCH_GRAPH_NODE | 0x55, NULL);
	join__stats(j, &st);
	tap_ok(n && n->api_id == XPU_LAUNCH_API_GRAPH_NODE && n->n_user == 4 && st.pending == 0 &&
		       st.graph_nodes == 1,
	       "graph: a node's creation goes out as a LAUNCH event, kept as a node, no key");
	offer(j, launch(9, 300, 3), 2); /* cudaGraphLaunch */
	offer(j, api(9, 300), 3);
	offer(j, graph_kernel(9, 300, 0x55), 4);
	offer(j, graph_kernel(9, 300, 0x55), 5);
	l = find(XPU_REC_LAUNCH, 9, 300, NULL);
	a = find(XPU_REC_CUDA_API, 9, 300, NULL);
	for (ok = l && a, i = out.n - 2; ok && i < out.n; i++) {
		k = &out.ev[i];
		ok = k->kind == XPU_REC_GPU_KERNEL && k->corr_type == XPU_CORR_EXACT_ID &&
		     k->confidence == 1.0f && k->n_user == 4 && out.stack0[i] == NODE_FRAME(0x55) &&
		     has_link(k, XPU_LINK_LAUNCHED_BY, l->id) &&
		     has_link(k, XPU_LINK_LAUNCHED_BY, a->id) && k->parent_id == l->id;
	}
	tap_ok(ok, "graph: its kernels carry the node's creation stack, exact, launched_by the "
		   "graph launch");
	offer(j, graph_kernel(9, 300, 0x66), 6); /* a node created before we started */
	k = last();
	ki = out.n - 1;
	tap_ok(k->corr_type == XPU_CORR_APPROXIMATE && k->confidence == 0.5f && k->n_user == 3 &&
		       out.stack0[ki] == 0x400000 + 300 * 16 && l &&
		       has_link(k, XPU_LINK_LAUNCHED_BY, l->id),
	       "graph: a kernel of a node without a creation stack: the graph launch's, "
	       "approximate");
	offer(j, kernel(9, 300), 7); /* no graph flag: as before */
	tap_ok(last()->corr_type == XPU_CORR_EXACT_ID && last()->n_user == 3,
	       "a kernel without the graph flag is joined as before");
	/* a copy node and a memset node of the same graph launch */
	{
		struct xpu_gpu_memcpy *m = copy(9, 300, 8);
		struct xpu_gpu_memset ms;

		m->hdr.flags = XPU_COPY_F_GRAPH | XPU_COPY_F_ASYNC;
		m->graph_node_id = 0x55;
		m->graph_id = 2;
		offer(j, m, 8);
		k = last();
		ki = out.n - 1;
		tap_ok(k->kind == XPU_REC_GPU_MEMCPY && k->corr_type == XPU_CORR_EXACT_ID &&
			       k->n_user == 4 && out.stack0[ki] == NODE_FRAME(0x55) &&
			       k->graph_node_id == 0x55 && k->graph_id == 2 && l &&
			       has_link(k, XPU_LINK_LAUNCHED_BY, l->id),
		       "graph: a copy node's copy carries the node's creation stack, exact, "
		       "launched_by the graph launch");
		memset(&ms, 0, sizeof(ms));
		xpu_rec__init(&ms, XPU_REC_GPU_MEMSET, sizeof(ms), 9, 9, 0);
		ms.start_ns = 9;
		ms.end_ns = 19;
		ms.correlation_id = 300;
		ms.hdr.flags = XPU_COPY_F_GRAPH;
		ms.graph_node_id = 0x77; /* created before we started */
		offer(j, &ms, 9);
		k = last();
		ki = out.n - 1;
		tap_ok(k->kind == XPU_REC_GPU_MEMSET && k->corr_type == XPU_CORR_APPROXIMATE &&
			       k->confidence == 0.5f && out.stack0[ki] == 0x400000 + 300 * 16 &&
			       k->graph_node_id == 0x77,
		       "graph: a memset node without a creation stack: the graph launch's, "
		       "approximate");
		/* async (bit 0, the kernels' graph bit) but no graph flag: the launch's stack */
		m = copy(9, 300, 10);
		m->hdr.flags = XPU_COPY_F_ASYNC;
		offer(j, m, 10);
		tap_ok(last()->corr_type == XPU_CORR_EXACT_ID && last()->n_user == 3 &&
			       !last()->graph_node_id,
		       "an async copy without the graph flag is joined as before");
		ms.hdr.flags = XPU_COPY_F_ASYNC;
		ms.graph_node_id = 0;
		offer(j, &ms, 11);
		tap_ok(last()->kind == XPU_REC_GPU_MEMSET &&
			       last()->corr_type == XPU_CORR_EXACT_ID && last()->n_user == 3 &&
			       out.stack0[out.n - 1] == 0x400000 + 300 * 16,
		       "an async memset without the graph flag is joined as before");
	}
	join__stats(j, &st);
	tap_ok(st.graph_node_stacks == 3 && st.graph_approximate == 2 && st.matched == 8,
	       "graph: counted (node stacks %llu, approximate %llu)",
	       (unsigned long long)st.graph_node_stacks, (unsigned long long)st.graph_approximate);

	/* the node state goes with the process's exit grace */
	offer(j, proc_exit(9), 10);
	offer(j, launch(9, 301, 3), 20);
	offer(j, graph_kernel(9, 301, 0x55), 30);
	tap_ok(last()->corr_type == XPU_CORR_EXACT_ID && out.stack0[out.n - 1] == NODE_FRAME(0x55),
	       "graph: within the exit grace the node's stack is still there");
	join__expire(j, 110);
	join__stats(j, &st);
	tap_eq_u64(st.graph_nodes, 0, "graph: after the exit grace, the node stacks are gone");
	offer(j, launch(9, 302, 3), 120);
	offer(j, graph_kernel(9, 302, 0x55), 121);
	tap_ok(last()->corr_type == XPU_CORR_APPROXIMATE,
	       "graph: a later kernel of that node is approximate");
	join__free(j);

	/* the table keeps the newest max_graph_nodes nodes */
	out.n = 0;
	j = join__new(&o, collect, &out);
	for (i = 1; i <= 6; i++)
		offer(j, node_launch(4, i), i);
	offer(j, node_launch(4, 6), 7); /* created again: replaced, not another one */
	join__stats(j, &st);
	tap_ok(st.graph_nodes == 4 && st.graph_nodes_evicted == 2,
	       "graph: at the cap the oldest nodes go, counted (%llu held, %llu evicted)",
	       (unsigned long long)st.graph_nodes, (unsigned long long)st.graph_nodes_evicted);
	offer(j, api(4, 500), 8);
	offer(j, graph_kernel(4, 500, 1), 9);
	tap_ok(last()->corr_type == XPU_CORR_APPROXIMATE, "graph: an evicted node's kernel is "
							  "approximate");
	offer(j, graph_kernel(4, 500, 6), 10);
	tap_ok(last()->corr_type == XPU_CORR_EXACT_ID && out.stack0[out.n - 1] == NODE_FRAME(6) &&
		       last()->n_user == 4,
	       "graph: a held node's kernel has its stack (no graph launch stack needed)");
	/* a kernel that waits for its graph launch takes what is known when it goes out */
	offer(j, graph_kernel(4, 501, 7), 11);
	offer(j, node_launch(4, 7), 12);
	offer(j, api(4, 501), 13);
	tap_ok(last()->kind == XPU_REC_GPU_KERNEL && last()->corr_type == XPU_CORR_EXACT_ID &&
		       out.stack0[out.n - 1] == NODE_FRAME(7),
	       "graph: a kernel released by its launch after its node came has the node's stack");
	join__flush(j);
	join__stats(j, &st);
	tap_ok(st.pending == 0 && st.waiting == 0 && out.n == st.in,
	       "graph: every record out once, nothing held after flush");
	join__free(j);
}

static unsigned int count_links(const struct xpu_cevent *ev, __u32 type)
{
	unsigned int i, n = 0;

	for (i = 0; i < ev->n_links; i++)
		n += ev->links[i].type == type;
	return n;
}

/* With launch_wait_ns (a cpu source sends LAUNCHes, later than CUPTI sends the rest), a
 * kernel whose API call came waits for its LAUNCH's stack, for a while. */
static void test_launch_wait(void)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 100,
			       .linger_ns = 1000000,
			       .max_pending = 64,
			       .max_waiting = 2,
			       .launch_wait_ns = 100 };
	struct join_stats st;
	struct join *j;
	unsigned int n;

	out.n = 0;
	j = join__new(&o, collect, &out);
	offer(j, marked_api(2, 1), 10);
	offer(j, kernel(2, 1), 11);
	tap_eq_u64(out.n, 1, "launch wait: a kernel whose API call came waits for its LAUNCH");
	offer(j, launch(2, 1, 3), 50);
	tap_ok(out.n == 3 && last()->kind == XPU_REC_GPU_KERNEL && last()->n_links == 2 &&
		       last()->n_user == 3 && out.stack0[out.n - 1] == 0x400000 + 16,
	       "launch wait: the LAUNCH releases it, with both links and the stack");

	offer(j, kernel(2, 2), 60); /* kernel first, then its API call: still waits */
	offer(j, marked_api(2, 2), 61);
	n = out.n;
	join__expire(j, 160);
	tap_eq_u64(out.n, n, "launch wait: nothing given up before the wait is over");
	join__expire(j, 161);
	tap_ok(out.n == n + 1 && last()->kind == XPU_REC_GPU_KERNEL &&
		       count_links(last(), XPU_LINK_LAUNCHED_BY) == 1 &&
		       last()->corr_type == XPU_CORR_EXACT_ID && last()->n_user == 0,
	       "launch wait: no LAUNCH in time: out with the API call alone");
	offer(j, kernel(2, 2), 170);
	tap_ok(out.n == n + 2 && last()->kind == XPU_REC_GPU_KERNEL,
	       "launch wait: later kernels of that key go at once");

	offer(j, api(2, 3), 180);
	offer(j, copy(2, 3, 190), 181);
	tap_ok(last()->kind == XPU_REC_GPU_MEMCPY && last()->corr_type == XPU_CORR_EXACT_ID,
	       "launch wait: a copy of an unmarked call (no LAUNCH ever) goes out at once");

	offer(j, marked_api(2, 4), 200);
	offer(j, kernel(2, 4), 201);
	offer(j, kernel(2, 4), 202); /* max_waiting is 2 */
	offer(j, kernel(2, 4), 203); /* no room: out with what is known */
	join__stats(j, &st);
	tap_ok(last()->kind == XPU_REC_GPU_KERNEL && last()->corr_type == XPU_CORR_EXACT_ID &&
		       st.evicted == 0,
	       "launch wait: with no room to wait, a kernel goes out joined to its API call");
	tap_ok(st.launch_waited == 4 && st.launch_wait_expired == 1,
	       "launch wait: counted (waited %llu, expired %llu)",
	       (unsigned long long)st.launch_waited, (unsigned long long)st.launch_wait_expired);

	/* a graph launch: its kernels wait for its LAUNCH, and so find the node's stack that came
	 * through the same ring before it */
	join__expire(j, 301); /* key 4's wait is over: room to wait again */
	offer(j, marked_api(2, 5), 310);
	offer(j, graph_kernel(2, 5, 0x31), 311);
	offer(j, node_launch(2, 0x31), 312);
	offer(j, launch(2, 5, 3), 313);
	tap_ok(last()->kind == XPU_REC_GPU_KERNEL && last()->corr_type == XPU_CORR_EXACT_ID &&
		       out.stack0[out.n - 1] == NODE_FRAME(0x31),
	       "launch wait: a graph kernel waits for its launch and gets its node's stack");
	/* a call the CUPTI library did not mark (launch_stacks = no): nothing to wait for */
	offer(j, api(2, 6), 320);
	offer(j, kernel(2, 6), 321);
	tap_ok(last()->kind == XPU_REC_GPU_KERNEL && last()->corr_type == XPU_CORR_EXACT_ID &&
		       last()->n_user == 0,
	       "launch wait: a kernel of an unmarked API call goes out at once");
	/* a copy the library marked (its stack is recorded as a launch's): it waits like a
	 * kernel and goes out with the LAUNCH's stack */
	offer(j, marked_api(2, 7), 330);
	n = out.n;
	offer(j, copy(2, 7, 335), 331);
	tap_eq_u64(out.n, n, "launch wait: a copy of a marked call waits for its LAUNCH");
	offer(j, launch(2, 7, 3), 332);
	tap_ok(out.n == n + 2 && last()->kind == XPU_REC_GPU_MEMCPY && last()->n_user == 3 &&
		       out.stack0[out.n - 1] == 0x400000 + 7 * 16,
	       "launch wait: the LAUNCH releases the copy, with its stack");
	join__flush(j);
	join__stats(j, &st);
	tap_ok(out.n == st.in && st.waiting == 0 && st.pending == 0,
	       "launch wait: every record out once");
	join__free(j);
}

/* ---- counters ---- */

/* Counter names as STRING records of kind counter would give them; id 6 has none. Kernel
 * and range ids name nothing: the ids of the two spaces must not mix. */
static const char *counter_name(__u32 pid, __u64 id, __u32 kind, __u32 *len, void *ctx)
{
	static const char *const names[] = { NULL,	     "instructions", "cycles",
					     "cache-misses", "task-clock",   "page-faults" };
	(void)pid;
	(void)ctx;
	*len = 0;
	if (kind != XPU_STR_COUNTER || id >= sizeof(names) / sizeof(names[0]) || !names[id])
		return NULL;
	*len = (__u32)strlen(names[id]);
	return names[id];
}

static void *reading(__u32 pid, __u64 id, __u64 ts, __u64 value, __u64 enabled, __u64 running)
{
	struct xpu_pmu_counter *c = (void *)buf;

	xpu_rec__init(c, XPU_REC_PMU_COUNTER, sizeof(*c), ts, pid, pid);
	c->counter_id = id;
	c->value = value;
	c->delta = value / 2;
	c->time_enabled = enabled;
	c->time_running = running;
	c->cpu = XPU_PMU_NO_CPU;
	c->scope = XPU_PMU_SCOPE_PROCESS;
	return buf;
}

static void *kernel_at(__u32 pid, __u64 start, __u64 end)
{
	struct xpu_gpu_kernel *k = kernel(pid, 0); /* no correlation id: out at once */

	k->hdr.ts_ns = k->start_ns = start;
	k->end_ns = end;
	return buf;
}

static struct join *counters_join(__u32 shard)
{
	struct join_opts o = { .ttl_ns = 1000000,
			       .exit_grace_ns = 100,
			       .linger_ns = 100,
			       .max_pending = 64,
			       .max_waiting = 64,
			       .shard = shard };
	struct join *j;

	out.n = 0;
	j = join__new(&o, collect, &out);
	join__set_names(j, counter_name);
	join__set_gone(j, on_gone);
	return j;
}

/* The last event's counter called name: its delta, or -1 when it has none. */
static double counter_of(const char *name)
{
	const struct xpu_cevent *ev = &out.ev[out.n - 1];
	__u32 i;

	for (i = 0; i < ev->n_counters; i++)
		if (ev->counters[i].name_len == strlen(name) &&
		    !memcmp(ev->counters[i].name, name, ev->counters[i].name_len))
			return ev->counters[i].delta;
	return -1;
}

static bool near(double got, double want)
{
	bool ok = got > want - 1e-6 && got < want + 1e-6;

	if (!ok)
		tap_diag("got %.9g, want %.9g", got, want);
	return ok;
}

/*
 * Readings of pid 7, times 1000, 2000, 3000: instructions 0, 1000, 3000; cycles 0, 2000,
 * 4000; cache-misses counted half the time (scaled x2) 0, 200, 400 from raw 0, 100, 200.
 */
static void counters_readings(struct join *j, __u32 pid)
{
	static const __u64 insn[3] = { 0, 1000, 3000 }, cyc[3] = { 0, 2000, 4000 };
	__u32 i;

	for (i = 0; i < 3; i++) {
		offer(j, reading(pid, 3, 1000 * (i + 1), 100 * i, 1000 * (i + 1), 500 * (i + 1)),
		      1);
		offer(j, reading(pid, 1, 1000 * (i + 1), insn[i], 1, 1), 1);
		offer(j, reading(pid, 2, 1000 * (i + 1), cyc[i], 1, 1), 1);
	}
}

static void test_counters(void)
{
	const struct xpu_cevent *ev;
	struct join_stats st;
	struct join *j = counters_join(0);
	__u64 id;

	counters_readings(j, 7);
	ev = &out.ev[out.n - 1];
	tap_ok(ev->kind == XPU_REC_PMU_COUNTER && ev->name_len == 6 &&
		       !memcmp(ev->name, "cycles", 6) && ev->value == 4000 && ev->delta == 2000 &&
		       ev->scale == 1.0 && ev->sub_kind == XPU_PMU_SCOPE_PROCESS &&
		       ev->cpu == XPU_PMU_NO_CPU && ev->n_counters == 0,
	       "a reading goes out with its counter's name, total, delta, scale, scope, cpu");
	tap_ok(out.ev[0].scale == 2.0, "scale: time_enabled / time_running of a multiplexed one");
	offer(j, reading(7, 1, 500, 0, 0, 0), 1);
	tap_ok(out.ev[out.n - 1].scale == 0.0, "scale 0: a counter that never ran");
	offer(j, reading(7, 1, 600, 5, 10, 20), 1);
	tap_ok(out.ev[out.n - 1].scale == 1.0, "scale 1: running past enabled cannot be");
	join__free(j);

	j = counters_join(0);
	counters_readings(j, 7);
	offer(j, kernel_at(7, 1500, 2500), 2);
	ev = &out.ev[out.n - 1];
	tap_ok(ev->n_counters == 3 && ev->counters[0].name_len == 12 &&
		       !memcmp(ev->counters[0].name, "instructions", 12) &&
		       ev->counters[1].name_len == 6 && !memcmp(ev->counters[1].name, "cycles", 6),
	       "a kernel gets the process's counters: instructions, cycles, then the others");
	tap_ok(near(counter_of("instructions"), 1500) && near(counter_of("cycles"), 2000) &&
		       near(ev->ipc, 0.75) && ev->counter_flags == 0,
	       "interpolated at both ends: 500 -> 2000 instructions, 1000 -> 3000 cycles, IPC 0.75");
	tap_ok(near(counter_of("cache-misses"), 200),
	       "a multiplexed counter's delta is scaled by enabled / running");
	offer(j, kernel_at(7, 2500, 3500), 3);
	ev = &out.ev[out.n - 1];
	tap_ok(near(counter_of("instructions"), 2000) && near(counter_of("cycles"), 2000) &&
		       near(ev->ipc, 1.0) && ev->counter_flags == XPU_COUNTERS_F_ESTIMATED,
	       "past the newest reading: the last interval's rate, marked estimated");
	offer(j, kernel_at(7, 500, 1500), 4);
	tap_ok(near(counter_of("instructions"), 1000) &&
		       out.ev[out.n - 1].counter_flags == XPU_COUNTERS_F_ESTIMATED,
	       "before the oldest: the first interval's rate, estimated");
	offer(j, kernel_at(7, 3000, 5000), 5);
	tap_ok(near(counter_of("cycles"), 4000), "two intervals out is still reached");
	offer(j, kernel_at(7, 4000, 6000), 6);
	tap_ok(out.ev[out.n - 1].n_counters == 0 && out.ev[out.n - 1].ipc == 0,
	       "farther out than two intervals: nothing attached");
	offer(j, kernel_at(8, 1500, 2500), 7);
	tap_ok(out.ev[out.n - 1].n_counters == 0 && out.ev[out.n - 1].counter_flags == 0,
	       "a process without readings: nothing attached");
	offer(j, kernel_at(7, 2000, 2000), 8);
	tap_eq_u64(out.ev[out.n - 1].n_counters, 0, "an instant has no window: nothing");
	join__record_enrich(j, kernel_at(7, 1500, 2500), sizeof(struct xpu_gpu_kernel), 9,
			    CONF_ENRICH_ALL & ~CONF_ENRICH_COUNTERS);
	tap_eq_u64(out.ev[out.n - 1].n_counters, 0, "a source without the counters stage: none");

	/* an older reading arrives late: it is put in its place */
	offer(j, reading(7, 1, 1500, 100, 1, 1), 10);
	offer(j, kernel_at(7, 1250, 1750), 11);
	tap_ok(near(counter_of("instructions"), 500),
	       "a late reading is used in time order: 50 at 1250, 550 at 1750");

	/* ranges: a pop counts from its push, an end from its start (on another thread) */
	xpu_range__build(buf, sizeof(buf), 1200, 7, 70, XPU_RANGE_PUSH, 0, 0, 0, "step", 4);
	offer(j, buf, 12);
	xpu_range__build(buf, sizeof(buf), 2800, 7, 70, XPU_RANGE_POP, 0, 0, 0, NULL, 0);
	offer(j, buf, 13);
	tap_ok(near(counter_of("cycles"), 3600 - 400) && out.ev[out.n - 1].n_counters == 3,
	       "a range pop: the counters from its push to it");
	xpu_range__build(buf, sizeof(buf), 1100, 7, 71, XPU_RANGE_START, 77, 0, 0, "io", 2);
	offer(j, buf, 14);
	tap_eq_u64(out.ev[out.n - 1].n_counters, 0, "a range start has no window yet");
	xpu_range__build(buf, sizeof(buf), 2900, 7, 72, XPU_RANGE_END, 77, 0, 0, NULL, 0);
	offer(j, buf, 15);
	tap_ok(near(counter_of("cycles"), 3800 - 200), "a range end: from its start to it");
	offer(j, buf, 16);
	tap_eq_u64(out.ev[out.n - 1].n_counters, 0, "a second end of it finds no start");

	/* exit grace: the readings stay for late GPU records, then go */
	offer(j, proc_exit(7), 20);
	join__expire(j, 119);
	offer(j, kernel_at(7, 1500, 2500), 119);
	join__stats(j, &st);
	tap_ok(out.ev[out.n - 1].n_counters == 3 && st.counter_pids == 1,
	       "within the exit grace a late kernel still gets its counters");
	n_gone = 0;
	join__expire(j, 120);
	join__stats(j, &st);
	offer(j, kernel_at(7, 1500, 2500), 121);
	tap_ok(st.counter_pids == 0 && n_gone == 1 && out.ev[out.n - 1].n_counters == 0,
	       "after it the process's readings are gone (with its names)");
	tap_ok(st.counted == 8 && st.counted_estimated == 3 && st.readings == 10,
	       "counted: events with counters, estimates, readings kept (%llu, %llu, %llu)",
	       (unsigned long long)st.counted, (unsigned long long)st.counted_estimated,
	       (unsigned long long)st.readings);
	join__free(j);

	/* a reading of an unnamed counter, the cap at 4, and the order of first reading */
	j = counters_join(0);
	offer(j, reading(9, 6, 1000, 0, 1, 1), 1); /* no name: never attached */
	offer(j, reading(9, 5, 1000, 0, 1, 1), 1);
	offer(j, reading(9, 4, 1000, 0, 1, 1), 1);
	offer(j, reading(9, 3, 1000, 0, 1, 1), 1);
	offer(j, reading(9, 2, 1000, 0, 1, 1), 1);
	offer(j, reading(9, 1, 1000, 0, 1, 1), 1);
	offer(j, reading(9, 6, 2000, 10, 1, 1), 1);
	offer(j, reading(9, 5, 2000, 20, 1, 1), 1);
	offer(j, reading(9, 4, 2000, 30, 1, 1), 1);
	offer(j, reading(9, 3, 2000, 40, 1, 1), 1);
	offer(j, reading(9, 2, 2000, 50, 1, 1), 1);
	offer(j, reading(9, 1, 2000, 60, 1, 1), 1);
	offer(j, kernel_at(9, 1000, 2000), 2);
	ev = &out.ev[out.n - 1];
	tap_ok(ev->n_counters == 4 && near(ev->counters[0].delta, 60) &&
		       near(ev->counters[1].delta, 50) && near(ev->counters[2].delta, 20) &&
		       near(ev->counters[3].delta, 30) && near(ev->ipc, 1.2),
	       "at most 4: instructions, cycles, then page-faults and task-clock as first read");
	join__free(j);

	/* history bounds: 32 readings a counter; one older than all of them is not kept */
	j = counters_join(0);
	for (id = 0; id < 40; id++)
		offer(j, reading(11, 1, 1000 * (id + 1), 10 * id, 1, 1), 1);
	offer(j, reading(11, 1, 500, 0, 1, 1), 1);
	offer(j, reading(11, 2, 1000, 0, 1, 1), 1);
	offer(j, kernel_at(11, 1000, 2000), 2);
	tap_eq_u64(out.ev[out.n - 1].n_counters, 0,
		   "the oldest readings went: a window before the kept ones gets nothing");
	offer(j, kernel_at(11, 39000, 40000), 3);
	join__stats(j, &st);
	tap_ok(near(counter_of("instructions"), 10) && st.readings_dropped == 1 &&
		       counter_of("cycles") < 0,
	       "the newest are there; a counter with one reading has no rate yet");
	for (id = 0; id < 1024; id++) /* CTR_PIDS is 1024: with pid 11, one too many */
		offer(j, reading(1000 + (__u32)id, 1, 1000, 0, 1, 1), 2 + id);
	join__stats(j, &st);
	offer(j, kernel_at(11, 39000, 40000), 3000);
	tap_ok(st.counter_pids == 1024 && st.counter_pids_evicted == 1 &&
		       out.ev[out.n - 1].n_counters == 0,
	       "at most 1024 processes: the one read least recently (pid 11) makes room");
	join__free(j);
}

/* The PMU source writes a CPU's reading into every shard's ring: shard 0 sends it, the others
 * do not (nor take an event id for it); process-scope readings go out where they arrive. */
static void test_counters_routing(void)
{
	struct xpu_pmu_counter *c;
	struct join_stats st;
	struct join *j;
	__u32 shard;
	int ret;

	for (shard = 0; shard < 2; shard++) {
		j = counters_join(shard);
		c = reading(0, 2, 1000, 77, 10, 5);
		c->hdr.tid = 0;
		c->cpu = 3;
		c->scope = XPU_PMU_SCOPE_CPU;
		ret = join__record(j, c, c->hdr.size, 1);
		join__stats(j, &st);
		if (!shard)
			tap_ok(ret == 0 && out.n == 1 && out.ev[0].cpu == 3 &&
				       out.ev[0].sub_kind == XPU_PMU_SCOPE_CPU &&
				       out.ev[0].value == 77 && out.ev[0].scale == 2.0 &&
				       out.ev[0].pid == 0 && st.counters_routed == 0,
			       "shard 0 sends a CPU's reading");
		else
			tap_ok(ret == JOIN_ROUTED && out.n == 0 && st.counters_routed == 1 &&
				       join__next_id(j) == 1,
			       "shard 1 does not, and says so (JOIN_ROUTED, no id taken)");
		offer(j, reading(5, 1, 1000, 1, 1, 1), 2);
		tap_ok(out.n == (shard ? 1u : 2u) && out.ev[out.n - 1].pid == 5,
		       "shard %u sends a process's reading", shard);
		join__free(j);
	}
}

/* Once a process's exit grace has passed, every engine forgets it (exits.c calls each one's
 * drop hook) and the shard is told, once; another process keeps its state. */
static void test_exit_hooks(void)
{
	struct join *j = counters_join(0);
	struct join_stats st;
	__u64 push[2];
	__u32 i;

	n_gone = 0;
	for (i = 0; i < 2; i++) {
		__u32 pid = 41 + i;

		offer(j, kernel_on(pid, 3, 100, 150), 1);
		counters_readings(j, pid);
		offer(j, node_launch(pid, 7), 1);
		push[i] = push_at(j, pid, pid + 100, "r", 100);
		offer(j, range_at(pid, pid + 100, XPU_RANGE_POP, NULL, 200), 1);
	}
	offer(j, proc_exit(41), 10);
	join__expire(j, 109);
	join__stats(j, &st);
	tap_ok(st.streams == 2 && st.counter_pids == 2 && st.graph_nodes == 2 && !n_gone,
	       "exit hooks: within its exit grace a process keeps streams, readings, node stacks");
	offer(j, sample_at(41, 141, 150), 109);
	tap_ok(nested_in(last(), push[0], push[0]), "exit hooks: ... and its threads' ranges");
	join__expire(j, 110);
	join__stats(j, &st);
	tap_ok(st.streams == 1 && st.counter_pids == 1 && st.graph_nodes == 1 && n_gone == 1 &&
		       gone_pids[0] == 41,
	       "exit hooks: then streams, readings and node stacks go, the shard is told once");
	offer(j, sample_at(41, 141, 150), 111);
	tap_ok(not_nested(last()), "exit hooks: its threads' closed ranges are forgotten");
	offer(j, sample_at(42, 142, 150), 111);
	tap_ok(nested_in(last(), push[1], push[1]), "exit hooks: another process's are not");
	offer(j, kernel_at(41, 1500, 2500), 111);
	tap_ok(!last()->n_counters, "exit hooks: its counter readings are forgotten");
	offer(j, kernel_at(42, 1500, 2500), 111);
	tap_ok(last()->n_counters == 3, "exit hooks: another process's are not");
	join__free(j);
}

int main(void)
{
	struct join_opts bad = { 0 };

	tap_ok(!join__new(&bad, collect, &out), "zero limits are refused");
	test_orders();
	test_shuffled(1, "shuffled");
	test_shuffled(4096, "shuffled, runs of 4096 ids a process");
	test_window();
	test_ttl();
	test_bounds();
	test_stack_trim();
	test_exit();
	test_linger();
	test_nesting();
	test_timestamp();
	test_streams();
	test_samples();
	test_nest_by_ts();
	test_range_wait();
	test_graph();
	test_launch_wait();
	test_counters();
	test_counters_routing();
	test_exit_hooks();
	return tap_done();
}
