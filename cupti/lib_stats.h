/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI library's counters for the actor (shm/inproc.h, struct xpu_inproc_stats): the
 * launch-stack part, which the library (inject.c) and the stand-in (gpu_standin.c) both send.
 */
#ifndef XPUSUP_CUPTI_LIB_STATS_H
#define XPUSUP_CUPTI_LIB_STATS_H

#include <linux/types.h>

#include "cupti/launch_stack.h"
#include "shm/inproc.h"

/* lib_stats__stacks - the in-process captures' counts into v (XPU_INPROC_STATS_N values). */
static inline void lib_stats__stacks(__u64 *v, const struct launch_stack_stats *st)
{
	v[XPU_CUPTI_STAT_STACKS] = st->captured;
	v[XPU_CUPTI_STAT_STACKS_TRUNCATED] = st->truncated;
	v[XPU_CUPTI_STAT_STACKS_FAILED] = st->failed;
	v[XPU_CUPTI_STAT_RULE_MISSES] = st->cache_misses;
	v[XPU_CUPTI_STAT_PY_STACKS] = st->py_stacks;
}

#endif /* XPUSUP_CUPTI_LIB_STATS_H */
