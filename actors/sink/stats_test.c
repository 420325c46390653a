// SPDX-License-Identifier: MIT
/*
 * The stats sink's algorithms, without a session:
 *
 * - the quantile sketch: every quantile within SKETCH_ALPHA of the exact one (the value of
 *   rank floor(q (n - 1))) on uniform, log-uniform, constant and zero-heavy data; the
 *   answer independent of the order of the values; merge equal to the sketch of the union;
 *   memory bounded with values from 1 to 2^64 - 1;
 * - SM-active: overlapping kernels merged, clamped to their windows, never more than the
 *   window, in any arrival order; per device the union over processes; late kernels counted
 *   and not added; gaps filled past the interval limit within the reported bound; and a
 *   randomised comparison with a brute-force union over a bitmap;
 * - the CPU section: self time to the innermost frame, total time to every distinct function
 *   on the stack once per sample (recursion too), kernel frames named with "_[k]", frames
 *   without a name in hex, names kept past their batch, processes and threads counted,
 *   intervals merged into the run, the cap on functions and its "(other)" bucket, and
 *   stats.txt with the CPU section first and one line for a run without GPU work;
 * - Python frames (common/pyframe.h) as functions "[py] QUALNAME (FILE)", every line of one
 *   function one function (self, total, recursion), "[py] 0x<code>" unnamed; the "python"
 *   and "unwind" members summed from the status block's counters of the actors of their
 *   role (two CPU sources, two correlator shards; a sink and a wrong role ignored), the
 *   mean ns per stack weighted by each shard's stacks, and stats.txt's Python lines.
 *
 * The CPU and counters sections are tested through the accumulator's interface (stats.h):
 * the format's own open and batch, then its tables and renderers. The meson target links
 * neither the sink library nor io_uring, so the three out.h calls stats.c makes are replaced
 * below by ones that keep the files in memory.
 */
#include "actors/sink/stats.h"

#include "actors/sink/fmt.h"
#include "actors/sink/out.h"

#include "actors/sink/sketch.h"
#include "actors/sink/sm_active.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/mix.h"
#include "common/pyframe.h"
#include "actors/sink/fmt_test_env.h"
#include "tests/tap.h"

static const double qs[] = { 0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1 };
#define N_QS (sizeof(qs) / sizeof(qs[0]))

static int u64_cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* The worst relative error of the sketch's quantiles against the exact ones of vals. */
static double worst_error(const struct sketch *s, __u64 *vals, size_t n)
{
	double worst = 0, exact, got, err;
	size_t i;

	qsort(vals, n, sizeof(*vals), u64_cmp);
	for (i = 0; i < N_QS; i++) {
		exact = (double)vals[(size_t)(qs[i] * (double)(n - 1))];
		got = sketch__quantile(s, qs[i]);
		err = exact ? fabs(got - exact) / exact : fabs(got);
		if (err > worst)
			worst = err;
	}
	return worst;
}

