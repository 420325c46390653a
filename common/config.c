// SPDX-License-Identifier: MIT
/*
 * pipeline.conf: a small line-based INI parser and a table-driven schema.
 *
 * Loading runs in three passes so that one run reports as many mistakes as it can:
 *
 *   1. lex: every line becomes a section header or a key of the current section; syntax
 *      errors, duplicate sections and duplicate keys are found here;
 *   2. check: each section's keys are checked against the schema (supervisor_keys,
 *      actor_keys, then the kind's own key table), kinds are resolved;
 *   3. resolve: defaults that depend on other sections (the supervisor's timeouts apply to
 *      actors written before [supervisor]), cross-key checks, the actor limit, and finally
 *      the actors in start order.
 *
 * Errors are kept sorted by line (the 20 earliest) and printed only at the end, so the user
 * reads them in file order whatever pass found them. Nothing is built unless all passes
 * found no error.
 *
 * Adding a kind: add its key table and a row in kinds[]; add its keys to docs/pipeline.md.
 */
#include "common/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/inproc.h"
#include "xpusup/event.h"

#define LINE_MAX_CHARS 1023 /* a longer line is an error, not silently cut */
#define ERRORS_MAX 20 /* printed per load; later ones are counted, not shown */
#define QUOTE_MAX 64 /* user text quoted in messages is cut to this many characters */
#define FILE_MAX (1u << 20) /* a pipeline.conf of a megabyte is a mistake, not a config */

/* Role bits: which sections a key or a kind may appear in. */
#define ROLE_BIT(role) (1u << (role))
#define ROLE_SUPERVISOR_BIT (1u << 3)
#define ROLES_ACTOR \
	(ROLE_BIT(CONF_ROLE_SINK) | ROLE_BIT(CONF_ROLE_CORRELATOR) | ROLE_BIT(CONF_ROLE_SOURCE))

enum key_type {
	T_KIND, /* the kind key: resolved against kinds[], never through value__parse() */
	T_UINT, /* decimal in [min, max] */
	T_POW2, /* decimal power of two in [min, max] */
	T_BOOL, /* see conf_parse_bool() */
	T_ENUM, /* one of names[]; the value is the index, which is the C enum's value */
	T_INTENSITY, /* N/PERIOD: u = N in [min, max], u2 = PERIOD in ms */
	T_PATH, /* a file name: any value (relative ones are taken from the config's folder) */
	T_STRATEGIES, /* see conf_parse_strategies() */
	T_FILTER, /* see conf_parse_filter() */
	T_ENRICH, /* see conf_parse_enrich() */
	T_TARGET, /* see conf_parse_target() */
	T_ACTIVITIES, /* see conf_parse_activities() */
};

struct key_schema {
	const char *key;
	enum key_type type;
	unsigned int roles; /* ROLE_* bits where the key is allowed */
	unsigned long long min, max;
	unsigned int multiple; /* T_UINT: when not 0, the value must be a multiple of it */
	const char *const *names; /* T_ENUM */
	const char *def; /* parsed like a value from the file; NULL: absent unless written */
	bool required; /* a section of this kind without the key is an error */
	const char *doc; /* one line; docs/pipeline.md says the same at more length */
};

struct kind_schema {
	const char *name;
	unsigned int roles; /* ROLE_BIT()s of the sections that may use it */
	bool available; /* false: planned, rejected with "not available in this build yet" */
	const struct key_schema *keys; /* NULL-terminated; NULL when not available */
	const char *doc;
	bool needs_correlator; /* a source that writes into the shard rings */
	/* listens on SESSION/inproc.sock: at most one such source per pipeline */
	bool in_process;
};

/* A parsed value: u (and u2 for T_INTENSITY) are only meaningful when set. */
struct value {
	unsigned long long u, u2;
	int line; /* 0 when it came from the schema's default */
	bool set;
	bool bad; /* written but rejected: cross-key checks must not use the default instead */
};

static const char *const strategy_names[] = { "one_for_one", "one_for_all", "rest_for_one", NULL };
static const char *const restart_names[] = { "permanent", "transient", "temporary", NULL };
static const char *const role_names[] = { "sink", "correlator", "source", NULL };

/* Indices into supervisor_keys[], used to read the resolved values back. */
enum {
	SUP_STRATEGY,
	SUP_INTENSITY,
	SUP_BACKOFF_MIN,
	SUP_BACKOFF_MAX,
	SUP_WATCHDOG,
	SUP_HEARTBEAT,
	SUP_RING_KIB,
	SUP_START_TIMEOUT,
	SUP_SHUTDOWN_TIMEOUT,
	SUP_N,
};

static const struct key_schema supervisor_keys[SUP_N + 1] = {
	[SUP_STRATEGY] = { .key = "strategy",
			   .type = T_ENUM,
			   .roles = ROLE_SUPERVISOR_BIT,
			   .names = strategy_names,
			   .def = "one_for_one",
			   .doc = "which actors restart when one dies" },
	[SUP_INTENSITY] = { .key = "intensity",
			    .type = T_INTENSITY,
			    .roles = ROLE_SUPERVISOR_BIT,
			    .min = 0,
			    .max = 1000,
			    .def = "5/30s",
			    .doc = "more than N restarts within PERIOD stops the session" },
	[SUP_BACKOFF_MIN] = { .key = "backoff_min_ms",
			      .type = T_UINT,
			      .roles = ROLE_SUPERVISOR_BIT,
			      .min = 0,
			      .max = 60000,
			      .def = "10",
			      .doc = "delay before the first restart of an actor" },
	[SUP_BACKOFF_MAX] = { .key = "backoff_max_ms",
			      .type = T_UINT,
			      .roles = ROLE_SUPERVISOR_BIT,
			      .min = 0,
			      .max = 600000,
			      .def = "2000",
			      .doc = "the restart delay doubles up to this" },
	[SUP_WATCHDOG] = { .key = "watchdog_ms",
			   .type = T_UINT,
			   .roles = ROLE_SUPERVISOR_BIT,
			   .min = 50,
			   .max = 3600000,
			   .def = "2000",
			   .doc = "an actor without a heartbeat this long is killed" },
	[SUP_HEARTBEAT] = { .key = "heartbeat_ms",
			    .type = T_UINT,
			    .roles = ROLE_SUPERVISOR_BIT,
			    .min = 10,
			    .max = 60000,
			    .def = "100",
			    .doc = "how often actors beat" },
	[SUP_RING_KIB] = { .key = "ring_kib",
			   .type = T_POW2,
			   .roles = ROLE_SUPERVISOR_BIT,
			   .min = 4,
			   .max = 1048576,
			   .def = "4096",
			   .doc = "capacity of each ring in KiB" },
	[SUP_START_TIMEOUT] = { .key = "start_timeout_ms",
				.type = T_UINT,
				.roles = ROLE_SUPERVISOR_BIT,
				.min = 10,
				.max = 600000,
				.def = "5000",
				.doc = "default readiness deadline of every actor" },
	[SUP_SHUTDOWN_TIMEOUT] = { .key = "shutdown_timeout_ms",
				   .type = T_UINT,
				   .roles = ROLE_SUPERVISOR_BIT,
				   .min = 10,
				   .max = 600000,
				   .def = "5000",
				   .doc = "default SIGTERM-to-SIGKILL delay of every actor" },
	[SUP_N] = { .key = NULL },
};

/* Keys every actor section has whatever its kind. Indices read back in resolve. */
enum {
	ACT_KIND,
	ACT_RESTART,
	ACT_START_TIMEOUT,
	ACT_SHUTDOWN_TIMEOUT,
	ACT_SHARDS,
	ACT_FILTER,
	ACT_MIN_DURATION,
	ACT_SAMPLE,
	ACT_ENRICH,
	ACT_OPTIONAL,
	ACT_N,
};

/* The timeouts have no default here: they default to the supervisor's, known only after the
 * whole file is read. */
