/* SPDX-License-Identifier: MIT */
/*
 * Annotated workload with known counts: THREADS threads, each ITER iterations of
 *	outer { middle { inner x3 } mark "tick" } counter "iter" = i
 * plus one "main" range on the main thread around it all. Prints what it did, and with
 * --expect-callbacks checks that the registered callback saw every call.
 *
 * Usage: ann_threads [ITER] [--expect-callbacks]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpusup/annotate.h"

#define THREADS 4

static int iterations = 1000;
static atomic_long seen[7];

static void count_calls(int phase, const char *name, int64_t value, uint64_t ts_ns, uint32_t tid,
			void *ctx)
{
	(void)name, (void)value, (void)ts_ns, (void)tid, (void)ctx;
	if (phase >= 1 && phase <= 6)
		atomic_fetch_add(&seen[phase], 1);
}

static void *worker(void *arg)
{
	int i, k;

	(void)arg;
	for (i = 0; i < iterations; i++) {
		{
			XPU_SCOPE("outer");
			{
				XPU_SCOPE("middle");
				for (k = 0; k < 3; k++) {
					XPU_SCOPE("inner");
				}
			}
			xpu_mark("tick");
		}
		xpu_counter("iter", i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	long pushes, want;
	int i, check = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--expect-callbacks"))
			check = 1;
		else
			iterations = atoi(argv[i]);
	}
	if (xpu_annotate_add_callback(count_calls, NULL))
		return 1;
	xpu_range_push("main");
	for (i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	xpu_range_pop();
	xpu_range_pop(); /* one pop too many: ignored */
	pushes = atomic_load(&seen[1]);
	want = 1 + (long)THREADS * iterations * 5;
	printf("threads=%d iterations=%d enabled=%d pushes=%ld pops=%ld marks=%ld counters=%ld "
	       "dropped=%llu\n",
	       THREADS, iterations, xpu_annotate_enabled(), pushes, atomic_load(&seen[2]),
	       atomic_load(&seen[5]), atomic_load(&seen[6]),
	       (unsigned long long)xpu_annotate_dropped());
	if (check && (pushes != want || atomic_load(&seen[2]) != want ||
		      atomic_load(&seen[5]) != (long)THREADS * iterations ||
		      atomic_load(&seen[6]) != (long)THREADS * iterations)) {
		fprintf(stderr, "ann_threads: callbacks saw the wrong counts\n");
		return 1;
	}
	return 0;
}
