/* SPDX-License-Identifier: MIT */
/*
 * launch_stack_test VENDOR_FP_LIB: in-process launch stacks (cupti/launch_stack.c) against
 * glibc's backtrace(), which walks the same CFI with libgcc's unwinder, from the same place.
 *
 * This program has no frame pointers (-fomit-frame-pointer) and calls a vendor library that
 * keeps data in rbp across the callback (cupti/vendor_standin.c), as CUDA's libraries do: a
 * frame-pointer walk from the callback is lost, the CFI walk must find every frame
 * backtrace() finds, on the main thread, on a thread of its own and 30 frames deeper; the
 * LAUNCH record must be complete; a second capture must come from the rule cache; a
 * dlclose must empty it; a capture on an alternate signal stack must fail, not read it; and
 * threads capturing at once must each get their own complete records.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "cupti/call_sites.h"
#include "cupti/launch_stack.h"
#include "cupti/vendor_standin.h"
#include "tests/tap.h"
#include "xpusup/event.h"

#define MAX 128
#define DEEP 30

/* What one callback saw: the capture, backtrace() right after it, a frame-pointer walk. */
struct probe {
	__u64 ips[MAX], fp_ips[MAX];
	void *bt[MAX];
	int n, fp_n, bt_n;
	struct unwind_result res, fp_res;
};

static long (*launch)(vendor_callback_fn cb, void *arg, long work) = vendor_launch;
static void on_launch(void *arg);
static vendor_callback_fn callback = on_launch;

static void on_launch(void *arg)
{
	struct probe *p = arg;

	p->n = launch_stack__capture(p->ips, MAX, 0, &p->res);
	p->bt_n = backtrace(p->bt, MAX);
	p->fp_n = launch_stack__capture(p->fp_ips, MAX, UNWIND_FP_ONLY, &p->fp_res);
}

/* The application's side: no frame pointers, and not tail calls (the result is used). */
static volatile long sink;

static __attribute__((noinline)) void launch_op(void *p)
{
	sink += launch(callback, p, 7);
}

static __attribute__((noinline)) void step(void *p)
{
	launch_op(p);
	sink++;
}

static __attribute__((noinline)) void recurse(void *p, int depth)
{
	if (depth)
		recurse(p, depth - 1);
	else
		step(p);
	sink++;
}

/* ips[0] and backtrace's return address into on_launch come from two different calls;
 * from the vendor library outward the two walks must agree frame for frame. backtrace()'s
 * own frames before that differ by build (a sanitizer's interceptor adds one). */
static int same_as_backtrace(const struct probe *p)
{
	int i, k;

	for (k = 0; k < p->bt_n && k < 3 && p->n > 1; k++)
		if ((__u64)(uintptr_t)p->bt[k] == p->ips[1])
			break;
	if (p->n < 2 || k == 0 || k == p->bt_n || k == 3 || p->n - 1 != p->bt_n - k) {
		tap_diag("capture %d frames (%s), backtrace %d", p->n, unwind_end__name(p->res.end),
			 p->bt_n);
		return 0;
	}
	for (i = 1; i < p->n; i++) {
		if (p->ips[i] != (__u64)(uintptr_t)p->bt[i - 1 + k]) {
			tap_diag("frame %d: capture %#llx, backtrace %p", i,
				 (unsigned long long)p->ips[i], p->bt[i - 1 + k]);
			return 0;
		}
	}
	return 1;
}

static void check_walk(struct probe *p, const char *where, int least)
{
	tap_ok(same_as_backtrace(p) && p->res.end == UNWIND_END_OUTERMOST && p->n >= least,
	       "%s: the CFI walk finds backtrace()'s frames, to the outermost (%d, %s)", where,
	       p->n, unwind_end__name(p->res.end));
	tap_ok(p->fp_n > 0 && p->fp_n < p->n,
	       "%s: a frame-pointer walk from the same place is lost in the vendor library "
	       "(%d frames, %s)",
	       where, p->fp_n, unwind_end__name(p->fp_res.end));
}

static void *thread_main(void *arg)
{
	step(arg);
	return NULL;
}

/* launch_stack__record's put: keep the record. */
static _Alignas(8) unsigned char got[sizeof(struct xpu_launch) + 8 * XPU_MAX_FRAMES];
static __u32 got_size;

/* The MODULE records put got before it: the process's executable mappings. */
#define MODULES_MAX 256
static struct {
	__u64 start, end;
	char path[64];
} mods[MODULES_MAX];
static unsigned int n_mods, n_mods_bad;

