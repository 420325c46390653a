/* SPDX-License-Identifier: MIT */
/*
 * pipeline.conf: parsed and validated completely before anything starts.
 *
 * INI syntax: `[section]` or `[section NAME]` headers, `key = value` lines, `;` or `#`
 * comments (whole line, or after whitespace at the end of a value), blank lines. Sections:
 *
 *	[supervisor]		at most once; session-wide settings
 *	[source NAME]		a source actor (start order: after correlators)
 *	[correlator]		at most once; expands into `shards` actors correlator.0 ..
 *	[sink NAME]		a sink actor (started first, stopped last)
 *
 * Every key and kind is in a schema table (config.c), documented in docs/pipeline.md with its
 * default. Errors are reported as "FILE:LINE: message" and the whole file is rejected.
 */
#ifndef XPUSUP_COMMON_CONFIG_H
#define XPUSUP_COMMON_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#define CONF_NAME_MAX 32 /* actor and section names, NUL included */
#define CONF_KIND_MAX 16
#define CONF_KEY_MAX 32
#define CONF_VALUE_MAX 512
#define CONF_MAX_ACTORS 64
#define CONF_MAX_SHARDS 32

/* Start order: sinks first, then correlators, then sources; stop in reverse. */
enum conf_role {
	CONF_ROLE_SINK = 0,
	CONF_ROLE_CORRELATOR = 1,
	CONF_ROLE_SOURCE = 2,
};

enum conf_strategy {
	CONF_ONE_FOR_ONE = 0,
	CONF_ONE_FOR_ALL = 1,
	CONF_REST_FOR_ONE = 2,
};

enum conf_restart {
	CONF_PERMANENT = 0, /* always restarted (unless it exits 100) */
	CONF_TRANSIENT = 1, /* restarted only after an abnormal exit */
	CONF_TEMPORARY = 2, /* never restarted */
};

struct conf_kv {
	char key[CONF_KEY_MAX];
	char value[CONF_VALUE_MAX]; /* trimmed, comment removed */
	int line;
};

struct conf_actor {
	char name[CONF_NAME_MAX]; /* "gpu" for [source gpu]; "correlator.N" for shard N */
	char kind[CONF_KIND_MAX]; /* "test", "correlator", ... */
	char section[CONF_NAME_MAX + 16]; /* the header as written, e.g. "source gpu" */
	enum conf_role role;
	enum conf_restart restart;
	bool optional; /* sources: an exit 100 at start leaves it out instead of failing start */
	unsigned int shard; /* correlators: which shard; others 0 */
	unsigned int start_timeout_ms;
	unsigned int shutdown_timeout_ms;
	int line; /* line of the section header */
	struct conf_kv *keys; /* every key of the section as validated (kind, restart included) */
	unsigned int n_keys;
};

struct conf {
	char path[4096];
	/* where relative file names in the file are taken from: the file's folder, or for an
	 * actor reading the session's snapshot, the original's ($XPUSUP_CONF_DIR) */
	char base_dir[4096];
	/* [supervisor] */
	enum conf_strategy strategy;
	unsigned int intensity_max; /* restarts ... */
	unsigned int intensity_period_ms; /* ... within this period */
	unsigned int backoff_min_ms;
	unsigned int backoff_max_ms;
	unsigned int watchdog_ms; /* an actor without a heartbeat this long is frozen */
	unsigned int heartbeat_ms; /* how often actors are asked to beat */
	unsigned int ring_kib; /* capacity of each ring */
	/* [correlator] */
	unsigned int shards; /* 0 when there is no [correlator] section */
	/* actors in start order: sinks, correlators, sources; config order within a role */
	struct conf_actor *actors;
	unsigned int n_actors;
};

/*
 * conf__load - parse and validate path.
 *
 * On success returns 0 and *out (owned by the caller: conf__free). On a configuration error
 * prints one "PATH:LINE: message" line per error to err (at most 20) and returns -EINVAL;
 * when the file cannot be read, prints "PATH: reason" and returns -errno.
 */
int conf__load(const char *path, struct conf **out, FILE *err);

/* conf__load_string - as conf__load, from text in memory; name is used in messages. */
int conf__load_string(const char *name, const char *text, struct conf **out, FILE *err);

void conf__free(struct conf *conf);

/* conf_actor__get - the validated value of key in the actor's section; when it is not
 * written there, the kind's documented default; NULL when neither exists. */
const char *conf_actor__get(const struct conf_actor *actor, const char *key);

/*
 * conf_actor__path - the file-name value of key (T_PATH) with a relative name taken from
 * conf->base_dir, into buf. Returns 0, -ENOENT when the key is absent, -ENAMETOOLONG.
 */
int conf_actor__path(const struct conf *conf, const struct conf_actor *actor, const char *key,
		     char *buf, size_t size);

/* conf__find - the actor named name, or NULL. */
const struct conf_actor *conf__find(const struct conf *conf, const char *name);

/* conf__in_process_source - the source that listens on SESSION/inproc.sock (kind cupti or
 * inproc; a valid conf has at most one), or NULL. */
const struct conf_actor *conf__in_process_source(const struct conf *conf);

/*
 * Value parsers shared by the loader and by actors reading their own keys. Each returns 0
 * or -EINVAL (and writes nothing on error).
 *   conf_parse_uint:     decimal, within [min, max]
 *   conf_parse_bool:     yes/no, on/off, true/false, 1/0
 *   conf_parse_duration: integer with unit ms, s, m (or bare = ms), within [min_ms, max_ms]
 */
