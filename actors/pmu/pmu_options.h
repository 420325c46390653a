/* SPDX-License-Identifier: MIT */
/* The pmu source's configuration schema (docs/pmu.md). */
#ifndef XPUSUP_ACTORS_PMU_OPTIONS_H
#define XPUSUP_ACTORS_PMU_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* kind = pmu: one member per key of pmu_keys (pmu_options.c). */
struct pmu_options {
	const char *events; /* a list the actor parses: names, rNNNN, PMU/EVENT/ */
	unsigned long long interval_ms;
	struct conf_target target;
	unsigned long long group_size;
};

extern const struct conf_kind pmu_conf_kind;

#endif /* XPUSUP_ACTORS_PMU_OPTIONS_H */