static int keep(void *ctx, const void *rec, __u32 size)
{
	const struct xpu_module *m = rec;

	if (m->hdr.type == XPU_REC_MODULE) {
		if (xpu_rec__validate(rec, size) || m->hdr.pid != (__u32)getpid() ||
		    n_mods == MODULES_MAX) {
			n_mods_bad++;
			return 0;
		}
		mods[n_mods].start = m->start;
		mods[n_mods].end = m->end;
		snprintf(mods[n_mods].path, sizeof(mods[n_mods].path), "%.*s", (int)m->path_len,
			 m->path);
		n_mods++;
		return 0;
	}
	got_size = size <= sizeof(got) ? size : 0;
	memcpy(got, rec, got_size);
	return *(int *)ctx;
}

/* How many of ips[0..n) a MODULE record covers. */
static unsigned int covered(const __u64 *ips, unsigned int n)
{
	unsigned int i, k, hit = 0;

	for (i = 0; i < n; i++)
		for (k = 0; k < n_mods; k++)
			if (ips[i] >= mods[k].start && ips[i] < mods[k].end) {
				hit++;
				break;
			}
	return hit;
}

/* Whether a MODULE "[vdso]" covers the vDSO's ELF header, and no other MODULE does. */
static bool vdso_module(void)
{
	__u64 ehdr = getauxval(AT_SYSINFO_EHDR);
	unsigned int k, named = 0, over = 0;

	for (k = 0; k < n_mods; k++) {
		bool holds = ehdr >= mods[k].start && ehdr < mods[k].end;

		over += holds;
		named += holds && !strcmp(mods[k].path, "[vdso]");
	}
	return ehdr && named == 1 && over == 1;
}

struct record_call {
	struct probe p;
	int put_ret, ret;
};