int conf_parse_uint(const char *s, unsigned long long min, unsigned long long max,
		    unsigned long long *out);
int conf_parse_bool(const char *s, int *out);
int conf_parse_duration(const char *s, unsigned long long min_ms, unsigned long long max_ms,
			unsigned long long *out_ms);

/*
 * conf_parse_strategies - the correlator's `strategies` list: comma-separated, each
 * `correlation_id` or `timestamp(DURATION)` (DURATION in ms, at most 1000ms, at least 1ms),
 * each at most once, correlation_id first when both are given. *window_ms is 0 without a
 * timestamp strategy. Returns 0 or -EINVAL.
 */
int conf_parse_strategies(const char *s, int *exact, unsigned long long *window_ms);

/*
 * conf_parse_filter - a source's `filter`: record kinds to keep, comma-separated, from
 * cpu_sample, launch, cuda_api, kernel, memcpy, memset, sync, memory, pmu, range; or every
 * kind but some, each written `!kind`; or `all`. *keep gets bit (1 << XPU_REC_*) per kind
 * kept; the control kinds (STRING, PROC_EXEC, PROC_EXIT, CLOCK_SYNC, LOSS) are always kept,
 * because names, cleanup and loss accounting depend on them. Returns 0 or -EINVAL.
 */
int conf_parse_filter(const char *s, unsigned int *keep);

/*
 * conf_list_next - the next item of a comma-separated list at *sp into item (cap bytes, blanks
 * around it trimmed), advancing *sp. Returns 1, 0 at the end, -EINVAL for an empty item, a
 * trailing comma or an item of cap bytes or more.
 */
int conf_list_next(const char **sp, char *item, size_t cap);

/*
 * conf_parse_activities - the cupti source's `activities`: comma-separated names from kernel,
 * memcpy, memset, sync, runtime, driver, memory, overhead, external, nvtx; or `all` or `none`
 * alone. *bits gets the XPU_CUPTI_ACT_* bit of each (shm/inproc.h), the bits the actor
 * sends to each CUPTI client. Returns 0 or -EINVAL.
 */
int conf_parse_activities(const char *s, unsigned int *bits);

/* How the CUPTI library records each launch's stack (the cupti source's `launch_stacks`). */
enum conf_launch_stacks {
	CONF_LAUNCH_STACKS_INPROC = 0, /* `inproc` (or `yes`): it walks the stack itself */
	CONF_LAUNCH_STACKS_MARKER = 1, /* `marker`: it calls the marker for the cpu source */
	CONF_LAUNCH_STACKS_NO = 2, /* `no` */
};

/*
 * conf_parse_launch_stacks - `inproc`, `marker`, `no`, or `yes` (an alias of inproc: the key
 * was a boolean before it was a choice) into *mode (enum conf_launch_stacks). Returns 0 or
 * -EINVAL. The correlator reads it too: only marker LAUNCHes come late (from the cpu source).
 */
int conf_parse_launch_stacks(const char *s, int *mode);

/* A source's `enrich` stages (docs/pipeline.md): bits of *stages. */
enum conf_enrich {
	CONF_ENRICH_NAMES = 1 << 0, /* kernel and range names from STRING records */
	CONF_ENRICH_STACKS = 1 << 1, /* the launch stack on each GPU activity */
	CONF_ENRICH_STREAMS = 1 << 2, /* same_stream_prev links */
	CONF_ENRICH_SYMBOLS = 1 << 3, /* function names for stack frames (the symbolizer) */
	CONF_ENRICH_COUNTERS = 1 << 4, /* counter deltas over kernels and range ends */
	CONF_ENRICH_ALL = (1 << 5) - 1,
};

/* conf_parse_enrich - `names`, `stacks`, `streams`, `symbols`, `counters` comma-separated,
 * or `none`. 0 or -EINVAL. */
int conf_parse_enrich(const char *s, unsigned int *stages);

/* Which processes a source records (`target` of the cpu and pmu kinds). The mode values are
 * those of actors/cpu/profile.h's enum profile_target. */
enum conf_target_mode {
	CONF_TARGET_ALL = 0,
	CONF_TARGET_PIDS = 1,
	CONF_TARGET_TREE = 2,
	CONF_TARGET_CGROUP = 3,
};

#define CONF_TARGET_PIDS_MAX 64

struct conf_target {
	enum conf_target_mode mode;
	bool command; /* TREE: the root is `xpusup record`'s command ($XPUSUP_RECORD_PID) */
	unsigned int n_pids; /* PIDS: the list; TREE: 1, the root (0 with command) */
	unsigned int pids[CONF_TARGET_PIDS_MAX];
	char cgroup[256]; /* CGROUP: the folder, made absolute under /sys/fs/cgroup */
};

/*
 * conf_parse_target - `all`, `pid:PID[,PID...]`, `tree:PID`, `command` (the tree of the
 * command `xpusup record` runs) or `cgroup:PATH` (absolute, or relative to /sys/fs/cgroup). Checks the syntax only: whether the pids and the cgroup exist
 * is for the actor to find out when it starts. Returns 0 or -EINVAL.
 */
int conf_parse_target(const char *s, struct conf_target *t);

const char *conf_role__name(enum conf_role role);
const char *conf_strategy__name(enum conf_strategy s);
const char *conf_restart__name(enum conf_restart r);

#endif /* XPUSUP_COMMON_CONFIG_H */
