// SPDX-License-Identifier: MIT
/*
 * Clock alignment from bracketed paired readings (docs/clock.md); the model and its error bound
 * are explained in docs/clock.md.
 *
 * Why the bound holds: the true target time T_i of reading i lies in [before_i, after_i],
 * so its midpoint m_i is within w_i / 2 of T_i. If both clocks are linear over the window,
 * the true line f and the fitted line g differ by a linear function h = g - f, and at each
 * sample |h(x_i)| <= |g(x_i) - m_i| + |m_i - T_i| <= |r_i| + w_i / 2. A linear function's
 * largest magnitude over an interval is at one of its ends, so max_i(|r_i| + w_i / 2) bounds
 * |h| over the whole range of the samples; its slope is at most twice that over the range's
 * span, which bounds the slope's error and the growth of the error outside the range.
 * Noise in the brackets cannot break the bound, only widen it; drift (the clocks not being
 * linear) can, which is what recalibration over a sliding window is for.
 */
#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/appendf.h"

/* libm-free helpers: the common library links without -lm. */
static double absd(double v)
{
	return v < 0 ? -v : v;
}

/* The smallest integer >= v, for 0 <= v < 2^63. */
static uint64_t ceil_u64(double v)
{
	uint64_t i = (uint64_t)v;

	return (double)i < v ? i + 1 : i;
}