static void shuffle(__u64 *v, size_t n, __u64 seed)
{
	size_t i, j;
	__u64 t;

	for (i = n; i > 1; i--) {
		seed = xpu_mix64(seed);
		j = (size_t)(seed % i);
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* The bound itself, allowing for the rounding of log() at bucket edges. */
#define BOUND (SKETCH_ALPHA * (1 + 1e-9))

/* The bucket an add finds in its tables is the one the definition (one log) gives: at every
 * bucket's first value and around it, for every value up to 2^20 and for random ones. */
static void test_sketch_tables(void)
{
	__u64 v = 1, x, seed = 11, n = 0, prev;
	int b, bad = 0, last = sketch__bucket_log(UINT64_MAX);
	unsigned int d;

	for (b = 1; b <= last; b++) { /* the smallest value of bucket b or above, by bisection */
		__u64 lo = v, hi = UINT64_MAX, mid;

		if (sketch__bucket_log(lo) >= b)
			continue;
		while (hi - lo > 1) {
			mid = lo + (hi - lo) / 2;
			*(sketch__bucket_log(mid) >= b ? &hi : &lo) = mid;
		}
		for (d = 0, prev = hi - 3; d < 7; d++, prev++, n++)
			bad += prev && sketch__bucket_of(prev) != sketch__bucket_log(prev);
		v = hi;
	}
	for (x = 1; x <= 1u << 20; x++, n++)
		bad += sketch__bucket_of(x) != sketch__bucket_log(x);
	for (d = 0; d < 1000000; d++, n++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed >> (seed & 63); /* every magnitude */
		x += !x;
		bad += sketch__bucket_of(x) != sketch__bucket_log(x);
	}
	bad += sketch__bucket_of(UINT64_MAX) != last;
	tap_ok(!bad, "the tables give the log's bucket: %d of %" PRIu64 " values differ", bad,
	       (uint64_t)n);
}

static void test_sketch_bound(void)
{
	const double gamma = (1 + SKETCH_ALPHA) / (1 - SKETCH_ALPHA);
	double worst = 0, rep, err;
	size_t n = 100000, i;
	__u64 *v = calloc(n, sizeof(*v)), x, seed = 7;
	struct sketch s;
	int bad = 0;

	if (!v)
		tap_bail("out of memory");
	/* every bucket's representative is within alpha of every value it holds */
	for (x = 1; x < 200000; x = x < 5000 ? x + 1 : x + x / 997) {
		int b = sketch__bucket_of(x);

		rep = 2 * pow(gamma, b) / (gamma + 1);
		err = fabs(rep - (double)x) / (double)x;
		if (err > worst)
			worst = err;
		if (!(pow(gamma, b - 1) < (double)x * (1 + 1e-12) &&
		      (double)x <= pow(gamma, b) * (1 + 1e-12)))
			bad++;
	}
	tap_ok(!bad && worst <= BOUND,
	       "each value lies in its bucket, within %.4f%% of the bucket's representative",
	       100 * worst);
	test_sketch_tables();

	sketch__init(&s);
	tap_ok(s.count == 0 && sketch__quantile(&s, 0.5) == 0, "an empty sketch answers 0");

	for (i = 0; i < n; i++)
		v[i] = i + 1;
	shuffle(v, n, 1);
	for (i = 0; i < n; i++)
		sketch__add(&s, v[i]);
	err = worst_error(&s, v, n);
	tap_ok(err <= BOUND && s.count == n && s.sum == n * (n + 1) / 2 && s.min == 1 && s.max == n,
	       "uniform 1..100000: quantiles within %.4f%% (bound 1%%), exact count, sum, min, max",
	       100 * err);
	tap_ok(s.n < 600, "and it takes %u buckets", s.n);
	sketch__free(&s);

	/* log-uniform over 1 ns .. 1000 s: twelve decades */
	sketch__init(&s);
	for (i = 0; i < n; i++) {
		seed = xpu_mix64(seed);
		v[i] = (__u64)pow(10, 12.0 * (double)(seed >> 11) / 9007199254740992.0);
		sketch__add(&s, v[i]);
	}
	err = worst_error(&s, v, n);
	tap_ok(err <= BOUND, "log-uniform 1 ns .. 1000 s: quantiles within %.4f%% in %u buckets",
	       100 * err, s.n);
	sketch__free(&s);

	/* a kernel that always takes the same time: exact, thanks to the min/max clamp */
	sketch__init(&s);
	for (i = 0; i < 1000; i++)
		sketch__add(&s, 25000);
	tap_ok(sketch__quantile(&s, 0) == 25000 && sketch__quantile(&s, 0.5) == 25000 &&
		       sketch__quantile(&s, 1) == 25000,
	       "a constant is answered exactly");
	sketch__free(&s);

	/* zeros (a kernel with no measurable duration) are their own bucket */
	sketch__init(&s);
	for (i = 0; i < 1000; i++) {
		v[i] = i % 10 < 3 ? 0 : 1000 + i;
		sketch__add(&s, v[i]);
	}
	err = worst_error(&s, v, 1000);
	tap_ok(s.zeros == 300 && sketch__quantile(&s, 0.2) == 0 && err <= BOUND,
	       "30%% zeros: p20 is 0, every quantile within %.4f%%", 100 * err);
	sketch__free(&s);
	free(v);
}

static void test_sketch_merge(void)
{
	size_t n = 50000, i;
	__u64 *v = calloc(2 * n, sizeof(*v)), seed = 99;
	struct sketch a, b, all, again;
	double err;
	int same = 1, order = 1;

	if (!v)
		tap_bail("out of memory");
	sketch__init(&a);
	sketch__init(&b);
	sketch__init(&all);
	sketch__init(&again);
	/* two different distributions: short kernels and a slow tail */
	for (i = 0; i < 2 * n; i++) {
		seed = xpu_mix64(seed);
		v[i] = i < n ? 1000 + seed % 9000 : 1000000 + seed % 50000000;
		sketch__add(i < n ? &a : &b, v[i]);
		sketch__add(&all, v[i]);
	}
	tap_eq_u64(sketch__merge(&a, &b), 0, "merge succeeds");
	same = a.count == all.count && a.sum == all.sum && a.min == all.min && a.max == all.max &&
	       a.lo == all.lo && a.n == all.n &&
	       !memcmp(a.counts, all.counts, a.n * sizeof(*a.counts));
	tap_ok(same, "merged sketch == the sketch of the union, bucket for bucket");
	err = worst_error(&a, v, 2 * n);
	tap_ok(err <= BOUND, "merged quantiles within %.4f%%", 100 * err);

	/* the same values in another order: the same buckets */
	shuffle(v, 2 * n, 5);
	for (i = 0; i < 2 * n; i++)
		sketch__add(&again, v[i]);
	for (i = 0; i < N_QS; i++)
		order &= sketch__quantile(&again, qs[i]) == sketch__quantile(&all, qs[i]);
	tap_ok(order, "the answer does not depend on the order of the values");

	/* merging into an empty sketch, and reset keeps nothing but memory */
	sketch__reset(&b);
	tap_ok(b.count == 0 && b.n == 0 && b.cap > 0, "reset empties and keeps the memory");
	sketch__merge(&b, &all);
	tap_ok(b.count == all.count && sketch__quantile(&b, 0.99) == sketch__quantile(&all, 0.99),
	       "merging into an empty sketch copies it");
	sketch__free(&a);
	sketch__free(&b);
	sketch__free(&all);
	sketch__free(&again);
	free(v);
}

static void test_sketch_limits(void)
{
	struct sketch s;
	double p99;
	int i;

	sketch__init(&s);
	for (i = 0; i < 100; i++)
		sketch__add(&s, 1);
	for (i = 0; i < 9900; i++)
		sketch__add(&s, UINT64_MAX - (__u64)i * 1000000000000ull);
	p99 = sketch__quantile(&s, 0.99);
	tap_ok(s.n <= SKETCH_BUCKETS_MAX && s.collapsed == 100,
	       "values 1 and 2^64 - 1: %u buckets at most, the lowest folded (%llu)", s.n,
	       (unsigned long long)s.collapsed);
	tap_ok(fabs(p99 - (double)(UINT64_MAX - 99ull * 1000000000000ull)) <=
		       BOUND * (double)UINT64_MAX,
	       "and the high quantiles keep their bound");
	sketch__free(&s);
}

/* ---- SM-active ----------------------------------------------------------------------- */

/* The ns marked in a byte per ns. */
static __u64 union_ns(const unsigned char *covered, size_t n)
{
	__u64 ns = 0;
	size_t i;

	for (i = 0; i < n; i++)
		ns += covered[i];
	return ns;
}

static void test_busy(void)
{
	static unsigned char covered[4 * SM_INTERVALS_MAX * 100 + 100];
	__u64 f;
	static const __u64 iv[][2] = { { 20, 30 }, { 0, 10 }, { 5, 15 }, { 30, 40 }, { 12, 14 } };
	struct busy fwd = { 0 }, rev = { 0 };
	__u64 true_ns = 0;
	unsigned int i;
	int k;

	for (i = 0; i < 5; i++)
		busy__add(&fwd, iv[i][0], iv[i][1]);
	for (k = 4; k >= 0; k--)
		busy__add(&rev, iv[k][0], iv[k][1]);
	tap_ok(busy__ns(&fwd) == 35 && fwd.n == 2 && fwd.iv[0][1] == 15 && fwd.iv[1][0] == 20,
	       "overlapping and touching intervals merge: [0,15) [20,40) = 35 ns");
	tap_ok(busy__ns(&rev) == 35 && rev.n == 2, "in reverse arrival order too");
	busy__free(&fwd);
	busy__free(&rev);

	/* more disjoint intervals than the limit, in time order (as kernels come, a device's
	 * thousands a second): the earliest are folded, and the sum stays exact. The true union
	 * by brute force: a byte per ns. */
	memset(covered, 0, sizeof(covered));
	for (i = 0; i < 4 * SM_INTERVALS_MAX; i++) {
		__u64 s = (__u64)i * 100 + (xpu_mix64(i) % 50);

		busy__add(&fwd, s, s + 10);
		memset(covered + s, 1, 10);
	}
	true_ns = union_ns(covered, sizeof(covered));
	tap_ok(fwd.n <= SM_INTERVALS_MAX && busy__ns(&fwd) == true_ns && fwd.filled_ns == 0,
	       "past %u intervals in time order: %u kept, busy exact (%llu = %llu), nothing "
	       "filled",
	       SM_INTERVALS_MAX, fwd.n, (unsigned long long)busy__ns(&fwd),
	       (unsigned long long)true_ns);
	/* late ones, before the folded part, some in its gaps, some over its intervals:
	 * counted whole, the over-count at most filled_ns */
	for (i = 0; i < 16; i++) {
		__u64 s = (__u64)i * 1000 + (xpu_mix64(i + 7) % 90);

		busy__add(&fwd, s, s + 20);
		memset(covered + s, 1, 20);
	}
	true_ns = union_ns(covered, sizeof(covered));
	tap_ok(busy__ns(&fwd) >= true_ns && busy__ns(&fwd) <= true_ns + fwd.filled_ns &&
		       fwd.filled_ns > 0,
	       "kernels older than the folded part: true <= busy <= true + filled (%llu <= %llu "
	       "<= %llu + %llu)",
	       (unsigned long long)true_ns, (unsigned long long)busy__ns(&fwd),
	       (unsigned long long)true_ns, (unsigned long long)fwd.filled_ns);
	busy__free(&fwd);

	/* at the fold's edge: a piece ending at floor, one touching it, one over the last folded
	 * interval and past floor; then a long kernel over everything folded, which may add no
	 * more than the folded span holds */
	memset(covered, 0, sizeof(covered));
	for (i = 0; i <= SM_INTERVALS_MAX; i++) {
		busy__add(&fwd, (__u64)i * 100, (__u64)i * 100 + 10);
		memset(covered + i * 100, 1, 10);
	}
	f = fwd.floor;
	busy__add(&fwd, f - 5, f);
	busy__add(&fwd, f, f + 3);
	busy__add(&fwd, f - 20, f + 40);
	memset(covered + f - 20, 1, 60);
	true_ns = union_ns(covered, sizeof(covered));
	tap_ok(f > 0 && busy__ns(&fwd) >= true_ns && busy__ns(&fwd) <= true_ns + fwd.filled_ns &&
		       fwd.filled_ns <= 5 + 20,
	       "at the fold's edge: true <= busy <= true + filled (%llu <= %llu <= %llu + %llu)",
	       (unsigned long long)true_ns, (unsigned long long)busy__ns(&fwd),
	       (unsigned long long)true_ns, (unsigned long long)fwd.filled_ns);
	busy__add(&fwd, 0, f);
	memset(covered, 1, f);
	true_ns = union_ns(covered, sizeof(covered));
	tap_ok(busy__ns(&fwd) == true_ns,
	       "a long kernel over the whole folded span: the span counted once, busy exact (%llu "
	       "= %llu)",
	       (unsigned long long)busy__ns(&fwd), (unsigned long long)true_ns);
	busy__free(&fwd);
}

static const struct sm_total *total_of(const struct sm_active *a, __u64 key)
{
	__u32 i;

	for (i = 0; i < sm_active__n_totals(a); i++)
		if (sm_active__total(a, i)->key == key)
			return sm_active__total(a, i);
	return NULL;
}

static __u64 window_busy(const struct sm_active *a, __u64 start, __u64 key)
{
	__u32 i, k;

	for (i = 0; i < sm_active__windows_kept(a); i++) {
		const struct sm_window *w = sm_active__window(a, i);

		if (w->start_ns != start)
			continue;
		for (k = 0; k < w->n; k++)
			if (w->e[k].key == key)
				return w->e[k].busy_ns;
	}
	return 0;
}

static void test_windows(void)
{
	struct sm_active *a = sm_active__new(100, 1000000);
	const struct sm_total *t;
	struct sm_counts c;
	int i;

	if (!a)
		tap_bail("out of memory");
	/* device 0: [50,150) and [100,120) overlap; [300,350) alone; arrival out of order */
	sm_active__add(a, SM_DEVICE(0), 300, 350);
	sm_active__add(a, SM_DEVICE(0), 100, 120);
	sm_active__add(a, SM_DEVICE(0), 50, 150);
	/* ten kernels covering the whole of window [1000, 1100) and more */
	for (i = 0; i < 10; i++)
		sm_active__add(a, SM_DEVICE(0), 990 + (__u64)i, 1200);
	sm_active__close(a, false);
	sm_active__counts(a, &c);
	tap_ok(c.windows_closed == 0 && c.open == 6,
	       "nothing closes while the watermark is within lateness");
	sm_active__close(a, true);
	sm_active__counts(a, &c);
	t = total_of(a, SM_DEVICE(0));
	tap_ok(c.windows_closed == 6 && window_busy(a, 0, SM_DEVICE(0)) == 50 &&
		       window_busy(a, 100, SM_DEVICE(0)) == 50 &&
		       window_busy(a, 300, SM_DEVICE(0)) == 50,
	       "kernels clamped to windows: [0,100) 50, [100,200) 50, [300,400) 50");
	tap_ok(window_busy(a, 1000, SM_DEVICE(0)) == 100 &&
		       window_busy(a, 900, SM_DEVICE(0)) == 10 &&
		       window_busy(a, 1100, SM_DEVICE(0)) == 100,
	       "ten overlapping kernels: a window is never busier than its length (100 %%)");
	tap_ok(t && t->busy_ns == 360 && t->windows == 6 && t->peak_busy_ns == 100 &&
		       t->peak_start_ns == 1000,
	       "the run's busy time is the sum of its windows' (360 ns), peak window 1000");
	sm_active__free(a);

	/* two processes on one device: each its own time, the device their union */
	a = sm_active__new(1000, 1000000);
	if (!a)
		tap_bail("out of memory");
	sm_active__add(a, SM_PROCESS(7), 0, 400);
	sm_active__add(a, SM_DEVICE(1), 0, 400);
	sm_active__add(a, SM_PROCESS(8), 300, 600);
	sm_active__add(a, SM_DEVICE(1), 300, 600);
	sm_active__close(a, true);
	tap_ok(total_of(a, SM_PROCESS(7))->busy_ns == 400 &&
		       total_of(a, SM_PROCESS(8))->busy_ns == 300 &&
		       total_of(a, SM_DEVICE(1))->busy_ns == 600,
	       "processes 400 and 300 ns, their device 600 ns (not 700)");
	tap_ok(sm_active__n_totals(a) == 3 && sm_active__total(a, 0)->key == SM_DEVICE(1) &&
		       sm_active__total(a, 1)->key == SM_PROCESS(7),
	       "totals sorted by key: devices, then processes");
	sm_active__free(a);

	/* a kernel within the window of the one before takes a shorter way (no division): one
	 * that ends exactly at the window's end, one just past it, one back a window */
	a = sm_active__new(100, 1000000);
	if (!a)
		tap_bail("out of memory");
	sm_active__add(a, SM_DEVICE(2), 210, 220);
	sm_active__add(a, SM_DEVICE(2), 230, 300);
	sm_active__add(a, SM_DEVICE(2), 250, 301);
	sm_active__add(a, SM_DEVICE(2), 305, 310);
	sm_active__add(a, SM_DEVICE(2), 150, 205);
	sm_active__close(a, true);
	tap_ok(window_busy(a, 100, SM_DEVICE(2)) == 50 && window_busy(a, 200, SM_DEVICE(2)) == 85 &&
		       window_busy(a, 300, SM_DEVICE(2)) == 6 &&
		       total_of(a, SM_DEVICE(2))->busy_ns == 141,
	       "kernels in the window before's, at its end, past it and a window back: 50, 85, "
	       "6 ns");
	sm_active__free(a);
}

static void test_late(void)
{
	struct sm_active *a = sm_active__new(100, 100);
	struct sm_counts c;
	int i;

	if (!a)
		tap_bail("out of memory");
	sm_active__add(a, SM_DEVICE(0), 0, 50);
	sm_active__add(a, SM_DEVICE(0), 1000, 1010); /* watermark 1010: up to 910 is safe */
	sm_active__close(a, false);
	sm_active__counts(a, &c);
	tap_ok(c.windows_closed == 1 && c.closed_until == 900,
	       "the watermark closes the windows lateness behind it");
	tap_eq_u64(sm_active__add(a, SM_DEVICE(0), 10, 60), 0, "a late kernel is not an error");
	sm_active__add(a, SM_DEVICE(0), 950, 960); /* within lateness: counted */
	sm_active__close(a, true);
	sm_active__counts(a, &c);
	tap_ok(c.late == 1 && c.late_ns == 50 && window_busy(a, 0, SM_DEVICE(0)) == 50 &&
		       window_busy(a, 900, SM_DEVICE(0)) == 10 &&
		       total_of(a, SM_DEVICE(0))->late == 1,
	       "a kernel after its window closed is counted late (50 ns), not added");
	tap_eq_u64(sm_active__add(a, SM_DEVICE(0), 5, 5), (__u64)(__s64)-EINVAL,
		   "an empty interval is refused");
	sm_active__free(a);

	/* more windows than may stay open: the oldest close first */
	a = sm_active__new(10, 1000000);
	if (!a)
		tap_bail("out of memory");
	for (i = 0; i < SM_OPEN_MAX + 8; i++)
		sm_active__add(a, SM_DEVICE(0), (__u64)i * 10, (__u64)i * 10 + 5);
	sm_active__counts(a, &c);
	tap_ok(c.open == SM_OPEN_MAX && c.forced == 8 && c.windows_closed == 8,
	       "at most %d windows open: 8 closed early", SM_OPEN_MAX);
	sm_active__close(a, true);
	tap_eq_u64(total_of(a, SM_DEVICE(0))->busy_ns, (SM_OPEN_MAX + 8) * 5,
		   "and nothing is lost by it");
	sm_active__free(a);

	/* the last window below 2^64: its end does not fit in 64 bits, and the loop over a
	 * kernel's windows must neither wrap around (for ever) nor lose the piece */
	a = sm_active__new(100, 0);
	if (!a)
		tap_bail("out of memory");
	tap_eq_u64(sm_active__add(a, SM_DEVICE(0), UINT64_MAX - 50, UINT64_MAX), 0,
		   "a kernel in the last window below 2^64 is taken");
	sm_active__close(a, true);
	tap_eq_u64(total_of(a, SM_DEVICE(0))->busy_ns, 50, "with its 50 ns, once");
	sm_active__free(a);
}

/* Random kernels of 3 processes on 2 devices, in random order, against a bitmap. */
#define T_MAX 20000
#define W 1000

static void test_random(void)
{
	static unsigned char bits[5][T_MAX];
	static const __u64 keys[5] = { SM_DEVICE(0), SM_DEVICE(1), SM_PROCESS(100), SM_PROCESS(101),
				       SM_PROCESS(102) };
	struct sm_active *a = sm_active__new(W, 1ull << 40);
	__u64 seed = 3, want, got;
	int i, k, t, w, bad = 0;

	if (!a)
		tap_bail("out of memory");
	memset(bits, 0, sizeof(bits));
	for (i = 0; i < 3000; i++) {
		__u64 s, e;
		int proc, dev;

		seed = xpu_mix64(seed);
		s = seed % (T_MAX - 1);
		e = s + 1 + (seed >> 20) % 700;
		if (e > T_MAX)
			e = T_MAX;
		proc = (int)((seed >> 40) % 3);
		dev = (int)((seed >> 50) % 2);
		sm_active__add(a, keys[dev], s, e);
		sm_active__add(a, keys[2 + proc], s, e);
		for (t = (int)s; t < (int)e; t++)
			bits[dev][t] = bits[2 + proc][t] = 1;
	}
	sm_active__close(a, true);
	for (k = 0; k < 5; k++)
		for (w = 0; w < T_MAX / W; w++) {
			for (t = w * W, want = 0; t < (w + 1) * W; t++)
				want += bits[k][t];
			got = window_busy(a, (__u64)w * W, keys[k]);
			if (got != want) {
				tap_diag("entity %d window %d: got %llu want %llu", k, w,
					 (unsigned long long)got, (unsigned long long)want);
				bad++;
			}
		}
	tap_ok(!bad, "3000 random kernels: every window's busy time equals a brute-force union");
	sm_active__free(a);
}

/* ---- CPU section --------------------------------------------------------------------- */

/* out.h in memory: the last version of each file stats.c committed. */
#define FILES_MAX 4

static struct {
	char path[64];
	char *text;
} files[FILES_MAX];

struct out {
	char path[64];
	struct text t;
};

int out__open(struct out **o, const char *path, char *why, size_t why_len)
{
	*o = calloc(1, sizeof(**o));
	if (!*o) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	snprintf((*o)->path, sizeof((*o)->path), "%s", path);
	return 0;
}

int out__write(struct out *o, const void *data, size_t len)
{
	text__bytes(&o->t, data, len);
	return o->t.failed ? -ENOMEM : 0;
}

int out__commit(struct out *o, char *why, size_t why_len)
{
	int i;

	for (i = 0; i < FILES_MAX - 1 && files[i].text && strcmp(files[i].path, o->path); i++)
		;
	free(files[i].text);
	snprintf(files[i].path, sizeof(files[i].path), "%s", o->path);
	files[i].text = o->t.p ? o->t.p : strdup("");
	free(o);
	if (!files[i].text) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static const char *file_text(const char *path)
{
	int i;

	for (i = 0; i < FILES_MAX; i++)
		if (files[i].text && !strcmp(files[i].path, path))
			return files[i].text;
	return "";
}

static void files_free(void)
{
	int i;

	for (i = 0; i < FILES_MAX; i++) {
		free(files[i].text);
		files[i].text = NULL;
	}
}

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	(void)key;
	return NULL;
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	if (strcmp(key, "path"))
		return -ENOENT;
	snprintf(buf, size, "mem/stats.json");
	return 0;
}

static struct stats *cpu_open(void)
{
	struct fmt_env env = { .get = env_get, .path = env_path };
	char why[256];
	void *st = NULL;

	if (fmt_stats.open(&st, &env, why, sizeof(why)))
		tap_bail("open: %s", why);
	return st;
}

static const char *env_get_16(void *ctx, const char *key)
{
	(void)ctx;
	return strcmp(key, "max_kernels") ? NULL : "16";
}

/* One batch, its sequence number following the last one's (no gaps). */
static void cpu_feed(struct stats *st, const struct xpu_cevent *ev, __u32 n)
{
	static __u64 seq;
	struct xpu_wire_batch b = { .version = 1, .seq = seq, .n_events = n };

	seq += n;
	fmt_stats.batch(st, &b, ev);
}

static struct xpu_cevent cpu_event(__u32 pid, __u32 tid, const char *comm, __u64 weight,
				   const __u64 *stack, const char *const *frames, __u16 n_kernel,
				   __u16 n_user)
{
	return (struct xpu_cevent){ .kind = XPU_REC_CPU_SAMPLE,
				    .pid = pid,
				    .tid = tid,
				    .ts_ns = 1000000 + weight,
				    .value = weight,
				    .name = comm,
				    .name_len = comm ? (__u32)strlen(comm) : 0,
				    .stack = stack,
				    .frames = frames,
				    .n_kernel = n_kernel,
				    .n_user = n_user };
}

/* One launch-side or GPU event for test_markers: a call (CUDA_API), its LAUNCH marker, or a
 * kernel linked to the ids given (0: no link). */
static struct xpu_cevent launch_event(__u32 kind, __u64 id, __u32 tid, __u64 corr, __u64 ts,
				      __u64 api_id, __u64 marker_id)
{
	struct xpu_cevent e = { .kind = kind,
				.id = id,
				.pid = 40,
				.tid = tid,
				.correlation_id = corr,
				.ts_ns = ts,
				.end_ns = ts + 1000 };

	if (api_id)
		e.links[e.n_links++] =
			(struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = api_id };
	if (marker_id)
		e.links[e.n_links++] =
			(struct xpu_link){ .type = XPU_LINK_LAUNCHED_BY, .target = marker_id };
	return e;
}

/* A LAUNCH marker right after its own call is not remembered (the call is, and the queue delay
 * is taken from it); a marker whose call is unknown, or not the last one, is, and a kernel
 * with no known call takes its delay from it. */
static void test_markers(void)
{
	struct stats *st = cpu_open();
	struct xpu_cevent ev[] = {
		/* call 1 and its marker: the marker is not kept */
		launch_event(XPU_REC_CUDA_API, 1, 7, 501, 1000000, 0, 0),
		launch_event(XPU_REC_LAUNCH, 2, 7, 501, 1000100, 0, 0),
		/* a marker without its call (the API record lost): kept */
		launch_event(XPU_REC_LAUNCH, 3, 7, 502, 2000000, 0, 0),
		/* call 4 on thread 7, then the marker of another thread's call 503: kept */
		launch_event(XPU_REC_CUDA_API, 4, 7, 504, 3000000, 0, 0),
		launch_event(XPU_REC_LAUNCH, 5, 8, 503, 3000100, 0, 0),
		/* kernels: of call 1 (both links), of the lost call (marker only), of 503 */
		launch_event(XPU_REC_GPU_KERNEL, 6, 7, 501, 1050000, 1, 2),
		launch_event(XPU_REC_GPU_KERNEL, 7, 7, 502, 2070000, 0, 3),
		launch_event(XPU_REC_GPU_KERNEL, 8, 8, 503, 3090100, 0, 5),
	};
	const struct recent_launch *api = NULL, *m1, *m3, *m5;

	cpu_feed(st, ev, sizeof(ev) / sizeof(ev[0]));
	api = launch_map__find(&st->launches, 0, 1);
	m1 = launch_map__find(&st->launches, 0, 2);
	m3 = launch_map__find(&st->launches, 0, 3);
	m5 = launch_map__find(&st->launches, 0, 5);
	tap_ok(api && !m1 && m3 && m5 && launch_map__find(&st->launches, 0, 4),
	       "a marker right after its call is not kept; one whose call is unknown or not the "
	       "last is");
	tap_ok(st->cur.queue.count == 3 && st->cur.queue_unresolved == 0 &&
		       st->cur.queue.min == 50000 && st->cur.queue.max == 90000 &&
		       st->cur.queue.sum == 50000 + 70000 + 90000,
	       "queue delays from the call (50 us), and from the marker where the call is unknown "
	       "(70 us, 90 us): %llu of them, min %llu, max %llu",
	       (unsigned long long)st->cur.queue.count, (unsigned long long)st->cur.queue.min,
	       (unsigned long long)st->cur.queue.max);
	fmt_stats.free(st);
}

static const struct cpu_fn *fn_named(const struct stats *st, const char *name, bool kernel)
{
	const struct cpu *c = &st->cpu;
	__u32 i;

	for (i = 0; c->fns && i <= c->fn_mask; i++)
		if (c->fns[i] && c->fns[i]->kernel == kernel && !strcmp(c->fns[i]->name, name))
			return c->fns[i];
	return NULL;
}

/* The run's self and total of a function as "self_ns/self_samples total_ns/total_samples",
 * "absent" when there is no such function. */
static const char *fn_times(const struct stats *st, const char *name, bool kernel)
{
	static char buf[128];
	const struct cpu_fn *f = fn_named(st, name, kernel);

	if (!f)
		return "absent";
	snprintf(buf, sizeof(buf), "%llu/%llu %llu/%llu", (unsigned long long)f->run.self.ns,
		 (unsigned long long)f->run.self.samples, (unsigned long long)f->run.total.ns,
		 (unsigned long long)f->run.total.samples);
	return buf;
}

/* The names of the JSON list key, in order, comma-separated (names without quotes in them). */
static const char *list_names(const char *json, const char *key)
{
	static char buf[1024];
	char want[64];
	const char *p, *end, *q;
	size_t len = 0;

	buf[0] = 0;
	snprintf(want, sizeof(want), "\"%s\": [", key);
	p = strstr(json, want);
	if (!p)
		return "no list";
	p += strlen(want);
	end = *p == ']' ? p : strstr(p, "\n  ]"); /* a name may hold ']': "_[k]" does */
	for (; end && (p = strstr(p, "{\"name\": \"")) && p < end; p = q) {
		p += strlen("{\"name\": \"");
		q = strchr(p, '"');
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%.*s", len ? "," : "",
					(int)(q - p), p);
		if (len >= sizeof(buf))
			break;
	}
	return buf;
}

static bool has(const char *text, const char *what)
{
	if (strstr(text, what))
		return true;
	tap_diag("missing: %s", what);
	return false;
}

static void test_cpu_functions(void)
{
	static const __u64 s1[] = { 0xffffffff81000010, 0x1000, 0x2010, 0x2020, 0x3000 };
	static const __u64 s2[] = { 0x2010, 0x3000 };
	static const __u64 s3[] = { 0xffffffff81000abc, 0xffffffff81000def, 0x4000, 0x3000 };
	static const __u64 s4[] = { 0x5000, 0x3000 };
	static const char *const n2[] = { "recurse", "main" };
	/* no name for the first kernel frame and for the user frame 0x4000 ("" is none too);
	 * a kernel function named like a user one is another function */
	static const char *const n3[] = { NULL, "main", "", "main" };
	char leaf[] = "leaf"; /* the batch's copy: gone after it */
	const char *n1[] = { "do_syscall_64", leaf, "recurse", "recurse", "main" };
	struct xpu_cevent ev[5] = {
		cpu_event(10, 11, "app", 100, s1, n1, 1, 4),
		cpu_event(10, 12, "app", 300, s2, n2, 0, 2),
		cpu_event(20, 20, "tool", 600, s3, n3, 2, 2),
		cpu_event(20, 21, "tool", 50, s4, NULL, 0, 2), /* no names at all */
		cpu_event(30, 30, "nostack", 1000, NULL, NULL, 0, 3), /* no room for its stack */
	};
	struct stats *st = cpu_open();
	const char *json, *txt;
	char why[256];

	cpu_feed(st, ev, 5);
	memcpy(leaf, "XXXX", 4);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0,
	       "finish writes stats.json and stats.txt");
	json = file_text("mem/stats.json");
	txt = file_text("mem/stats.txt");

	tap_ok(!strcmp(fn_times(st, "recurse", false), "300/1 400/2"),
	       "recursion: a function twice on a stack counts once in total (%s)",
	       fn_times(st, "recurse", false));
	tap_ok(!strcmp(fn_times(st, "main", false), "0/0 1000/3") &&
		       !strcmp(fn_times(st, "leaf", false), "0/0 100/1"),
	       "total: every function on the stack, self only for the innermost (main %s)",
	       fn_times(st, "main", false));
	tap_ok(!strcmp(fn_times(st, "do_syscall_64", true), "100/1 100/1") &&
		       !strcmp(fn_times(st, "main", true), "0/0 600/1") &&
		       !strcmp(fn_times(st, "do_syscall_64", false), "absent"),
	       "kernel frames are their own functions: self of the innermost kernel frame");
	tap_ok(!strcmp(fn_times(st, "0xffffffff81000abc", true), "600/1 600/1") &&
		       !strcmp(fn_times(st, "0x4000", false), "0/0 600/1") &&
		       !strcmp(fn_times(st, "0x5000", false), "50/1 50/1") &&
		       !strcmp(fn_times(st, "0x3000", false), "0/0 50/1"),
	       "a frame without a name (NULL, \"\", no names at all) is its address in hex");
	tap_ok(fn_named(st, "leaf", false) && !fn_named(st, "XXXX", false),
	       "names are copied: the batch's text may change after it");

	tap_ok(has(json, "\"cpu\": {\"samples\": 5, \"sampled_ns\": 2050, \"without_stack\": 1, "
			 "\"processes\": 3, \"threads\": 5, \"functions\": 9,"),
	       "stats.json: samples, their weights, without a stack, processes, threads, functions");
	tap_ok(has(json, "{\"pid\": 30, \"comm\": \"nostack\", \"samples\": 1, \"sampled_ns\": "
			 "1000, \"share_pct\": 48.780}") &&
		       !strcmp(list_names(json, "top_processes"), "") &&
		       strstr(json, "{\"pid\": 20, \"comm\": \"tool\", \"samples\": 2, "
				    "\"sampled_ns\": 650") <
			       strstr(json, "{\"pid\": 10, \"comm\": \"app\""),
	       "stats.json: processes by sampled time, with their comm and share");
	tap_ok(!strcmp(list_names(json, "top_self"),
		       "0xffffffff81000abc_[k],recurse,do_syscall_64_[k],0x5000"),
	       "top_self: the innermost frames by self time, kernel ones with _[k] (%s)",
	       list_names(json, "top_self"));
	tap_ok(!strcmp(list_names(json, "top_total"),
		       "main,0xffffffff81000abc_[k],0x4000,main_[k],recurse,do_syscall_64_[k],leaf,"
		       "0x5000,0x3000"),
	       "top_total: by total time, ties by self time then name (%s)",
	       list_names(json, "top_total"));
	tap_ok(has(json, "{\"name\": \"recurse\", \"self_ns\": 300, \"self_pct\": 14.634, "
			 "\"self_samples\": 1, \"total_ns\": 400, \"total_pct\": 19.512, "
			 "\"total_samples\": 2}"),
	       "a function's row: self and total, ns, share of the sampled time, samples");
	tap_ok(has(txt, "\nCPU samples: 5 samples, 2.05 us sampled, 3 processes, 5 threads\n") &&
		       has(txt, "1 samples without a stack") &&
		       has(txt,
			   "      600 ns   29.268       600 ns   29.268  0xffffffff81000abc_[k]\n") &&
		       has(txt, "\nGPU: no activity recorded\n") && has(txt, "\nLosses: ") &&
		       !strstr(txt, "GPU kernels") && !strstr(txt, "SM active") &&
		       strstr(txt, "CPU samples") < strstr(txt, "GPU: no activity"),
	       "stats.txt: the CPU section first; without GPU work, one line for the GPU");
	fmt_stats.free(st);
	files_free();
}

