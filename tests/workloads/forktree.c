// SPDX-License-Identifier: MIT
/*
 * forktree: a process tree that burns CPU, for checking that a tree filter (target =
 * tree:PID) follows forks and execs.
 *
 *	forktree [--children K] [--depth D] [--seconds S] [--fork-delay F]
 *		 [--exec [--program PATH]]
 *
 * The first process (comm "forktree") burns in forktree_parent_burn() for F seconds (default
 * 0), forks K children (default 2), burns in forktree_parent_burn() for S seconds (default 5)
 * and waits for them. Each child renames itself "forktree-child" (so its samples are told
 * apart by comm too); while it is less than D levels deep (default 1: no grandchildren) it
 * forks K children of its own; then it burns in forktree_child_burn() for S seconds and waits
 * for its own children. The fork delay lets a sampler attach to the first pid before any
 * child exists.
 *
 * With --exec, a child does not burn: it execs PATH --seconds S, by default the hotspots
 * workload next to this program (so its samples then show comm "hotspots" and
 * hotspots_walk/hotspots_hot_leaf/hotspots_cold_leaf).
 *
 * Children die with their parent (PR_SET_PDEATHSIG), so killing the first process cleans up
 * the tree. At the end the first process prints one line on stderr: its pid, its children's
 * pids and how many processes the tree had. Exits 0 when every child exited 0, 1 when one did
 * not, 100 on a usage error, 111 on a system failure.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKTREE_MAX_CHILDREN 64
/* Busy-loop iterations between two clock reads: about 0.1 ms */
#define FORKTREE_CHUNK 50000

/* Not static, and visible (-fvisibility=default in meson.build): exported by -rdynamic */
uint64_t forktree_parent_burn(double seconds);
uint64_t forktree_child_burn(double seconds);

