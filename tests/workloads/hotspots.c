// SPDX-License-Identifier: MIT
/*
 * hotspots: a CPU-bound workload with a known profile, for checking what a CPU sampler sees.
 *
 *	hotspots [--seconds S] [--threads N]	burn for S seconds (default 5) in N threads
 *	hotspots --work ROUNDS [--threads N]	do ROUNDS rounds in each thread, however long
 *						that takes (for overhead measurements)
 *	... --main-exits-first			the main thread names the workers
 *						"hotspots-worker" and ends at once: the last
 *						worker to finish ends the process (a process
 *						whose last thread is not its first, for the cpu
 *						source's exit record); no summary line
 *	... --group-exit			the main thread ends the process (_exit) after
 *						S seconds while the workers still burn: all
 *						threads exit at once (exactly one exit record is
 *						wanted); no summary line
 *
 * Each thread repeats one round: hotspots_walk() recurses HOTSPOTS_DEPTH levels deep and, at
 * the bottom, calls hotspots_hot_leaf() for 2 units of busy work then hotspots_cold_leaf()
 * for 1 unit (the same loop body, on volatiles, no syscalls). A unit's length is drawn at
 * random around its mean (unit_iters), so rounds are not periodic. So a correct profile
 * shows:
 *
 *	hotspots_walk		~100 % of the samples (inclusive), 9 frames deep
 *	hotspots_hot_leaf	~2/3
 *	hotspots_cold_leaf	~1/3
 *
 * Built with frame pointers everywhere (leaf functions included) and -rdynamic, so the
 * functions are in .dynsym as well as .symtab. Prints nothing but one summary line on stderr
 * at the end. Exits 0, 100 on a usage error, 111 on a system failure.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "unit_iters.h"

/* Recursion levels below the first hotspots_walk() call: 9 hotspots_walk frames in all */
#define HOTSPOTS_DEPTH 8
/*
 * Iterations of the busy loop in one unit of work, on average; a round is 3 units (0.4 to
 * 1 ms by the machine). Each unit draws its length from [HOTSPOTS_UNIT / 2,
 * 3 * HOTSPOTS_UNIT / 2): with a fixed length the rounds were periodic, and a sampler at a
 * fixed rate (499 Hz: about 5 rounds a sample on a fast machine) could hit the same phase of
 * a round for long runs of samples: perf read the hot leaf at 0.617 where it is 2/3, and
 * cpu_test's 5-point check against perf failed once. The draws start from each thread's own
 * seed, so the work of --work ROUNDS is the same from run to run.
 */
#define HOTSPOTS_UNIT 100000

/* Not static, and visible (-fvisibility=default in meson.build): exported by -rdynamic */
uint64_t hotspots_hot_leaf(uint64_t seed, long iters);
uint64_t hotspots_cold_leaf(uint64_t seed, long iters);
uint64_t hotspots_walk(int depth, uint64_t seed);
uint64_t hotspots_round(uint64_t seed);

struct hotspots_worker {
	pthread_t thread;
	unsigned int index;
	long rounds_wanted; /* > 0: --work; 0: until the deadline */
	struct timespec deadline;
	long rounds_done;
	uint64_t checksum;
};

/* xorshift64, per thread: the length of the next unit of work */
static _Thread_local uint64_t unit_state;

static long unit_iters(void)
{
	return workload__unit_iters(&unit_state, HOTSPOTS_UNIT);
}

/* Both leaves run the same loop, a 64-bit LCG step through a volatile, so the compiler can
 * neither fold nor vectorise it and an iteration costs the same in both; each leaf has its
 * own copy (no shared helper) so that the leaf itself is the innermost frame */