/* Actor slot i of the status block: name, role and its counters (names and values, n). */
static void fake_actor(struct xpu_status_block *sb, int i, const char *name, __u32 role,
		       const char *const *names, const __u64 *values, int n)
{
	struct xpu_actor_slot *a = &sb->slots[i];
	int c;

	snprintf(a->name, sizeof(a->name), "%s", name);
	a->role = role;
	for (c = 0; c < n; c++) {
		snprintf(a->counters[c].name, sizeof(a->counters[c].name), "%s", names[c]);
		a->counters[c].value = values[c];
	}
	a->n_counters = (__u32)n;
}

static void test_python(void)
{
	/* the code objects' addresses */
	const __u64 hot = 0x7f0000001000ull, step = 0x7f0000002000ull, mod = 0x7f0000004000ull,
		    anon = 0x7f0000005000ull;
	__u64 s1[4] = { 0x401000, xpu_pyframe__ip(hot, 9), xpu_pyframe__ip(step, 12),
			xpu_pyframe__ip(mod, 30) };
	__u64 s2[3] = { xpu_pyframe__ip(hot, 10), xpu_pyframe__ip(step, 13),
			xpu_pyframe__ip(mod, 30) };
	__u64 s3[3] = { xpu_pyframe__ip(step, 12), xpu_pyframe__ip(step, 14),
			xpu_pyframe__ip(mod, 30) }; /* recursion, at two lines */
	__u64 s4[2] = { xpu_pyframe__ip(anon, 3), xpu_pyframe__ip(mod, 31) };
	static const char *const n1[] = { "_PyObject_Malloc", "hot_a (/w/p.py:9)",
					  "train_step (/w/p.py:12)", "<module> (/w/p.py:30)" };
	static const char *const n2[] = { "hot_a (/w/p.py:10)", "train_step (/w/p.py:13)",
					  "<module> (/w/p.py:30)" };
	static const char *const n3[] = { "train_step (/w/p.py:12)", "train_step (/w/p.py:14)",
					  "<module> (/w/p.py:30)" };
	static const char *const n4[] = { NULL, "<module> (/w/p.py:31)" };
	static const char *const src[] = { "py_processes", "py_unsupported", "py_stacks",
					   "py_frames",	   "py_truncated",   "py_bad_frames" };
	static const char *const cor[] = { "py_codes_resolved", "py_codes_failed",
					   "py_codes_cached",	"py_frames_named",
					   "py_frames_unnamed", "py_unmatched",
					   "py_stacks_merged",	"py_ns_per_merge",
					   "unwind_stacks",	"unwind_ns_per_stack",
					   "py_processes" /* a source's: not counted here */ };
	static const __u64 src_a[] = { 2, 1, 100, 900, 3, 4 }, src_b[] = { 1, 0, 10, 90, 0, 1 };
	static const __u64 cor_a[] = { 5, 1, 50, 800, 20, 2, 40, 3000, 10, 100, 77 },
			   cor_b[] = { 3, 0, 30, 150, 4, 1, 10, 8000, 30, 200, 77 };
	static const __u64 sink_v[] = { 1000 };
	struct xpu_cevent ev[4] = {
		cpu_event(7, 7, "python3", 100, s1, n1, 0, 4),
		cpu_event(7, 7, "python3", 200, s2, n2, 0, 3),
		cpu_event(7, 7, "python3", 50, s3, n3, 0, 3),
		cpu_event(7, 7, "python3", 25, s4, n4, 0, 2),
	};
	struct xpu_status_block *sb = calloc(1, sizeof(*sb));
	struct stats *st = cpu_open();
	const char *json, *txt;
	char why[256];

	if (!sb)
		tap_bail("out of memory");
	fake_actor(sb, 0, "cpu", CONF_ROLE_SOURCE, src, src_a, 6);
	fake_actor(sb, 1, "cpu2", CONF_ROLE_SOURCE, src, src_b, 6);
	fake_actor(sb, 3, "correlator.0", CONF_ROLE_CORRELATOR, cor, cor_a, 11);
	fake_actor(sb, 4, "correlator.1", CONF_ROLE_CORRELATOR, cor, cor_b, 11);
	fake_actor(sb, 5, "flame", CONF_ROLE_SINK, src + 2, sink_v, 1); /* not a source */
	st->status = sb;
	cpu_feed(st, ev, 4);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0, "finish with Python frames");
	json = file_text("mem/stats.json");
	txt = file_text("mem/stats.txt");

	tap_ok(!strcmp(fn_times(st, "[py] hot_a (/w/p.py)", false), "200/1 300/2") &&
		       !strcmp(fn_times(st, "[py] train_step (/w/p.py)", false), "50/1 350/3") &&
		       !strcmp(fn_times(st, "[py] <module> (/w/p.py)", false), "0/0 375/4") &&
		       !strcmp(fn_times(st, "[py] 0x7f0000005000", false), "25/1 25/1") &&
		       !strcmp(fn_times(st, "_PyObject_Malloc", false), "100/1 100/1"),
	       "Python functions: every line of one function is one function, recursion once "
	       "(train_step %s)",
	       fn_times(st, "[py] train_step (/w/p.py)", false));
	tap_ok(!strcmp(list_names(json, "top_self"), "[py] hot_a (/w/p.py),_PyObject_Malloc,"
						     "[py] train_step (/w/p.py),"
						     "[py] 0x7f0000005000"),
	       "top_self: Python functions beside native ones (%s)", list_names(json, "top_self"));
	tap_ok(!strcmp(list_names(json, "top_total"),
		       "[py] <module> (/w/p.py),[py] train_step (/w/p.py),[py] hot_a (/w/p.py),"
		       "_PyObject_Malloc,[py] 0x7f0000005000"),
	       "top_total: the callers above their callees (%s)", list_names(json, "top_total"));
	tap_ok(has(json, "\"functions\": 5,") && has(txt, "   80.000  [py] hot_a (/w/p.py)\n"),
	       "five functions; stats.txt lists them by the same names");
	tap_ok(has(json, "\"python\": {\"processes\": 3, \"unsupported\": 1, \"stacks\": 110, "
			 "\"frames\": 990, \"truncated\": 3, \"bad_frames\": 5, "
			 "\"codes_resolved\": 8, \"codes_failed\": 1, \"codes_cached\": 80, "
			 "\"frames_named\": 950, \"frames_unnamed\": 24, \"unmatched\": 3, "
			 "\"merged\": 50, \"ns_per_merge\": 4000}"),
	       "stats.json \"python\": the sources' and the correlators' counters, summed, ns per "
	       "merge weighted by each shard's merges");
	tap_ok(has(json, "\"unwind\": {\"stacks\": 40, \"ok\": 0, \"truncated\": 0, "
			 "\"failed\": 0, \"failed_no_rule\": 0, \"failed_bad_cfi\": 0, "
			 "\"failed_loop\": 0, \"frames_cfi\": 0, \"frames_fp\": 0, "
			 "\"ns_per_stack\": 175,"),
	       "stats.json \"unwind\": summed, ns per stack weighted by each shard's stacks");
	tap_ok(has(txt, "\nPython: 3 processes (1 unsupported), 110 stacks, "
			"990 frames (3 stacks truncated, 5 bad frames)\n"
			"  code objects: 8 resolved, 1 failed, 80 cached; frames 950 named, 24 "
			"unnamed; 50 stacks merged (4000 ns each), 3 unmatched\n"),
	       "stats.txt: the Python lines");
	fmt_stats.free(st);
	files_free();
	free(sb);
}

