/* SPDX-License-Identifier: MIT */
/*
 * A quantile sketch of non-negative integers (durations in ns) with a relative error bound,
 * after DDSketch (Masson, Rim, Lee, VLDB 2019): values fall into logarithmically spaced
 * buckets, bucket i holding (gamma^(i-1), gamma^i] with gamma = (1 + a) / (1 - a), and a
 * quantile is answered with its bucket's representative 2 gamma^i / (gamma + 1), which is
 * within a relative a of every value in the bucket. With a = SKETCH_ALPHA = 1 %:
 *
 *	for q in [0, 1], sketch__quantile(s, q) is within 1 % of the value of 0-based rank
 *	floor(q * (n - 1)) among the n values added, whatever their distribution or order.
 *
 * Values below 1 (zero) are counted apart and answered exactly. Memory: one 8-byte counter
 * per bucket between the smallest and the largest bucket used, about 116 buckets a decade
 * (values from 1 us to 1 ms take 350 buckets, 2.8 KiB), at most SKETCH_BUCKETS_MAX; a sketch
 * that would span more folds its lowest buckets into one (counted in collapsed: the bound
 * then holds for ranks above those values only). Sketches with the same alpha merge exactly:
 * merging two sketches gives the sketch of both sets of values, so per-interval sketches add
 * up to the run's.
 *
 * Not thread-safe: one owner. Calling order: sketch__init, then add/merge/quantile/reset in
 * any order, then sketch__free.
 */
#ifndef XPUSUP_ACTORS_SINK_SKETCH_H
#define XPUSUP_ACTORS_SINK_SKETCH_H

#include <linux/types.h>

#define SKETCH_ALPHA 0.01
/* 2^64 is bucket 2198: a sketch of any u64 values stays under this but for the extremes */
#define SKETCH_BUCKETS_MAX 2048

struct sketch {
	__u64 count; /* values added, all of them */
	__u64 sum; /* their sum (wraps after 2^64: 584 years of ns) */
	__u64 min, max; /* exact; meaningless while count is 0 */
	__u64 zeros; /* values of 0 */
	__u64 unbucketed; /* in count, sum, min and max but in no bucket: memory ran out */
	__u64 collapsed; /* folded into the lowest bucket to stay within SKETCH_BUCKETS_MAX */
	int lo; /* bucket index of counts[0] */
	__u32 n; /* buckets in use: counts[0 .. n) */
	__u32 cap; /* allocated */
	__u64 *counts;
};

/* sketch__init - an empty sketch. Allocates nothing. */
void sketch__init(struct sketch *s);

/* sketch__free - release the buckets; s is then empty. Accepts a zeroed sketch. */
void sketch__free(struct sketch *s);

/* sketch__reset - empty s, keeping its memory for the next values. */
void sketch__reset(struct sketch *s);

/*
 * sketch__add - add value v. Returns 0, or -ENOMEM when the buckets could not grow: v is
 * then counted in count, sum, min and max and in unbucketed, not in the quantiles.
 */
int sketch__add(struct sketch *s, __u64 v);

/* sketch__count - add v to count, sum, min and max only, in no bucket (counted in
 * unbucketed): for an accumulator that never asks for quantiles (the metrics format). */
void sketch__count(struct sketch *s, __u64 v);

/*
 * sketch__merge - add every value of src to dst (same alpha by construction). Returns 0 or
 * -ENOMEM (dst then holds src's values that fitted; the others are in unbucketed).
 */
int sketch__merge(struct sketch *dst, const struct sketch *src);

/*
 * sketch__quantile - the q-quantile (q in [0, 1], clamped), within SKETCH_ALPHA of the
 * value of rank floor(q * (n - 1)) of the n bucketed values, and clamped to [min, max].
 * 0 for an empty sketch.
 */
double sketch__quantile(const struct sketch *s, double q);

/* sketch__bucket_of - the bucket index of v >= 1, from tables made at the first call (thread
 * safe); sketch__bucket_log - the same by its definition, one log(). Exposed for the tests. */
int sketch__bucket_of(__u64 v);
int sketch__bucket_log(__u64 v);

#endif /* XPUSUP_ACTORS_SINK_SKETCH_H */
