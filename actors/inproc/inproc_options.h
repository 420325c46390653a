/* SPDX-License-Identifier: MIT */
/* The in-process hand-off's configuration schemas (docs/inproc.md): kind inproc serves the
 * annotate library; kind cupti serves it and the CUPTI injection library, to which it sends
 * its activities and launch_stacks. The correlator reads launch_stacks too: only marker
 * LAUNCHes come late (from the cpu source). */
#ifndef XPUSUP_ACTORS_INPROC_OPTIONS_H
#define XPUSUP_ACTORS_INPROC_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* How the CUPTI library records each launch's stack (the cupti source's `launch_stacks`). */
enum launch_stacks {
	LAUNCH_STACKS_INPROC = 0, /* `inproc` (or `yes`): it walks the stack itself */
	LAUNCH_STACKS_MARKER = 1, /* `marker`: it calls the marker for the cpu source */
	LAUNCH_STACKS_NO = 2, /* `no` */
};

/* kind = inproc and kind = cupti: one member per key (inproc_options.c); inproc has no
 * activities nor launch_stacks, which read 0 there. */
struct inproc_options {
	unsigned long long ring_kib;
	unsigned long long max_processes;
	unsigned int activities; /* XPU_CUPTI_ACT_* bits (shm/inproc.h) */
	int launch_stacks; /* enum launch_stacks */
	bool api_queries; /* record the API calls that only ask for state (cupti/convert.c) */
};

/*
 * cupti_activities__parse - the cupti source's `activities`: comma-separated names from
 * kernel, memcpy, memset, sync, runtime, driver, memory, overhead, external, nvtx; or `all` or
 * `none` alone. *bits gets the XPU_CUPTI_ACT_* bit of each (shm/inproc.h), the bits the
 * actor sends to each CUPTI client. Returns 0 or -EINVAL.
 */
int cupti_activities__parse(const char *s, unsigned int *bits);

/*
 * launch_stacks__parse - `inproc`, `marker`, `no`, or `yes` (an alias of inproc: the key was a
 * boolean before it was a choice) into *mode (enum launch_stacks). Returns 0 or -EINVAL.
 */
int launch_stacks__parse(const char *s, int *mode);

extern const struct conf_kind inproc_conf_kind;
extern const struct conf_kind cupti_conf_kind;

#endif /* XPUSUP_ACTORS_INPROC_OPTIONS_H */