static void on_launch_record(void *arg)
{
	struct record_call *c = arg;

	c->ret = launch_stack__record(42, 211 | XPU_LAUNCH_API_DRIVER, keep, &c->put_ret);
	c->p.n = launch_stack__capture(c->p.ips, MAX, 0, &c->p.res);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void test_record(void)
{
	const struct xpu_launch *l = (const struct xpu_launch *)got;
	struct launch_stack_stats before, after;
	struct record_call c = { .put_ret = -ENOSPC };
	__u64 t0, t1;

	launch_stack__stats(&before);
	callback = on_launch_record;
	t0 = now_ns();
	step(&c);
	t1 = now_ns();
	callback = on_launch;
	launch_stack__stats(&after);
	tap_ok(c.ret == -ENOSPC && got_size == xpu_launch__size(l->n_user) &&
		       xpu_rec__validate(got, got_size) == 0,
	       "record: a valid LAUNCH handed to put, put's answer returned (%d, %u bytes)", c.ret,
	       got_size);
	tap_ok(l->hdr.type == XPU_REC_LAUNCH && l->hdr.pid == (__u32)getpid() &&
		       l->hdr.tid == (__u32)gettid() && l->hdr.ts_ns >= t0 && l->hdr.ts_ns <= t1 &&
		       l->correlation_id == 42 && l->api_id == (211 | XPU_LAUNCH_API_DRIVER),
	       "record: pid, tid, a CLOCK_MONOTONIC time of the call, correlation and api id");
	tap_ok(l->n_user == (__u32)c.p.n && c.p.n > 2 &&
		       !memcmp(l->ips + 1, c.p.ips + 1, 8u * (l->n_user - 1)),
	       "record: its frames are the walk's, from the vendor library out (%u)", l->n_user);
	tap_ok(n_mods > 2 && !n_mods_bad && after.modules == before.modules + n_mods &&
		       covered(l->ips, l->n_user) == l->n_user,
	       "record: the first LAUNCH comes after the process's executable mappings as MODULE "
	       "records (%u, %u bad), which hold every frame (%u of %u)",
	       n_mods, n_mods_bad, covered(l->ips, l->n_user), l->n_user);
	tap_ok(vdso_module(), "record: the vDSO is a MODULE \"[vdso]\" over its ELF header (%#lx)",
	       getauxval(AT_SYSINFO_EHDR));
	n_mods = 0;
	c.ret = launch_stack__record(43, 211, keep, &c.put_ret);
	tap_ok(n_mods == 0, "record: mappings go once per loader epoch, not with every LAUNCH");
	launch_stack__stats(&after);
	tap_ok(after.captured == before.captured + 2 && after.frames >= before.frames + l->n_user &&
		       after.truncated == before.truncated && after.failed == before.failed,
	       "record: counted, with its frames, not truncated (a full ring is the ring's "
	       "count)");
}

/* Twice from one call site: the same stack, return addresses and all (volatile: an
 * unrolled loop would make two call sites). */
static volatile int twice = 2;

static void step_twice(struct probe *p, struct launch_stack_stats st[3])
{
	int i;

	launch_stack__stats(&st[0]);
	for (i = 0; i < twice; i++) {
		step(p);
		launch_stack__stats(&st[i + 1]);
	}
}

static void test_cache(void)
{
	struct launch_stack_stats st[3];
	struct probe p;

	launch_stack__forget();
	step_twice(&p, st);
	tap_ok(st[1].cache_misses - st[0].cache_misses == (__u64)p.n &&
		       st[2].cache_misses == st[1].cache_misses &&
		       st[2].cache_hits - st[1].cache_hits == (__u64)p.n && same_as_backtrace(&p),
	       "cache: a rule per frame, looked up once; the same stack again is all hits (%llu "
	       "misses, then %llu hits of %d frames)",
	       (unsigned long long)(st[1].cache_misses - st[0].cache_misses),
	       (unsigned long long)(st[2].cache_hits - st[1].cache_hits), p.n);
}

/* Many call sites (call_sites.h): 512 functions on 64 paths of 30, each path ending in a
 * launch. Once every path has been walked, walking them all again must find nearly every
 * rule in the cache: a direct-mapped cache of 1024 missed 6.4 a capture here, its colliding
 * sites evicting each other every time round. */
static int sites_put(void *ctx, const void *rec, __u32 size)
{
	return 0;
}

static void sites_launch(void *arg)
{
	*(int *)arg |= launch_stack__record(1, 211, sites_put, NULL);
}

static void call_sites_leaf(void *arg)
{
	vendor_launch(sites_launch, arg, 3);
}

static void test_call_sites(void)
{
	struct launch_stack_stats a, b;
	unsigned int p;
	int err = 0;
	double misses;

	launch_stack__forget();
	for (p = 0; p < CALL_SITE_PATHS; p++)
		call_sites__run(&err, p);
	launch_stack__stats(&a);
	for (p = 0; p < CALL_SITE_PATHS; p++)
		call_sites__run(&err, p);
	launch_stack__stats(&b);
	misses = (double)(b.cache_misses - a.cache_misses) / CALL_SITE_PATHS;
	tap_ok(!err && b.captured - a.captured == CALL_SITE_PATHS && b.failed == a.failed &&
		       b.truncated == a.truncated &&
		       (b.frames - a.frames) / CALL_SITE_PATHS >= CALL_SITE_DEPTH,
	       "%d call sites: every path captured whole (%.1f frames each)", CALL_SITES,
	       (double)(b.frames - a.frames) / CALL_SITE_PATHS);
	tap_ok(misses < 0.5,
	       "%d call sites, walked again: the cache answers nearly every rule (%.2f misses a "
	       "capture of %.1f frames)",
	       CALL_SITES, misses, (double)(b.frames - a.frames) / CALL_SITE_PATHS);
}

static void test_dlclose(const char *lib)
{
	struct launch_stack_stats st[3], a, b;
	struct probe p;
	void *h, *sym;
	int i;

	for (i = 0; i < 2; i++) {
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		sym = h ? dlsym(h, "vendor_launch") : NULL;
		if (!sym) {
			tap_ok(0, "dlopen %s: %s", lib, dlerror());
			return;
		}
		memcpy(&launch, &sym, sizeof(launch));
		step_twice(&p, st);
		launch = vendor_launch;
		dlclose(h);
		/* The first walk of each round misses: the dlopen (and, in the second round,
		 * the dlclose before it) changed the loader's epoch. */
		tap_ok(same_as_backtrace(&p) &&
			       st[1].cache_misses - st[0].cache_misses == (__u64)p.n &&
			       st[2].cache_misses == st[1].cache_misses,
		       "dlopen round %d: a library loaded later is walked, every rule looked up "
		       "again, then cached",
		       i + 1);
	}
	launch_stack__stats(&a);
	step(&p);
	launch_stack__stats(&b);
	tap_ok(b.cache_misses > a.cache_misses && same_as_backtrace(&p),
	       "dlclose: every cached rule goes stale (%llu misses after it)",
	       (unsigned long long)(b.cache_misses - a.cache_misses));
}

static volatile int alt_capture = 1, alt_record = 1;

static void on_signal(int sig)
{
	int put_ret = 0;
	__u64 ips[8];

	alt_capture = launch_stack__capture(ips, 8, 0, NULL);
	alt_record = launch_stack__record(1, 1, keep, &put_ret);
}

static void test_altstack(void)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_ONSTACK };
	stack_t ss = { .ss_size = 1 << 16 };
	struct launch_stack_stats a, b;

	ss.ss_sp = malloc(ss.ss_size);
	if (!ss.ss_sp || sigaltstack(&ss, NULL) || sigaction(SIGUSR1, &sa, NULL)) {
		tap_ok(0, "sigaltstack: %s", strerror(errno));
		return;
	}
	launch_stack__stats(&a);
	raise(SIGUSR1);
	launch_stack__stats(&b);
	tap_ok(alt_capture == -EFAULT && alt_record == -EFAULT && b.failed == a.failed + 1 &&
		       b.captured == a.captured,
	       "alternate signal stack: outside the thread's stack, nothing is read, the record "
	       "fails and is counted (%d, %d)",
	       alt_capture, alt_record);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	free(ss.ss_sp);
}

