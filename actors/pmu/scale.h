/* SPDX-License-Identifier: MIT */
/*
 * Counter readings and their scaling (docs/pmu.md, "Multiplexing"). Pure functions: no
 * syscalls, so tests build readings by hand.
 *
 * A counter that shares the PMU with more events than it has counters is multiplexed: the
 * kernel runs it part of the time and reports how long it was enabled and how long it really
 * counted. The estimate for the whole enabled time is
 *
 *	scaled = value * time_enabled / time_running
 *
 * and for one interval between two readings the same with the differences of all three.
 * A counter that did not run at all (time_running 0, or no difference in an interval) has no
 * estimate: it is reported as "not counted", never divided by zero.
 */
#ifndef XPUSUP_ACTORS_PMU_SCALE_H
#define XPUSUP_ACTORS_PMU_SCALE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

/* One event's reading: unscaled total and the group's times since it was opened, in ns. */
struct pmu_count {
	__u64 value;
	__u64 enabled;
	__u64 running;
};

/* One event's interval between two readings. */
struct pmu_interval {
	__u64 delta; /* unscaled, value - previous value */
	__u64 enabled; /* time enabled during the interval */
	__u64 running; /* time counting during the interval */
	bool counted; /* running > 0: scaled and ratio mean something */
	bool multiplexed; /* counted only part of the enabled time (running < enabled) */
	double scaled; /* delta * enabled / running; 0 when not counted */
	double ratio; /* enabled / running, the wire's `scale`; 0 when not counted */
};

/*
 * pmu_scale - the estimate of value over the whole enabled time, into *scaled. Returns 0, or
 * -ENODATA when running is 0 (the counter never ran: *scaled is 0). running > enabled cannot
 * come from the kernel; it is taken as not multiplexed (ratio 1).
 */
int pmu_scale(__u64 value, __u64 enabled, __u64 running, double *scaled);

/*
 * pmu_interval__compute - the interval from prev to cur (prev NULL: from the counter's
 * opening, when all three were 0). Counters are 64-bit and only go up: a value below prev's
 * (the counter was replaced by a new one) starts again from 0. Returns 0, or -ENODATA when
 * the counter did not run in the interval (out->counted is false).
 */
int pmu_interval__compute(const struct pmu_count *prev, const struct pmu_count *cur,
			  struct pmu_interval *out);

/*
 * pmu_group__parse - one read() of a group opened with read_format PERF_FORMAT_GROUP |
 * PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID:
 *
 *	u64 nr, time_enabled, time_running; { u64 value, id; } [nr]
 *
 * buf holds len bytes; ids[0..n) are the kernel ids (PERF_EVENT_IOC_ID) of the group's
 * events in the caller's order; out[i] gets the reading of ids[i], with the group's times.
 * Returns 0, or -EBADMSG when the layout is short, nr is not n, or an id is missing.
 */
int pmu_group__parse(const void *buf, size_t len, const __u64 *ids, unsigned int n,
		     struct pmu_count *out);

/* The size of such a read for n events, for the caller's buffer. */
static inline size_t pmu_group__read_size(unsigned int n)
{
	return (3 + 2 * (size_t)n) * sizeof(__u64);
}

#endif /* XPUSUP_ACTORS_PMU_SCALE_H */