static void test_cpu_intervals(void)
{
	static const __u64 s1[] = { 0x2010, 0x2020, 0x3000 };
	static const __u64 s2[] = { 0x2010, 0x3000 };
	static const char *const n1[] = { "recurse", "recurse", "main" };
	static const char *const n2[] = { "recurse", "main" };
	struct xpu_cevent a = cpu_event(10, 11, "app", 300, s2, n2, 0, 2),
			  b = cpu_event(10, 12, "app", 100, s1, n1, 0, 3),
			  k = { .kind = XPU_REC_GPU_KERNEL, .pid = 10, .ts_ns = 5, .end_ns = 25 };
	struct stats *st = cpu_open();
	const struct cpu_fn *f;
	struct text t = { 0 };
	char why[256];

	cpu_feed(st, &a, 1);
	stats__merge(st); /* the end of an interval */
	cpu_feed(st, &b, 1);
	cpu_feed(st, &k, 1);
	f = fn_named(st, "recurse", false);
	tap_ok(f && f->run.total.ns == 300 && f->cur.total.ns == 100 && f->cur.self.ns == 100,
	       "an interval counts its own samples; the run has the earlier ones");
	stats__put_cpu(&t, st, &st->cur, false);
	tap_ok(t.p && has(t.p, "\"cpu\": {\"samples\": 1, \"sampled_ns\": 100, \"without_stack\": "
			       "0, \"processes\": 1, \"threads\": 1, \"functions\": 2,"),
	       "the interval's line: its samples, processes, threads and functions");
	text__free(&t);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       !strcmp(fn_times(st, "recurse", false), "400/2 400/2") &&
		       has(file_text("mem/stats.json"),
			   "\"cpu\": {\"samples\": 2, \"sampled_ns\": 400, \"without_stack\": 0, "
			   "\"processes\": 1, \"threads\": 2, \"functions\": 2,"),
	       "intervals merge into the run: samples, processes, threads, functions");
	tap_ok(strstr(file_text("mem/stats.txt"), "CPU samples") &&
		       strstr(file_text("mem/stats.txt"), "CPU samples") <
			       strstr(file_text("mem/stats.txt"), "GPU kernels: 1 runs") &&
		       !strstr(file_text("mem/stats.txt"), "no activity"),
	       "stats.txt: with GPU work, its sections after the CPU section");
	fmt_stats.free(st);
	files_free();
}

