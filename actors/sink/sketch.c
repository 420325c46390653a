// SPDX-License-Identifier: MIT
/*
 * The quantile sketch; see sketch.h. Buckets are a dense array over [lo, lo + n): kernel
 * durations of one name span a few decades at most, so dense beats sparse, and answering a
 * quantile is one pass over a few hundred counters.
 *
 * A value's bucket is defined by one log() (sketch__bucket_log), but an add finds it in two
 * tables made from that definition once per process (a log and a division were most of what
 * an add cost, and the stats sink adds twice per kernel): first_of[i], the smallest value
 * whose bucket is i or more, and cell_start[c], the bucket of the smallest double of cell c,
 * the values whose double has exponent and top CELL_BITS mantissa bits c. A cell spans less
 * than a bucket (2^-7 < gamma - 1), so the bucket of a value in it is cell_start or a step
 * above, where first_of says: the same answer as the log, as the definition is monotonic
 * (stats_test.c compares the two over every bucket's edges).
 */
#include "actors/sink/sketch.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
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

int sketch__bucket_log(__u64 v)
{
	/* v = 1 is bucket 0; bucket i holds (gamma^(i-1), gamma^i] */
	return (int)ceil(log((double)v) / log_gamma());
}

#define CELL_BITS 7
#define CELLS (65 << CELL_BITS) /* exponents 0 to 64: (double)UINT64_MAX is 2^64 */
#define BUCKET_LAST_MAX 2304 /* above sketch__bucket_log(UINT64_MAX), 2218 */

static struct {
	pthread_once_t once;
	int last; /* the bucket of UINT64_MAX */
	__u64 first_of[BUCKET_LAST_MAX + 1];
	__u16 cell_start[CELLS];
} tab = { .once = PTHREAD_ONCE_INIT };

/* The cell of v >= 1: (double)v's exponent and top mantissa bits. */
static __u32 cell_of(__u64 v)
{
	double d = (double)v;
	__u64 bits;

	memcpy(&bits, &d, sizeof(bits));
	return (__u32)((bits >> (52 - CELL_BITS)) - (1023ull << CELL_BITS));
}

static void tab_init(void)
{
	__u64 lo, hi, mid, bits;
	double d;
	int i;
	__u32 c;

	tab.last = sketch__bucket_log(UINT64_MAX);
	if (tab.last > BUCKET_LAST_MAX)
		return;
	tab.first_of[0] = 1;
	for (i = 1; i <= tab.last; i++) {
		/* the smallest v with bucket >= i: above first_of[i - 1] unless that is it */
		lo = tab.first_of[i - 1];
		if (sketch__bucket_log(lo) >= i) {
			tab.first_of[i] = lo;
			continue;
		}
		for (hi = UINT64_MAX; hi - lo > 1;) { /* bucket(lo) < i <= bucket(hi) */
			mid = lo + (hi - lo) / 2;
			if (sketch__bucket_log(mid) >= i)
				hi = mid;
			else
				lo = mid;
		}
		tab.first_of[i] = hi;
	}
	for (c = 0; c < CELLS; c++) {
		bits = (__u64)((1023ull << CELL_BITS) + c) << (52 - CELL_BITS);
		memcpy(&d, &bits, sizeof(d));
		tab.cell_start[c] = (__u16)ceil(log(d) / log_gamma());
	}
}

int sketch__bucket_of(__u64 v)
{
	int b;

	if (!v) /* no bucket's value (zeros are counted apart) and no cell's */
		return 0;
	pthread_once(&tab.once, tab_init);
	if (tab.last > BUCKET_LAST_MAX) /* not so with any alpha in use: the log, then */
		return sketch__bucket_log(v);
	b = tab.cell_start[cell_of(v)];
	while (b < tab.last && v >= tab.first_of[b + 1])
		b++;
	while (b > 0 && v < tab.first_of[b]) /* only if log() were not monotonic */
		b--;
	return b;
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

void sketch__count(struct sketch *s, __u64 v)
{
	add_exact(s, 1, v, v, v);
	s->unbucketed++;
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
