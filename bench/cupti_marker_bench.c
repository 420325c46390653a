/* SPDX-License-Identifier: MIT */
/*
 * cupti_marker_bench - what recording a launch's stack costs the launching thread, both ways
 * the CUPTI injection library can do it (docs/cupti.md, "Launch stacks"), in one run:
 *
 *   launch_stacks = marker: ns per call of xpusup_launch_marker (cupti/inject.c), the function
 *   the library calls on every launch API and the cpu source probes (docs/cpu.md), with no
 *   uprobe on it, against an empty non-inlined function of this program with the same
 *   signature and body. With the uprobe the cost is the uprobe's (-u: the figure measured
 *   that way, docs/performance.md);
 *
 *   launch_stacks = inproc: ns per launch_stack__record (cupti/launch_stack.c, the code the
 *   library runs, linked in) with a put that keeps nothing, called as the library is called:
 *   from a callback inside vendor_launch (cupti/vendor_standin.c, no frame pointers, data in
 *   rbp) under a few application frames, as in the stand-in (tests/cupti_test.sh), and 30
 *   frames deeper. Warm: the thread's rule cache holds every frame (a launch loop); each
 *   capture timed as one loop of CAPTURES. Cold cache: emptied before each capture, which is
 *   timed alone (two clock reads, about 40 ns, are in the figure). A new thread's first: a
 *   thread's first capture, its state (stack bounds, cache) made then, timed alone. Many
 *   call sites: warm, but through 512 distinct functions on 64 paths of 30
 *   (cupti/call_sites.h), as a training loop's launches come from hundreds of places; with
 *   the rule look-ups per capture that the thread's cache did not answer.
 *
 * The library is loaded with dlopen, as CUDA loads it (InitializeInjection is not called, so
 * CUPTI is not started), and the marker is looked up with dlsym. Both functions are called
 * through a function pointer the compiler cannot see through, with the same changing
 * arguments, so the two loops differ only in the function called. Each is timed REPEAT times
 * (-r, default 5), interleaved; the medians and their ratio are printed. The marker lives in
 * another object, far from the loop: the difference is what a call into a shared library
 * costs beyond a call next door, not work the marker does (its body is a `ret`).
 *
 * Usage: cupti_marker_bench [-n CALLS] [-c CAPTURES] [-r REPEAT] [-u UPROBE_NS] [LIBRARY]
 *   LIBRARY  default: the build tree's cupti/libxpusup_cupti.so (meson passes its path)
 *   -u       the uprobe's ns per hit, measured with a session (the marker's row then): each
 *            in-process row is also printed as a fraction of it
 * With a uprobe attached (a session's cpu source) the marker's figure is the uprobe's cost
 * instead; run it outside a session for the bare call.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "cupti/call_sites.h"
#include "cupti/launch_stack.h"
#include "cupti/vendor_standin.h"

#ifndef XPUSUP_CUPTI_MARKER_LIB
#define XPUSUP_CUPTI_MARKER_LIB "libxpusup_cupti.so"
#endif

#define MAX_REPEAT 64
#define DEEP 30 /* frames of recursion for the deep rows */
#define THREADS 16 /* new threads timed for the first-capture row */

typedef void (*marker_fn)(uint64_t correlation_id, uint32_t api_id);