static const struct key_schema actor_keys[ACT_N + 1] = {
	[ACT_KIND] = { .key = "kind",
		       .type = T_KIND,
		       .roles = ROLES_ACTOR,
		       .doc = "what the actor is" },
	[ACT_RESTART] = { .key = "restart",
			  .type = T_ENUM,
			  .roles = ROLES_ACTOR,
			  .names = restart_names,
			  .def = "permanent",
			  .doc = "when the actor is restarted" },
	[ACT_START_TIMEOUT] = { .key = "start_timeout_ms",
				.type = T_UINT,
				.roles = ROLES_ACTOR,
				.min = 10,
				.max = 600000,
				.doc = "readiness deadline" },
	[ACT_SHUTDOWN_TIMEOUT] = { .key = "shutdown_timeout_ms",
				   .type = T_UINT,
				   .roles = ROLES_ACTOR,
				   .min = 10,
				   .max = 600000,
				   .doc = "SIGTERM-to-SIGKILL delay" },
	[ACT_SHARDS] = { .key = "shards",
			 .type = T_UINT,
			 .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
			 .min = 1,
			 .max = CONF_MAX_SHARDS,
			 .def = "1",
			 .doc = "number of correlator processes" },
	/* Seed 000's composites, as stages the correlator runs on the source's records. */
	[ACT_FILTER] = { .key = "filter",
			 .type = T_FILTER,
			 .roles = ROLE_BIT(CONF_ROLE_SOURCE),
			 .def = "all",
			 .doc = "record kinds kept from this source" },
	[ACT_MIN_DURATION] = { .key = "min_duration_us",
			       .type = T_UINT,
			       .roles = ROLE_BIT(CONF_ROLE_SOURCE),
			       .max = 3600000000ull,
			       .def = "0",
			       .doc = "GPU activity and API calls shorter than this are dropped" },
	[ACT_SAMPLE] = { .key = "sample",
			 .type = T_UINT,
			 .roles = ROLE_BIT(CONF_ROLE_SOURCE),
			 .min = 1,
			 .max = 1000000,
			 .def = "1",
			 .doc = "keep 1 in N samples, counter readings and launches with their work" },
	[ACT_ENRICH] = { .key = "enrich",
			 .type = T_ENRICH,
			 .roles = ROLE_BIT(CONF_ROLE_SOURCE),
			 .def = "names, stacks, streams, symbols, counters",
			 .doc = "what the correlator adds to this source's events" },
	[ACT_OPTIONAL] = { .key = "optional",
			   .type = T_BOOL,
			   .roles = ROLE_BIT(CONF_ROLE_SOURCE),
			   .def = "no",
			   .doc = "a source that cannot start here (exit 100) is left out, the session "
				  "goes on" },
	[ACT_N] = { .key = NULL },
};

/* The actor used by the supervisor's own tests: it misbehaves on request. */
static const struct key_schema test_keys[] = {
	{ .key = "ready_delay_ms",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 600000,
	  .def = "0",
	  .doc = "wait this long before signalling readiness" },
	{ .key = "never_ready",
	  .type = T_BOOL,
	  .roles = ROLES_ACTOR,
	  .def = "no",
	  .doc = "never signal readiness" },
	{ .key = "crash_after_ms",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 3600000,
	  .doc = "abort() this long after becoming ready" },
	{ .key = "crash_times",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 1000000,
	  .def = "0",
	  .doc = "misbehave (crash, exit, hang) only on the first N starts (0: every start)" },
	{ .key = "exit_after_ms",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 3600000,
	  .doc = "exit with exit_code this long after becoming ready" },
	{ .key = "exit_code",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 255,
	  .def = "0",
	  .doc = "status for exit_after_ms" },
	{ .key = "ignore_sigterm",
	  .type = T_BOOL,
	  .roles = ROLES_ACTOR,
	  .def = "no",
	  .doc = "ignore SIGTERM (the supervisor must SIGKILL it)" },
	{ .key = "hang_after_ms",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 3600000,
	  .doc = "stop heartbeating this long after becoming ready" },
	{ .key = "produce_per_s",
	  .type = T_UINT,
	  .roles = ROLES_ACTOR,
	  .max = 10000000,
	  .def = "0",
	  .doc = "test records per second written into each output ring" },
	{ .key = "dump",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK) | ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .doc = "as a sink: write every event received to this file, one JSON line each; as a "
		 "correlator (one shard): every record read, as a replay file" },
	{ .key = NULL },
};

/* kind = synthetic: a generated, realistic mix with an answer key (docs/pipeline.md). */
static const struct key_schema synthetic_keys[] = {
	{ .key = "processes",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 4096,
	  .def = "4",
	  .doc = "simulated processes" },
	{ .key = "threads",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 64,
	  .def = "2",
	  .doc = "threads per simulated process" },
	{ .key = "launches_per_s",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .max = 100000000,
	  .def = "10000",
	  .doc = "kernel launches a second; 0: flat out" },
	{ .key = "count",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .max = 1000000000000ull,
	  .def = "0",
	  .doc = "stop after this many launches; 0: never" },
	{ .key = "missing_launch_pct",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .max = 100,
	  .def = "0",
	  .doc = "share of GPU records whose launch records are left out" },
	{ .key = "reorder",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .max = 65536,
	  .def = "64",
	  .doc = "GPU records are delivered up to this many launches late, shuffled" },
	{ .key = "pid_base",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 4000000000ull,
	  .def = "1000000",
	  .doc = "first simulated pid" },
	{ .key = "answer_frame",
	  .type = T_BOOL,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "yes",
	  .doc = "a launch stack's innermost frame encodes its correlation id (for tests)" },
	{ .key = "story",
	  .type = T_BOOL,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "no",
	  .doc = "the demo's training loop: named functions (a symbol file reported in MODULE "
		 "records), kernels named after their layers and hundreds of microseconds long; "
		 "no answer frame" },
	{ .key = NULL },
};

static const char *const cpu_event_names[] = { "cpu-clock", "cycles", "auto", NULL };
static const char *const cpu_unwind_names[] = { "auto", "fp", "dwarf", NULL };

/* kind = cpu: the eBPF stack sampler (docs/cpu.md). */
static const struct key_schema cpu_keys[] = {
	{ .key = "frequency_hz",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 100000,
	  .def = "99",
	  .doc = "samples a second on each CPU" },
	{ .key = "event",
	  .type = T_ENUM,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .names = cpu_event_names,
	  .def = "cpu-clock",
	  .doc = "what drives sampling: cpu-clock (works in VMs), cycles, or auto (cycles when "
		 "the CPU has them)" },
	{ .key = "target",
	  .type = T_TARGET,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "all",
	  .doc = "which processes: all, pid:PID,..., tree:PID, command or cgroup:PATH" },
	{ .key = "kernel_stacks",
	  .type = T_BOOL,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "yes",
	  .doc = "capture the kernel part of each stack" },
	{ .key = "user_stacks",
	  .type = T_BOOL,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "yes",
	  .doc = "capture the user part of each stack" },
	{ .key = "unwind",
	  .type = T_ENUM,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .names = cpu_unwind_names,
	  .def = "auto",
	  .doc = "how user stacks are unwound: dwarf copies stack_bytes of each user stack for "
		 "the correlator to unwind with the CFI of the files mapped (no frame pointers "
		 "needed); fp walks frame pointers in the kernel; auto is dwarf where it can run "
		 "(x86-64), else fp" },
	/* A multiple of 8: the copy is sent in whole words (event.h, struct xpu_stack_copy). */
	{ .key = "stack_bytes",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1024,
	  .max = XPU_STACK_COPY_MAX,
	  .multiple = 8,
	  .def = "16384",
	  .doc = "bytes of user stack copied per sample and launch in dwarf mode" },
	/* No schema default: when not written, the actor takes the CUPTI injection library's
	 * path (common/paths.h, the file `record` and `run` inject) if that file exists, and
	 * attaches no uprobe if it does not; a path written here must exist. */
	{ .key = "launch_marker",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .doc = "library or program whose xpusup_launch_marker gets the launch uprobe "
		 "(default: the CUPTI injection library, when it is installed)" },
	{ .key = "ringbuf_kb",
	  .type = T_POW2,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 64,
	  .max = 1048576,
	  .def = "8192",
	  .doc = "size of the BPF ring buffer between the kernel and the actor" },
	{ .key = "wakeup_kb",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 0,
	  .max = 1048576,
	  .def = "256",
	  .doc = "wake the actor when this much is waiting (else it polls every drain_ms)" },
	{ .key = "drain_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 1000,
	  .def = "50",
	  .doc = "longest a record waits in the BPF ring buffer" },
	{ .key = NULL },
};

/* kind = pmu: perf_event counters (docs/pmu.md). */
static const struct key_schema pmu_keys[] = {
	{ .key = "events",
	  .type = T_PATH, /* a list the actor parses: names, rNNNN, pmu/event/ */
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "cycles, instructions, cache-references, cache-misses, branch-misses, "
		 "task-clock, page-faults, context-switches, cpu-migrations",
	  .doc = "counters to read: generic names (cycles, instructions, cache-misses, "
		 "task-clock, page-faults, ...), raw rNNNN, or PMU/EVENT/ from sysfs" },
	{ .key = "interval_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 10,
	  .max = 60000,
	  .def = "100",
	  .doc = "how often the counters are read" },
	{ .key = "target",
	  .type = T_TARGET,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "all",
	  .doc = "all (per CPU, system-wide), pid:PID,..., tree:PID, command (per process, "
		 "children included) or cgroup:PATH (per CPU, that cgroup)" },
	{ .key = "group_size",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .min = 1,
	  .max = 16,
	  .def = "4",
	  .doc = "hardware events per counter group (more than the CPU's counters multiplex)" },
	{ .key = NULL },
};

/* The keys of the in-process hand-off's actors (kind inproc and cupti): one ring per
 * attached process. */
#define INPROC_RING_KEYS(ring_def)                                                           \
	{ .key = "ring_kib",                                                                 \
	  .type = T_POW2,                                                                    \
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),                                               \
	  .min = 4,                                                                          \
	  .max = 1048576,                                                                    \
	  .def = ring_def,                                                                   \
	  .doc = "size of each process's ring, in KiB (a power of two)" },                   \
	{                                                                                    \
		.key = "max_processes", .type = T_UINT, .roles = ROLE_BIT(CONF_ROLE_SOURCE), \
		.min = 1, .max = 65536, .def = "1024",                                       \
		.doc = "processes attached at once; more are refused (and run unrecorded)"   \
	}