static void test_cpu_limit(void)
{
	static const __u64 sa[] = { 1, 2, 3, 4, 5, 6 }, sb[] = { 6, 5, 1 };
	static const char *const na[] = { "f1", "f2", "f3", "f4", "f5", "f6" };
	static const char *const nb[] = { "f6", "f5", "f1" };
	struct xpu_cevent ev[2] = { cpu_event(1, 1, "x", 10, sa, na, 0, 6),
				    cpu_event(1, 1, "x", 5, sb, nb, 0, 3) };
	struct stats *st = cpu_open();
	const char *json;
	char why[256];

	st->cpu.max_fns = 4;
	cpu_feed(st, ev, 2);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0, "finish");
	json = file_text("mem/stats.json");
	tap_ok(st->cpu.n_fns == 4 && !strcmp(fn_times(st, "f1", false), "10/1 15/2") &&
		       !strcmp(fn_times(st, "f4", false), "0/0 10/1") && !fn_named(st, "f5", false),
	       "the first 4 functions are kept apart, the later ones are not");
	tap_ok(st->cpu.other.run.self.ns == 5 && st->cpu.other.run.total.ns == 15 &&
		       st->cpu.other.run.total.samples == 2 && st->cpu.frames_over == 4,
	       "(other): self of the sample whose innermost frame is past the cap, total once a "
	       "sample however many of its frames are in it; 4 frames counted there");
	tap_ok(has(json, "\"functions\": 4,") &&
		       has(json, "{\"name\": \"(other)\", \"self_ns\": 5, \"self_pct\": 33.333, "
				 "\"self_samples\": 1, \"total_ns\": 15, \"total_pct\": 100.000, "
				 "\"total_samples\": 2}") &&
		       has(json, "\"max_functions\": 4, \"frames_over_max\": 4,") &&
		       !strcmp(list_names(json, "top_total"), "f1,(other),f2,f3,f4"),
	       "stats.json: the (other) row, not counted as a function, and frames_over_max");
	tap_ok(has(file_text("mem/stats.txt"), "4 frames past the first 4 functions counted as "
					       "(other)"),
	       "stats.txt says so");
	fmt_stats.free(st);
	files_free();
}

