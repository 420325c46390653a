// SPDX-License-Identifier: MIT
/*
 * The group format without a session: its [format] sections read from a pipeline.conf, each
 * format opened with its own options and finished; counters named FORMAT.COUNTER, shortened
 * to the status block's names, and past what the caller can show counted in counters_hidden;
 * a group that cannot open one of its formats gives back the ones it opened and says which.
 * tests/sink_group_test.sh runs a group in a session against the separate sinks.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "tests/tap.h"

static char dir[64];

static const char *env_get(void *ctx, const char *key)
{
	return conf_actor__get(ctx, key);
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	(void)ctx;
	(void)key;
	(void)buf;
	(void)size;
	return -ENOENT; /* the group has no file of its own */
}

/* The group [sink g] of conf, opened against formats_conf's [format] sections. */
static int group_open(const struct conf *conf, const struct conf *formats_conf, void **st,
		      char *why, size_t why_len)
{
	struct fmt_env env = { .ctx = (void *)conf__find(conf, "g"),
			       .get = env_get,
			       .path = env_path,
			       .conf = formats_conf };

	why[0] = 0;
	return fmt_group.open(st, &env, why, why_len);
}

static struct conf *load(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static struct conf *load(const char *fmt, ...)
{
	struct conf *conf = NULL;
	char text[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (conf__load_string("g.conf", text, &conf, stderr))
		tap_bail("g.conf does not load");
	return conf;
}

static unsigned int counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	return fmt_group.counters(st, names, values, max);
}

static bool file_there(const char *name)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !access(p, F_OK);
}

static void test_formats(void)
{
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	struct conf *conf;
	char why[512];
	void *st = NULL;
	unsigned int n;
	int err;

	conf = load("[sink g]\nkind = group\nformats = flame, trace, st\n"
		    "[format flame]\nkind = folded\npath = %s/flame.folded\nsnapshot_s = 0\n"
		    "[format trace]\nkind = timeline\npath = %s/trace.json\n"
		    "[format st]\nkind = stats\npath = %s/stats.json\ntext = none\n",
		    dir, dir, dir);
	err = group_open(conf, conf, &st, why, sizeof(why));
	if (!tap_ok(!err, "open: a group of folded, timeline and stats (%s)", why))
		tap_bail("cannot go on");
	n = counters(st, names, values, FMT_COUNTERS_MAX);
	tap_ok(n == 6 + 11 + 9 && !strcmp(names[0], "flame.stacks") &&
		       !strcmp(names[6], "trace.events_written") &&
		       !strcmp(names[17], "st.kernel_names"),
	       "counters: every format's, in order, named FORMAT.COUNTER (%u: %s, %s, %s)", n,
	       names[0], names[6], n > 17 ? names[17] : "-");
	tap_ok(n > 8 && !strcmp(names[8], "tr.flows_unknown_launch"),
	       "counters: a name past 23 characters keeps the counter's and cuts the format's (%s)",
	       n > 8 ? names[8] : "-");
	n = counters(st, names, values, 5);
	tap_ok(n == 5 && !strcmp(names[3], "flame.stacks_overflow") &&
		       !strcmp(names[4], "counters_hidden") && values[4] == 26 - 4,
	       "counters: what does not fit is counted in counters_hidden (%s = %llu)", names[4],
	       (unsigned long long)values[4]);
	err = fmt_group.finish(st, why, sizeof(why));
	tap_ok(!err && file_there("flame.folded") && file_there("trace.json") &&
		       file_there("stats.json") && !file_there("stats.txt"),
	       "finish: every format writes its final output, with its own options (%s)", why);
	fmt_group.free(st);
	conf__free(conf);
}

static void test_many_counters(void)
{
	const char *names[FMT_COUNTERS_MAX];
	__u64 values[FMT_COUNTERS_MAX];
	char text[2048], why[512];
	struct conf *conf;
	size_t used = 0;
	void *st = NULL;
	unsigned int i, n;

	/* six timelines in windows: 15 counters each, more than a sink can show */
	used += (size_t)snprintf(text, sizeof(text), "[sink g]\nkind = group\nformats = t0");
	for (i = 1; i < 6; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, ", t%u", i);
	used += (size_t)snprintf(text + used, sizeof(text) - used, "\n");
	for (i = 0; i < 6; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "[format t%u]\nkind = timeline\npath = %s/t%u.json\n"
					 "window_s = 60\n",
					 i, dir, i);
	conf = load("%s", text);
	if (group_open(conf, conf, &st, why, sizeof(why)))
		tap_bail("six timelines: %s", why);
	n = counters(st, names, values, FMT_COUNTERS_MAX);
	tap_ok(n == FMT_COUNTERS_MAX && !strcmp(names[n - 1], "counters_hidden") &&
		       values[n - 1] == 6 * 15 - (FMT_COUNTERS_MAX - 1) &&
		       !strcmp(names[n - 2], "t4.flows_waiting"),
	       "counters: 90 counters in %d slots: the last says how many are hidden (%llu, after "
	       "%s)",
	       FMT_COUNTERS_MAX, (unsigned long long)values[n - 1], names[n - 2]);
	fmt_group.finish(st, why, sizeof(why));
	fmt_group.free(st);
	conf__free(conf);
}

static void test_open_errors(void)
{
	struct conf *conf, *other;
	char why[512];
	void *st = NULL;
	int err;

	conf = load("[sink g]\nkind = group\nformats = flame, st\n"
		    "[format flame]\nkind = folded\npath = %s/a.folded\n"
		    "[format st]\nkind = stats\npath = %s/a.json\n",
		    dir, dir);
	err = group_open(conf, NULL, &st, why, sizeof(why));
	tap_ok(err == -EINVAL && strstr(why, "a session's sink only"),
	       "open: without a pipeline.conf a group is refused (%s)", why);
	/* [format flame] is there, [format st] not: the first is opened, then given back */
	other = load("[sink g]\nkind = group\nformats = flame\n"
		     "[format flame]\nkind = folded\npath = %s/b.folded\n",
		     dir);
	err = group_open(conf, other, &st, why, sizeof(why));
	tap_ok(err == -EINVAL && !strcmp(why, "format 'st': no [format] section"),
	       "open: a format that cannot open names itself, and the others are freed (%s)", why);
	conf__free(other);
	conf__free(conf);
}

int main(void)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/tmp/xpusup-group-test-XXXXXX");
	if (!mkdtemp(dir))
		tap_bail("mkdtemp: %s", strerror(errno));
	test_formats();
	test_many_counters();
	test_open_errors();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		tap_diag("could not remove %s", dir);
	return tap_done();
}
