/* SPDX-License-Identifier: MIT */
/*
 * Clock alignment (docs/clock.md): a model `target = slope * source + intercept` of a source clock
 * that cannot stamp CLOCK_MONOTONIC itself (CUPTI without its timestamp callback, a remote
 * host), fitted to bracketed paired readings: ref_before <= (source read) <= ref_after on
 * the target (reference) clock. The true target time of a reading lies somewhere in its
 * bracket, so the bracket's width bounds that reading's error; docs/clock.md.
 *
 * Calling order:
 *
 *	fit = clock_fit__new("cupti", NULL);        one per source clock
 *	clock_fit__add(fit, &sample) ...            each reading (any order, any rate)
 *	clock_fit__add_failed(fit) ...              each reading that could not be taken
 *	if (clock_fit__due(fit))                    enough new readings for a new model
 *		err = clock_fit__solve(fit, &model); 0, -ENODATA or -ERANGE (model->message)
 *	target = clock_model__map(&model, source);
 *	clock_fit__free(fit);
 *
 * A fit is used by one thread at a time; a solved model is a plain value, shared freely.
 */
#ifndef XPUSUP_COMMON_CLOCK_H
#define XPUSUP_COMMON_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* error_ns of a model that knows nothing: no samples. */
#define CLOCK_ERROR_UNKNOWN UINT64_MAX
/* The margin docs/clock.md gives a model when a reading could not be taken: 1000 us. */
#define CLOCK_FAILED_QUERY_MARGIN_NS 1000000ull
/* The drift a lone sample's model assumes beyond its instant (a crystal's tolerance). */
#define CLOCK_ASSUMED_DRIFT_PPM 100.0

/* Limits of struct clock_fit_opts. */
#define CLOCK_FIT_PER_BUCKET_MAX 16u
#define CLOCK_FIT_BUCKETS_MAX 1024u

/* One bracketed paired reading, in ns (the fields of struct xpu_clock_sync). */
struct clock_sample {
	uint64_t ref_before_ns; /* target clock, before the source was read */
	uint64_t source_ns; /* the source clock's reading */
	uint64_t ref_after_ns; /* target clock, after; >= ref_before_ns */
};

/*
 * How a fit keeps and uses samples. Zero fields take the defaults. Samples are grouped by
 * source time into buckets; each bucket keeps its per_bucket tightest brackets (a loaded
 * machine's readings are wide, a quiet moment's tight: keeping the best of each stretch of
 * time spreads the fit over the whole window without the noisy ones); the newest `buckets`
 * buckets form the sliding window a model is fitted to, so a model follows drift.
 */
struct clock_fit_opts {
	uint64_t bucket_ns; /* default 1 s */
	unsigned int per_bucket; /* default 4, at most CLOCK_FIT_PER_BUCKET_MAX */
	unsigned int buckets; /* default 64, at most CLOCK_FIT_BUCKETS_MAX */
	unsigned int refit_after; /* clock_fit__due after this many new readings; default 32 */
	double max_skew; /* |slope - 1| above this is an error; default 0.05 (5 %) */
};

enum clock_model_flags {
	CLOCK_MODEL_IDENTITY = 1u << 0, /* no samples: target = source, error unknown */
	CLOCK_MODEL_QUERY_FAILED = 1u << 1, /* readings failed: error is at least 1000 us */
	CLOCK_MODEL_SLOPE_ASSUMED = 1u << 2, /* one source instant only: slope taken as 1 */
	CLOCK_MODEL_SKEW = 1u << 3, /* |slope - 1| > max_skew: not usable */
};

/*
 * A solved model. map() is exact to well under a ns: it works from a pivot (a sample) so
 * that no double holds a whole timestamp; intercept_ns is the same line's value at source 0,
 * rounded, for reports.
 */
