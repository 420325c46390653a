/* SPDX-License-Identifier: MIT */
/*
 * The length of a workload's next unit of work: iterations drawn from [unit / 2, 3 * unit / 2)
 * by xorshift64 on *state (which must not be 0), so that a workload's rounds are not periodic
 * against a sampler's fixed rate (tests/workloads/hotspots.c and nofp.c say what that did).
 */
#ifndef XPUSUP_TESTS_WORKLOADS_UNIT_ITERS_H
#define XPUSUP_TESTS_WORKLOADS_UNIT_ITERS_H

#include <stdint.h>

static inline long workload__unit_iters(uint64_t *state, long unit)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return unit / 2 + (long)(*state % (uint64_t)unit);
}

#endif /* XPUSUP_TESTS_WORKLOADS_UNIT_ITERS_H */
