// SPDX-License-Identifier: MIT
/*
 * pipeline.conf: a small line-based INI parser and a table-driven schema.
 *
 * Loading runs in three passes so that one run reports as many mistakes as it can:
 *
 *   1. lex: every line becomes a section header or a key of the current section; syntax
 *      errors, duplicate sections and duplicate keys are found here;
 *   2. check: each section's keys are checked against the schema (supervisor_keys,
 *      actor_keys, then the kind's own key table), kinds are resolved; the kind's keys are
 *      checked by filling a scratch copy of its options struct, as conf_actor__options()
 *      later fills the actor's;
 *   3. resolve: defaults that depend on other sections (the supervisor's timeouts apply to
 *      actors written before [supervisor]), cross-key checks, the actor limit, and finally
 *      the actors in start order.
 *
 * Errors are kept sorted by line (the 20 earliest) and printed only at the end, so the user
 * reads them in file order whatever pass found them. Nothing is built unless all passes
 * found no error.
 *
 * The kinds' own tables live beside their code (actors/KIND/KIND_options.c) and reach the
 * loader as a list (conf_kinds, actors/kinds.c): this file knows no kind. Adding a kind or a
 * key: docs/pipeline.md, "Where the schema lives".
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

#include "xpusup/event.h"

#define LINE_MAX_CHARS 1023 /* a longer line is an error, not silently cut */
#define ERRORS_MAX 20 /* printed per load; later ones are counted, not shown */
#define QUOTE_MAX 64 /* user text quoted in messages is cut to this many characters */
#define FILE_MAX (1u << 20) /* a pipeline.conf of a megabyte is a mistake, not a config */
#define OPTIONS_MAX 4096 /* a kind's options struct, at most (checked) */

/* A parsed value: u (and u2 for CONF_T_INTENSITY) are only meaningful when set. */
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