/* v rounded half away from zero, for |v| < 2^63. */
static int64_t round_i64(double v)
{
	return (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
}

static bool is_finite(double v)
{
	return v == v && v - v == 0; /* NaN != NaN; inf - inf is NaN */
}

/* A stretch of source time: its per_bucket tightest samples. */
struct bucket {
	uint64_t id; /* source_ns / bucket_ns */
	unsigned int n;
	struct clock_sample s[CLOCK_FIT_PER_BUCKET_MAX];
};

struct clock_fit {
	char name[32];
	struct clock_fit_opts o;
	struct bucket *ring; /* o.buckets slots; bucket id lives in slot id % o.buckets */
	uint64_t newest; /* the newest bucket id seen */
	bool any; /* newest is set */
	unsigned int since_solve; /* samples offered since the last solve */
	unsigned int failed; /* failed readings since the last solve */
	uint32_t generation;
	bool have_prev;
	struct clock_model prev;
};

struct clock_fit *clock_fit__new(const char *name, const struct clock_fit_opts *opts)
{
	struct clock_fit *fit;
	struct clock_fit_opts o = opts ? *opts : (struct clock_fit_opts){ 0 };

	if (!o.bucket_ns)
		o.bucket_ns = 1000000000ull;
	if (!o.per_bucket)
		o.per_bucket = 4;
	if (!o.buckets)
		o.buckets = 64;
	if (!o.refit_after)
		o.refit_after = 32;
	if (o.max_skew == 0)
		o.max_skew = 0.05;
	if (o.per_bucket > CLOCK_FIT_PER_BUCKET_MAX || o.buckets > CLOCK_FIT_BUCKETS_MAX ||
	    !(o.max_skew > 0 && o.max_skew < 1)) {
		errno = EINVAL;
		return NULL;
	}
	fit = calloc(1, sizeof(*fit));
	if (!fit)
		goto err;
	fit->ring = calloc(o.buckets, sizeof(*fit->ring));
	if (!fit->ring)
		goto err_fit;
	snprintf(fit->name, sizeof(fit->name), "%s", name ? name : "source");
	fit->o = o;
	return fit;

err_fit:
	free(fit);
err:
	errno = ENOMEM;
	return NULL;
}

void clock_fit__free(struct clock_fit *fit)
{
	if (!fit)
		return;
	free(fit->ring);
	free(fit);
}

int clock_fit__add(struct clock_fit *fit, const struct clock_sample *sample)
{
	uint64_t id = sample->source_ns / fit->o.bucket_ns, width, widest = 0, k;
	unsigned int nb = fit->o.buckets, i, wi = 0;
	struct bucket *b;

	if (sample->ref_after_ns < sample->ref_before_ns)
		return -EINVAL;
	if (fit->any && id < fit->newest && fit->newest - id >= nb)
		return -ESTALE;
	if (!fit->any || id > fit->newest) {
		/* the window slides: the buckets it leaves are emptied for the ids it enters */
		if (!fit->any || id - fit->newest >= nb)
			for (i = 0; i < nb; i++)
				fit->ring[i].n = 0;
		else
			for (k = fit->newest + 1; k <= id; k++)
				fit->ring[k % nb].n = 0;
		fit->newest = id;
		fit->any = true;
	}
	fit->since_solve++;
	b = &fit->ring[id % nb];
	if (!b->n || b->id != id) {
		b->id = id;
		b->n = 0;
	}
	if (b->n < fit->o.per_bucket) {
		b->s[b->n++] = *sample;
		return 0;
	}
	for (i = 0; i < b->n; i++) {
		width = b->s[i].ref_after_ns - b->s[i].ref_before_ns;
		if (width >= widest) {
			widest = width;
			wi = i;
		}
	}
	if (sample->ref_after_ns - sample->ref_before_ns < widest)
		b->s[wi] = *sample;
	return 0;
}

void clock_fit__add_failed(struct clock_fit *fit)
{
	fit->failed++;
}

bool clock_fit__due(const struct clock_fit *fit)
{
	return fit->since_solve + fit->failed >= fit->o.refit_after;
}

/* The samples in the window, as points relative to a pivot (no double holds a timestamp). */
struct points {
	double *x, *y, *w;
	size_t n;
	uint64_t src_pivot, tgt_pivot, first, last, tightest;
};

static int gather(const struct clock_fit *fit, struct points *p)
{
	unsigned int nb = fit->o.buckets, i, j;
	size_t cap = (size_t)nb * fit->o.per_bucket;

	p->n = 0;
	p->x = malloc(3 * cap * sizeof(double));
	if (!p->x)
		return -ENOMEM;
	p->y = p->x + cap;
	p->w = p->y + cap;
	for (i = 0; i < nb; i++) {
		const struct bucket *b = &fit->ring[i];

		if (!b->n || b->id > fit->newest || fit->newest - b->id >= nb)
			continue;
		for (j = 0; j < b->n; j++) {
			const struct clock_sample *s = &b->s[j];
			uint64_t width = s->ref_after_ns - s->ref_before_ns;

			if (!p->n) {
				p->src_pivot = s->source_ns;
				p->tgt_pivot = s->ref_before_ns;
				p->first = p->last = s->source_ns;
				p->tightest = width;
			}
			p->first = s->source_ns < p->first ? s->source_ns : p->first;
			p->last = s->source_ns > p->last ? s->source_ns : p->last;
			p->tightest = width < p->tightest ? width : p->tightest;
			p->x[p->n] = (double)(int64_t)(s->source_ns - p->src_pivot);
			p->y[p->n] =
				(double)(int64_t)(s->ref_before_ns - p->tgt_pivot) + width / 2.0;
			p->w[p->n] = (double)width;
			p->n++;
		}
	}
	return 0;
}

/* The worst |residual| + half width for the line y = slope * x + offset. */
static double bound(const struct points *p, double slope, double offset)
{
	double e = 0, r;
	size_t i;

	for (i = 0; i < p->n; i++) {
		r = absd(p->y[i] - (slope * p->x[i] + offset)) + p->w[i] / 2;
		e = r > e ? r : e;
	}
	return e;
}

static void identity(struct clock_model *m, const struct clock_fit *fit)
{
	memset(m, 0, sizeof(*m));
	m->slope = 1;
	m->error_ns = CLOCK_ERROR_UNKNOWN;
	m->flags = CLOCK_MODEL_IDENTITY;
	m->failed_queries = fit->failed;
	if (fit->failed)
		m->flags |= CLOCK_MODEL_QUERY_FAILED;
	snprintf(m->source, sizeof(m->source), "%s", fit->name);
	snprintf(m->message, sizeof(m->message),
		 "no clock readings of %s%s: its times are kept as they are, error unknown",
		 fit->name, fit->failed ? " (every query failed)" : "");
}

int clock_fit__solve(struct clock_fit *fit, struct clock_model *m)
{
	double mx = 0, my = 0, sxx = 0, sxy = 0, slope = 1, offset, e, span;
	/* gather() fills every field it returns 0 with; zeroed so that gcc -O3 can see it too
	 * (-Wmaybe-uninitialized broke -Dwerror=true release builds) */
	struct points p = { 0 };
	size_t i;
	int err;

	err = gather(fit, &p);
	if (err) {
		identity(m, fit);
		return err;
	}
	if (!p.n) {
		identity(m, fit);
		err = -ENODATA;
		goto out;
	}
	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "%s", fit->name);
	/* two passes over centred values: the sums stay small and exact enough */
	for (i = 0; i < p.n; i++) {
		mx += p.x[i];
		my += p.y[i];
	}
	mx /= (double)p.n;
	my /= (double)p.n;
	for (i = 0; i < p.n; i++) {
		sxx += (p.x[i] - mx) * (p.x[i] - mx);
		sxy += (p.x[i] - mx) * (p.y[i] - my);
	}
	span = (double)(p.last - p.first);
	if (sxx > 0)
		slope = sxy / sxx;
	offset = my - slope * mx;
	e = bound(&p, slope, offset);
	/* A window too short (or its brackets too wide) to tell a slope from noise measures
	 * an offset only: its slope would be noise, and a skew error a false alarm. */
	if (!(sxx > 0) || 2 * e / span > fit->o.max_skew) {
		slope = 1;
		offset = my - mx;
		e = bound(&p, slope, offset);
		m->flags |= CLOCK_MODEL_SLOPE_ASSUMED;
		m->slope_error_ppm = CLOCK_ASSUMED_DRIFT_PPM;
	} else {
		m->slope_error_ppm = 2 * e / span * 1e6;
	}
	m->slope = slope;
	m->offset_ns = offset;
	m->source_pivot_ns = p.src_pivot;
	m->target_pivot_ns = p.tgt_pivot;
	m->intercept_ns = (int64_t)(p.tgt_pivot - p.src_pivot) +
			  round_i64(offset - (slope - 1) * (double)p.src_pivot);
	/* + 1 ns: map() rounds to the nearest ns */
	m->error_ns = ceil_u64(e) + 1;
	m->source_first_ns = p.first;
	m->source_last_ns = p.last;
	m->tightest_ns = p.tightest;
	m->samples = (uint32_t)p.n;
	m->failed_queries = fit->failed;
	if (fit->failed) {
		m->flags |= CLOCK_MODEL_QUERY_FAILED;
		if (m->error_ns < CLOCK_FAILED_QUERY_MARGIN_NS)
			m->error_ns = CLOCK_FAILED_QUERY_MARGIN_NS;
		snprintf(m->message, sizeof(m->message),
			 "%u clock reading%s of %s failed: error margin raised to %" PRIu64 " us",
			 fit->failed, fit->failed == 1 ? "" : "s", fit->name, m->error_ns / 1000);
	}
	if (!is_finite(slope) || absd(slope - 1) - m->slope_error_ppm * 1e-6 > fit->o.max_skew) {
		m->flags |= CLOCK_MODEL_SKEW;
		snprintf(m->message, sizeof(m->message),
			 "clock skew of %s against CLOCK_MONOTONIC is %.2f %% (slope %.6f), over "
			 "the %.0f %% limit: its times cannot be aligned (suggest a GPU reset)",
			 fit->name, (slope - 1) * 100, slope, fit->o.max_skew * 100);
		err = -ERANGE;
		goto out;
	}
	if (fit->have_prev) {
		m->drift_ppm = (slope - fit->prev.slope) * 1e6;
		m->step_ns = (int64_t)(clock_model__map(m, p.last) -
				       clock_model__map(&fit->prev, p.last));
	}
	m->generation = ++fit->generation;
	fit->prev = *m;
	fit->have_prev = true;
	err = 0;
out:
	fit->since_solve = 0;
	fit->failed = 0;
	free(p.x);
	return err;
}

