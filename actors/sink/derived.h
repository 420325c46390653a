/* SPDX-License-Identifier: MIT */
/*
 * Counters derived from pairs of PMU counters, the one rule of the sinks: stats.json's
 * `ipc`, miss rates and rates per second, and the timeline's IPC track.
 *
 * The rule: a counter enters a ratio only under one of perf's generic names exactly as the
 * PMU source names its events (docs/pmu.md: `instructions`, `cycles` or its alias
 * `cpu-cycles`, ...): IPC is `instructions` / `cycles` (or `cpu-cycles`, the first of the two
 * counted). A name with modifiers (`cycles:u`) is a counter of its own and pairs with
 * nothing: the PMU source takes no modifiers, so such a name comes from elsewhere (a replay,
 * a remote producer) and may count something else (user time only) than its partner. This
 * is what docs/stats.md and docs/timeline.md say, and what the correlator's counters stage
 * matches ("instructions" exactly) when it derives a kernel's IPC.
 */
#ifndef XPUSUP_ACTORS_SINK_DERIVED_H
#define XPUSUP_ACTORS_SINK_DERIVED_H

#include <stdbool.h>
#include <stddef.h>

/* perf's names for a counter, NULL-terminated: the first one counted stands for it. */
extern const char *const derived_instructions[];
extern const char *const derived_cycles[];

#define DERIVED_RATIOS 5

/* num / den * mult, or num per second of the span when den is NULL. */
struct derived_ratio {
	const char *key; /* its member in stats.json */
	const char *text; /* its words in stats.txt */
	const char *const *num, *const *den;
	double mult;
};

/* ipc, cache_miss_pct, branch_miss_pct, page_faults_per_s, context_switches_per_s */
extern const struct derived_ratio derived_ratios[DERIVED_RATIOS];

/* Whether name (len bytes) is one of names, exactly: the rule above. */
bool derived__is(const char *name, size_t len, const char *const *names);

#endif /* XPUSUP_ACTORS_SINK_DERIVED_H */