static const struct conf_key supervisor_keys[SUP_N + 1] = {
	[SUP_STRATEGY] = { .key = "strategy",
			   .type = CONF_T_ENUM,
			   .roles = CONF_SUPERVISOR_BIT,
			   .names = strategy_names,
			   .def = "one_for_one",
			   .doc = "which actors restart when one dies" },
	[SUP_INTENSITY] = { .key = "intensity",
			    .type = CONF_T_INTENSITY,
			    .roles = CONF_SUPERVISOR_BIT,
			    .min = 0,
			    .max = 1000,
			    .def = "5/30s",
			    .doc = "more than N restarts within PERIOD stops the session" },
	[SUP_BACKOFF_MIN] = { .key = "backoff_min_ms",
			      .type = CONF_T_UINT,
			      .roles = CONF_SUPERVISOR_BIT,
			      .min = 0,
			      .max = 60000,
			      .def = "10",
			      .doc = "delay before the first restart of an actor" },
	[SUP_BACKOFF_MAX] = { .key = "backoff_max_ms",
			      .type = CONF_T_UINT,
			      .roles = CONF_SUPERVISOR_BIT,
			      .min = 0,
			      .max = 600000,
			      .def = "2000",
			      .doc = "the restart delay doubles up to this" },
	[SUP_WATCHDOG] = { .key = "watchdog_ms",
			   .type = CONF_T_UINT,
			   .roles = CONF_SUPERVISOR_BIT,
			   .min = 50,
			   .max = 3600000,
			   .def = "2000",
			   .doc = "an actor without a heartbeat this long is killed" },
	[SUP_HEARTBEAT] = { .key = "heartbeat_ms",
			    .type = CONF_T_UINT,
			    .roles = CONF_SUPERVISOR_BIT,
			    .min = 10,
			    .max = 60000,
			    .def = "100",
			    .doc = "how often actors beat" },
	[SUP_RING_KIB] = { .key = "ring_kib",
			   .type = CONF_T_POW2,
			   .roles = CONF_SUPERVISOR_BIT,
			   .min = 4,
			   .max = 1048576,
			   .def = "4096",
			   .doc = "capacity of each ring in KiB" },
	[SUP_START_TIMEOUT] = { .key = "start_timeout_ms",
				.type = CONF_T_UINT,
				.roles = CONF_SUPERVISOR_BIT,
				.min = 10,
				.max = 600000,
				.def = "5000",
				.doc = "default readiness deadline of every actor" },
	[SUP_SHUTDOWN_TIMEOUT] = { .key = "shutdown_timeout_ms",
				   .type = CONF_T_UINT,
				   .roles = CONF_SUPERVISOR_BIT,
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
static const struct conf_key actor_keys[ACT_N + 1] = {
	[ACT_KIND] = { .key = "kind",
		       .type = CONF_T_KIND,
		       .roles = CONF_ANY_ACTOR | CONF_FORMAT,
		       .doc = "what the actor is" },
	[ACT_RESTART] = { .key = "restart",
			  .type = CONF_T_ENUM,
			  .roles = CONF_ANY_ACTOR,
			  .names = restart_names,
			  .def = "permanent",
			  .doc = "when the actor is restarted" },
	[ACT_START_TIMEOUT] = { .key = "start_timeout_ms",
				.type = CONF_T_UINT,
				.roles = CONF_ANY_ACTOR,
				.min = 10,
				.max = 600000,
				.doc = "readiness deadline" },
	[ACT_SHUTDOWN_TIMEOUT] = { .key = "shutdown_timeout_ms",
				   .type = CONF_T_UINT,
				   .roles = CONF_ANY_ACTOR,
				   .min = 10,
				   .max = 600000,
				   .doc = "SIGTERM-to-SIGKILL delay" },
	[ACT_SHARDS] = { .key = "shards",
			 .type = CONF_T_UINT,
			 .roles = CONF_CORRELATOR,
			 .min = 1,
			 .max = CONF_MAX_SHARDS,
			 .def = "1",
			 .doc = "number of correlator processes" },
	/* Seed 000's composites, as stages the correlator runs on the source's records. */
	[ACT_FILTER] = { .key = "filter",
			 .type = CONF_T_FILTER,
			 .roles = CONF_SOURCE,
			 .def = "all",
			 .doc = "record kinds kept from this source" },
	[ACT_MIN_DURATION] = { .key = "min_duration_us",
			       .type = CONF_T_UINT,
			       .roles = CONF_SOURCE,
			       .max = 3600000000ull,
			       .def = "0",
			       .doc = "GPU activity and API calls shorter than this are dropped" },
	[ACT_SAMPLE] = { .key = "sample",
			 .type = CONF_T_UINT,
			 .roles = CONF_SOURCE,
			 .min = 1,
			 .max = 1000000,
			 .def = "1",
			 .doc = "keep 1 in N samples, counter readings and launches with their work" },
	[ACT_ENRICH] = { .key = "enrich",
			 .type = CONF_T_ENRICH,
			 .roles = CONF_SOURCE,
			 .def = "names, stacks, streams, symbols, counters",
			 .doc = "what the correlator adds to this source's events" },
	[ACT_OPTIONAL] = { .key = "optional",
			   .type = CONF_T_BOOL,
			   .roles = CONF_SOURCE,
			   .def = "no",
			   .doc = "a source that cannot start here (exit 100) is left out, the session "
				  "goes on" },
	[ACT_N] = { .key = NULL },
};

enum section_type {
	SEC_SINK = CONF_ROLE_SINK,
	SEC_CORRELATOR = CONF_ROLE_CORRELATOR,
	SEC_SOURCE = CONF_ROLE_SOURCE,
	SEC_SUPERVISOR,
	SEC_FORMAT, /* a kind and its keys, not an actor: read by a group sink */
};

static const char *const section_names[] = {
	[SEC_SINK] = "sink",	 [SEC_CORRELATOR] = "correlator",
	[SEC_SOURCE] = "source", [SEC_SUPERVISOR] = "supervisor",
	[SEC_FORMAT] = "format", /* not an actor's */
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
	const struct conf_kind *kind; /* NULL: missing, unknown or unavailable (reported) */
	struct value vals[ACT_N];
	/* SEC_FORMAT: the group sink that lists it, and the line of its list; NULL: none */
	const struct section *group;
	int group_line;
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
	const struct conf_kind *const *kinds; /* NULL-terminated */
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
static int value__parse(const struct conf_key *k, const char *s, struct value *v)
{
	unsigned long long n;
	unsigned int i, bits;
	int b;

	switch (k->type) {
	case CONF_T_KIND:
		return 0;
	case CONF_T_UINT:
		if (conf_parse_uint(s, k->min, k->max, &n) || (k->multiple && n % k->multiple))
			return -EINVAL;
		v->u = n;
		return 0;
	case CONF_T_POW2:
		if (conf_parse_uint(s, k->min, k->max, &n) || (n & (n - 1)))
			return -EINVAL;
		v->u = n;
		return 0;
	case CONF_T_BOOL:
		if (conf_parse_bool(s, &b))
			return -EINVAL;
		v->u = (unsigned long long)b;
		return 0;
	case CONF_T_ENUM:
		for (i = 0; k->names[i]; i++) {
			if (!strcmp(s, k->names[i])) {
				v->u = i;
				return 0;
			}
		}
		return -EINVAL;
	case CONF_T_INTENSITY:
		return parse_intensity(s, k->min, k->max, v);
	case CONF_T_TEXT:
		return 0;
	case CONF_T_FILTER:
		if (conf_parse_filter(s, &bits))
			return -EINVAL;
		v->u = bits;
		return 0;
	case CONF_T_ENRICH:
		if (conf_parse_enrich(s, &bits))
			return -EINVAL;
		v->u = bits;
		return 0;
	case CONF_T_TARGET:
	case CONF_T_CUSTOM:
		return -EINVAL; /* only in a kind's table: key__store() */
	}
	return -EINVAL;
}

/* The size of a key's member in an options struct, by type; 0: no member, or any size. */
static size_t member_size(enum conf_type type)
{
	switch (type) {
	case CONF_T_UINT:
	case CONF_T_POW2:
		return sizeof(unsigned long long);
	case CONF_T_BOOL:
		return sizeof(bool);
	case CONF_T_ENUM:
		return sizeof(int);
	case CONF_T_TEXT:
		return sizeof(const char *);
	case CONF_T_FILTER:
	case CONF_T_ENRICH:
		return sizeof(unsigned int);
	case CONF_T_TARGET:
		return sizeof(struct conf_target);
	case CONF_T_KIND:
	case CONF_T_INTENSITY:
	case CONF_T_CUSTOM:
		return 0;
	}
	return 0;
}

/*
 * Parses s as k says into its member of opts (opts_size bytes). s must outlive opts: a text
 * member points at it. 0 or -EINVAL; the member is untouched on error, and so is opts when the
 * row's member does not fit in opts or its size is not its type's (a mistake in a kind's
 * table; config_test checks every row of every kind).
 */
static int key__store(const struct conf_key *k, const char *s, void *opts, size_t opts_size)
{
	char *m = (char *)opts + k->offset;
	struct value v = { 0 };

	if (k->offset + k->size > opts_size || !k->size ||
	    (k->type != CONF_T_CUSTOM && k->size != member_size(k->type)))
		return -EINVAL;
	switch (k->type) {
	case CONF_T_TEXT:
		*(const char **)(void *)m = s;
		return 0;
	case CONF_T_TARGET:
		return conf_parse_target(s, (struct conf_target *)(void *)m);
	case CONF_T_CUSTOM:
		return k->parse ? k->parse(s, m) : -EINVAL;
	default:
		break;
	}
	if (value__parse(k, s, &v))
		return -EINVAL;
	switch (k->type) {
	case CONF_T_UINT:
	case CONF_T_POW2:
		*(unsigned long long *)(void *)m = v.u;
		return 0;
	case CONF_T_BOOL:
		*(bool *)(void *)m = v.u != 0;
		return 0;
	case CONF_T_ENUM:
		*(int *)(void *)m = (int)v.u;
		return 0;
	case CONF_T_FILTER:
	case CONF_T_ENRICH:
		*(unsigned int *)(void *)m = (unsigned int)v.u;
		return 0;
	default:
		return -EINVAL; /* no member */
	}
}

/* What a value of k looks like, for "expected ..." in messages. */
static void key_schema__expected(const struct conf_key *k, char *buf, size_t size)
{
	size_t used;
	unsigned int i;

	switch (k->type) {
	case CONF_T_KIND:
		snprintf(buf, size, "a kind");
		return;
	case CONF_T_UINT:
		if (k->multiple)
			snprintf(buf, size, "a multiple of %u in %llu..%llu", k->multiple, k->min,
				 k->max);
		else
			snprintf(buf, size, "an integer in %llu..%llu", k->min, k->max);
		return;
	case CONF_T_POW2:
		snprintf(buf, size, "a power of two in %llu..%llu", k->min, k->max);
		return;
	case CONF_T_BOOL:
		snprintf(buf, size, "yes/no, on/off, true/false or 1/0");
		return;
	case CONF_T_ENUM:
		used = (size_t)snprintf(buf, size, "one of");
		for (i = 0; k->names[i] && used < size; i++)
			used += (size_t)snprintf(buf + used, size - used, "%s %s", i ? "," : "",
						 k->names[i]);
		return;
	case CONF_T_INTENSITY:
		snprintf(buf, size,
			 "N/PERIOD with N in %llu..%llu and PERIOD in 1ms..60m written with its "
			 "unit (ms, s or m), e.g. 5/30s",
			 k->min, k->max);
		return;
	case CONF_T_TEXT:
		snprintf(buf, size, "a file name");
		return;
	case CONF_T_FILTER:
		snprintf(buf, size,
			 "all, or a list of record kinds to keep (cpu_sample, launch, cuda_api, "
			 "kernel, memcpy, memset, sync, memory, pmu, range), or of kinds to drop "
			 "each written !kind, e.g. kernel, memcpy or !cpu_sample");
		return;
	case CONF_T_ENRICH:
		snprintf(buf, size, "none, or a list of names, stacks, streams, symbols, counters");
		return;
	case CONF_T_TARGET:
		snprintf(buf, size,
			 "all, pid:PID[,PID...] (at most %d), tree:PID (PID and every process it "
			 "starts), command (the process tree of `xpusup record`'s command) or "
			 "cgroup:PATH (absolute, or under /sys/fs/cgroup)",
			 CONF_TARGET_PIDS_MAX);
		return;
	case CONF_T_CUSTOM:
		snprintf(buf, size, "%s", k->expected ? k->expected : "a valid value");
		return;
	}
	buf[0] = '\0';
}

/* The row for key in a NULL-terminated table, among those allowed in role_bit, or NULL. */
static const struct conf_key *key_schema__find(const struct conf_key *table, const char *key,
					       unsigned int role_bit)
{
	for (; table && table->key; table++)
		if ((table->roles & role_bit) && !strcmp(table->key, key))
			return table;
	return NULL;
}

static const struct conf_kind *kind_schema__find(const struct conf_kind *const *kinds,
						 const char *name)
{
	for (; *kinds; kinds++)
		if (!strcmp((*kinds)->name, name))
			return *kinds;
	return NULL;
}

/* "test, folded": the kinds this build can run in role_bit's sections. */
static void kinds__known(const struct conf_kind *const *kinds, unsigned int role_bit, char *buf,
			 size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (; *kinds && used < size; kinds++)
		if ((*kinds)->available && ((*kinds)->roles & role_bit))
			used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
						 (*kinds)->name);
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
	return sec->type != SEC_SUPERVISOR && sec->type != SEC_FORMAT;
}

/* An actor's section or a [format]: one with a kind and the kind's keys. */
static bool section__has_kind(const struct section *sec)
{
	return sec->type != SEC_SUPERVISOR;
}

/* Which kinds and common keys the section takes. */
static unsigned int section__role_bit(const struct section *sec)
{
	if (sec->type == SEC_FORMAT)
		return CONF_FORMAT;
	return sec->type == SEC_SUPERVISOR ? CONF_SUPERVISOR_BIT : CONF_ROLE_BIT(sec->type);
}

/* Which of its kind's keys: a [format] takes the keys its kind has as a sink. */
static unsigned int section__keys_bit(const struct section *sec)
{
	return sec->type == SEC_FORMAT ? CONF_SINK : section__role_bit(sec);
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
	static const char known[] =
		"known: supervisor, correlator, source NAME, sink NAME, format NAME";
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
	} else if (!strcmp(type, "format")) {
		st = SEC_FORMAT;
	} else {
		report(p, line, "unknown section [%s%s%s] (%s)", quote(type, qbuf),
		       *name ? " " : "", name, known);
		goto rejected;
	}
	need_name = st == SEC_SOURCE || st == SEC_SINK || st == SEC_FORMAT;
	if (*extra) {
		report(p, line, "too many words in section header [%s %s]: expected [%s%s]", type,
		       quote(name, qbuf), type, need_name ? " NAME" : "");
		goto rejected;
	}
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
		       "invalid %s name '%s': expected 1-31 characters of a-z, 0-9, _ and -, "
		       "starting with a letter",
		       st == SEC_FORMAT ? "format" : "actor", quote(name, qbuf));
		goto rejected;
	}
	/* One namespace for actors and formats: a name in a group's formats, or before a
	 * counter in status, is never ambiguous. */
	dup = parser__find_duplicate(p, st, name);
	if (dup && *name)
		report(p, line, "duplicate %s name '%s' (first at line %d as [%s])",
		       st == SEC_FORMAT || dup->type == SEC_FORMAT ? "section" : "actor", name,
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
	const struct conf_kind *k;
	char known[256], qbuf[QUOTE_MAX + 4];

	kinds__known(p->kinds, role_bit, known, sizeof(known));
	if (!known[0])
		snprintf(known, sizeof(known), "none in this build");
	if (!name && sec->type == SEC_CORRELATOR)
		name = "correlator";
	if (!name) {
		report(p, line, "missing 'kind' in [%s] (known: %s)", sec->header, known);
		return;
	}
	k = kind_schema__find(p->kinds, name);
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

static int kind__fill(const struct conf_kind *kind, unsigned int role_bit,
		      const char *(*get)(void *ctx, const char *key), void *ctx, void *opts,
		      size_t size, char *why, size_t why_len);

static const char *section__get(void *ctx, const char *key)
{
	const struct conf_kv *kv = section__find_kv(ctx, key);

	return kv ? kv->value : NULL;
}

/* The kind's rules across its keys (conf_kind.check), over its options as the actor will read
 * them, defaults included; a broken rule is reported at the line of the key it names. */
static void section__check_kind_rules(struct parser *p, struct section *sec, unsigned int role_bit)
{
	_Alignas(max_align_t) unsigned char opts[OPTIONS_MAX];
	const struct conf_kv *kv;
	const char *key;
	char why[256];

	if (sec->kind->options_size > sizeof(opts) ||
	    kind__fill(sec->kind, role_bit, section__get, sec, opts, sec->kind->options_size, why,
		       sizeof(why)))
		return; /* reported already: a bad value, or the struct's size */
	key = sec->kind->check ? sec->kind->check(opts, why, sizeof(why)) : NULL;
	if (!key && sec->type == SEC_FORMAT && sec->kind->format_check)
		key = sec->kind->format_check(opts, why, sizeof(why));
	if (!key)
		return;
	kv = section__find_kv(sec, key);
	report(p, kv ? kv->line : sec->line, "%s in [%s]", why, sec->header);
}

/* Checks every key of sec; the values of rows in table land in vals[row index], those of the
 * kind's keys in a scratch copy of its options struct (the check is the fill). */
static void section__check_keys(struct parser *p, struct section *sec, const struct conf_key *table,
				struct value *vals)
{
	unsigned int role_bit = section__role_bit(sec), keys_bit = section__keys_bit(sec), i;
	char expected[256], qbuf[QUOTE_MAX + 4];
	_Alignas(max_align_t) unsigned char scratch[OPTIONS_MAX];
	size_t opts_size = sec->kind ? sec->kind->options_size : 0;
	bool any_bad = false;
	int bad;

	if (opts_size > sizeof(scratch)) {
		report(p, sec->line, "kind '%s': its options struct is larger than %zu bytes",
		       sec->kind->name, sizeof(scratch));
		return;
	}

	for (i = 0; i < sec->n_kvs; i++) {
		const struct conf_kv *kv = &sec->kvs[i];
		const struct conf_key *k = key_schema__find(table, kv->key, role_bit);
		struct value v = { .line = kv->line, .set = true };
		struct value *dst = NULL;

		if (k) {
			dst = &vals[k - table];
		} else if (sec->kind) {
			k = key_schema__find(sec->kind->keys, kv->key, keys_bit);
		} else if (section__has_kind(sec)) {
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
		if (dst)
			bad = value__parse(k, kv->value, &v);
		else
			bad = key__store(k, kv->value, scratch, opts_size);
		if (bad) {
			any_bad = true;
			key_schema__expected(k, expected, sizeof(expected));
			report(p, kv->line, "bad value '%s' for '%s': expected %s",
			       quote(kv->value, qbuf), kv->key, expected);
			v.bad = true;
			v.set = false;
		}
		if (dst)
			*dst = v;
	}
	if (sec->kind && !any_bad &&
	    (sec->kind->check || (sec->type == SEC_FORMAT && sec->kind->format_check)))
		section__check_kind_rules(p, sec, keys_bit);
}

/* Fills unset, not-bad values from the table's defaults. */
static void values__defaults(const struct conf_key *table, struct value *vals, unsigned int n)
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
	a->schema = sec->kind;
	a->filter = (unsigned int)v[ACT_FILTER].u;
	a->enrich = (unsigned int)v[ACT_ENRICH].u;
	a->sample = v[ACT_SAMPLE].u;
	a->min_duration_us = v[ACT_MIN_DURATION].u;
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

/* The [format] sections, read as sinks' sections by the group that lists them. */
static int parser__build_formats(const struct parser *p, struct conf *conf, const struct value *sup)
{
	unsigned int i, n = 0;
	int ret;

	for (i = 0; i < p->n_secs; i++)
		n += p->secs[i].type == SEC_FORMAT && !p->secs[i].duplicate;
	if (!n)
		return 0;
	conf->formats = calloc(n, sizeof(*conf->formats));
	if (!conf->formats)
		return -ENOMEM;
	for (i = 0; i < p->n_secs; i++) {
		const struct section *sec = &p->secs[i];

		if (sec->type != SEC_FORMAT || sec->duplicate)
			continue;
		ret = actor__fill(&conf->formats[conf->n_formats], sec, 0, sup);
		if (ret)
			return ret;
		conf->formats[conf->n_formats++].role = CONF_ROLE_SINK;
	}
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
	ret = parser__build_formats(p, conf, sup);
	if (ret)
		goto free_conf;
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
	const struct conf_key *k;
	bool correlator = false;
	unsigned int i;

	for (i = 0; i < p->n_secs; i++)
		if (p->secs[i].type == SEC_CORRELATOR && !p->secs[i].duplicate)
			correlator = true;
	for (i = 0; i < p->n_secs; i++) {
		const struct section *sec = &p->secs[i];

		if (!section__has_kind(sec) || sec->duplicate || !sec->kind)
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
		if (sec->kind->in_process_socket && in_process)
			report(p, sec->line,
			       "only one in-process source per pipeline: [%s] (kind '%s') and "
			       "[%s] (kind '%s', line %d) would share SESSION/%s (a cupti source "
			       "takes annotate clients too)",
			       sec->header, sec->kind->name, in_process->header,
			       in_process->kind->name, in_process->line,
			       sec->kind->in_process_socket);
		else if (sec->kind->in_process_socket)
			in_process = sec;
	}
}

/* The [format] section named name, or NULL. */
static struct section *parser__find_format(struct parser *p, const char *name)
{
	unsigned int i;

	for (i = 0; i < p->n_secs; i++)
		if (p->secs[i].type == SEC_FORMAT && !p->secs[i].duplicate &&
		    !strcmp(p->secs[i].name, name))
			return &p->secs[i];
	return NULL;
}

/* One group's list (kind->formats_key): each name a [format] section no other group has. */
static void parser__check_group(struct parser *p, struct section *sec)
{
	const struct conf_kv *kv = section__find_kv(sec, sec->kind->formats_key);
	char item[CONF_NAME_MAX], qbuf[QUOTE_MAX + 4];
	const struct section *other;
	struct section *f;
	const char *s;
	unsigned int n = 0;
	int r;

	if (!kv)
		return; /* the key is required: reported by parser__check_kinds */
	s = kv->value;
	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		if (++n > CONF_GROUP_FORMATS_MAX) {
			report(p, kv->line, "too many formats in [%s]: at most %d", sec->header,
			       CONF_GROUP_FORMATS_MAX);
			return;
		}
		f = parser__find_format(p, item);
		other = f ? NULL : parser__find_duplicate(p, SEC_FORMAT, item);
		if (!f && other)
			report(p, kv->line,
			       "'%s' in %s of [%s] is [%s] (line %d), not a [format %s] section",
			       item, kv->key, sec->header, other->header, other->line, item);
		else if (!f)
			report(p, kv->line,
			       "unknown format '%s' in %s of [%s]: no [format %s] section", item,
			       kv->key, sec->header, item);
		else if (f->group == sec)
			report(p, kv->line, "format '%s' listed twice in %s of [%s]", item, kv->key,
			       sec->header);
		else if (f->group)
			report(p, kv->line,
			       "format '%s' is already used by [%s] (line %d): a [format] section "
			       "belongs to one group sink",
			       item, f->group->header, f->group_line);
		else {
			f->group = sec;
			f->group_line = kv->line;
		}
	}
	if (r < 0)
		report(p, kv->line,
		       "bad value '%s' for '%s': expected a list of [format] section names, e.g. "
		       "flame, trace, stats (at most %d, each under %d characters)",
		       quote(kv->value, qbuf), kv->key, CONF_GROUP_FORMATS_MAX, CONF_NAME_MAX);
}

/* Every group's formats exist, and every [format] is run by exactly one group. */
static void parser__check_formats(struct parser *p)
{
	bool unresolved = p->header_errors; /* a rejected header may have been a group */
	unsigned int i, n = 0;

	for (i = 0; i < p->n_secs; i++) {
		struct section *sec = &p->secs[i];

		if (!section__is_actor(sec) || sec->duplicate)
			continue;
		if (!sec->kind)
			unresolved = true;
		else if (sec->kind->formats_key)
			parser__check_group(p, sec);
	}
	for (i = 0; i < p->n_secs; i++) {
		const struct section *sec = &p->secs[i];

		if (sec->type != SEC_FORMAT || sec->duplicate)
			continue;
		if (++n == CONF_MAX_FORMATS + 1)
			report(p, sec->line, "too many [format] sections: at most %d",
			       CONF_MAX_FORMATS);
		/* A sink whose kind was rejected may be the group meant to run it: saying it
		 * is unused would only add noise to that error. */
		if (!sec->group && !unresolved)
			report(p, sec->line,
			       "[%s] is used by no group sink: list it in the formats of a [sink "
			       "NAME] with kind = group",
			       sec->header);
	}
}

static void parser__free(struct parser *p)
{
	unsigned int i;

	for (i = 0; i < p->n_secs; i++)
		free(p->secs[i].kvs);
	free(p->secs);
}

int conf__load_kinds(const char *name, const char *text, size_t len,
		     const struct conf_kind *const *kinds, struct conf **out, FILE *err)
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
	p->kinds = kinds;
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
	parser__check_formats(p);

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

int conf__load_file(const char *path, const struct conf_kind *const *kinds, struct conf **out,
		    FILE *err)
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
	ret = conf__load_kinds(path, text, len, kinds, out, err);
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
	for (i = 0; i < conf->n_formats; i++)
		free(conf->formats[i].keys);
	free(conf->formats);
	free(conf);
}