/* Past CPU_PROCESSES_MAX processes, the rest are one "(other)" row, not counted. */
static void test_cpu_processes(void)
{
	__u32 n = CPU_PROCESSES_MAX + 2, i;
	struct xpu_cevent *ev = calloc(n, sizeof(*ev));
	struct stats *st = cpu_open();
	char why[256];

	if (!ev)
		tap_bail("out of memory");
	for (i = 0; i < n; i++) /* the last two: one process past the limit, sampled twice */
		ev[i] = cpu_event(1 + (i < n - 1 ? i : i - 1), 7, "p", 1, NULL, NULL, 0, 0);
	cpu_feed(st, ev, n);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"),
			   "\"processes\": 65536, \"threads\": 65537,") &&
		       has(file_text("mem/stats.json"),
			   "\"top_processes\": [\n    {\"pid\": null, \"comm\": \"(other)\", "
			   "\"samples\": 2, \"sampled_ns\": 2,") &&
		       has(file_text("mem/stats.json"), "\"process_samples_over_max\": 2,") &&
		       has(file_text("mem/stats.txt"), "   (other)          2         2 ns"),
	       "past %u processes: one (other) row with pid null, not in the count",
	       CPU_PROCESSES_MAX);
	free(ev);
	fmt_stats.free(st);
	files_free();
}

/* ---- sync metadata ------------------------------------------------------------------- */

static struct xpu_cevent clock_reading(__u32 clock, __u64 ref_before, __u64 other, __u64 width)
{
	return (struct xpu_cevent){ .kind = XPU_REC_CLOCK_SYNC,
				    .pid = 7,
				    .tid = 7,
				    .sub_kind = clock,
				    .ts_ns = ref_before,
				    .value = other,
				    .end_ns = ref_before + width };
}

