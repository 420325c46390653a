/* SPDX-License-Identifier: MIT */
/*
 * One mark of a given name, at a time the caller learns: for the flight recorder's test (a
 * snapshot holds this mark, and nothing much older than keep_s before it). Prints
 * "mark ns=N enabled=E", N the CLOCK_MONOTONIC time just before the mark.
 *
 * Usage: ann_mark NAME
 */
#include <stdio.h>
#include <time.h>

#include "xpusup/annotate.h"

int main(int argc, char **argv)
{
	struct timespec t;

	if (argc != 2) {
		fprintf(stderr, "usage: ann_mark NAME\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t);
	xpu_mark(argv[1]);
	printf("mark ns=%lld enabled=%d\n", (long long)t.tv_sec * 1000000000ll + t.tv_nsec,
	       xpu_annotate_enabled());
	return 0;
}
