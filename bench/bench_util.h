/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmarks that drive a real session through the xpusup binary. */
#ifndef XPUSUP_BENCH_BENCH_UTIL_H
#define XPUSUP_BENCH_BENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
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

#endif /* XPUSUP_BENCH_BENCH_UTIL_H */
