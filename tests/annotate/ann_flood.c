/* SPDX-License-Identifier: MIT */
/*
 * Floods the ring: COUNT push/pop pairs as fast as possible, then prints how long it took
 * and what was dropped. With --wait it first prints "ready" and waits for a line on stdin
 * (so a test can stop the actor between the hand-off and the flood).
 *
 * Usage: ann_flood COUNT [--wait]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xpusup/annotate.h"

int main(int argc, char **argv)
{
	long i, count = argc > 1 ? atol(argv[1]) : 100000;
	struct timespec t0, t1;
	char line[16];

	if (argc > 2 && !strcmp(argv[2], "--wait")) {
		printf("ready enabled=%d\n", xpu_annotate_enabled());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count; i++) {
		xpu_range_push("flood");
		xpu_range_pop();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("flood count=%ld enabled=%d ms=%.1f dropped=%llu\n", count, xpu_annotate_enabled(),
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
	       (unsigned long long)xpu_annotate_dropped());
	return 0;
}
