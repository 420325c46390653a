/* SPDX-License-Identifier: MIT */
/* The cpu source's configuration schema (docs/cpu.md). The correlator reads it too: a
 * marker LAUNCH waits up to the longest drain_ms. */
#ifndef XPUSUP_ACTORS_CPU_OPTIONS_H
#define XPUSUP_ACTORS_CPU_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* `event`: in the order of the schema's names. */
enum cpu_event { EV_CPU_CLOCK, EV_CYCLES, EV_AUTO };

/* `unwind`: in the order of the schema's names. */
enum cpu_unwind { UNWIND_AUTO, UNWIND_FP, UNWIND_DWARF };

/* `follow_mmap`: in the order of the schema's names. */
enum cpu_follow_mmap { FOLLOW_MMAP_AUTO, FOLLOW_MMAP_TRACEPOINT, FOLLOW_MMAP_RAW, FOLLOW_MMAP_OFF };

/* kind = cpu: one member per key of cpu_keys (cpu_options.c). */
struct cpu_options {
	unsigned long long frequency_hz;
	int event; /* enum cpu_event */
	struct conf_target target;
	bool kernel_stacks;
	bool user_stacks;
	int unwind; /* enum cpu_unwind */
	bool python; /* read Python frames */
	int follow_mmap; /* enum cpu_follow_mmap */
	unsigned long long stack_bytes;
	const char *launch_marker; /* NULL: not written (conf_actor__path resolves it) */
	unsigned long long ringbuf_kb;
	unsigned long long wakeup_kb;
	unsigned long long drain_ms;
};

extern const struct conf_kind cpu_conf_kind;

#endif /* XPUSUP_ACTORS_CPU_OPTIONS_H */