struct forktree_conf {
	long children;
	long depth;
	double seconds;
	double fork_delay;
	int exec;
	char program[PATH_MAX];
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The two burners are the same loop (an LCG step through a volatile, which the compiler
 * can neither fold nor vectorise) under two names, so that a profile tells them apart */
uint64_t forktree_parent_burn(double seconds)
{
	double deadline = now_seconds() + seconds;
	volatile uint64_t x = 1;
	long i;

	while (now_seconds() < deadline)
		for (i = 0; i < FORKTREE_CHUNK; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

uint64_t forktree_child_burn(double seconds)
{
	double deadline = now_seconds() + seconds;
	volatile uint64_t x = 2;
	long i;

	while (now_seconds() < deadline)
		for (i = 0; i < FORKTREE_CHUNK; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* Waits for every child in pids; returns how many did not exit 0 */
static int wait_children(const pid_t *pids, long n)
{
	int failed = 0, status;
	long i;

	for (i = 0; i < n; i++) {
		while (waitpid(pids[i], &status, 0) < 0) {
			if (errno != EINTR) {
				status = -1;
				break;
			}
		}
		if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "forktree: child %d did not exit 0 (status %#x)\n",
				(int)pids[i], (unsigned int)status);
			failed++;
		}
	}
	return failed;
}

static void run_child(const struct forktree_conf *conf, long level, pid_t parent);

/* Forks conf->children children at level; fills pids; returns how many it forked, or -1 (with
 * errno) when a fork failed (the ones already forked are in pids) */
static long fork_children(const struct forktree_conf *conf, long level, pid_t *pids)
{
	pid_t self = getpid(), pid;
	long i;

	for (i = 0; i < conf->children; i++) {
		pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0)
			run_child(conf, level, self); /* does not return */
		pids[i] = pid;
	}
	return i;
}

static void run_child(const struct forktree_conf *conf, long level, pid_t parent)
{
	pid_t pids[FORKTREE_MAX_CHILDREN];
	char seconds[32];
	long n = 0;
	int failed;

	/* Dies with the parent; a parent that died before the prctl is seen by getppid() */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(111);
	if (conf->exec) {
		snprintf(seconds, sizeof(seconds), "%g", conf->seconds);
		execl(conf->program, conf->program, "--seconds", seconds, (char *)NULL);
		fprintf(stderr, "forktree: unable to exec %s: %s\n", conf->program,
			strerror(errno));
		_exit(111);
	}
	prctl(PR_SET_NAME, "forktree-child");
	if (level < conf->depth) {
		n = fork_children(conf, level + 1, pids);
		if (n < 0) {
			fprintf(stderr, "forktree: unable to fork: %s\n", strerror(errno));
			_exit(111);
		}
	}
	forktree_child_burn(conf->seconds);
	failed = wait_children(pids, n);
	_exit(failed ? 1 : 0);
}

/* The hotspots workload in the same folder as this program */
static int default_program(char *buf, size_t size)
{
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(buf, size, "%s/hotspots", self) >= size)
		return -ENAMETOOLONG;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: forktree [--children K] [--depth D] [--seconds S] [--fork-delay F]\n"
		"                [--exec [--program PATH]]\n"
		"  --children K    children per process (default 2, at most %d)\n"
		"  --depth D       levels of children (default 1: no grandchildren)\n"
		"  --seconds S     each process burns S seconds (default 5)\n"
		"  --fork-delay F  the first process burns F seconds before it forks (default 0)\n"
		"  --exec          children exec PATH --seconds S instead of burning\n"
		"  --program PATH  what --exec runs (default: hotspots next to forktree)\n",
		FORKTREE_MAX_CHILDREN);
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v < 1e6))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "children", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 's' },
		{ "fork-delay", required_argument, NULL, 'f' },
		{ "exec", no_argument, NULL, 'e' },
		{ "program", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct forktree_conf conf = { .children = 2, .depth = 1, .seconds = 5 };
	pid_t pids[FORKTREE_MAX_CHILDREN];
	long n, i, total, level_size;
	int c, err, failed;

	while ((c = getopt_long(argc, argv, "c:d:s:f:ep:h", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_long(optarg, 1, FORKTREE_MAX_CHILDREN, &conf.children))
				goto bad_option;
			break;
		case 'd':
			if (parse_long(optarg, 1, 8, &conf.depth))
				goto bad_option;
			break;
		case 's':
			if (parse_seconds(optarg, &conf.seconds))
				goto bad_option;
			break;
		case 'f':
			if (parse_seconds(optarg, &conf.fork_delay))
				goto bad_option;
			break;
		case 'e':
			conf.exec = 1;
			break;
		case 'p':
			if (strlen(optarg) >= sizeof(conf.program))
				goto bad_option;
			strcpy(conf.program, optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 100;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 100;
	}
	if (conf.exec && !conf.program[0]) {
		err = default_program(conf.program, sizeof(conf.program));
		if (err) {
			fprintf(stderr, "forktree: unable to find hotspots: %s\n", strerror(-err));
			return 111;
		}
	}
	/* --exec children exec before forking their own: the tree is one level deep */
	if (conf.exec)
		conf.depth = 1;
	total = 1;
	level_size = 1;
	for (i = 0; i < conf.depth; i++) {
		level_size *= conf.children;
		total += level_size;
	}
	if (total > 4096) {
		fprintf(stderr, "forktree: unable to start: %ld processes is too many\n", total);
		return 100;
	}

	if (conf.fork_delay > 0)
		forktree_parent_burn(conf.fork_delay);
	n = fork_children(&conf, 1, pids);
	if (n < 0) {
		fprintf(stderr, "forktree: unable to fork: %s\n", strerror(errno));
		return 111; /* the children forked so far die with us (PR_SET_PDEATHSIG) */
	}
	forktree_parent_burn(conf.seconds);
	failed = wait_children(pids, n);

	fprintf(stderr, "forktree: pid %d, children", (int)getpid());
	for (i = 0; i < n; i++)
		fprintf(stderr, " %d", (int)pids[i]);
	fprintf(stderr, ", %ld processes%s%s\n", total, conf.exec ? ", children exec " : "",
		conf.exec ? conf.program : "");
	return failed ? 1 : 0;

bad_option:
	fprintf(stderr, "forktree: unable to parse --%s: %s\n",
		c == 'c' ? "children" :
		c == 'd' ? "depth" :
		c == 's' ? "seconds" :
		c == 'f' ? "fork-delay" :
			   "program",
		optarg);
	return 100;
}
