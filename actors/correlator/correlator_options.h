/* SPDX-License-Identifier: MIT */
/* The correlator's configuration schema (docs/correlator.md): the join engine's bounds. */
#ifndef XPUSUP_ACTORS_CORRELATOR_OPTIONS_H
#define XPUSUP_ACTORS_CORRELATOR_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* `strategies`: how GPU records find their launch. */
struct correlator_strategies {
	bool exact; /* correlation_id */
	unsigned long long window_ms; /* timestamp(DURATION); 0: none */
};

/* kind = correlator: one member per key of correlator_keys (correlator_options.c). */
struct correlator_options {
	unsigned long long ttl_ms;
	unsigned long long linger_ms;
	unsigned long long exit_grace_ms;
	unsigned long long max_pending;
	struct correlator_strategies strategies;
	unsigned long long max_waiting;
	unsigned long long max_streams;
	unsigned long long stream_idle_ms;
	unsigned long long launch_slack_ms;
	unsigned long long range_wait_ms;
};

/*
 * correlator_strategies__parse - the `strategies` list: comma-separated, each `correlation_id`
 * or `timestamp(DURATION)` (DURATION in ms, at most 1000ms, at least 1ms), each at most once,
 * correlation_id first when both are given. window_ms is 0 without a timestamp strategy.
 * Returns 0 or -EINVAL (and writes nothing).
 */
int correlator_strategies__parse(const char *s, struct correlator_strategies *out);

extern const struct conf_kind correlator_conf_kind;

#endif /* XPUSUP_ACTORS_CORRELATOR_OPTIONS_H */