/* kind = inproc: the in-process hand-off for the annotate library (docs/inproc.md). */
static const struct key_schema inproc_keys[] = {
	INPROC_RING_KEYS("1024"),
	{ .key = NULL },
};

/* enum conf_launch_stacks, then the alias conf_parse_launch_stacks maps to inproc. */
static const char *const launch_stacks_names[] = { "inproc", "marker", "no", "yes", NULL };

int conf_parse_launch_stacks(const char *s, int *mode)
{
	int i;

	for (i = 0; s && launch_stacks_names[i]; i++) {
		if (!strcmp(s, launch_stacks_names[i])) {
			*mode = i == 3 ? CONF_LAUNCH_STACKS_INPROC : i;
			return 0;
		}
	}
	return -EINVAL;
}

/* kind = cupti: the same in-process hand-off, which also tells each CUPTI injection library
 * what to record (docs/inproc.md, "Options"); annotate clients are served as by inproc. */
static const struct key_schema cupti_keys[] = {
	/* A process's GPU activity arrives in CUPTI's buffer-completed bursts, flushed at
	 * once: 8 MiB holds about 45,000 launches (kernel and API records, 176 bytes) between
	 * two drains. */
	INPROC_RING_KEYS("8192"),
	{ .key = "activities",
	  .type = T_ACTIVITIES,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .def = "all",
	  .doc = "what CUPTI records: kernel, memcpy, memset, sync, runtime, driver, memory, "
		 "overhead, external, nvtx; all; or none" },
	{ .key = "launch_stacks",
	  .type = T_ENUM,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .names = launch_stacks_names,
	  .def = "inproc",
	  .doc = "how each launch's stack is recorded: inproc (the library walks it with the "
		 "loaded images' CFI), marker (the cpu source's uprobe on the launch marker), no; "
		 "yes is inproc" },
	{ .key = NULL },
};

static const char *const replay_speed_names[] = { "full", "original", NULL };

/* kind = replay: a file of ring records (docs/events.md, "Replay files"). */
static const struct key_schema replay_keys[] = {
	{ .key = "path",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .required = true,
	  .doc = "the replay file (required; relative to the config file's folder)" },
	{ .key = "speed",
	  .type = T_ENUM,
	  .roles = ROLE_BIT(CONF_ROLE_SOURCE),
	  .names = replay_speed_names,
	  .def = "full",
	  .doc = "full: as fast as the rings take it; original: at the records' own pace" },
	{ .key = NULL },
};

/* kind = correlator: the join engine's bounds (docs/correlator.md). */
static const struct key_schema correlator_keys[] = {
	{ .key = "ttl_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .min = 1,
	  .max = 3600000,
	  .def = "10000",
	  .doc = "lifetime of unmatched pending state" },
	{ .key = "linger_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .max = 3600000,
	  .def = "200",
	  .doc = "matched state kept for graph launches" },
	{ .key = "exit_grace_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .max = 3600000,
	  .def = "1000",
	  .doc = "state kept after a process exits" },
	{ .key = "max_pending",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .min = 16,
	  .max = 16777216,
	  .def = "1000000",
	  .doc = "pending keys at most" },
	{ .key = "strategies",
	  .type = T_STRATEGIES,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .def = "correlation_id",
	  .doc = "how GPU records find their launch, in order: correlation_id, timestamp(2ms)" },
	{ .key = "max_waiting",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .min = 16,
	  .max = 16777216,
	  .def = "65536",
	  .doc = "GPU records waiting for their launch at most" },
	{ .key = "max_streams",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .min = 16,
	  .max = 16777216,
	  .def = "16384",
	  .doc = "(pid, device, stream) states held at most" },
	{ .key = "stream_idle_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_CORRELATOR),
	  .min = 1,
	  .max = 86400000,
	  .def = "60000",
	  .doc = "a stream without activity this long is forgotten" },
	{ .key = NULL },
};

/* kind = stats (actors/sink/stats.c, docs/stats.md). */
static const struct key_schema stats_keys[] = {
	{ .key = "path",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .required = true,
	  .doc = "the statistics as JSON, e.g. out/stats.json" },
	{ .key = "text",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "the same for people (default: beside path, .txt; none: no text file)" },
	{ .key = "interval_s",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .max = 86400,
	  .def = "0",
	  .doc = "every N seconds append the interval's statistics to the intervals file and "
		 "rewrite path and text with the totals so far (0: only at stop)" },
	{ .key = "intervals",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "one JSON line an interval (default: beside path, .intervals.jsonl)" },
	{ .key = "window_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 1,
	  .max = 3600000,
	  .def = "1000",
	  .doc = "SM-active windows, in event time" },
	{ .key = "lateness_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .max = 3600000,
	  .def = "10000",
	  .doc = "a window closes when kernels ending this long after it have arrived" },
	{ .key = "max_kernels",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 16,
	  .max = 1u << 20,
	  .def = "10000",
	  .doc = "kernel names kept apart; the rest are counted as [other kernels]" },
	{ .key = NULL },
};

static const char *const folded_weight_names[] = { "ns", "samples", NULL };

/* kind = folded (actors/sink/folded.c). */
static const struct key_schema folded_keys[] = {
	{ .key = "path",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .required = true,
	  .doc = "the folded-stacks file, e.g. out/flame.folded" },
	{ .key = "html",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "the interactive flame graph page (default: beside path, .html; none: no page)" },
	{ .key = "weight",
	  .type = T_ENUM,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .names = folded_weight_names,
	  .def = "ns",
	  .doc = "ns: samples weigh their period, GPU work its duration; samples: one each" },
	{ .key = "snapshot_s",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .max = 86400,
	  .def = "10",
	  .doc = "rewrite the files every N seconds while running (0: only at stop)" },
	{ .key = "max_stacks",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 16,
	  .max = 1u << 26,
	  .def = "1000000",
	  .doc = "distinct stacks kept; the rest is added to one [more stacks] line per process" },
	{ .key = NULL },
};

/* kind = publish (actors/sink/publish.c): the address is checked when the sink starts. */
static const struct key_schema publish_keys[] = {
	{ .key = "listen",
	  .type = T_PATH, /* any text: a URL, not a file name */
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .required = true,
	  .doc = "where subscribers dial: tcp://HOST:PORT, ipc:///PATH, tls+tcp://HOST:PORT" },
	{ .key = "tls_cert",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "tls+tcp: the server certificate (PEM)" },
	{ .key = "tls_key",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "tls+tcp: the server certificate's private key (PEM, unencrypted)" },
	{ .key = "tls_ca",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .doc = "tls+tcp: subscribers must present a certificate this CA signed (PEM)" },
	{ .key = "queue",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 1,
	  .max = 8192,
	  .def = "32",
	  .doc = "batches queued per subscriber; beyond that a slow subscriber loses batches" },
	{ .key = "linger_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .max = 10000,
	  .def = "200",
	  .doc = "at stop, time given to the last batches to reach subscribers" },
	{ .key = NULL },
};

/* kind = timeline (actors/sink/timeline.c, docs/timeline.md). */
static const struct key_schema timeline_keys[] = {
	{ .key = "path",
	  .type = T_PATH,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .required = true,
	  .doc = "the Chrome trace JSON file, e.g. out/trace.json" },
	{ .key = "sm_window_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 1,
	  .max = 60000,
	  .def = "100",
	  .doc = "windows of the SM-active % counter tracks, in event time" },
	{ .key = "sm_lateness_ms",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .max = 3600000,
	  .def = "2000",
	  .doc = "an SM-active window is written when kernels ending this long after it came" },
	{ .key = "max_launches",
	  .type = T_UINT,
	  .roles = ROLE_BIT(CONF_ROLE_SINK),
	  .min = 1024,
	  .max = 16777216,
	  .def = "262144",
	  .doc = "recent launches remembered for flow arrows to the GPU work they launched" },
	{ .key = NULL },
};

#define SOURCE ROLE_BIT(CONF_ROLE_SOURCE)
#define SINK ROLE_BIT(CONF_ROLE_SINK)
#define CORRELATOR ROLE_BIT(CONF_ROLE_CORRELATOR)

/* Planned kinds are listed so that a pipeline.conf written for a later build gets a clear
 * message rather than "unknown kind". */