uint64_t clock_model__map(const struct clock_model *m, uint64_t source_ns)
{
	double v;
	int64_t d;

	if (m->flags & CLOCK_MODEL_IDENTITY)
		return source_ns;
	v = m->slope * (double)(int64_t)(source_ns - m->source_pivot_ns) + m->offset_ns;
	if (v >= 9.2e18)
		return UINT64_MAX;
	if (v <= -9.2e18)
		return 0;
	d = round_i64(v);
	if (d < 0 && (uint64_t)-d > m->target_pivot_ns)
		return 0;
	if (d > 0 && (uint64_t)d > UINT64_MAX - m->target_pivot_ns)
		return UINT64_MAX;
	return m->target_pivot_ns + (uint64_t)d;
}

uint64_t clock_model__error_at(const struct clock_model *m, uint64_t source_ns)
{
	uint64_t dist = 0;
	double extra;

	if (m->flags & CLOCK_MODEL_IDENTITY)
		return CLOCK_ERROR_UNKNOWN;
	if (source_ns < m->source_first_ns)
		dist = m->source_first_ns - source_ns;
	else if (source_ns > m->source_last_ns)
		dist = source_ns - m->source_last_ns;
	extra = (double)dist * m->slope_error_ppm * 1e-6;
	if (extra >= 9.2e18 || ceil_u64(extra) >= CLOCK_ERROR_UNKNOWN - m->error_ns)
		return CLOCK_ERROR_UNKNOWN - 1;
	return m->error_ns + ceil_u64(extra);
}

