// SPDX-License-Identifier: MIT
/* kind = pmu: perf_event counters' keys (docs/pmu.md), and where each lands in struct
 * pmu_options. */
#include "actors/pmu/pmu_options.h"

static const struct conf_key pmu_keys[] = {
	{ .key = "events",
	  CONF_MEMBER(struct pmu_options, events),
	  .type = CONF_T_TEXT, /* a list the actor parses: names, rNNNN, pmu/event/ */
	  .roles = CONF_SOURCE,
	  .def = "cycles, instructions, cache-references, cache-misses, branch-misses, "
		 "task-clock, page-faults, context-switches, cpu-migrations",
	  .doc = "counters to read: generic names (cycles, instructions, cache-misses, "
		 "task-clock, page-faults, ...), raw rNNNN, or PMU/EVENT/ from sysfs" },
	{ .key = "interval_ms",
	  CONF_MEMBER(struct pmu_options, interval_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 10,
	  .max = 60000,
	  .def = "100",
	  .doc = "how often the counters are read" },
	{ .key = "target",
	  CONF_MEMBER(struct pmu_options, target),
	  .type = CONF_T_TARGET,
	  .roles = CONF_SOURCE,
	  .def = "all",
	  .doc = "all (per CPU, system-wide), pid:PID,..., tree:PID, command (per process, "
		 "children included) or cgroup:PATH (per CPU, that cgroup)" },
	{ .key = "group_size",
	  CONF_MEMBER(struct pmu_options, group_size),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 1,
	  .max = 16,
	  .def = "4",
	  .doc = "hardware events per counter group (more than the CPU's counters multiplex)" },
	{ .key = NULL },
};

const struct conf_kind pmu_conf_kind = {
	.name = "pmu",
	.roles = CONF_SOURCE,
	.available = true,
	.keys = pmu_keys,
	.doc = "hardware counters (perf events)",
	.needs_correlator = true,
	.options_size = sizeof(struct pmu_options),
};
