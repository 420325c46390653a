/* SPDX-License-Identifier: MIT */
/*
 * The sync metadata of a sink's files (docs/clock.md): the CLOCK_SYNC events a sink receives are
 * fed into one clock fit (common/clock.h) per other clock, and each fit's model is written
 * into trace.json's otherData and stats.json as "clock_sync". Both sinks write the same
 * object, so the two files of a session agree on it.
 *
 * Calling order:
 *
 *	struct sink_clocks c = { 0 };
 *	sink_clocks__add(&c, e) ...           each CLOCK_SYNC event
 *	sink_clocks__json(&c, buf, size) ...  whenever a file is written
 *	sink_clocks__free(&c);
 *
 * Used by one thread at a time.
 */
#ifndef XPUSUP_ACTORS_SINK_CLOCK_SYNC_H
#define XPUSUP_ACTORS_SINK_CLOCK_SYNC_H

#include <stddef.h>

#include "common/wire.h"

/* enum xpu_clock_id's values and 0 for any other ("unknown"). */
#define SINK_CLOCKS_MAX 5
/* Room for sink_clocks__json's text: every clock's model with a full message. */
#define SINK_CLOCKS_JSON_MAX (SINK_CLOCKS_MAX * 1024 + 64)

struct clock_fit;

struct sink_clocks {
	struct clock_fit *fit[SINK_CLOCKS_MAX]; /* by other clock; NULL: no reading yet */
	unsigned long long readings[SINK_CLOCKS_MAX]; /* CLOCK_SYNC events received */
	unsigned long long refused[SINK_CLOCKS_MAX]; /* a bracket that ends before it begins,
						      * or a reading older than the fit's window */
	unsigned long long nomem; /* readings lost: no memory for their clock's fit */
};

/* sink_clocks__name - the name of other clock id: "cupti", "CLOCK_REALTIME", "remote", ... */
const char *sink_clocks__name(unsigned int id);

/*
 * sink_clocks__add - one CLOCK_SYNC event (ts_ns = ref_before, value = the other clock's
 * reading, end_ns = ref_after, sub_kind = the other clock; docs/wire.md). Returns 0 (kept or
 * not: the fit keeps the tightest brackets), -EINVAL for a bracket that ends before it begins
 * or is older than the fit's window (counted in refused), -ENOMEM when the clock's fit cannot
 * be made (counted in nomem).
 */
int sink_clocks__add(struct sink_clocks *c, const struct xpu_cevent *e);

/*
 * sink_clocks__json - the "clock_sync" object into buf (NUL-terminated): one member per other
 * clock with readings, named by sink_clocks__name, each clock_model__json's object of a fresh
 * solve plus "readings" and "refused"; with no readings at all, one member "all" saying that
 * every source stamps CLOCK_MONOTONIC (slope 1, intercept 0, error 0). Each call solves the
 * fits again: a later call is a recalibration (its generation grows, drift_ppm and step_ns
 * compare it with the call before). Returns the length, or -ENOSPC when size is too small
 * (SINK_CLOCKS_JSON_MAX is always enough).
 */
int sink_clocks__json(struct sink_clocks *c, char *buf, size_t size);

/* sink_clocks__free - free the fits (c itself is the caller's); c may be used again after. */
void sink_clocks__free(struct sink_clocks *c);

/*
 * sink_clocks__realtime_pair - CLOCK_REALTIME read between two CLOCK_MONOTONIC readings, the
 * tightest bracket of a few tries: *mono is the middle of that bracket, *real the realtime
 * reading, so realtime - monotonic is right to within half the bracket (a few hundred ns).
 * What the publish sink announces of its host's clocks and what `xpusup subscribe` maps
 * every host's times onto (docs/publish.md, "Many hosts").
 */
void sink_clocks__realtime_pair(__u64 *mono, __u64 *real);

#endif /* XPUSUP_ACTORS_SINK_CLOCK_SYNC_H */