static const struct kind_schema kinds[] = {
	{ "test", ROLES_ACTOR, true, test_keys, "scriptable actor for tests", false, false },
	{ "cupti", SOURCE, true, cupti_keys, "CUDA activity and API records, annotated ranges",
	  true, true },
	{ "cpu", SOURCE, true, cpu_keys, "CPU stack sampling (eBPF)", true, false },
	{ "pmu", SOURCE, true, pmu_keys, "hardware counters (perf events)", true, false },
	{ "synthetic", SOURCE, true, synthetic_keys, "generated records with an answer key", true,
	  false },
	{ "replay", SOURCE, true, replay_keys, "records replayed from a file", true, false },
	{ "inproc", SOURCE, true, inproc_keys, "annotated ranges from profiled processes", true,
	  true },
	{ "correlator", CORRELATOR, true, correlator_keys, "joins CPU and GPU records", false,
	  false },
	{ "folded", SINK, true, folded_keys, "folded stacks and an interactive flame graph", false,
	  false },
	{ "timeline", SINK, true, timeline_keys, "Chrome trace JSON for Perfetto and speedscope",
	  false, false },
	{ "stats", SINK, true, stats_keys, "summary statistics", false, false },
	{ "publish", SINK, true, publish_keys, "records to subscribers over nng", false, false },
	{ NULL, 0, false, NULL, NULL, false, false },
};

#undef SOURCE
#undef SINK
#undef CORRELATOR

enum section_type {
	SEC_SINK = CONF_ROLE_SINK,
	SEC_CORRELATOR = CONF_ROLE_CORRELATOR,
	SEC_SOURCE = CONF_ROLE_SOURCE,
	SEC_SUPERVISOR,
};

static const char *const section_names[] = {
	[SEC_SINK] = "sink",
	[SEC_CORRELATOR] = "correlator",
	[SEC_SOURCE] = "source",
	[SEC_SUPERVISOR] = "supervisor",
};

struct section {
	enum section_type type;
	char name[CONF_NAME_MAX]; /* "" for [supervisor] and [correlator] */
	char header[CONF_NAME_MAX + 16]; /* "source gpu", for messages and conf_actor.section */
	int line;
	bool duplicate; /* repeats an earlier section: its keys are checked, nothing more */
	struct conf_kv *kvs;
	unsigned int n_kvs, cap_kvs;
	/* filled by the check pass */
	const struct kind_schema *kind; /* NULL: missing, unknown or unavailable (reported) */
	struct value vals[ACT_N];
};

struct diag {
	int line;
	unsigned long seq; /* keeps messages of one line in the order they were found */
	char msg[512];
};

#define CUR_NONE (-1) /* before the first header: keys here are errors */
#define CUR_SKIP (-2) /* after a rejected header: its keys are not judged (the header was) */

struct parser {
	const char *name;
	struct section *secs;
	unsigned int n_secs, cap_secs;
	int cur; /* index into secs, or CUR_NONE / CUR_SKIP */
	bool header_errors; /* a header was rejected: "no actors" would only repeat it */
	unsigned long n_errors;
	unsigned int n_diags;
	struct diag diags[ERRORS_MAX]; /* the earliest by (line, seq), sorted */
};

__attribute__((format(printf, 3, 4))) static void report(struct parser *p, int line,
							 const char *fmt, ...)
{
	unsigned long seq = p->n_errors++;
	unsigned int i;
	va_list ap;

	/* Messages arrive roughly in line order per pass; the array stays sorted, and when it
	 * is full a message later than all kept ones is dropped. */
	if (p->n_diags == ERRORS_MAX) {
		if (p->diags[ERRORS_MAX - 1].line <= line)
			return;
		p->n_diags--;
	}
	i = p->n_diags;
	while (i > 0 && p->diags[i - 1].line > line) {
		p->diags[i] = p->diags[i - 1];
		i--;
	}
	p->diags[i].line = line;
	p->diags[i].seq = seq;
	va_start(ap, fmt);
	vsnprintf(p->diags[i].msg, sizeof(p->diags[i].msg), fmt, ap);
	va_end(ap);
	p->n_diags++;
}

static void parser__print(const struct parser *p, FILE *err)
{
	unsigned int i;

	if (!err)
		return;
	for (i = 0; i < p->n_diags; i++)
		fprintf(err, "%s:%d: %s\n", p->name, p->diags[i].line, p->diags[i].msg);
}

/* User text in a message: cut so that one runaway value keeps the message readable. */
static const char *quote(const char *s, char buf[QUOTE_MAX + 4])
{
	size_t n = strlen(s);

	if (n <= QUOTE_MAX)
		return s;
	memcpy(buf, s, QUOTE_MAX);
	memcpy(buf + QUOTE_MAX, "...", 4);
	return buf;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_lower_or_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static char *trim(char *s)
{
	char *end;

	while (is_blank(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_blank(end[-1]))
		end--;
	*end = '\0';
	return s;
}

/* [a-z0-9_]{1,31} */
static bool key__valid(const char *k)
{
	size_t n = strlen(k), i;

	if (n == 0 || n >= CONF_KEY_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!is_lower_or_digit(k[i]) && k[i] != '_')
			return false;
	return true;
}

/* [a-z][a-z0-9_-]{0,30}: also a file-name component and never contains '.', so it cannot
 * collide with the correlator.N names. */
static bool actor_name__valid(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n >= CONF_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (i = 1; i < n; i++)
		if (!is_lower_or_digit(s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* Leading decimal digits of *s; advances *s. -EINVAL when there are none or on overflow. */
static int parse_digits(const char **s, unsigned long long *out)
{
	const char *p = *s;
	unsigned long long n = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (n > (ULLONG_MAX - d) / 10)
			return -EINVAL;
		n = n * 10 + d;
	}
	*s = p;
	*out = n;
	return 0;
}

int conf_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out)
{
	unsigned long long n;

	if (!s || parse_digits(&s, &n) || *s || n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

int conf_parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "yes", "on", "true", "1" };
	static const char *const no[] = { "no", "off", "false", "0" };
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

int conf_parse_duration(const char *s, unsigned long long min_ms, unsigned long long max_ms,
			unsigned long long *out_ms)
{
	unsigned long long n, scale;

	if (!s || parse_digits(&s, &n))
		return -EINVAL;
	if (!*s || !strcmp(s, "ms"))
		scale = 1;
	else if (!strcmp(s, "s"))
		scale = 1000;
	else if (!strcmp(s, "m"))
		scale = 60000;
	else
		return -EINVAL;
	if (n > ULLONG_MAX / scale)
		return -EINVAL;
	n *= scale;
	if (n < min_ms || n > max_ms)
		return -EINVAL;
	*out_ms = n;
	return 0;
}

/* The next item of a comma-separated list, blanks trimmed, into item (cap bytes): 1, or 0
 * at the end, or -EINVAL for an empty or over-long item or a trailing comma. */
int conf_list_next(const char **sp, char *item, size_t cap)
{
	const char *s = *sp;
	size_t len;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s && s == *sp)
		return 0;
	len = strcspn(s, ",");
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || len >= cap)
		return -EINVAL;
	memcpy(item, s, len);
	item[len] = 0;
	s += strcspn(s, ",");
	if (*s == ',' && !*++s)
		return -EINVAL; /* trailing comma */
	*sp = s;
	return 1;
}

int conf_parse_strategies(const char *s, int *exact, unsigned long long *window_ms)
{
	unsigned long long w = 0;
	int ex = 0, n = 0, r;
	char item[64];
	size_t len;

	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		len = strlen(item);
		if (!strcmp(item, "correlation_id")) {
			if (ex || w)
				return -EINVAL; /* twice, or after timestamp */
			ex = 1;
		} else if (!strncmp(item, "timestamp(", 10) && item[len - 1] == ')') {
			item[len - 1] = 0;
			if (w || conf_parse_duration(item + 10, 1, 1000, &w))
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		n++;
	}
	if (r < 0 || !n)
		return -EINVAL;
	*exact = ex;
	*window_ms = w;
	return 0;
}

static const char *const filter_names[XPU_REC_TYPE_MAX] = {
	[XPU_REC_CPU_SAMPLE] = "cpu_sample", [XPU_REC_LAUNCH] = "launch",
	[XPU_REC_CUDA_API] = "cuda_api",     [XPU_REC_GPU_KERNEL] = "kernel",
	[XPU_REC_GPU_MEMCPY] = "memcpy",     [XPU_REC_GPU_MEMSET] = "memset",
	[XPU_REC_GPU_SYNC] = "sync",	     [XPU_REC_GPU_MEMORY] = "memory",
	[XPU_REC_PMU_COUNTER] = "pmu",	     [XPU_REC_RANGE] = "range",
};

#define FILTER_CONTROL                                                              \
	(1u << XPU_REC_STRING | 1u << XPU_REC_PROC_EXEC | 1u << XPU_REC_PROC_EXIT | \
	 1u << XPU_REC_CLOCK_SYNC | 1u << XPU_REC_LOSS)

int conf_parse_filter(const char *s, unsigned int *keep)
{
	unsigned int named = 0, t;
	int r, n = 0, negated = 0, all = 0;
	char item[32];

	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		const char *name = item[0] == '!' ? item + 1 : item;

		if (n++ && negated != (item[0] == '!'))
			return -EINVAL; /* "kernel, !range" means nothing clear */
		negated = item[0] == '!';
		if (!negated && !strcmp(name, "all")) {
			all = 1;
			continue;
		}
		for (t = 0; t < XPU_REC_TYPE_MAX; t++)
			if (filter_names[t] && !strcmp(name, filter_names[t]))
				break;
		if (t == XPU_REC_TYPE_MAX)
			return -EINVAL;
		named |= 1u << t;
	}
	if (r < 0 || !n || (all && n > 1))
		return -EINVAL;
	*keep = (all ? ~0u : negated ? ~named : named) | FILTER_CONTROL;
	return 0;
}

int conf_parse_target(const char *s, struct conf_target *t)
{
	struct conf_target out = { .mode = CONF_TARGET_ALL };
	unsigned long long pid;
	char item[32];
	int r;

	if (!strcmp(s, "all")) {
		*t = out;
		return 0;
	}
	if (!strcmp(s, "command")) {
		out.mode = CONF_TARGET_TREE;
		out.command = true;
		*t = out;
		return 0;
	}
	if (!strncmp(s, "cgroup:", 7)) {
		s += 7;
		if (!*s || strstr(s, "..") ||
		    snprintf(out.cgroup, sizeof(out.cgroup), "%s%s",
			     *s == '/' ? "" : "/sys/fs/cgroup/", s) >= (int)sizeof(out.cgroup))
			return -EINVAL;
		out.mode = CONF_TARGET_CGROUP;
		*t = out;
		return 0;
	}
	if (!strncmp(s, "pid:", 4))
		out.mode = CONF_TARGET_PIDS;
	else if (!strncmp(s, "tree:", 5))
		out.mode = CONF_TARGET_TREE;
	else
		return -EINVAL;
	s = strchr(s, ':') + 1;
	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		if (out.n_pids == CONF_TARGET_PIDS_MAX ||
		    (out.mode == CONF_TARGET_TREE && out.n_pids == 1) ||
		    conf_parse_uint(item, 1, 0x3fffffff, &pid))
			return -EINVAL;
		out.pids[out.n_pids++] = (unsigned int)pid;
	}
	if (r < 0 || !out.n_pids)
		return -EINVAL;
	*t = out;
	return 0;
}