uint64_t hotspots_hot_leaf(uint64_t seed, long iters)
{
	volatile uint64_t x = seed;
	long i;

	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

uint64_t hotspots_cold_leaf(uint64_t seed, long iters)
{
	volatile uint64_t x = seed;
	long i;

	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* The work after the recursive call keeps it from being a tail call at any -O level */
uint64_t hotspots_walk(int depth, uint64_t seed)
{
	uint64_t r;

	if (depth == 0) {
		r = hotspots_hot_leaf(seed, unit_iters() + unit_iters());
		return r ^ hotspots_cold_leaf(r, unit_iters());
	}
	r = hotspots_walk(depth - 1, seed + (uint64_t)depth);
	return r + (uint64_t)depth;
}

uint64_t hotspots_round(uint64_t seed)
{
	return hotspots_walk(HOTSPOTS_DEPTH, seed);
}

static int past(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

static void *worker_main(void *arg)
{
	struct hotspots_worker *w = arg;
	uint64_t seed = w->index + 1;

	unit_state = 0x9e3779b97f4a7c15ULL * (w->index + 1); /* never 0: xorshift stays at 0 */
	while (w->rounds_wanted > 0 ? w->rounds_done < w->rounds_wanted : !past(&w->deadline)) {
		/* + rounds_done: hotspots_round() alone soon reaches a fixed point */
		seed = hotspots_round(seed) + (uint64_t)w->rounds_done;
		w->rounds_done++;
	}
	w->checksum = seed;
	return NULL;
}

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hotspots [--seconds S | --work ROUNDS] [--threads N]\n"
		"  --seconds S     burn for S seconds (default 5)\n"
		"  --work ROUNDS   do ROUNDS rounds per thread instead (one round: the recursion\n"
		"                  and 3 units of busy work, hot leaf 2, cold leaf 1)\n"
		"  --threads N     run N threads (default 1)\n"
		"  --main-exits-first  the workers are named hotspots-worker, the main thread\n"
		"                  ends first and the last worker ends the process (no summary)\n"
		"  --group-exit    the main thread ends the process after S seconds while the\n"
		"                  workers still burn: every thread exits at once (no summary)\n");
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
		{ "seconds", required_argument, NULL, 's' },
		{ "work", required_argument, NULL, 'w' },
		{ "threads", required_argument, NULL, 't' },
		{ "main-exits-first", no_argument, NULL, 'm' },
		{ "group-exit", no_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct hotspots_worker *workers;
	struct timespec start, end;
	double seconds = 5, cpu;
	long threads = 1, work = 0, rounds = 0;
	int main_first = 0, group_exit = 0;
	uint64_t checksum = 0;
	char *endp;
	int c, err;
	long i;

	while ((c = getopt_long(argc, argv, "s:w:t:mgh", options, NULL)) != -1) {
		switch (c) {
		case 'g':
			group_exit = 1;
			break;
		case 'm':
			main_first = 1;
			break;
		case 's':
			errno = 0;
			seconds = strtod(optarg, &endp);
			if (errno || endp == optarg || *endp || !(seconds > 0 && seconds < 1e6)) {
				fprintf(stderr, "hotspots: unable to parse --seconds: %s\n",
					optarg);
				return 100;
			}
			break;
		case 'w':
			if (parse_long(optarg, 1, 1000000000L, &work)) {
				fprintf(stderr, "hotspots: unable to parse --work: %s\n", optarg);
				return 100;
			}
			break;
		case 't':
			if (parse_long(optarg, 1, 1024, &threads)) {
				fprintf(stderr, "hotspots: unable to parse --threads: %s\n",
					optarg);
				return 100;
			}
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

	workers = calloc((size_t)threads, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "hotspots: unable to allocate: %s\n", strerror(errno));
		return 111;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (i = 0; i < threads; i++) {
		workers[i].index = (unsigned int)i;
		workers[i].rounds_wanted = work;
		workers[i].deadline = start;
		/* --group-exit: the workers outlive the main thread's deadline */
		workers[i].deadline.tv_sec += (time_t)seconds + (group_exit ? 3600 : 0);
		workers[i].deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
		if (workers[i].deadline.tv_nsec >= 1000000000L) {
			workers[i].deadline.tv_sec++;
			workers[i].deadline.tv_nsec -= 1000000000L;
		}
		err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (err) {
			fprintf(stderr, "hotspots: unable to create a thread: %s\n", strerror(err));
			return 111;
		}
		if (main_first)
			pthread_setname_np(workers[i].thread, "hotspots-worker");
	}
	if (main_first)
		pthread_exit(NULL); /* the process goes on in its workers; workers[] stays */
	if (group_exit) {
		struct timespec nap = { (time_t)seconds,
					(long)((seconds - (double)(time_t)seconds) * 1e9) };

		while (nanosleep(&nap, &nap) && errno == EINTR)
			;
		_exit(0); /* exit_group: the kernel ends every burning worker at once */
	}
	for (i = 0; i < threads; i++) {
		pthread_join(workers[i].thread, NULL);
		rounds += workers[i].rounds_done;
		checksum += workers[i].checksum;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	cpu = cpu_seconds();
	fprintf(stderr,
		"hotspots: %ld thread(s), %ld rounds, wall %.3f s, cpu %.3f s, checksum %016llx\n",
		threads, rounds, seconds_between(&start, &end), cpu, (unsigned long long)checksum);
	free(workers);
	return 0;
}
