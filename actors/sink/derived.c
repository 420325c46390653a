// SPDX-License-Identifier: MIT
#include "actors/sink/derived.h"

#include <string.h>

const char *const derived_instructions[] = { "instructions", NULL };
const char *const derived_cycles[] = { "cycles", "cpu-cycles", NULL };
static const char *const cache_misses[] = { "cache-misses", NULL };
static const char *const cache_refs[] = { "cache-references", NULL };
static const char *const branch_misses[] = { "branch-misses", NULL };
static const char *const branches[] = { "branch-instructions", "branches", NULL };
static const char *const faults[] = { "page-faults", "faults", NULL };
static const char *const switches[] = { "context-switches", "cs", NULL };

const struct derived_ratio derived_ratios[DERIVED_RATIOS] = {
	{ "ipc", "IPC", derived_instructions, derived_cycles, 1 },
	{ "cache_miss_pct", "cache misses %", cache_misses, cache_refs, 100 },
	{ "branch_miss_pct", "branch misses %", branch_misses, branches, 100 },
	{ "page_faults_per_s", "page faults/s", faults, NULL, 1 },
	{ "context_switches_per_s", "context switches/s", switches, NULL, 1 },
};

bool derived__is(const char *name, size_t len, const char *const *names)
{
	for (; *names; names++)
		if (strlen(*names) == len && !memcmp(name, *names, len))
			return true;
	return false;
}
