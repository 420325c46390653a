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
 *	[format NAME]		an output format run inside a group sink (kind = group): its
 *				kind and that kind's sink keys, but not an actor (nothing
 *				starts it, dials it or lists it in status)
 *
 * The [supervisor] keys and the keys every actor section has are in config.c; each actor
 * kind's keys are in a table beside its code (actors/KIND/KIND_options.c, a struct conf_kind),
 * and the kinds are listed once in actors/kinds.c. Every key is documented in docs/pipeline.md
 * with its default. Errors are reported as "FILE:LINE: message" and the whole file is
 * rejected.
 *
 * An actor reads its section as a typed struct (conf_actor__options): each key of its kind
 * lands, validated, in one member, the schema's default when the key is not written.
 */
#ifndef XPUSUP_COMMON_CONFIG_H
#define XPUSUP_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONF_NAME_MAX 32 /* actor and section names, NUL included */
#define CONF_KIND_MAX 16
#define CONF_KEY_MAX 32
#define CONF_VALUE_MAX 512
#define CONF_MAX_ACTORS 64
#define CONF_MAX_SHARDS 32
#define CONF_MAX_FORMATS CONF_MAX_ACTORS /* [format NAME] sections */
#define CONF_GROUP_FORMATS_MAX 8 /* formats in one group sink */

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

/* Role bits: which sections a key or a kind may appear in. */
#define CONF_ROLE_BIT(role) (1u << (role))
#define CONF_SUPERVISOR_BIT (1u << 3)
#define CONF_SINK CONF_ROLE_BIT(CONF_ROLE_SINK)
#define CONF_CORRELATOR CONF_ROLE_BIT(CONF_ROLE_CORRELATOR)
#define CONF_SOURCE CONF_ROLE_BIT(CONF_ROLE_SOURCE)
#define CONF_ANY_ACTOR (CONF_SINK | CONF_CORRELATOR | CONF_SOURCE)
/* In a kind's roles: it may also be a [format NAME] section, whose keys are the kind's
 * CONF_SINK keys (a format is a sink's output without the sink process). */
#define CONF_FORMAT (1u << 4)

/* A key's type: how its text is checked, and the C type of its member in an options struct. */
enum conf_type {
	CONF_T_KIND, /* the kind key: resolved against the kinds, no member */
	CONF_T_UINT, /* unsigned long long: decimal in [min, max] (a multiple of `multiple`) */
	CONF_T_POW2, /* unsigned long long: a decimal power of two in [min, max] */
	CONF_T_BOOL, /* bool: see conf_parse_bool() */
	CONF_T_ENUM, /* int: the index in names[], which is the C enum's value */
	CONF_T_INTENSITY, /* [supervisor] only: N/PERIOD, no member */
	CONF_T_TEXT, /* const char *: any text (a file name, a URL, a list the actor reads);
		      * NULL when neither written nor defaulted */
	CONF_T_FILTER, /* unsigned int: see conf_parse_filter() */
	CONF_T_ENRICH, /* unsigned int: see conf_parse_enrich() */
	CONF_T_TARGET, /* struct conf_target: see conf_parse_target() */
	CONF_T_CUSTOM, /* the kind's own parse(): a type only one kind has */
};

/* One key of a schema: one line of a kind's table, one member of its options struct. */
struct conf_key {
	const char *key;
	enum conf_type type;
	unsigned int roles; /* CONF_ROLE_BIT()s of the sections where the key is allowed */
	unsigned long long min, max;
	unsigned int multiple; /* CONF_T_UINT: when not 0, the value must be a multiple of it */
	const char *const *names; /* CONF_T_ENUM, NULL-terminated */
	const char *def; /* parsed like a value from the file; NULL: absent unless written */
	bool required; /* a section of this kind without the key is an error */
	const char *doc; /* one line; docs/pipeline.md says the same at more length */
	/* where the value lands in the kind's options struct (CONF_MEMBER) */
	size_t offset, size;
	/* CONF_T_CUSTOM: parse s into *member (0 or -EINVAL, nothing written on error), and
	 * what a value looks like, for "expected ..." in messages */
	int (*parse)(const char *s, void *member);
	const char *expected;
};

/* .offset and .size of a conf_key: the member of TYPE its value lands in. */
#define CONF_MEMBER(TYPE, member) \
	.offset = offsetof(TYPE, member), .size = sizeof(((TYPE *)0)->member)