const char *conf_actor__written(const struct conf_actor *actor, const char *key)
{
	unsigned int i;

	for (i = 0; i < actor->n_keys; i++)
		if (!strcmp(actor->keys[i].key, key))
			return actor->keys[i].value;
	return NULL;
}

const char *conf_actor__get(const struct conf_actor *actor, const char *key)
{
	const char *v = conf_actor__written(actor, key);
	const struct conf_key *k;

	if (v)
		return v;
	/* Not written: the kind's default, so every actor reads the documented one. */
	for (k = actor->schema ? actor->schema->keys : NULL; k && k->key; k++)
		if (!strcmp(k->key, key))
			return k->def;
	for (k = actor_keys; k->key; k++)
		if (!strcmp(k->key, key) && (k->roles & CONF_ROLE_BIT(actor->role)))
			return k->def;
	return NULL;
}

static const char *actor_get(void *ctx, const char *key)
{
	return conf_actor__written(ctx, key);
}

int conf_actor__options(const struct conf_actor *actor, void *opts, size_t size)
{
	char why[8];

	/* the cast drops const for the callback's void *: actor_get only reads */
	return conf_kind__options(actor->schema, CONF_ROLE_BIT(actor->role), actor_get,
				  (void *)actor, opts, size, why, sizeof(why));
}

