/* SPDX-License-Identifier: MIT */
/* The synthetic source's configuration schema. */
#ifndef XPUSUP_ACTORS_SYNTHETIC_OPTIONS_H
#define XPUSUP_ACTORS_SYNTHETIC_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* kind = synthetic: one member per key of synthetic_keys (synthetic_options.c). */
struct synthetic_options {
	unsigned long long processes;
	unsigned long long threads;
	unsigned long long launches_per_s;
	unsigned long long count;
	unsigned long long missing_launch_pct;
	unsigned long long reorder;
	unsigned long long pid_base;
	bool answer_frame;
	bool story;
};

extern const struct conf_kind synthetic_conf_kind;

#endif /* XPUSUP_ACTORS_SYNTHETIC_OPTIONS_H */
