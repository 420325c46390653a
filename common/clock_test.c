// SPDX-License-Identifier: MIT
/* The clock module against synthetic clocks whose truth is known exactly: calibration from
 * noisy brackets recovers offsets and slopes within its own error bound; tighter brackets
 * give a smaller bound and the tightest are kept; drift is followed across recalibrations;
 * docs/clock.md's error table; the sync metadata's JSON. */
#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

/* splitmix64: deterministic noise, the same on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd_between(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

__extension__ typedef __int128 i128; /* exact truth; GCC and clang have it */

/*
 * A true clock: target = source + offset + (source - kink) * ppm / 1e6 piecewise, with
 * ppm_before up to kink and ppm_after beyond it; source times are multiples of 20 us so a
 * whole number of ppm gives whole ns (the truth is exact, not rounded).
 */
struct truth {
	int64_t offset;
	uint64_t base; /* where the ppm terms count from */
	uint64_t kink;
	int64_t ppm_before, ppm_after;
};

static uint64_t truth_at(const struct truth *t, uint64_t src)
{
	i128 d = (i128)src - (i128)t->base, k = (i128)t->kink - t->base, v;

	if (d <= k)
		v = (i128)src + t->offset + d * t->ppm_before / 1000000;
	else
		v = (i128)src + t->offset + k * t->ppm_before / 1000000 +
		    (d - k) * t->ppm_after / 1000000;
	return (uint64_t)v;
}

/* A reading at src with a bracket of width in [wmin, wmax], the truth anywhere in it. */
static struct clock_sample reading(const struct truth *t, uint64_t src, uint64_t wmin,
				   uint64_t wmax)
{
	uint64_t T = truth_at(t, src), w = rnd_between(wmin, wmax), u = rnd_between(0, w);

	return (struct clock_sample){ .ref_before_ns = T - u,
				      .source_ns = src,
				      .ref_after_ns = T - u + w };
}