int conf_parse_enrich(const char *s, unsigned int *stages)
{
	static const char *const names[] = { "names", "stacks", "streams", "symbols", "counters" };
	unsigned int got = 0, i;
	int r, n = 0, none = 0;
	char item[32];

	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		n++;
		if (!strcmp(item, "none")) {
			none = 1;
			continue;
		}
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(item, names[i]))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -EINVAL;
		got |= 1u << i;
	}
	if (r < 0 || !n || (none && n > 1))
		return -EINVAL;
	*stages = got;
	return 0;
}

/* The bit of each name is the one the CUPTI library reads in reply.options (shm/inproc.h). */
static const struct {
	const char *name;
	unsigned int bit;
} activity_names[] = {
	{ "kernel", XPU_CUPTI_ACT_KERNEL },	{ "memcpy", XPU_CUPTI_ACT_MEMCPY },
	{ "memset", XPU_CUPTI_ACT_MEMSET },	{ "sync", XPU_CUPTI_ACT_SYNC },
	{ "runtime", XPU_CUPTI_ACT_RUNTIME },	{ "driver", XPU_CUPTI_ACT_DRIVER },
	{ "memory", XPU_CUPTI_ACT_MEMORY },	{ "overhead", XPU_CUPTI_ACT_OVERHEAD },
	{ "external", XPU_CUPTI_ACT_EXTERNAL }, { "nvtx", XPU_CUPTI_ACT_NVTX },
};

int conf_parse_activities(const char *s, unsigned int *bits)
{
	const size_t n_names = sizeof(activity_names) / sizeof(activity_names[0]);
	unsigned int got = 0;
	int r, n = 0, all = 0, none = 0;
	char item[32];
	size_t i;

	if (!s)
		return -EINVAL;
	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		n++;
		if (!strcmp(item, "all")) {
			all = 1;
			continue;
		}
		if (!strcmp(item, "none")) {
			none = 1;
			continue;
		}
		for (i = 0; i < n_names; i++)
			if (!strcmp(item, activity_names[i].name))
				break;
		if (i == n_names)
			return -EINVAL;
		got |= activity_names[i].bit;
	}
	/* "all" and "none" stand alone: "none, kernel" would mean nothing clear */
	if (r < 0 || !n || ((all || none) && n > 1))
		return -EINVAL;
	*bits = all ? XPU_CUPTI_ACT_ALL : got;
	return 0;
}

#define INTENSITY_PERIOD_MIN_MS 1ull
#define INTENSITY_PERIOD_MAX_MS 3600000ull

/* N/PERIOD. The period must carry its unit: "5/30" reads as 30 seconds to half the people
 * who write it and as 30 ms to the other half. */
static int parse_intensity(const char *s, unsigned long long min, unsigned long long max,
			   struct value *v)
{
	unsigned long long n, period;
	const char *slash = strchr(s, '/');
	char count[24];
	size_t len;

	if (!slash)
		return -EINVAL;
	len = (size_t)(slash - s);
	if (len == 0 || len >= sizeof(count))
		return -EINVAL;
	memcpy(count, s, len);
	count[len] = '\0';
	if (conf_parse_uint(count, min, max, &n))
		return -EINVAL;
	len = strlen(slash + 1);
	if (len == 0 || (slash[len] >= '0' && slash[len] <= '9'))
		return -EINVAL;
	if (conf_parse_duration(slash + 1, INTENSITY_PERIOD_MIN_MS, INTENSITY_PERIOD_MAX_MS,
				&period))
		return -EINVAL;
	v->u = n;
	v->u2 = period;
	return 0;
}

/* Parses s as k says into v (u, u2). 0 or -EINVAL; v is untouched on error. */
static int value__parse(const struct key_schema *k, const char *s, struct value *v)
{
	unsigned long long n;
	unsigned int i;
	int b;

	switch (k->type) {
	case T_KIND:
		return 0;
	case T_UINT:
		if (conf_parse_uint(s, k->min, k->max, &n) || (k->multiple && n % k->multiple))
			return -EINVAL;
		v->u = n;
		return 0;
	case T_POW2:
		if (conf_parse_uint(s, k->min, k->max, &n) || (n & (n - 1)))
			return -EINVAL;
		v->u = n;
		return 0;
	case T_BOOL:
		if (conf_parse_bool(s, &b))
			return -EINVAL;
		v->u = (unsigned long long)b;
		return 0;
	case T_ENUM:
		for (i = 0; k->names[i]; i++) {
			if (!strcmp(s, k->names[i])) {
				v->u = i;
				return 0;
			}
		}
		return -EINVAL;
	case T_INTENSITY:
		return parse_intensity(s, k->min, k->max, v);
	case T_PATH:
		return 0;
	case T_STRATEGIES: {
		unsigned long long w;
		int ex;

		return conf_parse_strategies(s, &ex, &w);
	}
	case T_FILTER: {
		unsigned int keep;

		return conf_parse_filter(s, &keep);
	}
	case T_ENRICH: {
		unsigned int stages;

		return conf_parse_enrich(s, &stages);
	}
	case T_TARGET: {
		struct conf_target t;

		return conf_parse_target(s, &t);
	}
	case T_ACTIVITIES: {
		unsigned int bits;

		return conf_parse_activities(s, &bits);
	}
	}
	return -EINVAL;
}

/* What a value of k looks like, for "expected ..." in messages. */
static void key_schema__expected(const struct key_schema *k, char *buf, size_t size)
{
	size_t used;
	unsigned int i;

	switch (k->type) {
	case T_KIND:
		snprintf(buf, size, "a kind");
		return;
	case T_UINT:
		if (k->multiple)
			snprintf(buf, size, "a multiple of %u in %llu..%llu", k->multiple, k->min,
				 k->max);
		else
			snprintf(buf, size, "an integer in %llu..%llu", k->min, k->max);
		return;
	case T_POW2:
		snprintf(buf, size, "a power of two in %llu..%llu", k->min, k->max);
		return;
	case T_BOOL:
		snprintf(buf, size, "yes/no, on/off, true/false or 1/0");
		return;
	case T_ENUM:
		used = (size_t)snprintf(buf, size, "one of");
		for (i = 0; k->names[i] && used < size; i++)
			used += (size_t)snprintf(buf + used, size - used, "%s %s", i ? "," : "",
						 k->names[i]);
		return;
	case T_INTENSITY:
		snprintf(buf, size,
			 "N/PERIOD with N in %llu..%llu and PERIOD in 1ms..60m written with its "
			 "unit (ms, s or m), e.g. 5/30s",
			 k->min, k->max);
		return;
	case T_PATH:
		snprintf(buf, size, "a file name");
		return;
	case T_STRATEGIES:
		snprintf(buf, size,
			 "a list of correlation_id and timestamp(DURATION), DURATION 1ms..1000ms, "
			 "e.g. correlation_id, timestamp(2ms)");
		return;
	case T_FILTER:
		snprintf(buf, size,
			 "all, or a list of record kinds to keep (cpu_sample, launch, cuda_api, "
			 "kernel, memcpy, memset, sync, memory, pmu, range), or of kinds to drop "
			 "each written !kind, e.g. kernel, memcpy or !cpu_sample");
		return;
	case T_ENRICH:
		snprintf(buf, size, "none, or a list of names, stacks, streams, symbols, counters");
		return;
	case T_TARGET:
		snprintf(buf, size,
			 "all, pid:PID[,PID...] (at most %d), tree:PID (PID and every process it "
			 "starts), command (the process tree of `xpusup record`'s command) or "
			 "cgroup:PATH (absolute, or under /sys/fs/cgroup)",
			 CONF_TARGET_PIDS_MAX);
		return;
	case T_ACTIVITIES:
		snprintf(buf, size,
			 "all, none, or a list of kernel, memcpy, memset, sync, runtime, driver, "
			 "memory, overhead, external, nvtx");
		return;
	}
	buf[0] = '\0';
}

