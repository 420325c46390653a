// SPDX-License-Identifier: MIT
/*
 * nofp: a CPU-bound workload built the way most libraries are, plain -O2 without frame
 * pointers, for checking that stacks are unwound without them (docs/unwind.md).
 *
 *	nofp [--seconds S] [--depth D]	burn for S seconds (default 4), D recursion levels deep
 *
 * main() calls nofp_round() over and over; a round calls nofp_caller_a() for 2 units of work
 * and nofp_caller_b() for 1 unit; each caller recurses D levels through nofp_descend() and
 * then runs the one hot function, nofp_hot(). So a correct profile shows:
 *
 *	main		~100 % of the samples (inclusive)
 *	nofp_caller_a	~2/3, nofp_caller_b ~1/3, nofp_hot ~100 %
 *
 * nofp_hot() zeroes %rbp while it runs (and the compiler saves and restores it around the
 * asm): a frame-pointer walk from a sample there ends at once, whatever the compiler chose to
 * do with %rbp elsewhere. Functions are noinline (a frame each) and in .dynsym (-rdynamic).
 * Prints one summary line on stderr. Exits 0, 100 on a usage error.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "unit_iters.h"

/* Iterations of the busy loop in one unit of work, on average: each unit draws its length
 * from [NOFP_UNIT / 2, 3 * NOFP_UNIT / 2). A fixed length made the rounds periodic (about
 * 0.4 ms here), and a sampler at a fixed rate (499 Hz is 5.01 rounds) then hit the same phase
 * of a round for hundreds of samples in a row: the callers' split read 0.70 or 0.64 where it
 * is 2/3. Random lengths keep the mean, and the phase of each sample is its own. */
#define NOFP_UNIT 100000

#define NOFP_FN __attribute__((noinline, visibility("default")))

NOFP_FN uint64_t nofp_hot(uint64_t seed, long iters);
NOFP_FN uint64_t nofp_descend(int depth, uint64_t seed, long iters);
NOFP_FN uint64_t nofp_caller_a(int depth, uint64_t seed);
NOFP_FN uint64_t nofp_caller_b(int depth, uint64_t seed);
NOFP_FN uint64_t nofp_round(int depth, uint64_t seed);

/* xorshift64: the length of the next unit of work */
static uint64_t unit_state = 0x9e3779b97f4a7c15ULL;

static long unit_iters(void)
{
	return workload__unit_iters(&unit_state, NOFP_UNIT);
}

uint64_t nofp_hot(uint64_t seed, long iters)
{
	volatile uint64_t x = seed;
	long i;

	__asm__ volatile("xor %%ebp, %%ebp" : : : "rbp");
	for (i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

uint64_t nofp_descend(int depth, uint64_t seed, long iters)
{
	uint64_t r;

	if (depth <= 0)
		return nofp_hot(seed, iters);
	r = nofp_descend(depth - 1, seed * 31 + (uint64_t)depth, iters);
	/* work after the call: no tail call, so every level keeps its frame */
	return r ^ (uint64_t)depth;
}

uint64_t nofp_caller_a(int depth, uint64_t seed)
{
	return nofp_descend(depth, seed, unit_iters() + unit_iters()) + 1;
}

uint64_t nofp_caller_b(int depth, uint64_t seed)
{
	return nofp_descend(depth, seed, unit_iters()) + 2;
}

uint64_t nofp_round(int depth, uint64_t seed)
{
	uint64_t a = nofp_caller_a(depth, seed);

	return a ^ nofp_caller_b(depth, a);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = 4, end;
	uint64_t sum = 1;
	long rounds = 0;
	int depth = 6, c;

	static const struct option opts[] = { { "seconds", required_argument, NULL, 's' },
					      { "depth", required_argument, NULL, 'd' },
					      { NULL, 0, NULL, 0 } };
	while ((c = getopt_long(argc, argv, "s:d:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			seconds = atof(optarg);
			break;
		case 'd':
			depth = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: nofp [--seconds S] [--depth D]\n");
			return 100;
		}
	}
	if (seconds <= 0 || depth < 0 || depth > 1000) {
		fprintf(stderr, "nofp: unable to run: --seconds must be > 0, --depth 0..1000\n");
		return 100;
	}
	end = now_s() + seconds;
	while (now_s() < end) {
		sum = nofp_round(depth, sum);
		rounds++;
	}
	fprintf(stderr, "nofp: %ld rounds, checksum %llx\n", rounds, (unsigned long long)sum);
	return 0;
}
