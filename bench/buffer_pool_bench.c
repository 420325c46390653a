// SPDX-License-Identifier: MIT
/*
 * ns per buffer_pool__get (cupti/buffer_pool.h): what a CUPTI buffer request costs the
 * application's thread once the pool has buffers kept. Each round takes 32 buffers of 256 KiB
 * (timed), then gives them back (not timed: that runs on CUPTI's thread). The pool keeps 64,
 * as the library does, so every timed request reuses one.
 *
 * Usage: buffer_pool_bench [-r ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cupti/buffer_pool.h"

#define PER_ROUND 32

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	struct buffer_pool pool;
	void *bufs[PER_ROUND];
	double timed = 0, t0;
	long rounds = 20000, r;
	int c, i;

	while ((c = getopt(argc, argv, "r:")) != -1) {
		if (c != 'r' || (rounds = strtol(optarg, NULL, 10)) <= 0) {
			fprintf(stderr, "usage: buffer_pool_bench [-r ROUNDS]\n");
			return 2;
		}
	}
	if (buffer_pool__init(&pool, 256u << 10, 64)) {
		fprintf(stderr, "buffer_pool_bench: unable to make a pool\n");
		return 1;
	}
	for (r = 0; r < rounds; r++) {
		t0 = now_ns();
		for (i = 0; i < PER_ROUND; i++)
			bufs[i] = buffer_pool__get(&pool);
		timed += now_ns() - t0;
		for (i = 0; i < PER_ROUND; i++)
			buffer_pool__put(&pool, bufs[i]);
	}
	printf("buffer_pool_bench: %ld requests, %.1f ns each (%llu made, %llu reused)\n",
	       rounds * PER_ROUND, timed / (double)(rounds * PER_ROUND),
	       (unsigned long long)pool.allocated, (unsigned long long)pool.reused);
	buffer_pool__fini(&pool);
	return 0;
}