/* The row for key in a NULL-terminated table, among those allowed in role_bit, or NULL. */
static const struct key_schema *key_schema__find(const struct key_schema *table, const char *key,
						 unsigned int role_bit)
{
	for (; table && table->key; table++)
		if ((table->roles & role_bit) && !strcmp(table->key, key))
			return table;
	return NULL;
}

static const struct kind_schema *kind_schema__find(const char *name)
{
	const struct kind_schema *k;

	for (k = kinds; k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
}

/* "test, folded": the kinds this build can run in role_bit's sections. */
static void kinds__known(unsigned int role_bit, char *buf, size_t size)
{
	const struct kind_schema *k;
	size_t used = 0;

	buf[0] = '\0';
	for (k = kinds; k->name && used < size; k++)
		if (k->available && (k->roles & role_bit))
			used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
						 k->name);
}

static const struct conf_kv *section__find_kv(const struct section *sec, const char *key)
{
	unsigned int i;

	for (i = 0; i < sec->n_kvs; i++)
		if (!strcmp(sec->kvs[i].key, key))
			return &sec->kvs[i];
	return NULL;
}

static bool section__is_actor(const struct section *sec)
{
	return sec->type != SEC_SUPERVISOR;
}

static unsigned int section__role_bit(const struct section *sec)
{
	return sec->type == SEC_SUPERVISOR ? ROLE_SUPERVISOR_BIT : ROLE_BIT(sec->type);
}

/* ---- pass 1: lines ---- */

static int parser__add_section(struct parser *p, enum section_type type, const char *name, int line)
{
	struct section *sec;

	if (p->n_secs == p->cap_secs) {
		unsigned int cap = p->cap_secs ? 2 * p->cap_secs : 8;
		struct section *secs = realloc(p->secs, cap * sizeof(*secs));

		if (!secs)
			return -ENOMEM;
		p->secs = secs;
		p->cap_secs = cap;
	}
	sec = &p->secs[p->n_secs];
	memset(sec, 0, sizeof(*sec));
	sec->type = type;
	sec->line = line;
	snprintf(sec->name, sizeof(sec->name), "%s", name);
	snprintf(sec->header, sizeof(sec->header), "%s%s%s", section_names[type], *name ? " " : "",
		 name);
	p->cur = (int)p->n_secs++;
	return 0;
}

static int section__add_kv(struct section *sec, const char *key, const char *value, int line)
{
	struct conf_kv *kv;

	if (sec->n_kvs == sec->cap_kvs) {
		unsigned int cap = sec->cap_kvs ? 2 * sec->cap_kvs : 8;
		struct conf_kv *kvs = realloc(sec->kvs, cap * sizeof(*kvs));

		if (!kvs)
			return -ENOMEM;
		sec->kvs = kvs;
		sec->cap_kvs = cap;
	}
	kv = &sec->kvs[sec->n_kvs++];
	snprintf(kv->key, sizeof(kv->key), "%s", key);
	snprintf(kv->value, sizeof(kv->value), "%s", value);
	kv->line = line;
	return 0;
}

/* The first earlier section that [type name] would repeat, or NULL. Actor names are one
 * namespace across sources and sinks: they name rings, status slots and log lines. */
static const struct section *parser__find_duplicate(const struct parser *p, enum section_type type,
						    const char *name)
{
	unsigned int i;

	for (i = 0; i < p->n_secs; i++) {
		const struct section *s = &p->secs[i];

		if (!s->duplicate && (*name ? !strcmp(s->name, name) : s->type == type))
			return s;
	}
	return NULL;
}

/* text starts with '['; the line is comment-stripped and trimmed. */
static int parser__header(struct parser *p, char *text, int line)
{
	static const char known[] = "known: supervisor, correlator, source NAME, sink NAME";
	char *close = strchr(text, ']'), *type, *name, *extra, *rest;
	char qbuf[QUOTE_MAX + 4];
	const struct section *dup;
	enum section_type st;
	bool need_name;
	int ret;

	p->cur = CUR_SKIP;
	if (!close) {
		report(p, line, "unterminated section header");
		goto rejected;
	}
	*close = '\0';
	rest = close + 1;
	while (is_blank(*rest))
		rest++;
	/* "[sink x];note" has no blank before the comment but is clearly one. */
	if (*rest && *rest != ';' && *rest != '#') {
		report(p, line, "unexpected text '%s' after section header", quote(rest, qbuf));
		goto rejected;
	}
	type = trim(text + 1);
	if (!*type) {
		report(p, line, "empty section header: expected [TYPE] or [TYPE NAME] (%s)", known);
		goto rejected;
	}
	for (name = type; *name && !is_blank(*name); name++)
		;
	if (*name)
		*name++ = '\0';
	name = trim(name);
	for (extra = name; *extra && !is_blank(*extra); extra++)
		;
	if (!strcmp(type, "supervisor")) {
		st = SEC_SUPERVISOR;
	} else if (!strcmp(type, "correlator")) {
		st = SEC_CORRELATOR;
	} else if (!strcmp(type, "source")) {
		st = SEC_SOURCE;
	} else if (!strcmp(type, "sink")) {
		st = SEC_SINK;
	} else {
		report(p, line, "unknown section [%s%s%s] (%s)", quote(type, qbuf),
		       *name ? " " : "", name, known);
		goto rejected;
	}
	if (*extra) {
		report(p, line, "too many words in section header [%s %s]: expected [%s%s]", type,
		       quote(name, qbuf), type, st == SEC_SOURCE || st == SEC_SINK ? " NAME" : "");
		goto rejected;
	}
	need_name = st == SEC_SOURCE || st == SEC_SINK;
	if (need_name && !*name) {
		report(p, line, "section [%s] needs a name: [%s NAME]", type, type);
		goto rejected;
	}
	if (!need_name && *name) {
		report(p, line, "section [%s] takes no name, found '%s'", type, quote(name, qbuf));
		goto rejected;
	}
	if (need_name && !actor_name__valid(name)) {
		report(p, line,
		       "invalid actor name '%s': expected 1-31 characters of a-z, 0-9, _ and -, "
		       "starting with a letter",
		       quote(name, qbuf));
		goto rejected;
	}
	dup = parser__find_duplicate(p, st, name);
	if (dup && *name)
		report(p, line, "duplicate actor name '%s' (first at line %d as [%s])", name,
		       dup->line, dup->header);
	else if (dup)
		report(p, line, "duplicate section [%s] (first at line %d)", type, dup->line);
	ret = parser__add_section(p, st, name, line);
	/* Kept so that mistakes in its keys are reported too, but it never becomes an actor. */
	if (!ret && dup)
		p->secs[p->n_secs - 1].duplicate = true;
	return ret;

rejected:
	p->header_errors = true;
	return 0;
}

static int parser__key_line(struct parser *p, char *text, int line)
{
	char qbuf[QUOTE_MAX + 4];
	char *eq = strchr(text, '='), *key, *value;
	const struct conf_kv *dup;
	struct section *sec;

	if (!eq) {
		report(p, line, "expected 'key = value' or a [section] header, found '%s'",
		       quote(text, qbuf));
		return 0;
	}
	*eq = '\0';
	key = trim(text);
	value = trim(eq + 1);
	if (!*key) {
		report(p, line, "missing key before '='");
		return 0;
	}
	if (!key__valid(key)) {
		report(p, line, "invalid key '%s': expected 1-31 characters of a-z, 0-9 and _",
		       quote(key, qbuf));
		return 0;
	}
	if (p->cur == CUR_NONE) {
		report(p, line, "key '%s' outside any section: put it under a [section] header",
		       key);
		return 0;
	}
	if (!*value) {
		report(p, line, "empty value for '%s'", key);
		return 0;
	}
	if (strlen(value) >= CONF_VALUE_MAX) {
		report(p, line, "value for '%s' too long (at most %d characters)", key,
		       CONF_VALUE_MAX - 1);
		return 0;
	}
	if (p->cur == CUR_SKIP)
		return 0;
	sec = &p->secs[p->cur];
	dup = section__find_kv(sec, key);
	if (dup) {
		report(p, line, "duplicate key '%s' in [%s] (first at line %d)", key, sec->header,
		       dup->line);
		return 0;
	}
	return section__add_kv(sec, key, value, line);
}