static void put_string(char *buf, size_t size, size_t *len, const char *s)
{
	xpu_appendf(buf, size, len, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			xpu_appendf(buf, size, len, "\\%c", c);
		else if (c < 0x20)
			xpu_appendf(buf, size, len, "\\u%04x", c);
		else
			xpu_appendf(buf, size, len, "%c", c);
	}
	xpu_appendf(buf, size, len, "\"");
}

/* ,"key":v with prec decimals (prec < 0: %.15g, enough for a slope's ppm), null for NaN. */
static void put_double(char *buf, size_t size, size_t *len, const char *key, int prec, double v)
{
	xpu_appendf(buf, size, len, ",\"%s\":", key);
	if (!is_finite(v))
		xpu_appendf(buf, size, len, "null"); /* JSON has no NaN */
	else if (prec < 0)
		xpu_appendf(buf, size, len, "%.15g", v);
	else
		xpu_appendf(buf, size, len, "%.*f", prec, v);
}

int clock_model__json(const struct clock_model *m, char *buf, size_t size)
{
	static const char *const flag_names[] = { "identity", "query_failed", "slope_assumed",
						  "skew" };
	bool unknown = m->error_ns == CLOCK_ERROR_UNKNOWN;
	unsigned int i, shown = 0;
	size_t len = 0;

	xpu_appendf(buf, size, &len, "{\"source\":");
	put_string(buf, size, &len, m->source);
	xpu_appendf(buf, size, &len, ",\"target\":\"CLOCK_MONOTONIC\"");
	put_double(buf, size, &len, "slope", -1, m->slope);
	xpu_appendf(buf, size, &len, ",\"intercept_ns\":%" PRId64, m->intercept_ns);
	if (unknown)
		xpu_appendf(buf, size, &len, ",\"error_ns\":null,\"error_us\":null");
	else
		xpu_appendf(buf, size, &len,
			    ",\"error_ns\":%" PRIu64 ",\"error_us\":%" PRIu64 ".%03u", m->error_ns,
			    m->error_ns / 1000, (unsigned int)(m->error_ns % 1000));
	put_double(buf, size, &len, "slope_error_ppm", 3, m->slope_error_ppm);
	put_double(buf, size, &len, "drift_ppm", 3, m->drift_ppm);
	xpu_appendf(buf, size, &len,
		    ",\"step_ns\":%" PRId64 ",\"samples\":%u,\"tightest_ns\":%" PRIu64
		    ",\"failed_queries\":%u,\"generation\":%u,\"source_first_ns\":%" PRIu64
		    ",\"source_last_ns\":%" PRIu64 ",\"flags\":[",
		    m->step_ns, m->samples, m->tightest_ns, m->failed_queries, m->generation,
		    m->source_first_ns, m->source_last_ns);
	for (i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
		if (m->flags & (1u << i))
			xpu_appendf(buf, size, &len, "%s\"%s\"", shown++ ? "," : "", flag_names[i]);
	xpu_appendf(buf, size, &len, "],\"message\":");
	put_string(buf, size, &len, m->message);
	xpu_appendf(buf, size, &len, "}");
	if (len >= size)
		return -ENOSPC;
	return (int)len;
}
