// SPDX-License-Identifier: MIT
/*
 * The quantile sketch; see sketch.h. Buckets are a dense array over [lo, lo + n): kernel
 * durations of one name span a few decades at most, so dense beats sparse, and answering a
 * quantile is one pass over a few hundred counters.
 */
#include "actors/sink/sketch.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define GAMMA ((1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA))

/* A constant expression: the compiler folds it, so an add costs one log(). */
static inline double log_gamma(void)
{
	return log(GAMMA);
}

void sketch__init(struct sketch *s)
{
	memset(s, 0, sizeof(*s));
}

void sketch__free(struct sketch *s)
{
	free(s->counts);
	sketch__init(s);
}

void sketch__reset(struct sketch *s)
{
	__u64 *counts = s->counts;
	__u32 cap = s->cap;

	sketch__init(s);
	s->counts = counts;
	s->cap = cap;
}

int sketch__bucket_of(__u64 v)
{
	/* v = 1 is bucket 0; bucket i holds (gamma^(i-1), gamma^i] */
	return (int)ceil(log((double)v) / log_gamma());
}

/*
 * Make the array cover bucket i and return i's slot, or -ENOMEM (nothing changed). When the
 * span would exceed SKETCH_BUCKETS_MAX the lowest buckets are folded into the lowest one
 * kept, as DDSketch's collapsing store does: the high quantiles (p95, p99: what the tail of
 * a latency distribution is about) keep their bound. *folded says i itself landed in a
 * folded bucket; values folded out of existing buckets are counted here.
 */
static long slot_of(struct sketch *s, int i, bool *folded)
{
	int lo, hi, old_lo = s->lo;
	__u32 need, old_n = s->n, k;
	__u64 *c, sum;

	*folded = false;
	if (old_n && i >= old_lo && i < old_lo + (int)old_n)
		return i - old_lo;
	lo = old_n && old_lo < i ? old_lo : i;
	hi = old_n && old_lo + (int)old_n - 1 > i ? old_lo + (int)old_n - 1 : i;
	if (hi - lo + 1 > SKETCH_BUCKETS_MAX)
		lo = hi - SKETCH_BUCKETS_MAX + 1;
	need = (__u32)(hi - lo + 1);
	if (need > s->cap) {
		__u32 cap = need + need / 2 + 8;

		if (cap > SKETCH_BUCKETS_MAX)
			cap = SKETCH_BUCKETS_MAX;
		c = realloc(s->counts, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		s->counts = c;
		s->cap = cap;
	}
	c = s->counts;
	if (!old_n) {
		memset(c, 0, need * sizeof(*c));
	} else if (lo <= old_lo) {
		__u32 shift = (__u32)(old_lo - lo);

		memmove(c + shift, c, old_n * sizeof(*c));
		memset(c, 0, shift * sizeof(*c));
		memset(c + shift + old_n, 0, (need - shift - old_n) * sizeof(*c));
	} else {
		/* growing upwards past the limit: old buckets below lo fold into bucket lo */
		__u32 drop = (__u32)(lo - old_lo), keep = old_n > drop ? old_n - drop : 0;

		for (k = 0, sum = 0; k < drop && k < old_n; k++)
			sum += c[k];
		s->collapsed += sum;
		if (keep) {
			memmove(c, c + drop, keep * sizeof(*c));
		} else {
			c[0] = 0;
			keep = 1;
		}
		c[0] += sum;
		memset(c + keep, 0, (need - keep) * sizeof(*c));
	}
	s->lo = lo;
	s->n = need;
	if (i < lo) {
		*folded = true;
		return 0;
	}
	return i - lo;
}

static void add_exact(struct sketch *s, __u64 count, __u64 sum, __u64 min, __u64 max)
{
	if (!s->count || min < s->min)
		s->min = min;
	if (!s->count || max > s->max)
		s->max = max;
	s->count += count;
	s->sum += sum;
}

int sketch__add(struct sketch *s, __u64 v)
{
	bool folded;
	long slot;

	add_exact(s, 1, v, v, v);
	if (!v) {
		s->zeros++;
		return 0;
	}
	slot = slot_of(s, sketch__bucket_of(v), &folded);
	if (slot < 0) {
		s->unbucketed++;
		return (int)slot;
	}
	s->counts[slot]++;
	s->collapsed += folded;
	return 0;
}

int sketch__merge(struct sketch *dst, const struct sketch *src)
{
	bool folded;
	long slot;
	__u32 k;
	int err = 0;

	if (!src->count)
		return 0;
	add_exact(dst, src->count, src->sum, src->min, src->max);
	dst->zeros += src->zeros;
	dst->unbucketed += src->unbucketed;
	dst->collapsed += src->collapsed;
	for (k = 0; k < src->n; k++) {
		if (!src->counts[k])
			continue;
		slot = slot_of(dst, src->lo + (int)k, &folded);
		if (slot < 0) {
			dst->unbucketed += src->counts[k];
			err = (int)slot;
			continue;
		}
		dst->counts[slot] += src->counts[k];
		if (folded)
			dst->collapsed += src->counts[k];
	}
	return err;
}

double sketch__quantile(const struct sketch *s, double q)
{
	__u64 n = s->count - s->unbucketed, cum;
	double rank, v;
	__u32 k;

	if (!n)
		return 0;
	if (!(q >= 0)) /* NaN too */
		q = 0;
	if (q > 1)
		q = 1;
	/* the first bucket whose cumulative count passes the rank holds the value of rank
	 * floor(rank): the buckets before it hold at most floor(rank) values */
	rank = q * (double)(n - 1);
	cum = s->zeros;
	if ((double)cum > rank)
		return (double)s->min;
	for (k = 0; k < s->n; k++) {
		cum += s->counts[k];
		if ((double)cum > rank)
			break;
	}
	if (k == s->n)
		return (double)s->max;
	v = 2 * exp((s->lo + (int)k) * log_gamma()) / (GAMMA + 1);
	/* the true value lies in [min, max]: clamping can only move the answer closer */
	if (v < (double)s->min)
		v = (double)s->min;
	if (v > (double)s->max)
		v = (double)s->max;
	return v;
}