/* One line without its newline, at most LINE_MAX_CHARS, NUL-terminated in a writable buffer. */
static int parser__line(struct parser *p, char *buf, int line)
{
	char *s, *c;

	for (c = buf; *c; c++) {
		unsigned char u = (unsigned char)*c;

		/* Control characters are never meant, and would be echoed into messages. */
		if ((u < 0x20 && u != '\t') || u == 0x7f) {
			report(p, line, "control character 0x%02x in line", u);
			return 0;
		}
	}
	s = buf;
	while (is_blank(*s))
		s++;
	if (!*s || *s == ';' || *s == '#')
		return 0;
	/* An inline comment starts at ; or # after a blank, so "a#b" stays one value. */
	for (c = s + 1; *c; c++) {
		if ((*c == ';' || *c == '#') && is_blank(c[-1])) {
			*c = '\0';
			break;
		}
	}
	s = trim(s);
	if (*s == '[')
		return parser__header(p, s, line);
	return parser__key_line(p, s, line);
}

static int parser__lex(struct parser *p, const char *text, size_t len)
{
	char buf[LINE_MAX_CHARS + 1];
	size_t pos = 0;
	int line = 0, ret;

	while (pos < len) {
		const char *start = text + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;

		pos += n + (nl ? 1 : 0);
		line++;
		if (n > 0 && start[n - 1] == '\r')
			n--; /* CRLF files */
		if (n > LINE_MAX_CHARS) {
			report(p, line, "line too long (at most %d characters)", LINE_MAX_CHARS);
			continue;
		}
		if (memchr(start, '\0', n)) {
			report(p, line, "control character 0x00 in line");
			continue;
		}
		memcpy(buf, start, n);
		buf[n] = '\0';
		ret = parser__line(p, buf, line);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- pass 2: sections against the schema ---- */

static void section__check_kind(struct parser *p, struct section *sec)
{
	unsigned int role_bit = section__role_bit(sec);
	const struct conf_kv *kv = section__find_kv(sec, "kind");
	const char *name = kv ? kv->value : NULL;
	int line = kv ? kv->line : sec->line;
	const struct kind_schema *k;
	char known[256], qbuf[QUOTE_MAX + 4];

	kinds__known(role_bit, known, sizeof(known));
	if (!known[0])
		snprintf(known, sizeof(known), "none in this build");
	if (!name && sec->type == SEC_CORRELATOR)
		name = "correlator";
	if (!name) {
		report(p, line, "missing 'kind' in [%s] (known: %s)", sec->header, known);
		return;
	}
	k = kind_schema__find(name);
	if (!k) {
		report(p, line, "unknown kind '%s' (known: %s)", quote(name, qbuf), known);
		return;
	}
	if (!(k->roles & role_bit)) {
		report(p, line, "kind '%s' cannot be used in [%s] (known: %s)", name, sec->header,
		       known);
		return;
	}
	if (!k->available) {
		report(p, line, "kind '%s'%s is not available in this build yet", name,
		       kv ? "" : " (the default for [correlator])");
		return;
	}
	sec->kind = k;
}

/* Checks every key of sec; the values of rows in table land in vals[row index]. */
static void section__check_keys(struct parser *p, struct section *sec,
				const struct key_schema *table, struct value *vals)
{
	unsigned int role_bit = section__role_bit(sec), i;
	char expected[256], qbuf[QUOTE_MAX + 4];

	for (i = 0; i < sec->n_kvs; i++) {
		const struct conf_kv *kv = &sec->kvs[i];
		const struct key_schema *k = key_schema__find(table, kv->key, role_bit);
		struct value v = { .line = kv->line, .set = true };
		struct value *dst = NULL;

		if (k) {
			dst = &vals[k - table];
		} else if (sec->kind) {
			k = key_schema__find(sec->kind->keys, kv->key, role_bit);
		} else if (section__is_actor(sec)) {
			continue; /* the kind was rejected: its keys cannot be judged */
		}
		if (!k) {
			if (sec->kind)
				report(p, kv->line, "unknown key '%s' in [%s] (kind '%s')", kv->key,
				       sec->header, sec->kind->name);
			else
				report(p, kv->line, "unknown key '%s' in [%s]", kv->key,
				       sec->header);
			continue;
		}
		if (value__parse(k, kv->value, &v)) {
			key_schema__expected(k, expected, sizeof(expected));
			report(p, kv->line, "bad value '%s' for '%s': expected %s",
			       quote(kv->value, qbuf), kv->key, expected);
			v.bad = true;
			v.set = false;
		}
		if (dst)
			*dst = v;
	}
}

/* Fills unset, not-bad values from the table's defaults. */
static void values__defaults(const struct key_schema *table, struct value *vals, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (vals[i].set || vals[i].bad || !table[i].def)
			continue;
		/* The defaults are part of the schema and pass their own checks (config_test
		 * reads every one of them back). */
		if (!value__parse(&table[i], table[i].def, &vals[i]))
			vals[i].set = true;
	}
}

/* ---- pass 3: the whole file ---- */

static void parser__check_supervisor(struct parser *p, struct value *sup)
{
	int line;

	if (sup[SUP_BACKOFF_MIN].set && sup[SUP_BACKOFF_MAX].set &&
	    sup[SUP_BACKOFF_MAX].u < sup[SUP_BACKOFF_MIN].u) {
		line = sup[SUP_BACKOFF_MAX].line ? sup[SUP_BACKOFF_MAX].line :
						   sup[SUP_BACKOFF_MIN].line;
		report(p, line, "backoff_max_ms (%llu) is less than backoff_min_ms (%llu)",
		       sup[SUP_BACKOFF_MAX].u, sup[SUP_BACKOFF_MIN].u);
	}
	/* One late beat must not count as a freeze. */
	if (sup[SUP_WATCHDOG].set && sup[SUP_HEARTBEAT].set &&
	    sup[SUP_WATCHDOG].u < 2 * sup[SUP_HEARTBEAT].u) {
		line = sup[SUP_WATCHDOG].line ? sup[SUP_WATCHDOG].line : sup[SUP_HEARTBEAT].line;
		report(p, line, "watchdog_ms (%llu) must be at least 2 * heartbeat_ms (%llu)",
		       sup[SUP_WATCHDOG].u, sup[SUP_HEARTBEAT].u);
	}
}

static unsigned int section__n_actors(const struct section *sec)
{
	if (sec->type == SEC_SUPERVISOR)
		return 0;
	if (sec->type == SEC_CORRELATOR && sec->vals[ACT_SHARDS].set)
		return (unsigned int)sec->vals[ACT_SHARDS].u;
	return 1;
}

static int actor__fill(struct conf_actor *a, const struct section *sec, unsigned int shard,
		       const struct value *sup)
{
	const struct value *v = sec->vals;

	if (sec->type == SEC_CORRELATOR)
		snprintf(a->name, sizeof(a->name), "correlator.%u", shard);
	else
		snprintf(a->name, sizeof(a->name), "%s", sec->name);
	snprintf(a->kind, sizeof(a->kind), "%s", sec->kind->name);
	snprintf(a->section, sizeof(a->section), "%s", sec->header);
	a->role = (enum conf_role)sec->type;
	a->restart = (enum conf_restart)v[ACT_RESTART].u;
	a->optional = v[ACT_OPTIONAL].u != 0;
	a->shard = shard;
	a->start_timeout_ms = (unsigned int)(v[ACT_START_TIMEOUT].set ? v[ACT_START_TIMEOUT].u :
									sup[SUP_START_TIMEOUT].u);
	a->shutdown_timeout_ms = (unsigned int)(v[ACT_SHUTDOWN_TIMEOUT].set ?
							v[ACT_SHUTDOWN_TIMEOUT].u :
							sup[SUP_SHUTDOWN_TIMEOUT].u);
	a->line = sec->line;
	a->n_keys = sec->n_kvs;
	a->keys = NULL;
	if (!sec->n_kvs)
		return 0;
	a->keys = malloc(sec->n_kvs * sizeof(*a->keys));
	if (!a->keys)
		return -ENOMEM;
	memcpy(a->keys, sec->kvs, sec->n_kvs * sizeof(*a->keys));
	return 0;
}

static int parser__build(struct parser *p, const struct value *sup, unsigned int n_actors,
			 struct conf **out)
{
	static const enum section_type order[] = { SEC_SINK, SEC_CORRELATOR, SEC_SOURCE };
	struct conf *conf;
	unsigned int o, i, shard, n = 0;
	int ret;

	conf = calloc(1, sizeof(*conf));
	if (!conf)
		return -ENOMEM;
	snprintf(conf->path, sizeof(conf->path), "%s", p->name);
	conf->strategy = (enum conf_strategy)sup[SUP_STRATEGY].u;
	conf->intensity_max = (unsigned int)sup[SUP_INTENSITY].u;
	conf->intensity_period_ms = (unsigned int)sup[SUP_INTENSITY].u2;
	conf->backoff_min_ms = (unsigned int)sup[SUP_BACKOFF_MIN].u;
	conf->backoff_max_ms = (unsigned int)sup[SUP_BACKOFF_MAX].u;
	conf->watchdog_ms = (unsigned int)sup[SUP_WATCHDOG].u;
	conf->heartbeat_ms = (unsigned int)sup[SUP_HEARTBEAT].u;
	conf->ring_kib = (unsigned int)sup[SUP_RING_KIB].u;
	conf->actors = calloc(n_actors, sizeof(*conf->actors));
	if (!conf->actors) {
		ret = -ENOMEM;
		goto free_conf;
	}
	for (o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
		for (i = 0; i < p->n_secs; i++) {
			const struct section *sec = &p->secs[i];

			if (sec->type != order[o] || sec->duplicate)
				continue;
			if (sec->type == SEC_CORRELATOR)
				conf->shards = section__n_actors(sec);
			for (shard = 0; shard < section__n_actors(sec); shard++) {
				/* n_actors counts every actor of these sections */
				ret = actor__fill(&conf->actors[n], sec, shard, sup);
				if (ret)
					goto free_conf;
				conf->n_actors = ++n;
			}
		}
	}
	*out = conf;
	return 0;

free_conf:
	conf__free(conf);
	return ret;
}

/* What a kind needs beyond its own keys' values: required keys, a correlator to write to.
 * Reported at the section header, so the whole file's mistakes come out in one run. */
static void parser__check_kinds(struct parser *p)
{
	const struct section *in_process = NULL;
	const struct key_schema *k;
	bool correlator = false;
	unsigned int i;

	for (i = 0; i < p->n_secs; i++)
		if (p->secs[i].type == SEC_CORRELATOR && !p->secs[i].duplicate)
			correlator = true;
	for (i = 0; i < p->n_secs; i++) {
		const struct section *sec = &p->secs[i];

		if (!section__is_actor(sec) || sec->duplicate || !sec->kind)
			continue;
		for (k = sec->kind->keys; k && k->key; k++)
			if (k->required && !section__find_kv(sec, k->key))
				report(p, sec->line, "missing '%s' in [%s] (kind '%s')", k->key,
				       sec->header, sec->kind->name);
		if (sec->kind->needs_correlator && !correlator)
			report(p, sec->line,
			       "kind '%s' in [%s] sends its records to correlators: add a "
			       "[correlator] section",
			       sec->kind->name, sec->header);
		/* Both would listen on SESSION/inproc.sock, and a library can only find one
		 * session socket: the second would take the first's away. */
		if (sec->kind->in_process && in_process)
			report(p, sec->line,
			       "only one in-process source per pipeline: [%s] (kind '%s') and "
			       "[%s] (kind '%s', line %d) would share SESSION/%s (a cupti source "
			       "takes annotate clients too)",
			       sec->header, sec->kind->name, in_process->header,
			       in_process->kind->name, in_process->line, XPU_INPROC_SOCK);
		else if (sec->kind->in_process)
			in_process = sec;
	}
}

static void parser__free(struct parser *p)
{
	unsigned int i;

	for (i = 0; i < p->n_secs; i++)
		free(p->secs[i].kvs);
	free(p->secs);
}

static int load(const char *name, const char *text, size_t len, struct conf **out, FILE *err)
{
	struct value sup[SUP_N] = { { 0 } }, sup_duplicate[SUP_N] = { { 0 } };
	struct parser *p;
	unsigned int i, n_actors = 0, n_actor_secs = 0;
	bool too_many = false;
	int ret;

	/* The parser holds 20 messages of 512 bytes: too big for a stack frame in a library. */
	p = calloc(1, sizeof(*p));
	if (!p) {
		ret = -ENOMEM;
		goto report_errno;
	}
	p->name = name;
	p->cur = CUR_NONE;
	ret = parser__lex(p, text, len);
	if (ret)
		goto free_parser;

	for (i = 0; i < p->n_secs; i++) {
		struct section *sec = &p->secs[i];

		if (sec->type == SEC_SUPERVISOR) {
			section__check_keys(p, sec, supervisor_keys,
					    sec->duplicate ? sup_duplicate : sup);
			continue;
		}
		section__check_kind(p, sec);
		section__check_keys(p, sec, actor_keys, sec->vals);
		values__defaults(actor_keys, sec->vals, ACT_N);
	}
	values__defaults(supervisor_keys, sup, SUP_N);
	parser__check_supervisor(p, sup);

	for (i = 0; i < p->n_secs; i++) {
		const struct section *sec = &p->secs[i];

		if (!section__is_actor(sec) || sec->duplicate)
			continue;
		n_actor_secs++;
		n_actors += section__n_actors(sec);
		if (n_actors > CONF_MAX_ACTORS && !too_many) {
			report(p, sec->line,
			       "too many actors: at most %d, this section brings the count to %u",
			       CONF_MAX_ACTORS, n_actors);
			too_many = true;
		}
	}
	if (!n_actor_secs && !p->header_errors)
		report(p, 1, "no actors: add a [source NAME], [correlator] or [sink NAME] section");
	parser__check_kinds(p);

	if (p->n_errors) {
		parser__print(p, err);
		ret = -EINVAL;
		goto free_parser;
	}
	ret = parser__build(p, sup, n_actors, out);

free_parser:
	parser__free(p);
	free(p);
report_errno:
	/* Configuration errors were printed above; only a failure of ours is left to say. */
	if (ret && ret != -EINVAL && err)
		fprintf(err, "%s: %s\n", name, strerror(-ret));
	return ret;
}

int conf__load_string(const char *name, const char *text, struct conf **out, FILE *err)
{
	return load(name, text, strlen(text), out, err);
}

/* Reads all of fd; the caller frees *text. */
static int read_all(int fd, char **text, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *grown;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= FILE_MAX) {
				free(buf);
				return -EFBIG;
			}
			cap *= 2;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*text = buf;
	*len = n;
	return 0;
}