/* Append text to the string in why, cut to fit with "..." at its end: a long list of
 * expected values may not fit beside the key and the value. */
static void why__append_cut(char *why, size_t why_len, const char *text)
{
	size_t n = strnlen(why, why_len), m = strlen(text);

	if (n + 1 >= why_len)
		return;
	if (m > why_len - n - 1) {
		m = why_len - n - 1;
		memcpy(why + n, text, m);
		why[n + m] = 0;
		if (why_len > 4)
			memcpy(why + why_len - 4, "...", 4);
		return;
	}
	memcpy(why + n, text, m + 1);
}

/* conf_kind__options without the kind's cross-key check. */
static int kind__fill(const struct conf_kind *kind, unsigned int role_bit,
		      const char *(*get)(void *ctx, const char *key), void *ctx, void *opts,
		      size_t size, char *why, size_t why_len)
{
	char expected[256], qbuf[QUOTE_MAX + 4];
	const struct conf_key *k;
	const char *v;

	if (!kind || size != kind->options_size) {
		snprintf(why, why_len, "options of kind '%s' read into a struct of %zu bytes",
			 kind ? kind->name : "?", size);
		return -EINVAL;
	}
	memset(opts, 0, size);
	for (k = kind->keys; k && k->key; k++) {
		if (!(k->roles & role_bit))
			continue;
		v = get(ctx, k->key);
		if (!v)
			v = k->def;
		if (!v || !key__store(k, v, opts, size))
			continue;
		key_schema__expected(k, expected, sizeof(expected));
		snprintf(why, why_len, "bad %s '%s': expected ", k->key, quote(v, qbuf));
		why__append_cut(why, why_len, expected);
		return -EINVAL;
	}
	return 0;
}