static void test_truncated(void)
{
	struct record_call c = { .put_ret = 0 };
	struct launch_stack_stats a, b;
	struct unwind_result res;
	__u64 ips[3];
	int n = launch_stack__capture(ips, 3, 0, &res);

	tap_ok(n == 3 && res.end == UNWIND_END_MAX_FRAMES,
	       "max frames: the walk stops there and says so (%d, %s)", n,
	       unwind_end__name(res.end));
	launch_stack__stats(&a);
	callback = on_launch_record;
	recurse(&c, XPU_MAX_FRAMES);
	callback = on_launch;
	launch_stack__stats(&b);
	tap_ok(c.ret == 0 && ((const struct xpu_launch *)got)->n_user == XPU_MAX_FRAMES &&
		       b.captured == a.captured + 1 && b.truncated == a.truncated + 1,
	       "a stack deeper than XPU_MAX_FRAMES: recorded, %u frames, counted as truncated",
	       XPU_MAX_FRAMES);
}

/* Threads capturing at once, into one lock-protected sink as inject.c's ring: every record
 * complete and its own thread's, every one counted. */
#define RACERS 4
#define RACES 2000

static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long race_good, race_bad;

static int put_locked(void *ctx, const void *rec, __u32 size)
{
	const struct xpu_launch *l = rec;
	bool good = !xpu_rec__validate(rec, size) && l->hdr.tid == (__u32)gettid() &&
		    l->correlation_id == (uintptr_t)ctx && l->n_user >= 3;

	/* the mappings, if the loader's epoch moved since test_record: not a LAUNCH */
	if (l->hdr.type == XPU_REC_MODULE && !xpu_rec__validate(rec, size))
		return 0;

	pthread_mutex_lock(&race_lock);
	if (good)
		race_good++;
	else
		race_bad++;
	pthread_mutex_unlock(&race_lock);
	return 0;
}

static void on_launch_race(void *arg)
{
	launch_stack__record((uintptr_t)arg, 211, put_locked, arg);
}

static void *racer(void *arg)
{
	volatile long mine = 0; /* not sink: the threads would race on it */
	int i;

	for (i = 0; i < RACES; i++)
		mine += launch(on_launch_race, arg, i);
	return NULL;
}

static void test_threads(void)
{
	struct launch_stack_stats a, b;
	pthread_t t[RACERS];
	uintptr_t i;

	launch_stack__stats(&a);
	for (i = 0; i < RACERS; i++)
		if (pthread_create(&t[i], NULL, racer, (void *)(i + 1)))
			tap_bail("pthread_create");
	for (i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	launch_stack__stats(&b);
	tap_ok(race_good == RACERS * RACES && !race_bad &&
		       b.captured - a.captured == RACERS * RACES && b.failed == a.failed,
	       "%d threads at once: %lu complete records of their own thread, %lu bad, all counted",
	       RACERS, race_good, race_bad);
}

int main(int argc, char **argv)
{
	struct probe main_p, deep_p, thread_p;
	pthread_t t;

	if (argc != 2) {
		fprintf(stderr, "usage: launch_stack_test LIBVENDOR_STANDIN_FP\n");
		return 2;
	}
	step(&main_p);
	check_walk(&main_p, "main thread", 6);
	recurse(&deep_p, DEEP);
	check_walk(&deep_p, "30 frames deeper", 6 + DEEP);
	tap_ok(deep_p.n == main_p.n + DEEP + 1, "30 frames deeper: %d frames, %d more", deep_p.n,
	       deep_p.n - main_p.n);
	if (pthread_create(&t, NULL, thread_main, &thread_p) || pthread_join(t, NULL))
		tap_bail("pthread_create");
	check_walk(&thread_p, "a thread of its own", 4);
	test_record();
	test_cache();
	test_call_sites();
	test_dlclose(argv[1]);
	test_altstack();
	test_truncated();
	test_threads();
	return tap_done();
}