/* An actor kind: its keys (NULL-terminated) and its options struct's size. */
struct conf_kind {
	const char *name;
	unsigned int roles; /* CONF_ROLE_BIT()s of the sections that may use it */
	bool available; /* false: planned, rejected with "not available in this build yet" */
	const struct conf_key *keys; /* NULL when not available */
	const char *doc;
	bool needs_correlator; /* a source that writes into the shard rings */
	/* the socket it listens on in SESSION (inproc.sock), NULL for none: at most one such
	 * source a pipeline */
	const char *in_process_socket;
	size_t options_size; /* sizeof its options struct */
	/* optional: the rules across keys, over the options as read (defaults included):
	 * NULL when they hold, else the key to blame (its line is reported; a key not
	 * written points at the section) with why in words */
	const char *(*check)(const void *opts, char *why, size_t why_len);
	/* optional: the same for what the kind refuses as a [format] section (settings that
	 * need a sink process of their own), checked after check */
	const char *(*format_check)(const void *opts, char *why, size_t why_len);
	/* the key that lists [format] sections the kind runs (kind group), NULL for none: the
	 * loader checks that each name is a [format] section, that a section lists at most
	 * CONF_GROUP_FORMATS_MAX, and that every [format] section is listed exactly once */
	const char *formats_key;
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
	const struct conf_kind *schema; /* the kind's keys, for defaults and typed options */
	/* sources: the stages the correlator runs on their records (docs/pipeline.md) */
	unsigned int filter; /* bit (1 << XPU_REC_*) per record kind kept (conf_parse_filter) */
	unsigned int enrich; /* enum conf_enrich bits */
	unsigned long long sample; /* keep 1 in sample */
	unsigned long long min_duration_us;
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
	/* [format NAME] sections in config order: not actors. Each is read like a sink's
	 * section (role CONF_ROLE_SINK, so conf_actor__get, __path and __options apply) by the
	 * group sink that lists it. */
	struct conf_actor *formats;
	unsigned int n_formats;
};

/*
 * conf__load_file, conf__load_kinds - parse and validate path (or text in memory, name used
 * in messages) against the kinds given (NULL-terminated). Programs call conf__load and
 * conf__load_string (actors/kinds.h), which pass the list of every kind: common/ names no
 * actor kind.
 *
 * On success returns 0 and *out (owned by the caller: conf__free). On a configuration error
 * prints one "PATH:LINE: message" line per error to err (at most 20) and returns -EINVAL;
 * when the file cannot be read, prints "PATH: reason" and returns -errno.
 */
int conf__load_file(const char *path, const struct conf_kind *const *kinds, struct conf **out,
		    FILE *err);
int conf__load_kinds(const char *name, const char *text, size_t len,
		     const struct conf_kind *const *kinds, struct conf **out, FILE *err);

void conf__free(struct conf *conf);

/* conf_actor__get - the validated value of key in the actor's section; when it is not
 * written there, the kind's documented default; NULL when neither exists. */
const char *conf_actor__get(const struct conf_actor *actor, const char *key);

/* conf_actor__written - the value of key as written in the actor's section, or NULL (whatever
 * the default): for the few keys whose being written is itself a setting. */
const char *conf_actor__written(const struct conf_actor *actor, const char *key);

/*
 * conf_actor__options - the actor's section as its kind's options struct: *opts (size bytes,
 * which must be the kind's options_size) is zeroed, then every key of the kind allowed in the
 * actor's role gets its value as written, else its default; a key with neither keeps 0 (NULL
 * for text). Text members point into the conf, valid until conf__free. Returns 0, or -EINVAL
 * when size is not the kind's or a value does not parse (the loader checked every one, so
 * only a mismatched struct gets here).
 */
int conf_actor__options(const struct conf_actor *actor, void *opts, size_t size);

/*
 * conf_kind__options - the same from any source of key values: get(ctx, key) returns the
 * value as written or NULL (the default then applies). For options that do not come from a
 * pipeline.conf (the sink formats under `xpusup subscribe`). Returns 0, or -EINVAL with
 * "bad KEY 'VALUE': expected ..." in why.
 */
int conf_kind__options(const struct conf_kind *kind, unsigned int role_bit,
		       const char *(*get)(void *ctx, const char *key), void *ctx, void *opts,
		       size_t size, char *why, size_t why_len);

/*
 * conf_kind__check - whether kind's table is sound: each row has a member that fits in the
 * options struct with its type's size, an enum its names, a custom type its parse and expected,
 * and each default passes its own check. Returns 0, or -EINVAL with the first fault in why.
 * config_test runs it over every kind; the loader relies on it.
 */
int conf_kind__check(const struct conf_kind *kind, char *why, size_t why_len);

/*
 * conf_actor__path - the file-name value of key (CONF_T_TEXT) with a relative name taken from
 * conf->base_dir, into buf. Returns 0, -ENOENT when the key is absent, -ENAMETOOLONG.
 */
int conf_actor__path(const struct conf *conf, const struct conf_actor *actor, const char *key,
		     char *buf, size_t size);

/* conf__find - the actor named name, or NULL. */
const struct conf_actor *conf__find(const struct conf *conf, const char *name);

/* conf__find_format - the [format NAME] section named name, or NULL. */
const struct conf_actor *conf__find_format(const struct conf *conf, const char *name);

/* conf__in_process_source - the source whose kind has an in_process_socket (cupti or
 * inproc: it listens on SESSION/inproc.sock; a valid conf has at most one), or NULL. */
const struct conf_actor *conf__in_process_source(const struct conf *conf);

/*
 * Value parsers shared by the loader, the kinds' own parsers (actors/KIND/KIND_options.c) and
 * command lines. An actor does not parse its section's values: conf_actor__options() hands
 * them over checked. Each returns 0 or -EINVAL (and writes nothing on error).
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
 * those of bpf/profile.h's enum profile_target. */
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