/* Whether slope is 1 + ppm within tol ppm. */
static bool absd_ppm(double slope, double ppm, double tol)
{
	double d = (slope - 1) * 1e6 - ppm;

	return d <= tol && -d <= tol;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The largest |map(x) - truth(x)| over the model's range, on a 20 us grid (every 1000th). */
static uint64_t worst_error(const struct clock_model *m, const struct truth *t)
{
	uint64_t x, worst = 0, e;

	for (x = m->source_first_ns; x <= m->source_last_ns; x += 20000 * 1000ull) {
		e = absdiff(clock_model__map(m, x), truth_at(t, x));
		worst = e > worst ? e : worst;
	}
	e = absdiff(clock_model__map(m, m->source_last_ns), truth_at(t, m->source_last_ns));
	return e > worst ? e : worst;
}

/* Feed n readings every step_ns from start (a multiple of 20 us). */
static void feed(struct clock_fit *fit, const struct truth *t, uint64_t start, uint64_t step_ns,
		 unsigned int n, uint64_t wmin, uint64_t wmax)
{
	struct clock_sample s;
	unsigned int i;

	for (i = 0; i < n; i++) {
		s = reading(t, start + i * step_ns, wmin, wmax);
		if (clock_fit__add(fit, &s))
			tap_bail("clock_fit__add refused a good reading");
	}
}

static void test_recover(void)
{
	/* a GPU clock 1.4 hours after its reset, 123456789 ns behind, running 50 ppm slow */
	struct truth t = {
		.offset = 123456789, .base = 0, .kink = UINT64_MAX / 2, .ppm_before = 50
	};
	uint64_t start = 5000000000000ull, worst, at0;
	struct clock_model m;
	struct clock_fit *fit;
	int err;

	fit = clock_fit__new("cupti", NULL);
	if (!fit)
		tap_bail("clock_fit__new: %s", strerror(errno));
	/* 60 s at 100 Hz, brackets 0.5 to 20 us wide */
	feed(fit, &t, start, 10000000, 6000, 500, 20000);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && !m.flags && m.generation == 1 && m.samples == 60 * 4,
	       "recover: a model from 60 buckets of the 4 tightest (err %d, flags %#x, samples %u)",
	       err, m.flags, m.samples);
	worst = worst_error(&m, &t);
	tap_ok(worst <= m.error_ns,
	       "recover: map() is within the reported bound over the window (worst %" PRIu64
	       " ns, bound %" PRIu64 " ns)",
	       worst, m.error_ns);
	tap_ok(m.error_ns >= m.tightest_ns / 2 && m.error_ns < 5000,
	       "recover: the bound is at least half the tightest bracket (%" PRIu64
	       " ns) and useful (%" PRIu64 " ns < 5 us)",
	       m.tightest_ns, m.error_ns);
	tap_ok((m.slope - 1.00005) * 1e6 <= m.slope_error_ppm &&
		       (1.00005 - m.slope) * 1e6 <= m.slope_error_ppm && m.slope_error_ppm < 1,
	       "recover: slope %.9f is 1 + 50 ppm within its bound (%.4f ppm)", m.slope,
	       m.slope_error_ppm);
	at0 = clock_model__error_at(&m, 0);
	tap_ok(absdiff((uint64_t)m.intercept_ns, 123456789) <= at0,
	       "recover: intercept %" PRId64 " is 123456789 within the bound extrapolated to "
	       "source 0 (%" PRIu64 " ns)",
	       m.intercept_ns, at0);
	tap_ok(absdiff(clock_model__map(&m, start + 70000000000ull),
		       truth_at(&t, start + 70000000000ull)) <=
		       clock_model__error_at(&m, start + 70000000000ull),
	       "recover: 10 s past the window, within the extrapolated bound (%" PRIu64 " ns)",
	       clock_model__error_at(&m, start + 70000000000ull));
	clock_fit__free(fit);

	/* a remote host's CLOCK_REALTIME (1.7e18 ns) onto CLOCK_MONOTONIC (3 days): no double
	 * holds a whole timestamp, so nothing is lost to rounding */
	t = (struct truth){ .offset = -1700000000000000000ll + 259200000000000ll,
			    .base = 1700000000000000000ull,
			    .kink = UINT64_MAX,
			    .ppm_before = -20 };
	fit = clock_fit__new("remote host gpu7", NULL);
	feed(fit, &t, 1700000000000000000ull, 50000000, 400, 20000, 200000);
	err = clock_fit__solve(fit, &m);
	worst = worst_error(&m, &t);
	tap_ok(err == 0 && worst <= m.error_ns && m.error_ns < 200000,
	       "recover: realtime onto monotonic (slope 1 - 20 ppm): worst %" PRIu64
	       " ns within bound %" PRIu64 " ns",
	       worst, m.error_ns);
	clock_fit__free(fit);
}

static void test_tighter(void)
{
	struct truth t = { .offset = -987654321, .kink = UINT64_MAX / 2, .ppm_before = 50 };
	uint64_t start = 20000000000ull, wide, tight;
	struct clock_fit *fit;
	struct clock_model m;
	unsigned int i;

	fit = clock_fit__new("cupti", NULL);
	feed(fit, &t, start, 10000000, 3000, 4000, 16000);
	clock_fit__solve(fit, &m);
	wide = m.error_ns;
	tap_ok(worst_error(&m, &t) <= m.error_ns, "tighter: wide brackets, within the bound");
	clock_fit__free(fit);

	fit = clock_fit__new("cupti", NULL);
	feed(fit, &t, start, 10000000, 3000, 100, 400);
	clock_fit__solve(fit, &m);
	tight = m.error_ns;
	tap_ok(worst_error(&m, &t) <= m.error_ns && tight < wide,
	       "tighter: brackets 40 times tighter give a smaller bound (%" PRIu64 " ns < %" PRIu64
	       " ns)",
	       tight, wide);
	clock_fit__free(fit);

	/* a loaded machine: 9 readings in 10 are 50 us wide; the tight tenth is what is kept */
	fit = clock_fit__new("cupti", NULL);
	for (i = 0; i < 3000; i++) {
		struct clock_sample s = reading(&t, start + i * 10000000ull, i % 10 ? 50000 : 100,
						i % 10 ? 60000 : 400);

		clock_fit__add(fit, &s);
	}
	clock_fit__solve(fit, &m);
	tap_ok(worst_error(&m, &t) <= m.error_ns && m.error_ns < 2 * tight + 1000 &&
		       m.tightest_ns <= 400,
	       "tighter: among mostly 50 us brackets the tightest are kept (bound %" PRIu64 " ns)",
	       m.error_ns);
	clock_fit__free(fit);
}

