/* SPDX-License-Identifier: MIT */
/*
 * Many call sites, for the launch-stack bench and test (bench/cupti_marker_bench.c,
 * cupti/launch_stack_test.c): a real program's launches come from many places. PyTorch's
 * training loop (tests/cuda/torch_loop.py) made 33 launches an iteration, 38 frames each,
 * through hundreds of distinct functions, every iteration again. Here CALL_SITES distinct
 * functions, and CALL_SITE_PATHS stacks of CALL_SITE_DEPTH of them, each path a fixed
 * sequence: every function's return address wants its rule in the thread's cache at once.
 *
 * The includer defines call_sites_leaf(arg), called at the bottom of each path, and runs a
 * path with call_sites__run(arg, path). Each function stays on the stack (no tail calls).
 */
#ifndef XPUSUP_CUPTI_CALL_SITES_H
#define XPUSUP_CUPTI_CALL_SITES_H

#define CALL_SITES 512
#define CALL_SITE_DEPTH 30
#define CALL_SITE_PATHS 64

static void call_sites_leaf(void *arg);

typedef long (*call_site_fn)(void *arg, unsigned int path, int depth);
static call_site_fn const call_site_table[CALL_SITES];
static volatile long call_sites_sink;

static inline __attribute__((always_inline)) long call_site_step(void *arg, unsigned int path,
								 int depth, unsigned int me)
{
	long r;

	if (!depth) {
		call_sites_leaf(arg);
		return 0;
	}
	r = call_site_table[(me * 37u + path * 101u + (unsigned int)depth * 13u) % CALL_SITES](
		arg, path, depth - 1);
	call_sites_sink++; /* after the call: no tail call */
	return r + 1;
}

#define CALL_SITE(a, b, d)                                                                      \
	static __attribute__((noinline)) long call_site_##a##b##d(void *arg, unsigned int path, \
								  int depth)                    \
	{                                                                                       \
		return call_site_step(arg, path, depth, a * 64 + b * 8 + d);                    \
	}
#define CALL_SITE8(m, a, b) \
	m(a, b, 0) m(a, b, 1) m(a, b, 2) m(a, b, 3) m(a, b, 4) m(a, b, 5) m(a, b, 6) m(a, b, 7)
#define CALL_SITE64(m, a)   \
	CALL_SITE8(m, a, 0) \
	CALL_SITE8(m, a, 1) \
	CALL_SITE8(m, a, 2) \
	CALL_SITE8(m, a, 3) \
	CALL_SITE8(m, a, 4) CALL_SITE8(m, a, 5) CALL_SITE8(m, a, 6) CALL_SITE8(m, a, 7)
#define CALL_SITE512(m)   \
	CALL_SITE64(m, 0) \
	CALL_SITE64(m, 1) \
	CALL_SITE64(m, 2) \
	CALL_SITE64(m, 3) CALL_SITE64(m, 4) CALL_SITE64(m, 5) CALL_SITE64(m, 6) CALL_SITE64(m, 7)
CALL_SITE512(CALL_SITE)
#define CALL_SITE_REF(a, b, d) call_site_##a##b##d,
static call_site_fn const call_site_table[CALL_SITES] = { CALL_SITE512(CALL_SITE_REF) };

/* One path, CALL_SITE_DEPTH sites deep, then call_sites_leaf(arg). */
static __attribute__((unused)) void call_sites__run(void *arg, unsigned int path)
{
	call_site_table[(path * 8u) % CALL_SITES](arg, path % CALL_SITE_PATHS, CALL_SITE_DEPTH);
}

#endif /* XPUSUP_CUPTI_CALL_SITES_H */
