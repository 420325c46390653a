/* SPDX-License-Identifier: MIT */
/*
 * cupti_marker_bench - what the launch marker costs a launch when no uprobe is on it: ns per
 * call of xpusup_launch_marker (cupti/inject.c), the function the CUPTI injection library
 * calls on every launch API and the cpu source probes (docs/cupti.md, docs/cpu.md), against
 * an empty non-inlined function of this program with the same signature and body, in the
 * same run.
 *
 * The library is loaded with dlopen, as CUDA loads it (InitializeInjection is not called, so
 * CUPTI is not started), and the marker is looked up with dlsym. Both functions are called
 * through a function pointer the compiler cannot see through, with the same changing
 * arguments, so the two loops differ only in the function called. Each is timed REPEAT times
 * (-r, default 5), interleaved; the medians and their ratio are printed. The marker lives in
 * another object, far from the loop: the difference is what a call into a shared library
 * costs beyond a call next door, not work the marker does (its body is a `ret`).
 *
 * Usage: cupti_marker_bench [-n CALLS] [-r REPEAT] [LIBRARY]
 *   LIBRARY  default: the build tree's cupti/libxpusup_cupti.so (meson passes its path)
 * With a uprobe attached (a session's cpu source) the figure is the uprobe's cost instead;
 * run it outside a session for the bare call.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"

#ifndef XPUSUP_CUPTI_MARKER_LIB
#define XPUSUP_CUPTI_MARKER_LIB "libxpusup_cupti.so"
#endif

#define MAX_REPEAT 64

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

int main(int argc, char **argv)
{
	const char *lib = XPUSUP_CUPTI_MARKER_LIB;
	double empty[MAX_REPEAT], marker[MAX_REPEAT], e, m;
	long calls = 20000000;
	int repeat = 5, opt, r;
	marker_fn fn;
	void *handle, *sym;

	while ((opt = getopt(argc, argv, "n:r:h")) != -1) {
		switch (opt) {
		case 'n':
			calls = atol(optarg);
			break;
		case 'r':
			repeat = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: cupti_marker_bench [-n CALLS] [-r REPEAT] [LIBRARY]\n");
			return opt == 'h' ? 0 : EXIT_USAGE;
		}
	}
	if (optind < argc)
		lib = argv[optind++];
	if (optind < argc || calls < 1 || repeat < 1 || repeat > MAX_REPEAT) {
		fprintf(stderr, "cupti_marker_bench: -n >= 1, -r in 1..%d, one LIBRARY at most\n",
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

	printf("cupti_marker_bench: %ld calls, median of %d runs, indirect calls (no uprobe "
	       "expected)\n",
	       calls, repeat);
	printf("library: %s\n", lib);
	time_calls(fn, calls / 10 + 1); /* warm: page in the library's text, settle the clock */
	time_calls(empty_marker, calls / 10 + 1);
	for (r = 0; r < repeat; r++) {
		empty[r] = time_calls(empty_marker, calls);
		marker[r] = time_calls(fn, calls);
	}
	e = median(empty, repeat);
	m = median(marker, repeat);
	printf("%-28s %10s\n", "case", "ns/call");
	printf("%-28s %10.3f\n", "empty function (this bench)", e);
	printf("%-28s %10.3f\n", "xpusup_launch_marker", m);
	printf("ratio marker/empty: %.2f\n", e > 0 ? m / e : 0.0);
	dlclose(handle);
	return 0;
}