static void test_drift(void)
{
	/* 50 ppm for 30 s, then 80 ppm (a GPU warming up); a window of 10 buckets of 1 s,
	 * recalibrated every 50 readings */
	uint64_t start = 1000000000000ull, kink = start + 30000000000ull;
	struct truth t = {
		.offset = 123456789, .base = start, .kink = kink, .ppm_before = 50, .ppm_after = 80
	};
	struct clock_fit_opts o = { .buckets = 10, .refit_after = 50 };
	struct clock_model m, first = { 0 }, prev = { 0 };
	unsigned int i, models = 0, bad_bound = 0, steps_ok = 1;
	double drift_sum = 0;
	struct clock_fit *fit;
	struct clock_sample s;

	fit = clock_fit__new("cupti", &o);
	for (i = 0; i < 6000; i++) {
		s = reading(&t, start + i * 10000000ull, 200, 2000);
		clock_fit__add(fit, &s);
		if (!clock_fit__due(fit))
			continue;
		if (clock_fit__solve(fit, &m))
			tap_bail("solve failed: %s", m.message);
		models++;
		if (models == 1)
			first = m;
		else
			drift_sum += m.drift_ppm;
		/* a model fitted entirely on one side of the change is linear truth: the
		 * bound must hold; across the change only at the samples it holds */
		if ((m.source_last_ns <= kink || m.source_first_ns >= kink) &&
		    worst_error(&m, &t) > m.error_ns)
			bad_bound++;
		/* switching models moves the mapping by at most both bounds */
		if (models > 1 && m.generation == prev.generation + 1 &&
		    absdiff(clock_model__map(&m, m.source_last_ns),
			    clock_model__map(&prev, m.source_last_ns)) !=
			    (uint64_t)llabs(m.step_ns))
			steps_ok = 0;
		prev = m;
	}
	tap_ok(models == 6000 / 50 && prev.generation == models,
	       "drift: a new model every 50 readings (%u models, generation %u)", models,
	       prev.generation);
	tap_ok(!bad_bound, "drift: every model on linear truth holds its bound (%u did not)",
	       bad_bound);
	tap_ok(absd_ppm(first.slope, 50, first.slope_error_ppm) &&
		       absd_ppm(prev.slope, 80, prev.slope_error_ppm),
	       "drift: the first model says 50 ppm (%.3f +- %.3f), the last 80 ppm (%.3f +- %.3f)",
	       (first.slope - 1) * 1e6, first.slope_error_ppm, (prev.slope - 1) * 1e6,
	       prev.slope_error_ppm);
	tap_ok(drift_sum > 30 - first.slope_error_ppm - prev.slope_error_ppm &&
		       drift_sum < 30 + first.slope_error_ppm + prev.slope_error_ppm,
	       "drift: the drift reported between successive models adds up to 30 ppm (%.3f)",
	       drift_sum);
	tap_ok(steps_ok, "drift: step_ns is how far each new model moves the mapping");
	s = reading(&t, start, 200, 2000);
	tap_ok(clock_fit__add(fit, &s) == -ESTALE,
	       "drift: a reading older than the sliding window is refused (-ESTALE)");
	clock_fit__free(fit);
}