/* The floor: what cupti/inject.c's marker is, compiled into this program. */
__attribute__((noinline)) static void empty_marker(uint64_t correlation_id, uint32_t api_id)
{
	__asm__ volatile("" : : "r"(correlation_id), "r"(api_id) : "memory");
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per call of fn over calls calls. volatile: the pointer is read each time, so the call
 * stays an indirect call and is neither inlined nor hoisted. */
static double time_calls(marker_fn fn, long calls)
{
	marker_fn volatile target = fn;
	double t0 = now_ns();
	long i;

	for (i = 0; i < calls; i++)
		target((uint64_t)i, 211 /* cudaLaunchKernel */);
	return (now_ns() - t0) / (double)calls;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- in-process capture ---- */

/* One timed loop of captures, from the callback of vendor_launch. */
struct captures {
	long n;
	int cold; /* empty the rule cache before each capture, time each alone */
	double alone_ns; /* cold: the captures' own time */
	int err;
};

static int keep_nothing(void *ctx, const void *rec, __u32 size)
{
	return 0;
}

/* The library's launch callback: in inject.c it is on_launch. */
static void on_launch(void *arg)
{
	struct captures *c = arg;
	double t0;

	if (!c->cold) {
		c->err |= launch_stack__record(1, 211, keep_nothing, NULL);
		return;
	}
	launch_stack__forget();
	t0 = now_ns();
	c->err |= launch_stack__record(1, 211, keep_nothing, NULL);
	c->alone_ns += now_ns() - t0;
}

/* The application: a host function that launches, under one that steps (the stand-in's
 * launch_matmul and train_step), DEPTH frames of recursion above them when asked. */
static volatile long sink;

static __attribute__((noinline)) void launch_op(struct captures *c)
{
	sink += vendor_launch(on_launch, c, 7);
}

static __attribute__((noinline)) void app_step(struct captures *c, int depth)
{
	long i;

	if (depth) {
		app_step(c, depth - 1);
		sink++;
		return;
	}
	for (i = 0; i < c->n; i++)
		launch_op(c);
}

/* Many call sites (cupti/call_sites.h): each path ends in one launch. */
static void call_sites_leaf(void *arg)
{
	launch_op(arg);
}

/* The frames of each capture between two snapshots; a failed capture ends the bench. */
static double frames_each(const struct captures *c, const struct launch_stack_stats *a,
			  const struct launch_stack_stats *b)
{
	if (c->err || b->failed != a->failed || b->captured == a->captured) {
		fprintf(stderr, "cupti_marker_bench: a capture failed\n");
		exit(EXIT_SYSTEM);
	}
	return (double)(b->frames - a->frames) / (double)(b->captured - a->captured);
}

/* ns per capture through the many call sites, warm (a pass over every path first);
 * *misses gets the rule look-ups per capture the thread's cache did not answer. */
static double time_sites(long rounds, double *frames, double *misses)
{
	struct captures c = { .n = 1 };
	struct launch_stack_stats a, b;
	double t0, t;
	unsigned int p;
	long r;

	for (p = 0; p < CALL_SITE_PATHS; p++)
		call_sites__run(&c, p);
	launch_stack__stats(&a);
	t0 = now_ns();
	for (r = 0; r < rounds; r++)
		for (p = 0; p < CALL_SITE_PATHS; p++)
			call_sites__run(&c, p);
	t = now_ns() - t0;
	launch_stack__stats(&b);
	*frames = frames_each(&c, &a, &b);
	*misses = (double)(b.cache_misses - a.cache_misses) / (double)(b.captured - a.captured);
	return t / (double)(rounds * CALL_SITE_PATHS);
}

/* ns per capture; *frames gets the frames each captured. */
static double time_captures(long n, int depth, int cold, double *frames)
{
	struct captures c = { .n = n, .cold = cold };
	struct launch_stack_stats a, b;
	double t0, t;

	launch_stack__stats(&a);
	t0 = now_ns();
	app_step(&c, depth);
	t = now_ns() - t0;
	launch_stack__stats(&b);
	*frames = frames_each(&c, &a, &b);
	return (cold ? c.alone_ns : t) / (double)n;
}

/* A new thread's first capture: its state is made then (stack bounds, 256 KiB of cache). */
static void *first_capture(void *arg)
{
	double frames;

	*(double *)arg = time_captures(1, 0, 0, &frames);
	return NULL;
}

static double time_first_captures(void)
{
	double ns[THREADS];
	pthread_t t;
	int i;

	for (i = 0; i < THREADS; i++) {
		if (pthread_create(&t, NULL, first_capture, &ns[i]) || pthread_join(t, NULL)) {
			fprintf(stderr, "cupti_marker_bench: unable to start a thread\n");
			exit(EXIT_SYSTEM);
		}
	}
	return median(ns, THREADS);
}

static void print_capture(const char *what, double frames, double ns, double empty, double uprobe)
{
	char name[64];

	snprintf(name, sizeof(name), "%s, %.0f frames", what, frames);
	printf("%-44s %10.1f %9.0fx", name, ns, empty > 0 ? ns / empty : 0.0);
	if (uprobe > 0)
		printf(" %8.2f%%", 100 * ns / uprobe);
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *lib = XPUSUP_CUPTI_MARKER_LIB;
	double empty[MAX_REPEAT], marker[MAX_REPEAT], e, m, uprobe = 0;
	double warm[MAX_REPEAT], cold[MAX_REPEAT], deep[MAX_REPEAT], deep_cold[MAX_REPEAT];
	double many[MAX_REPEAT], many_misses[MAX_REPEAT];
	double frames, deep_frames, many_frames, first;
	long calls = 20000000, captures = 20000;
	int repeat = 5, opt, r;
	marker_fn fn;
	void *handle, *sym;

	while ((opt = getopt(argc, argv, "n:c:r:u:h")) != -1) {
		switch (opt) {
		case 'n':
			calls = atol(optarg);
			break;
		case 'c':
			captures = atol(optarg);
			break;
		case 'r':
			repeat = atoi(optarg);
			break;
		case 'u':
			uprobe = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: cupti_marker_bench [-n CALLS] [-c CAPTURES] "
					"[-r REPEAT] [-u UPROBE_NS] [LIBRARY]\n");
			return opt == 'h' ? 0 : EXIT_USAGE;
		}
	}
	if (optind < argc)
		lib = argv[optind++];
	if (optind < argc || calls < 1 || captures < 1 || repeat < 1 || repeat > MAX_REPEAT ||
	    uprobe < 0) {
		fprintf(stderr,
			"cupti_marker_bench: -n and -c >= 1, -r in 1..%d, -u >= 0, one LIBRARY at "
			"most\n",
			MAX_REPEAT);
		return EXIT_USAGE;
	}

	handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "cupti_marker_bench: unable to load the injection library: %s\n",
			dlerror());
		return EXIT_SYSTEM;
	}
	sym = dlsym(handle, "xpusup_launch_marker");
	if (!sym) {
		fprintf(stderr, "cupti_marker_bench: unable to find xpusup_launch_marker in %s\n",
			lib);
		dlclose(handle);
		return EXIT_SYSTEM;
	}
	memcpy(&fn, &sym, sizeof(fn)); /* POSIX: a data pointer from dlsym holds a function */

	printf("cupti_marker_bench: %ld calls, %ld captures, median of %d runs, indirect calls "
	       "(no uprobe expected)\n",
	       calls, captures, repeat);
	printf("library: %s\n", lib);
	time_calls(fn, calls / 10 + 1); /* warm: page in the library's text, settle the clock */
	time_calls(empty_marker, calls / 10 + 1);
	first = time_first_captures(); /* before this thread's first: not a warm process */
	time_captures(captures / 10 + 1, 0, 0, &frames);
	for (r = 0; r < repeat; r++) {
		empty[r] = time_calls(empty_marker, calls);
		marker[r] = time_calls(fn, calls);
		warm[r] = time_captures(captures, 0, 0, &frames);
		cold[r] = time_captures(captures, 0, 1, &frames);
		deep[r] = time_captures(captures, DEEP, 0, &deep_frames);
		deep_cold[r] = time_captures(captures, DEEP, 1, &deep_frames);
		many[r] = time_sites(captures / CALL_SITE_PATHS + 1, &many_frames, &many_misses[r]);
	}
	e = median(empty, repeat);
	m = median(marker, repeat);
	printf("%-44s %10s %10s%s\n", "case", "ns/call", "x empty",
	       uprobe > 0 ? "  of uprobe" : "");
	printf("%-44s %10.3f\n", "empty function (this bench)", e);
	printf("%-44s %10.3f\n", "xpusup_launch_marker", m);
	if (uprobe > 0)
		printf("%-44s %10.0f %9.0fx %8.2f%%\n", "the marker's uprobe (-u)", uprobe,
		       e > 0 ? uprobe / e : 0.0, 100.0);
	print_capture("in-process capture, warm", frames, median(warm, repeat), e, uprobe);
	print_capture("in-process capture, cold cache", frames, median(cold, repeat), e, uprobe);
	print_capture("in-process capture, warm", deep_frames, median(deep, repeat), e, uprobe);
	print_capture("in-process capture, cold cache", deep_frames, median(deep_cold, repeat), e,
		      uprobe);
	print_capture("in-process, a new thread's first", frames, first, e, uprobe);
	print_capture("in-process, warm, 512 call sites", many_frames, median(many, repeat), e,
		      uprobe);
	printf("  (its rule look-ups not in the thread's cache: %.1f a capture)\n",
	       median(many_misses, repeat));
	printf("ratio marker/empty: %.2f\n", e > 0 ? m / e : 0.0);
	if (uprobe > 0)
		printf("ratio uprobe/in-process warm: %.0f (%.0f frames), %.0f (%.0f frames)\n",
		       uprobe / median(warm, repeat), frames, uprobe / median(deep, repeat),
		       deep_frames);
	dlclose(handle);
	return 0;
}
