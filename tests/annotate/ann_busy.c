// SPDX-License-Identifier: MIT
/*
 * Annotated CPU work for `xpusup record` with the built-in pipeline: the CPU samples taken
 * inside the ranges show them as frames in flame.folded. Per thread (the main one and one
 * more), EPOCHS times
 *	epoch { forward: spin 40 ms; backward: spin 20 ms }
 * so about two thirds of the CPU time is inside "forward". Spinning, not sleeping: only
 * running code is sampled.
 *
 * Usage: ann_busy [EPOCHS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xpusup/annotate.h"

static int epochs = 5;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* noinline: a frame of its own under the ranges */
__attribute__((noinline)) static unsigned long spin(unsigned long long ms)
{
	unsigned long long end = now_ns() + ms * 1000000ull;
	volatile unsigned long x = 0;

	while (now_ns() < end)
		x = x * 31 + 7;
	return x;
}

static void *train(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < epochs; i++) {
		XPU_SCOPE("epoch");
		xpu_range_push("forward");
		spin(40);
		xpu_range_pop();
		xpu_range_push("backward");
		spin(20);
		xpu_range_pop();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		epochs = atoi(argv[1]);
	if (pthread_create(&t, NULL, train, NULL))
		return 1;
	train(NULL);
	pthread_join(t, NULL);
	printf("epochs=%d enabled=%d dropped=%llu\n", epochs, xpu_annotate_enabled(),
	       (unsigned long long)xpu_annotate_dropped());
	return 0;
}
