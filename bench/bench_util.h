/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmarks that drive a real session through the xpusup binary. */
#ifndef XPUSUP_BENCH_BENCH_UTIL_H
#define XPUSUP_BENCH_BENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 100
#define EXIT_SYSTEM 111

/* Run argv[0] with argv, stdout (and stderr when quiet) to /dev/null, and wait. Returns its
 * exit status, 128 + signal, or -errno when it could not be started. */
static inline int bench_run(char *const argv[], int quiet)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		if (quiet)
			dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of n values (sorts v). */
static inline double bench_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CLOCK_MONOTONIC in ns. */
static inline __u64 bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Shuffles v in the same order every run (xorshift64). */
static inline void bench_shuffle(__u64 *v, size_t n)
{
	__u64 x = 88172645463325252ull, t;
	size_t i, j;

	for (i = n ? n - 1 : 0; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (i + 1);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* The option -r REPEAT (runs of each measure, 1..max, default 5) of a bench that takes no
 * other: returns -1 to run with *repeat set, else the status to exit with (0 after -h). */
static inline int bench_repeat_option(int argc, char **argv, const char *name, unsigned int max,
				      unsigned long *repeat)
{
	int c;

	*repeat = 5;
	while ((c = getopt(argc, argv, "r:h")) != -1) {
		if (c == 'r' && (*repeat = strtoul(optarg, NULL, 10)) >= 1 && *repeat <= max)
			continue;
		fprintf(c == 'h' ? stdout : stderr,
			"usage: %s [-r REPEAT]  (runs of each measure, 1..%u, default 5; medians)\n",
			name, max);
		return c == 'h' ? 0 : EXIT_USAGE;
	}
	return -1;
}

#endif /* XPUSUP_BENCH_BENCH_UTIL_H */
