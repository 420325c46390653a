/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmarks that drive a real session through the xpusup binary. */
#ifndef XPUSUP_BENCH_BENCH_UTIL_H
#define XPUSUP_BENCH_BENCH_UTIL_H

#include <errno.h>
#include <fcntl.h>
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

#endif /* XPUSUP_BENCH_BENCH_UTIL_H */