/* CLOCK_SYNC events into a model per other clock in stats.json; none: CLOCK_MONOTONIC. */
static void test_clock_sync(void)
{
	struct xpu_cevent ev[21];
	struct stats *st = cpu_open();
	char why[256];
	__u32 i;

	ev[0] = cpu_event(10, 11, "app", 100, NULL, NULL, 0, 0);
	cpu_feed(st, ev, 1);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"),
			   "\"clock_sync\": {\"all\":{\"source\":\"all sources stamp "
			   "CLOCK_MONOTONIC\",\"target\":\"CLOCK_MONOTONIC\",\"slope\":1,"
			   "\"intercept_ns\":0,\"error_ns\":0,"),
	       "no CLOCK_SYNC: every source stamps CLOCK_MONOTONIC, error 0");
	fmt_stats.free(st);
	files_free();

	/* CLOCK_REALTIME at 1.7e18 ns read in the middle of 1 us brackets, once a second; a
	 * remote clock running 7 % fast */
	st = cpu_open();
	for (i = 0; i < 10; i++) {
		ev[2 * i] = clock_reading(XPU_CLOCK_REALTIME, 5000000000ull + i * 1000000000ull,
					  1700000000000000000ull + i * 1000000000ull + 500, 1000);
		ev[2 * i + 1] = clock_reading(XPU_CLOCK_REMOTE, 5000000000ull + i * 1000000000ull,
					      1000000000ull + i * 1070000000ull, 1000);
	}
	ev[20] = clock_reading(XPU_CLOCK_REALTIME, 6000, 1, 0);
	ev[20].end_ns = 5000; /* ends before it begins: refused */
	cpu_feed(st, ev, 21);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"),
			   "\"CLOCK_REALTIME\":{\"source\":\"CLOCK_REALTIME\",\"target\":"
			   "\"CLOCK_MONOTONIC\",\"slope\":1,\"intercept_ns\":-1699999995000000000,"
			   "\"error_ns\":501,") &&
		       has(file_text("mem/stats.json"), "\"samples\":10,\"tightest_ns\":1000,"),
	       "CLOCK_REALTIME: its offset exactly, the error half a bracket");
	tap_ok(has(file_text("mem/stats.json"), "\"readings\":11,\"refused\":1}") &&
		       has(file_text("mem/stats.json"), "\"flags\":[\"skew\"],\"message\":"
							"\"clock skew of remote against") &&
		       !has(file_text("mem/stats.json"), "\"all\":"),
	       "a bad bracket is refused; 7 %% skew is flagged, naming the clock");
	fmt_stats.free(st);
	files_free();
}

/* ---- counters section ---------------------------------------------------------------- */

static struct xpu_cevent pmu(__u32 pid, __u32 cpu, __u32 scope, const char *name, __u64 ts,
			     __u64 delta, double scale)
{
	return (struct xpu_cevent){ .kind = XPU_REC_PMU_COUNTER,
				    .pid = pid,
				    .tid = pid,
				    .cpu = cpu,
				    .ts_ns = ts,
				    .value = delta * 10,
				    .delta = delta,
				    .scale = scale,
				    .sub_kind = scope,
				    .name = name,
				    .name_len = name ? (__u32)strlen(name) : 0 };
}

#define S1 1000000000ull /* one second, the span of the readings below */

/* Readings at 1 s and 2 s: two CPUs' cycles (one of them counted half the time, scale 2) and
 * instructions; pid 10's software and cache counters; pid 20's cycles, a counter that never
 * ran and one without a name. A kernel of pid 20 with counters attached, one of its runs
 * extrapolated. */
static __u32 counters_events(struct xpu_cevent *ev)
{
	static const struct xpu_wire_counter kc[3] = {
		{ .name = "instructions", .name_len = 12, .delta = 3000 },
		{ .name = "cycles", .name_len = 6, .delta = 2000 },
		{ .name = "cache-misses:u", .name_len = 14, .delta = 5 }
	};
	__u32 n = 0, r;

	for (r = 1; r <= 2; r++) {
		__u64 ts = r * S1;

		ev[n++] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "cycles", ts, 1000, 1.0);
		ev[n++] = pmu(0, 1, XPU_PMU_SCOPE_CPU, "cycles", ts, 1000, 2.0);
		ev[n++] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "instructions", ts, 3000, 1.0);
		ev[n++] =
			pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "page-faults", ts, 50, 1.0);
		ev[n++] = pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "context-switches", ts, 7,
			      1.0);
		ev[n++] = pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "cache-references", ts,
			      1000, 1.0);
		ev[n++] =
			pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "cache-misses", ts, 10, 1.0);
		ev[n++] = pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "branches", ts, 400, 1.0);
		ev[n++] =
			pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_THREAD, "branch-misses", ts, 4, 1.0);
		ev[n++] = pmu(10, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "cycles", ts, 100, 1.0);
		ev[n++] = pmu(20, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "cycles", ts, 500, 1.0);
	}
	ev[n++] = pmu(20, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, "task-clock", S1, 0, 0.0);
	ev[n++] = pmu(20, XPU_PMU_NO_CPU, XPU_PMU_SCOPE_PROCESS, NULL, S1, 5, 1.0);
	for (r = 0; r < 2; r++) {
		ev[n] = (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
					     .pid = 20,
					     .ts_ns = S1 + S1 / 4,
					     .end_ns = S1 + S1 / 2,
					     .name = "gemm",
					     .name_len = 4,
					     .n_counters = 3,
					     .ipc = r ? 1.0 : 2.0,
					     .counter_flags = r ? XPU_COUNTERS_F_ESTIMATED : 0 };
		memcpy(ev[n].counters, kc, sizeof(kc));
		ev[n++].counters[0].delta = r ? 1000 : 3000;
	}
	ev[n++] = (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
				       .pid = 20,
				       .ts_ns = S1 + S1 / 4,
				       .end_ns = S1 + S1 / 2,
				       .name = "relu",
				       .name_len = 4 };
	return n;
}