struct clock_model {
	double slope; /* target ns per source ns */
	int64_t intercept_ns; /* target = slope * source + intercept */
	/* |map(x) - true target| for x in [source_first_ns, source_last_ns], if the clocks are
	 * linear over the window: the worst sample's |residual| + half its bracket width, at
	 * least half the tightest width; CLOCK_ERROR_UNKNOWN for the identity model. Outside
	 * the range use clock_model__error_at(). */
	uint64_t error_ns;
	double slope_error_ppm; /* |slope - true slope| <= this (2 error_ns / span), in ppm */
	double drift_ppm; /* (slope - previous model's slope) * 1e6; 0 for the first model */
	int64_t step_ns; /* map(source_last_ns) minus the previous model's; 0 for the first */
	uint64_t source_first_ns, source_last_ns; /* the samples' source range */
	uint64_t tightest_ns; /* the narrowest bracket used */
	uint32_t samples; /* samples the fit used */
	uint32_t failed_queries; /* readings that failed since the previous model */
	uint32_t generation; /* 1 for a fit's first model, then 2, ... */
	uint32_t flags; /* enum clock_model_flags */
	char source[32]; /* the fit's name of the source clock */
	char message[192]; /* a warning or error for the caller to print; "" when none */
	/* the line through (source_pivot_ns, target_pivot_ns + offset_ns) with slope */
	uint64_t source_pivot_ns, target_pivot_ns;
	double offset_ns;
};

/*
 * clock_fit__new - a fit for the source clock called name (in messages; "cupti", "remote
 * host gpu7", truncated to 31 bytes), opts NULL for the defaults. Returns the fit (free with
 * clock_fit__free), or NULL with errno EINVAL (bad opts) or ENOMEM.
 */
struct clock_fit *clock_fit__new(const char *name, const struct clock_fit_opts *opts);

/* clock_fit__free - free fit (NULL is fine). */
void clock_fit__free(struct clock_fit *fit);

/*
 * clock_fit__add - offer one reading. It is kept when it is among the tightest of its bucket
 * and its bucket is in the window. Returns 0 (kept or not), -EINVAL when ref_after_ns <
 * ref_before_ns (not counted), -ESTALE when it is older than the window (dropped).
 */
int clock_fit__add(struct clock_fit *fit, const struct clock_sample *sample);

/*
 * clock_fit__add_failed - a reading that could not be taken (the query failed): the next
 * model carries at least CLOCK_FAILED_QUERY_MARGIN_NS of error and CLOCK_MODEL_QUERY_FAILED.
 */
void clock_fit__add_failed(struct clock_fit *fit);

/*
 * clock_fit__due - whether refit_after readings (offered or failed) have come since the last
 * solve: time to (re)calibrate. A caller may solve at any other time too.
 */
bool clock_fit__due(const struct clock_fit *fit);

/*
 * clock_fit__solve - fit a model to the samples in the window: least squares over the
 * bracket midpoints. Always fills *model. Returns:
 *   0        a model (flags may warn: QUERY_FAILED, SLOPE_ASSUMED; message says so);
 *   -ENODATA no samples: the identity model (slope 1, intercept 0), error unknown; the
 *            caller keeps the source's times as they are (a CPU-only or GPU-only timeline);
 *   -ERANGE  |slope - 1| > max_skew: the model names the source and the skew in message
 *            ("... suggest a GPU reset"); the caller must not map with it.
 * A model that is not the first of its fit also reports drift against the previous one.
 */
int clock_fit__solve(struct clock_fit *fit, struct clock_model *model);

/* clock_model__map - the target time of source time source_ns (clamped to 0..UINT64_MAX). */
uint64_t clock_model__map(const struct clock_model *model, uint64_t source_ns);

/*
 * clock_model__error_at - the error bound at source_ns: error_ns inside the samples' range,
 * growing outside it by slope_error_ppm per ns of distance (extrapolation).
 * CLOCK_ERROR_UNKNOWN for the identity model.
 */
uint64_t clock_model__error_at(const struct clock_model *model, uint64_t source_ns);

/*
 * clock_model__json - the sync metadata as one JSON object (docs/clock.md) into buf, NUL
 * terminated. Returns its length, or -ENOSPC when it does not fit in size bytes (buf then
 * holds a truncated, invalid text).
 */
int clock_model__json(const struct clock_model *model, char *buf, size_t size);

#endif /* XPUSUP_COMMON_CLOCK_H */