static void test_errors(void)
{
	struct truth t = { .offset = 5000, .kink = UINT64_MAX / 2, .ppm_before = 50 };
	struct clock_fit_opts bad = { .per_bucket = CLOCK_FIT_PER_BUCKET_MAX + 1 };
	struct clock_sample s;
	struct clock_model m;
	struct clock_fit *fit;
	char json[1024];
	unsigned int i;
	int err;

	errno = 0;
	tap_ok(!clock_fit__new("x", &bad) && errno == EINVAL, "errors: bad options: NULL, EINVAL");

	/* empty side: no readings at all */
	fit = clock_fit__new("cupti", NULL);
	tap_ok(!clock_fit__due(fit), "errors: nothing offered, no model due");
	err = clock_fit__solve(fit, &m);
	tap_ok(err == -ENODATA && m.flags == CLOCK_MODEL_IDENTITY &&
		       clock_model__map(&m, 12345) == 12345 && m.error_ns == CLOCK_ERROR_UNKNOWN &&
		       clock_model__error_at(&m, 1) == CLOCK_ERROR_UNKNOWN,
	       "errors: no readings: -ENODATA, the identity model, error unknown");
	clock_model__json(&m, json, sizeof(json));
	tap_ok(strstr(json, "\"error_ns\":null") && strstr(json, "\"flags\":[\"identity\"]") &&
		       strstr(json, "error unknown"),
	       "errors: its metadata says identity, error null: %s", json);

	/* failed queries only */
	for (i = 0; i < 32; i++)
		clock_fit__add_failed(fit);
	tap_ok(clock_fit__due(fit), "errors: 32 failed queries make a model due");
	err = clock_fit__solve(fit, &m);
	tap_ok(err == -ENODATA && m.flags == (CLOCK_MODEL_IDENTITY | CLOCK_MODEL_QUERY_FAILED) &&
		       m.failed_queries == 32 && strstr(m.message, "every query failed"),
	       "errors: every query failed: identity, warned (%s)", m.message);

	/* a failed query among good readings: the conservative margin and a warning */
	feed(fit, &t, 40000000000ull, 10000000, 500, 100, 400);
	clock_fit__add_failed(fit);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && (m.flags & CLOCK_MODEL_QUERY_FAILED) &&
		       m.error_ns >= CLOCK_FAILED_QUERY_MARGIN_NS && strstr(m.message, "failed") &&
		       strstr(m.message, "cupti"),
	       "errors: a failed query: error %" PRIu64 " ns >= 1000 us, warned: %s", m.error_ns,
	       m.message);
	feed(fit, &t, 45000000000ull, 10000000, 100, 100, 400);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && !m.flags && m.error_ns < 1000 && !m.message[0],
	       "errors: the next model without failures is tight again (%" PRIu64 " ns)",
	       m.error_ns);

	/* a bracket that ends before it begins */
	s = (struct clock_sample){ .ref_before_ns = 10, .source_ns = 5, .ref_after_ns = 9 };
	tap_ok(clock_fit__add(fit, &s) == -EINVAL, "errors: ref_after < ref_before: -EINVAL");
	clock_fit__free(fit);

	/* one instant only: an offset, the slope assumed */
	fit = clock_fit__new("cupti", NULL);
	s = reading(&t, 40000000000ull, 300, 300);
	clock_fit__add(fit, &s);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && m.flags == CLOCK_MODEL_SLOPE_ASSUMED && m.slope == 1 &&
		       absdiff(clock_model__map(&m, 40000000000ull),
			       truth_at(&t, 40000000000ull)) <= m.error_ns &&
		       m.error_ns <= 152,
	       "errors: one reading: slope assumed 1, within its half width (%" PRIu64 " ns)",
	       m.error_ns);
	clock_fit__free(fit);

	/* skew over 5 %: an error naming the source */
	t = (struct truth){ .offset = 1000, .kink = UINT64_MAX / 2, .ppm_before = 70000 };
	fit = clock_fit__new("remote host gpu7", NULL);
	feed(fit, &t, 40000000000ull, 10000000, 500, 100, 400);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == -ERANGE && (m.flags & CLOCK_MODEL_SKEW) &&
		       strstr(m.message, "remote host gpu7") && strstr(m.message, "7.00 %") &&
		       strstr(m.message, "GPU reset"),
	       "errors: skew 7 %%: -ERANGE: %s", m.message);
	clock_fit__free(fit);
	t.ppm_before = -60000;
	fit = clock_fit__new("cupti", NULL);
	feed(fit, &t, 40000000000ull, 10000000, 500, 100, 400);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == -ERANGE && strstr(m.message, "-6.00 %"), "errors: skew -6 %%: -ERANGE: %s",
	       m.message);
	clock_fit__free(fit);
	t.ppm_before = 49000;
	fit = clock_fit__new("cupti", NULL);
	feed(fit, &t, 40000000000ull, 10000000, 500, 100, 400);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && !m.flags, "errors: skew 4.9 %% is still a model (slope %.6f)", m.slope);
	clock_fit__free(fit);
	/* a short window with wide brackets cannot tell a slope: no false skew alarm */
	t.ppm_before = 0;
	fit = clock_fit__new("cupti", NULL);
	feed(fit, &t, 40000000000ull, 2000, 20, 0, 20000);
	err = clock_fit__solve(fit, &m);
	tap_ok(err == 0 && !(m.flags & CLOCK_MODEL_SKEW) &&
		       ((m.flags & CLOCK_MODEL_SLOPE_ASSUMED) ||
			absd_ppm(m.slope, 0, m.slope_error_ppm)),
	       "errors: 40 us of 20 us brackets: no false skew alarm (err %d, slope %.4f, flags "
	       "%#x)",
	       err, m.slope, m.flags);
	clock_fit__free(fit);
}