int conf_kind__options(const struct conf_kind *kind, unsigned int role_bit,
		       const char *(*get)(void *ctx, const char *key), void *ctx, void *opts,
		       size_t size, char *why, size_t why_len)
{
	int err = kind__fill(kind, role_bit, get, ctx, opts, size, why, why_len);

	if (err || !kind->check || !kind->check(opts, why, why_len))
		return err;
	return -EINVAL;
}

int conf_kind__check(const struct conf_kind *kind, char *why, size_t why_len)
{
	const struct conf_key *k;
	void *scratch;
	int err = 0;

	if (kind->options_size > OPTIONS_MAX) {
		snprintf(why, why_len, "an options struct of %zu bytes (at most %d)",
			 kind->options_size, OPTIONS_MAX);
		return -EINVAL;
	}
	scratch = calloc(1, kind->options_size ? kind->options_size : 1);
	if (!scratch) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	for (k = kind->keys; k && k->key && !err; k++) {
		err = -EINVAL;
		if (k->type == CONF_T_KIND || k->type == CONF_T_INTENSITY)
			snprintf(why, why_len, "%s: a type with no member", k->key);
		else if (k->type == CONF_T_CUSTOM && (!k->parse || !k->expected))
			snprintf(why, why_len, "%s: a custom type needs parse and expected",
				 k->key);
		else if (k->type == CONF_T_ENUM && !k->names)
			snprintf(why, why_len, "%s: an enum without names", k->key);
		else if (!k->size || k->offset + k->size > kind->options_size ||
			 (k->type != CONF_T_CUSTOM && k->size != member_size(k->type)))
			snprintf(why, why_len,
				 "%s: member at %zu of %zu bytes, in an options struct of %zu",
				 k->key, k->offset, k->size, kind->options_size);
		else if (k->def && key__store(k, k->def, scratch, kind->options_size))
			snprintf(why, why_len, "%s: the default '%s' does not pass", k->key,
				 k->def);
		else
			err = 0;
	}
	free(scratch);
	return err;
}

static const struct conf_actor *actors__find(const struct conf_actor *a, unsigned int n,
					     const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!strcmp(a[i].name, name))
			return &a[i];
	return NULL;
}

const struct conf_actor *conf__find(const struct conf *conf, const char *name)
{
	return actors__find(conf->actors, conf->n_actors, name);
}

const struct conf_actor *conf__find_format(const struct conf *conf, const char *name)
{
	return actors__find(conf->formats, conf->n_formats, name);
}

const struct conf_actor *conf__in_process_source(const struct conf *conf)
{
	const struct conf_kind *k;
	unsigned int i;

	for (i = 0; i < conf->n_actors; i++) {
		k = conf->actors[i].schema;
		if (k && k->in_process_socket)
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
