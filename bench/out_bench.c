// SPDX-License-Identifier: MIT
/*
 * out_bench: what the sinks' file writer (actors/sink/out.h: io_uring, 1 MiB buffers, O_DIRECT
 * where the file system takes it) costs the CPU. COUNT lines of LEN bytes are written through
 * one out file into DIR, then committed (fsync, rename); the process's CPU (user + system, its
 * io_uring workers included) and the wall time are reported per line, for each of RUNS runs,
 * and the file is deleted. A timeline writes about 160 bytes an event (docs/performance.md).
 *
 * Usage: out_bench DIR [COUNT] [LEN] [RUNS]   (defaults 8000000 lines of 225 bytes, 3 runs)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "actors/sink/out.h"

static double cpu_s(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec / 1e6 +
	       (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec / 1e6;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long count = argc > 2 ? atol(argv[2]) : 8000000, len = argc > 3 ? atol(argv[3]) : 225;
	int runs = argc > 4 ? atoi(argv[4]) : 3, r;
	char path[4096], why[512], line[4096];
	struct out *o;
	double c0, w0;
	long i;

	if (argc < 2 || count <= 0 || len <= 0 || len > (long)sizeof(line) || runs <= 0) {
		fprintf(stderr, "usage: out_bench DIR [COUNT] [LEN (1..%zu)] [RUNS]\n",
			sizeof(line));
		return 2;
	}
	snprintf(path, sizeof(path), "%s/out_bench-%d.out", argv[1], (int)getpid());
	memset(line, 'x', (size_t)len);
	line[len - 1] = '\n';
	for (r = 0; r < runs; r++) {
		c0 = cpu_s();
		w0 = wall_s();
		if (out__open(&o, path, why, sizeof(why))) {
			fprintf(stderr, "out_bench: %s\n", why);
			return 1;
		}
		for (i = 0; i < count; i++)
			out__write(o, line, (size_t)len);
		if (out__commit(o, why, sizeof(why))) {
			fprintf(stderr, "out_bench: %s\n", why);
			unlink(path);
			return 1;
		}
		printf("run %d: %ld lines of %ld bytes: CPU %.2f ns/line, wall %.2f ns/line\n",
		       r + 1, count, len, (cpu_s() - c0) * 1e9 / (double)count,
		       (wall_s() - w0) * 1e9 / (double)count);
		unlink(path);
	}
	return 0;
}