static void test_json(void)
{
	struct clock_model m = {
		.slope = 1.00005,
		.intercept_ns = 123456789,
		.error_ns = 1501,
		.slope_error_ppm = 0.0625,
		.drift_ppm = -1.5,
		.step_ns = -42,
		.source_first_ns = 5000000000000ull,
		.source_last_ns = 5060000000000ull,
		.tightest_ns = 512,
		.samples = 240,
		.failed_queries = 1,
		.generation = 3,
		.flags = CLOCK_MODEL_QUERY_FAILED,
		.source = "cu\"pti",
		.message = "1 clock reading of cupti failed",
	};
	static const char want[] =
		"{\"source\":\"cu\\\"pti\",\"target\":\"CLOCK_MONOTONIC\",\"slope\":1.00005,"
		"\"intercept_ns\":123456789,\"error_ns\":1501,\"error_us\":1.501,"
		"\"slope_error_ppm\":0.062,\"drift_ppm\":-1.500,\"step_ns\":-42,\"samples\":240,"
		"\"tightest_ns\":512,\"failed_queries\":1,\"generation\":3,"
		"\"source_first_ns\":5000000000000,\"source_last_ns\":5060000000000,"
		"\"flags\":[\"query_failed\"],\"message\":\"1 clock reading of cupti failed\"}";
	char buf[1024];
	int n;

	n = clock_model__json(&m, buf, sizeof(buf));
	if (!tap_ok(n == (int)strlen(want) && !strcmp(buf, want), "json: the sync metadata"))
		tap_diag("got  %s\nwant %s", buf, want);
	tap_ok(clock_model__json(&m, buf, 40) == -ENOSPC, "json: a buffer too small: -ENOSPC");
}

int main(void)
{
	test_recover();
	test_tighter();
	test_drift();
	test_errors();
	test_json();
	return tap_done();
}