int conf__load(const char *path, struct conf **out, FILE *err)
{
	char *text = NULL;
	size_t len = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		goto report;
	}
	ret = read_all(fd, &text, &len);
	close(fd);
	if (ret)
		goto report;
	ret = load(path, text, len, out, err);
	free(text);
	if (!ret) {
		const char *slash = strrchr((*out)->path, '/');

		if (!slash)
			snprintf((*out)->base_dir, sizeof((*out)->base_dir), ".");
		else if (slash == (*out)->path)
			snprintf((*out)->base_dir, sizeof((*out)->base_dir), "/");
		else
			snprintf((*out)->base_dir, sizeof((*out)->base_dir), "%.*s",
				 (int)(slash - (*out)->path), (*out)->path);
	}
	return ret;

report:
	if (err) {
		if (ret == -EFBIG)
			fprintf(err, "%s: file too large (more than %u bytes)\n", path, FILE_MAX);
		else
			fprintf(err, "%s: %s\n", path, strerror(-ret));
	}
	return ret;
}

int conf_actor__path(const struct conf *conf, const struct conf_actor *actor, const char *key,
		     char *buf, size_t size)
{
	const char *v = conf_actor__get(actor, key);
	int n;

	if (!v)
		return -ENOENT;
	if (v[0] == '/' || !conf->base_dir[0])
		n = snprintf(buf, size, "%s", v);
	else
		n = snprintf(buf, size, "%s/%s", conf->base_dir, v);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

void conf__free(struct conf *conf)
{
	unsigned int i;

	if (!conf)
		return;
	for (i = 0; i < conf->n_actors; i++)
		free(conf->actors[i].keys);
	free(conf->actors);
	free(conf);
}

const char *conf_actor__get(const struct conf_actor *actor, const char *key)
{
	unsigned int i;

	const struct kind_schema *kind;
	const struct key_schema *k;

	for (i = 0; i < actor->n_keys; i++)
		if (!strcmp(actor->keys[i].key, key))
			return actor->keys[i].value;
	/* Not written: the kind's default, so every actor reads the documented one. */
	kind = kind_schema__find(actor->kind);
	for (k = kind && kind->keys ? kind->keys : NULL; k && k->key; k++)
		if (!strcmp(k->key, key))
			return k->def;
	for (k = actor_keys; k->key; k++)
		if (!strcmp(k->key, key) && (k->roles & ROLE_BIT(actor->role)))
			return k->def;
	return NULL;
}

const struct conf_actor *conf__find(const struct conf *conf, const char *name)
{
	unsigned int i;

	for (i = 0; i < conf->n_actors; i++)
		if (!strcmp(conf->actors[i].name, name))
			return &conf->actors[i];
	return NULL;
}

const struct conf_actor *conf__in_process_source(const struct conf *conf)
{
	const struct kind_schema *k;
	unsigned int i;

	for (i = 0; i < conf->n_actors; i++) {
		k = kind_schema__find(conf->actors[i].kind);
		if (k && k->in_process)
			return &conf->actors[i];
	}
	return NULL;
}

const char *conf_role__name(enum conf_role role)
{
	return (unsigned int)role <= CONF_ROLE_SOURCE ? role_names[role] : "?";
}

const char *conf_strategy__name(enum conf_strategy s)
{
	return (unsigned int)s <= CONF_REST_FOR_ONE ? strategy_names[s] : "?";
}

const char *conf_restart__name(enum conf_restart r)
{
	return (unsigned int)r <= CONF_TEMPORARY ? restart_names[r] : "?";
}