static void test_counters(void)
{
	struct xpu_cevent ev[32];
	__u32 n = counters_events(ev);
	struct stats *st = cpu_open();
	const char *json, *txt;
	struct text t = { 0 };
	char why[256];

	cpu_feed(st, ev, n);
	stats__put_counters(&t, st, &st->cur, false);
	tap_ok(t.p && has(t.p,
			  "\"counters\": {\"readings\": 24, \"not_counted\": 1, \"names\": 10, "
			  "\"processes\": 2,"),
	       "an interval's counters: readings, those of a counter that never ran, names");
	if (tap_failed_)
		tap_diag("%s", t.p);
	text__free(&t);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0, "finish");
	json = file_text("mem/stats.json");
	txt = file_text("mem/stats.txt");
	tap_ok(has(json,
		   "\"system\": [\n    {\"name\": \"cycles\", \"readings\": 4, \"not_counted\": "
		   "0, \"total\": 6000.000, \"rate_per_s\": 6000.000, \"running_min_pct\": "
		   "50.000, \"running_mean_pct\": 75.000},\n    {\"name\": \"instructions\","),
	       "system-wide: summed over CPUs, each delta times its scale, rate over the span, "
	       "multiplexing min and mean");
	tap_ok(has(json, "\"system_derived\": {\"ipc\": 1.000000}"),
	       "system-wide IPC: instructions / cycles");
	tap_ok(has(json, "\"rank_by\": \"cycles\",\n  \"top_processes\": [\n    {\"pid\": 20, ") &&
		       strstr(json, "{\"pid\": 20, ") < strstr(json, "{\"pid\": 10, "),
	       "processes ranked by cycles: pid 20 (1000) before pid 10 (200)");
	tap_ok(has(json, "{\"name\": \"[unnamed counter]\", \"readings\": 1, \"not_counted\": 0, "
			 "\"total\": 5.000,") &&
		       has(json,
			   "{\"name\": \"task-clock\", \"readings\": 1, \"not_counted\": 1, "
			   "\"total\": 0.000, \"rate_per_s\": 0.000, \"running_min_pct\": 0.000"),
	       "a counter without a name has a row; one that never ran counts nothing");
	tap_ok(has(json, "\"derived\": {\"cache_miss_pct\": 1.000000, \"branch_miss_pct\": "
			 "1.000000, \"page_faults_per_s\": 100.000000, \"context_switches_per_s\": "
			 "14.000000}"),
	       "a process's ratios: cache and branch misses (thread readings count to their "
	       "process), faults and switches per second; no IPC without instructions");
	tap_ok(has(json, "\"kernels\": [\n    {\"name\": \"gemm\", \"runs\": 2, \"with_counters\": "
			 "2, \"estimated\": 1, \"ipc_runs\": 2, \"ipc_mean\": 1.500000, "
			 "\"instructions_runs\": 2, \"instructions_mean\": 2000.000}\n  ],") &&
		       !strstr(json, "{\"name\": \"relu\", \"runs\""),
	       "kernels with counters: mean IPC and instructions per run; others not listed");
	tap_ok(has(json, "\"limits\": {\"max_names\": 256, \"max_groups\": 8192, \"names\": 10, "
			 "\"groups\": 12, \"readings_over_max\": 0}}"),
	       "the counters' limits");
	tap_ok(has(txt, "\nCounters: 24 readings; rates per second of the 1.000 s span\n") &&
		       has(txt, "System-wide (all CPUs)\n") &&
		       has(txt, "              6000           6000      50.0 / 75.0   cycles\n") &&
		       has(txt, "  IPC 1.000\n") && has(txt, "Top processes by cycles\npid 20\n") &&
		       has(txt, "  cache misses % 1.000, branch misses % 1.000, page faults/s "
				"100.000, context switches/s 14.000\n") &&
		       has(txt, "task-clock (some readings not counted)\n") &&
		       has(txt, "         2          1      1.500           2000  gemm\n"),
	       "stats.txt: the counters section");
	fmt_stats.free(st);
	files_free();

	/* no readings: the member is there, empty; stats.txt says nothing of counters */
	st = cpu_open();
	cpu_feed(st, ev + n - 1, 1);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"),
			   "\"counters\": {\"readings\": 0, \"not_counted\": 0, \"names\": 0, "
			   "\"processes\": 0,\n  \"system\": [],\n  \"system_derived\": {},\n  "
			   "\"rank_by\": null,\n  \"top_processes\": [],\n  \"kernels\": [],\n") &&
		       !strstr(file_text("mem/stats.txt"), "Counters"),
	       "without readings: an empty counters member, no section in stats.txt");
	fmt_stats.free(st);
	files_free();

	/* intervals: the interval's own, merged into the run */
	st = cpu_open();
	cpu_feed(st, ev, 11); /* the first round */
	stats__merge(st);
	cpu_feed(st, ev + 11, 11);
	t = (struct text){ 0 };
	stats__put_counters(&t, st, &st->cur, false);
	tap_ok(t.p && has(t.p, "\"readings\": 11,") &&
		       has(t.p, "{\"name\": \"cycles\", \"readings\": 2, \"not_counted\": 0, "
				"\"total\": 3000.000,"),
	       "an interval has its own readings");
	text__free(&t);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"),
			   "{\"name\": \"cycles\", \"readings\": 4, \"not_counted\": 0, \"total\": "
			   "6000.000, \"rate_per_s\": 6000.000, \"running_min_pct\": 50.000, "
			   "\"running_mean_pct\": 75.000}"),
	       "and the run the sum of its intervals, multiplexing min and mean merged");
	fmt_stats.free(st);
	files_free();

	/* bounded: past CTR_NAMES_MAX names, readings are only counted */
	{
		static char names[CTR_NAMES_MAX + 2][16];
		struct xpu_cevent one;
		__u32 i;

		st = cpu_open();
		for (i = 0; i < CTR_NAMES_MAX + 2; i++) {
			snprintf(names[i], sizeof(names[i]), "c%u", i);
			one = pmu(0, 0, XPU_PMU_SCOPE_CPU, names[i], S1, 1, 1.0);
			cpu_feed(st, &one, 1);
		}
		tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
			       has(file_text("mem/stats.json"),
				   "\"names\": 256, \"groups\": 256, \"readings_over_max\": 2}}") &&
			       has(file_text("mem/stats.txt"),
				   "2 readings past the first 256 names"),
		       "past 256 counter names the readings are counted, in no row");
		fmt_stats.free(st);
		files_free();
	}
}

/* derived.h's rule: a counter with modifiers pairs with nothing, on a kernel nor system-wide
 * (it used to count as instructions on a kernel). */
static void test_derived_rule(void)
{
	static const struct xpu_wire_counter kc[2] = {
		{ .name = "instructions:u", .name_len = 14, .delta = 4000 },
		{ .name = "cycles", .name_len = 6, .delta = 2000 },
	};
	struct xpu_cevent ev[5];
	struct stats *st = cpu_open();
	const char *json;
	char why[256];

	ev[0] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "cycles", S1, 1000, 1.0);
	ev[1] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "instructions:u", S1, 3000, 1.0);
	ev[2] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "cycles", 2 * S1, 1000, 1.0);
	ev[3] = pmu(0, 0, XPU_PMU_SCOPE_CPU, "instructions:u", 2 * S1, 3000, 1.0);
	ev[4] = (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
				     .pid = 20,
				     .ts_ns = S1,
				     .end_ns = S1 + 100,
				     .name = "axpy",
				     .name_len = 4,
				     .n_counters = 2 };
	memcpy(ev[4].counters, kc, sizeof(kc));
	cpu_feed(st, ev, 5);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0, "finish");
	json = file_text("mem/stats.json");
	tap_ok(has(json, "\"system_derived\": {}") &&
		       has(json, "{\"name\": \"axpy\", \"runs\": 1, \"with_counters\": 1, "
				 "\"estimated\": 0, \"ipc_runs\": 0, \"ipc_mean\": 0.000000, "
				 "\"instructions_runs\": 0,"),
	       "instructions:u is not instructions: no system IPC, no kernel instructions");
	fmt_stats.free(st);
	files_free();
}

/* The interval lines held while their file cannot be written, dropped past 16 MiB: a line
 * whose write was cut short keeps its rest, so the file's last line is finished before the
 * next begins (it was dropped, and the next line was appended to the half in the file). */
static void test_drop_lines(void)
{
	static const char held[] = "end of A}\n{\"interval\": 1}\n{\"interval\": 2}\n";
	struct text t = { 0 };
	__u64 n;

	text__bytes(&t, held, sizeof(held) - 1);
	n = text__drop_lines(&t, true);
	tap_ok(n == 2 && t.len == 10 && !memcmp(t.p, "end of A}\n", 10),
	       "intervals: dropped lines keep the rest of the one cut short (%llu dropped, %zu kept)",
	       (unsigned long long)n, t.len);
	t.len = 0;
	text__bytes(&t, held + 10, sizeof(held) - 11);
	n = text__drop_lines(&t, false);
	tap_ok(n == 2 && t.len == 0, "intervals: and whole lines go whole (%llu dropped)",
	       (unsigned long long)n);
	text__free(&t);
}

/* Past max_kernels the names go to one [other kernels] row, which is no name: "names" counts
 * the names kept apart (it counted that row too). */
static void test_kernel_names(void)
{
	struct fmt_env env = { .get = env_get_16, .path = env_path };
	static char names[20][16];
	struct xpu_cevent ev[20];
	char why[256];
	void *st = NULL;
	__u32 i;

	if (fmt_stats.open(&st, &env, why, sizeof(why)))
		tap_bail("open: %s", why);
	for (i = 0; i < 20; i++) {
		snprintf(names[i], sizeof(names[i]), "kernel_%u", i);
		ev[i] = (struct xpu_cevent){ .kind = XPU_REC_GPU_KERNEL,
					     .id = i + 1,
					     .pid = 10,
					     .ts_ns = 1000000 + i * 1000,
					     .end_ns = 1000500 + i * 1000,
					     .name = names[i],
					     .name_len = (__u32)strlen(names[i]) };
	}
	cpu_feed(st, ev, 20);
	tap_ok(fmt_stats.finish(st, why, sizeof(why)) == 0 &&
		       has(file_text("mem/stats.json"), "\"count\": 20, \"total_ns\": 10000, "
							"\"names\": 16,") &&
		       has(file_text("mem/stats.json"), "\"[other kernels]\""),
	       "kernels: past max_kernels, names counts the 16 kept apart, not [other kernels]");
	fmt_stats.free(st);
	files_free();
}

/* The intervals file and the text summary cannot be one file. */
static void test_text_is_intervals(void)
{
	struct fmt_test_opt o[] = { { "path", "/tmp/xpusup-stats-same.json" },
				    { "text", "/tmp/xpusup-stats-same.txt" },
				    { "intervals", "/tmp/xpusup-stats-same.txt" },
				    { "interval_s", "60" },
				    { NULL, NULL } };
	struct fmt_env env = fmt_test_env(o);
	char why[256] = "";
	void *st = NULL;
	int err = fmt_stats.open(&st, &env, why, sizeof(why));

	tap_ok(err == -EINVAL && strstr(why, "the same file as 'text'"),
	       "files: intervals = text is refused (%s)", why);
	if (!err)
		fmt_stats.free(st);
}

int main(void)
{
	test_drop_lines();
	test_text_is_intervals();
	test_kernel_names();
	test_sketch_bound();
	test_sketch_merge();
	test_sketch_limits();
	test_busy();
	test_windows();
	test_late();
	test_random();
	test_markers();
	test_cpu_functions();
	test_python();
	test_cpu_intervals();
	test_cpu_limit();
	test_cpu_processes();
	test_counters();
	test_clock_sync();
	test_derived_rule();
	return tap_done();
}
