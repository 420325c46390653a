// SPDX-License-Identifier: MIT
/* pipeline.conf: a full file is read back field by field; every class of mistake is reported
 * as "NAME:LINE: message" and rejects the file; the value parsers hold at their edges. */
#include "common/config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/kinds.h"
#include "actors/correlator/correlator_options.h"
#include "actors/cpu/cpu_options.h"
#include "actors/inproc/inproc_options.h"
#include "actors/sink/sink_options.h"
#include "actors/test/test_options.h"
#include "shm/inproc.h"
#include "tests/tap.h"
#include "xpusup/event.h"

static char *err_text; /* what the last load printed */

/* conf__load_string with err captured in err_text. */
static int load(const char *text, struct conf **out)
{
	size_t len = 0;
	FILE *err;
	int ret;

	free(err_text);
	err_text = NULL;
	err = open_memstream(&err_text, &len);
	if (!err)
		tap_bail("open_memstream: %s", strerror(errno));
	ret = conf__load_string("t.conf", text, out, err);
	fclose(err);
	return ret;
}

static unsigned int err_lines(void)
{
	unsigned int n = 0;
	const char *c;

	for (c = err_text; c && *c; c++)
		n += *c == '\n';
	return n;
}

/* The printed line that starts with prefix and contains phrase, or NULL. */
static const char *err_find(const char *prefix, const char *phrase)
{
	const char *line = err_text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *hit = strstr(line, phrase);

		if (!strncmp(line, prefix, strlen(prefix)) && hit &&
		    hit + strlen(phrase) <= line + n)
			return line;
		line += n + (nl ? 1 : 0);
	}
	return NULL;
}

/* text must be rejected with a message at prefix ("t.conf:LINE: ") containing phrase. */
static void check_error(const char *what, const char *text, const char *prefix, const char *phrase)
{
	struct conf *sentinel = (struct conf *)&err_text, *conf = sentinel;
	int ret = load(text, &conf);

	if (!tap_ok(ret == -EINVAL && conf == sentinel && err_find(prefix, phrase), "%s: \"%s%s\"",
		    what, prefix, phrase))
		tap_diag("ret %d, printed:\n%s", ret, err_text ? err_text : "(nothing)");
}

static const char full[] = "# a full pipeline; [supervisor] comes last on purpose\n"
			   "[sink trace]\n"
			   "kind = test\n"
			   "restart = transient ; inline comment\n"
			   "start_timeout_ms = 1234\n"
			   "\n"
			   "[source gpu]\n"
			   "  kind=test\n"
			   "produce_per_s = 1000 # another comment\n"
			   "crash_after_ms = 250\n"
			   "crash_times = 2\n"
			   "ignore_sigterm = on\n"
			   "\n"
			   "[ correlator ]\n"
			   "kind = test\n"
			   "shards = 3\n"
			   "restart = temporary\n"
			   "shutdown_timeout_ms = 77\n"
			   "\n"
			   "; a comment\n"
			   "[sink stats]\t; the second sink\n"
			   "kind = test\n"
			   "never_ready = yes\n"
			   "\n"
			   "[source cpu]\n"
			   "kind = test\n"
			   "ready_delay_ms = 10\n"
			   "\n"
			   "[supervisor]\n"
			   "strategy = rest_for_one\n"
			   "intensity = 7/2m\n"
			   "backoff_min_ms = 20\n"
			   "backoff_max_ms = 400\n"
			   "watchdog_ms = 900\n"
			   "heartbeat_ms = 300\n"
			   "ring_kib = 64\n"
			   "start_timeout_ms = 3000\n"
			   "shutdown_timeout_ms = 4000\n";

static void test_full(void)
{
	static const char *const order[] = { "trace",	     "stats",	     "correlator.0",
					     "correlator.1", "correlator.2", "gpu",
					     "cpu" };
	const struct conf_actor *a;
	struct conf *conf = NULL;
	unsigned int i;
	int ret;

	ret = load(full, &conf);
	if (!tap_ok(ret == 0 && conf, "full config loads"))
		tap_bail("ret %d: %s", ret, err_text);
	tap_ok(err_lines() == 0, "nothing printed for a valid file");
	tap_ok(!strcmp(conf->path, "t.conf"), "path is the name given");
	tap_eq_u64(conf->strategy, CONF_REST_FOR_ONE, "strategy");
	tap_eq_u64(conf->intensity_max, 7, "intensity N");
	tap_eq_u64(conf->intensity_period_ms, 120000, "intensity period 2m");
	tap_eq_u64(conf->backoff_min_ms, 20, "backoff_min_ms");
	tap_eq_u64(conf->backoff_max_ms, 400, "backoff_max_ms");
	tap_eq_u64(conf->watchdog_ms, 900, "watchdog_ms");
	tap_eq_u64(conf->heartbeat_ms, 300, "heartbeat_ms");
	tap_eq_u64(conf->ring_kib, 64, "ring_kib");
	tap_eq_u64(conf->shards, 3, "shards");

	tap_eq_u64(conf->n_actors, 7, "2 sinks + 3 shards + 2 sources");
	for (i = 0; i < conf->n_actors && i < 7; i++)
		tap_ok(!strcmp(conf->actors[i].name, order[i]), "actor %u is %s (got %s)", i,
		       order[i], conf->actors[i].name);

	a = conf__find(conf, "trace");
	tap_ok(a == &conf->actors[0], "conf__find trace");
	tap_ok(a->role == CONF_ROLE_SINK && !strcmp(a->kind, "test") &&
		       !strcmp(a->section, "sink trace") && a->line == 2,
	       "trace: role, kind, section, line");
	tap_eq_u64(a->restart, CONF_TRANSIENT, "trace: restart override");
	tap_eq_u64(a->start_timeout_ms, 1234, "trace: start timeout override");
	tap_eq_u64(a->shutdown_timeout_ms, 4000,
		   "trace: shutdown timeout from a later [supervisor]");
	tap_eq_u64(a->n_keys, 3, "trace: every key line kept");
	tap_ok(!strcmp(a->keys[1].key, "restart") && !strcmp(a->keys[1].value, "transient") &&
		       a->keys[1].line == 4,
	       "trace: key copied with its line, inline comment removed");

	a = conf__find(conf, "gpu");
	tap_ok(a && a->role == CONF_ROLE_SOURCE && a->line == 7, "gpu is a source");
	tap_eq_u64(a->restart, CONF_PERMANENT, "gpu: restart default");
	tap_eq_u64(a->start_timeout_ms, 3000, "gpu: start timeout from [supervisor]");
	tap_ok(!strcmp(conf_actor__get(a, "produce_per_s"), "1000"), "gpu: produce_per_s");
	tap_ok(!strcmp(conf_actor__get(a, "kind"), "test"), "gpu: kind is among its keys");
	tap_ok(!strcmp(conf_actor__get(a, "ignore_sigterm"), "on"), "gpu: value as written");
	tap_ok(!strcmp(conf_actor__get(a, "ready_delay_ms"), "0"),
	       "gpu: absent key is the kind's default");
	tap_ok(!strcmp(conf_actor__get(a, "optional"), "no"),
	       "gpu: absent common key is its default");
	tap_ok(conf_actor__get(a, "no_such_key") == NULL, "gpu: unknown key is NULL");
	tap_ok(conf_actor__get(conf__find(conf, "cpu"), "ready_delay_ms") != NULL,
	       "cpu: its own keys only");

	for (i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "correlator.%u", i);
		a = conf__find(conf, name);
		tap_ok(a && a == &conf->actors[2 + i] && a->shard == i &&
			       a->role == CONF_ROLE_CORRELATOR && !strcmp(a->kind, "test") &&
			       !strcmp(a->section, "correlator") && a->line == 14,
		       "%s: shard %u of [correlator]", name, i);
		tap_ok(a && a->restart == CONF_TEMPORARY && a->shutdown_timeout_ms == 77 &&
			       a->start_timeout_ms == 3000,
		       "%s: keys apply to every shard", name);
		tap_ok(a && !strcmp(conf_actor__get(a, "shards"), "3") && a->n_keys == 4,
		       "%s: has its own copy of the keys", name);
	}
	tap_ok(conf->actors[2].keys != conf->actors[3].keys, "shards do not share key arrays");
	tap_ok(conf__find(conf, "correlator") == NULL, "no actor named plain 'correlator'");
	tap_ok(conf__find(conf, "nope") == NULL, "conf__find of an unknown name is NULL");
	conf__free(conf);
}

static void test_defaults(void)
{
	struct conf *conf = NULL;
	const struct conf_actor *a;
	int ret;

	/* No [supervisor]: every default comes from the schema. CRLF line ends are fine. */
	ret = load("[source s]\r\nkind = test\r\n", &conf);
	if (!tap_ok(ret == 0 && conf, "minimal config loads"))
		tap_bail("ret %d: %s", ret, err_text);
	tap_eq_u64(conf->strategy, CONF_ONE_FOR_ONE, "default strategy");
	tap_eq_u64(conf->intensity_max, 5, "default intensity N");
	tap_eq_u64(conf->intensity_period_ms, 30000, "default intensity period");
	tap_eq_u64(conf->backoff_min_ms, 10, "default backoff_min_ms");
	tap_eq_u64(conf->backoff_max_ms, 2000, "default backoff_max_ms");
	tap_eq_u64(conf->watchdog_ms, 2000, "default watchdog_ms");
	tap_eq_u64(conf->heartbeat_ms, 100, "default heartbeat_ms");
	tap_eq_u64(conf->ring_kib, 4096, "default ring_kib");
	tap_eq_u64(conf->shards, 0, "no [correlator]: shards 0");
	tap_eq_u64(conf->n_actors, 1, "one actor");
	a = &conf->actors[0];
	tap_ok(!strcmp(a->name, "s") && a->role == CONF_ROLE_SOURCE, "the source");
	tap_eq_u64(a->restart, CONF_PERMANENT, "default restart");
	tap_eq_u64(a->start_timeout_ms, 5000, "default start timeout");
	tap_eq_u64(a->shutdown_timeout_ms, 5000, "default shutdown timeout");
	tap_ok(!strcmp(conf_actor__get(a, "kind"), "test"), "CR removed from the value");
	conf__free(conf);

	/* [correlator] without shards is one shard; the bounds of the ranges are inclusive. */
	ret = load("[correlator]\nkind = test\n"
		   "[supervisor]\nintensity = 0/1ms\nring_kib = 1048576\nwatchdog_ms = 50\n"
		   "heartbeat_ms = 25\nbackoff_min_ms = 0\nbackoff_max_ms = 0\n",
		   &conf);
	if (!tap_ok(ret == 0 && conf, "boundary values load"))
		tap_bail("ret %d: %s", ret, err_text);
	tap_ok(conf->n_actors == 1 && conf->shards == 1 &&
		       !strcmp(conf->actors[0].name, "correlator.0"),
	       "[correlator] alone is correlator.0");
	tap_ok(conf->intensity_max == 0 && conf->intensity_period_ms == 1, "intensity 0/1ms");
	tap_eq_u64(conf->ring_kib, 1048576, "ring_kib at its maximum");
	conf__free(conf);

	ret = load("[sink a]\nkind = test\n"
		   "[supervisor]\nintensity = 1000/60m\nwatchdog_ms = 3600000\n",
		   &conf);
	tap_ok(ret == 0 && conf && conf->intensity_max == 1000 &&
		       conf->intensity_period_ms == 3600000 && conf->watchdog_ms == 3600000,
	       "intensity 1000/60m and watchdog at its maximum");
	conf__free(conf);
}

static void test_errors(void)
{
	char *text;
	size_t i;

	check_error("unknown section", "[foo]\n", "t.conf:1: ", "unknown section [foo]");
	check_error("name not allowed", "[sink a]\nkind=test\n[correlator x]\n",
		    "t.conf:3: ", "section [correlator] takes no name");
	check_error("name not allowed on supervisor", "[sink a]\nkind=test\n[supervisor s]\n",
		    "t.conf:3: ", "section [supervisor] takes no name");
	check_error("name missing", "[source]\nkind = test\n",
		    "t.conf:1: ", "section [source] needs a name");
	check_error("invalid name", "[sink a]\nkind=test\n[source Gpu]\n",
		    "t.conf:3: ", "invalid actor name 'Gpu'");
	check_error("name starting with a digit", "[sink 1a]\n",
		    "t.conf:1: ", "invalid actor name '1a'");
	check_error("name too long", "[sink abcdefghijabcdefghijabcdefghijab]\n",
		    "t.conf:1: ", "invalid actor name");
	check_error("unterminated header", "[sink a]\nkind=test\n[source b\nkind=test\n",
		    "t.conf:3: ", "unterminated section header");
	check_error("text after header", "[sink a] x\nkind=test\n",
		    "t.conf:1: ", "unexpected text 'x' after section header");
	check_error("too many words", "[sink a b]\n",
		    "t.conf:1: ", "too many words in section header");
	check_error("empty header", "[ ]\n", "t.conf:1: ", "empty section header");
	check_error("duplicate supervisor", "[supervisor]\n[sink a]\nkind=test\n[supervisor]\n",
		    "t.conf:4: ", "duplicate section [supervisor] (first at line 1)");
	check_error("duplicate correlator", "[correlator]\nkind=test\n\n[correlator]\n",
		    "t.conf:4: ", "duplicate section [correlator] (first at line 1)");
	check_error("duplicate name across roles", "[source x]\nkind=test\n[sink x]\nkind=test\n",
		    "t.conf:3: ", "duplicate actor name 'x' (first at line 1 as [source x])");
	check_error("keys of a duplicate are still checked",
		    "[sink x]\nkind = test\n[sink x]\nkind = test\nexit_code = 999\n",
		    "t.conf:5: ", "bad value '999' for 'exit_code'");
	check_error("duplicate key", "[sink a]\nkind = test\nexit_code = 1\nexit_code = 2\n",
		    "t.conf:4: ", "duplicate key 'exit_code' in [sink a] (first at line 3)");
	check_error("key outside any section", "kind = test\n[sink a]\nkind = test\n",
		    "t.conf:1: ", "key 'kind' outside any section");
	check_error("line without '='", "[sink a]\nkind test\n", "t.conf:2: ",
		    "expected 'key = value' or a [section] header, found 'kind test'");
	check_error("empty value", "[sink a]\nkind =\n", "t.conf:2: ", "empty value for 'kind'");
	check_error("value only a comment", "[sink a]\nkind = test\nexit_code = ; later\n",
		    "t.conf:3: ", "empty value for 'exit_code'");
	check_error("missing key", "[sink a]\n= test\n", "t.conf:2: ", "missing key before '='");
	check_error("invalid key", "[sink a]\nKind = test\n", "t.conf:2: ", "invalid key 'Kind'");
	check_error("unknown key in an actor", "[sink a]\nkind = test\nfrequency_hz = 99\n",
		    "t.conf:3: ", "unknown key 'frequency_hz' in [sink a] (kind 'test')");
	check_error("shards outside [correlator]", "[source a]\nkind = test\nshards = 2\n",
		    "t.conf:3: ", "unknown key 'shards' in [source a]");
	check_error("unknown key in [supervisor]", "[supervisor]\nstrategi = one_for_one\n",
		    "t.conf:2: ", "unknown key 'strategi' in [supervisor]");
	check_error("bad integer", "[sink a]\nkind = test\nready_delay_ms = abc\n", "t.conf:3: ",
		    "bad value 'abc' for 'ready_delay_ms': expected an integer in 0..600000");
	check_error("integer out of range", "[sink a]\nkind = test\nexit_code = 256\n",
		    "t.conf:3: ", "bad value '256' for 'exit_code': expected an integer in 0..255");
	check_error("negative integer", "[sink a]\nkind = test\nready_delay_ms = -1\n",
		    "t.conf:3: ", "bad value '-1'");
	check_error("bad bool", "[sink a]\nkind = test\nnever_ready = maybe\n",
		    "t.conf:3: ", "expected yes/no, on/off, true/false or 1/0");
	check_error("bad enum", "[supervisor]\nstrategy = one_for_some\n[sink a]\nkind=test\n",
		    "t.conf:2: ", "expected one of one_for_one, one_for_all, rest_for_one");
	check_error("bad restart", "[sink a]\nkind = test\nrestart = always\n",
		    "t.conf:3: ", "bad value 'always' for 'restart'");
	check_error("ring_kib not a power of two", "[supervisor]\nring_kib = 100\n[sink a]\n",
		    "t.conf:2: ", "expected a power of two in 4..1048576");
	check_error("intensity without a unit", "[supervisor]\nintensity = 5/30\n[sink a]\n",
		    "t.conf:2: ", "bad value '5/30' for 'intensity': expected N/PERIOD");
	check_error("intensity too long a period", "[supervisor]\nintensity = 5/61m\n",
		    "t.conf:2: ", "bad value '5/61m'");
	check_error("intensity zero period", "[supervisor]\nintensity = 5/0s\n",
		    "t.conf:2: ", "bad value '5/0s'");
	check_error("intensity N too big", "[supervisor]\nintensity = 1001/1s\n",
		    "t.conf:2: ", "bad value '1001/1s'");
	check_error("intensity without N", "[supervisor]\nintensity = /1s\n",
		    "t.conf:2: ", "bad value '/1s'");
	check_error("shards out of range", "[correlator]\nkind = test\nshards = 33\n",
		    "t.conf:3: ", "expected an integer in 1..32");
	check_error("launch slack out of range", "[correlator]\nlaunch_slack_ms = 60001\n",
		    "t.conf:2: ", "expected an integer in 0..60000");
	check_error(
		"missing kind", "[sink a]\nkind = test\n\n[source gpu]\nexit_code = 1\n",
		"t.conf:4: ",
		"missing 'kind' in [source gpu] (known: test, cupti, cpu, pmu, synthetic, replay, inproc)");
	check_error("unknown kind", "[sink a]\nkind = foo\n",
		    "t.conf:2: ", "unknown kind 'foo' (known: test, folded");
	check_error(
		"cupti activity",
		"[correlator]\n[source gpu]\nkind = cupti\nactivities = kernel, texture\n",
		"t.conf:4: ",
		"bad value 'kernel, texture' for 'activities': expected all, none, or a list of "
		"kernel, memcpy");
	check_error("cupti activities all with more",
		    "[correlator]\n[source gpu]\nkind = cupti\nactivities = all, kernel\n",
		    "t.conf:4: ", "bad value 'all, kernel' for 'activities'");
	check_error("cupti launch_stacks",
		    "[correlator]\n[source gpu]\nkind = cupti\n"
		    "launch_stacks = sometimes\n",
		    "t.conf:4: ", "bad value 'sometimes' for 'launch_stacks'");
	check_error("cupti ring_kib", "[correlator]\n[source gpu]\nkind = cupti\nring_kib = 1000\n",
		    "t.conf:4: ", "expected a power of two in 4..1048576");
	check_error("cupti without correlator",
		    "[sink s]\nkind = test\n[source gpu]\nkind = cupti\n",
		    "t.conf:3: ", "kind 'cupti' in [source gpu] sends its records to correlators");
	check_error("cpu key in cupti", "[correlator]\n[source gpu]\nkind = cupti\ntarget = all\n",
		    "t.conf:4: ", "unknown key 'target' in [source gpu] (kind 'cupti')");
	check_error("two in-process sources",
		    "[correlator]\n[source ann]\nkind = inproc\n\n"
		    "[source gpu]\nkind = cupti\n",
		    "t.conf:5: ",
		    "only one in-process source per pipeline: [source gpu] (kind 'cupti') and "
		    "[source ann] (kind 'inproc', line 2) would share SESSION/inproc.sock");
	check_error("two cupti sources",
		    "[correlator]\n[source g1]\nkind = cupti\n"
		    "[source g2]\nkind = cupti\n",
		    "t.conf:4: ", "only one in-process source per pipeline: [source g2]");
	check_error("two inproc sources",
		    "[correlator]\n[source a1]\nkind = inproc\n"
		    "[source a2]\nkind = inproc\n",
		    "t.conf:4: ", "only one in-process source per pipeline: [source a2]");
	check_error("cpu target", "[correlator]\n[source c]\nkind = cpu\ntarget = pid:x\n",
		    "t.conf:4: ", "bad value 'pid:x' for 'target'");
	check_error("cpu frequency", "[correlator]\n[source c]\nkind = cpu\nfrequency_hz = 0\n",
		    "t.conf:4: ", "bad value '0' for 'frequency_hz'");
	check_error("cpu unwind", "[correlator]\n[source c]\nkind = cpu\nunwind = lbr\n",
		    "t.conf:4: ", "bad value 'lbr' for 'unwind': expected one of auto, fp, dwarf");
	check_error("cpu stack_bytes not a multiple of 8",
		    "[correlator]\n[source c]\nkind = cpu\nstack_bytes = 4100\n", "t.conf:4: ",
		    "bad value '4100' for 'stack_bytes': expected a multiple of 8 in 1024..32768");
	check_error("cpu stack_bytes over the copy's bound",
		    "[correlator]\n[source c]\nkind = cpu\nstack_bytes = 32776\n",
		    "t.conf:4: ", "bad value '32776' for 'stack_bytes'");
	check_error("cpu stack_bytes under 1 KiB",
		    "[correlator]\n[source c]\nkind = cpu\nstack_bytes = 512\n",
		    "t.conf:4: ", "bad value '512' for 'stack_bytes'");
	check_error("pmu interval", "[correlator]\n[source h]\nkind = pmu\ninterval_ms = 5\n",
		    "t.conf:4: ", "bad value '5' for 'interval_ms'");
	check_error("folded without path", "[sink f]\nkind = folded\n",
		    "t.conf:1: ", "missing 'path' in [sink f] (kind 'folded')");
	check_error("folded weight", "[sink f]\nkind = folded\npath = x\nweight = ms\n",
		    "t.conf:4: ", "bad value 'ms' for 'weight'");
	check_error("stats without path", "[sink s]\nkind = stats\n",
		    "t.conf:1: ", "missing 'path' in [sink s] (kind 'stats')");
	check_error("stats window", "[sink s]\nkind = stats\npath = x\nwindow_ms = 0\n",
		    "t.conf:4: ", "expected an integer in 1..3600000");
	check_error("timeline without path", "[sink t]\nkind = timeline\n",
		    "t.conf:1: ", "missing 'path' in [sink t] (kind 'timeline')");
	check_error("timeline window", "[sink t]\nkind = timeline\npath = x\nsm_window_ms = 0\n",
		    "t.conf:4: ", "expected an integer in 1..60000");
	check_error("replay without path", "[correlator]\n[source rp]\nkind = replay\n",
		    "t.conf:2: ", "missing 'path' in [source rp] (kind 'replay')");
	check_error(
		"synthetic without correlator",
		"[sink s]\nkind = test\n[source syn]\n"
		"kind = synthetic\n",
		"t.conf:3: ", "kind 'synthetic' in [source syn] sends its records to correlators");
	check_error("bad strategy", "[correlator]\nstrategies = correlation_id, nearest\n",
		    "t.conf:2: ", "bad value 'correlation_id, nearest' for 'strategies'");
	check_error("timestamp window too long", "[correlator]\nstrategies = timestamp(5s)\n",
		    "t.conf:2: ", "bad value 'timestamp(5s)' for 'strategies'");
	check_error("mixed filter",
		    "[correlator]\n[source s]\nkind = synthetic\nfilter = kernel, !range\n",
		    "t.conf:4: ", "bad value 'kernel, !range' for 'filter'");
	check_error("unknown enrich stage",
		    "[correlator]\n[source s]\nkind = synthetic\nenrich = names, colour\n",
		    "t.conf:4: ", "bad value 'names, colour' for 'enrich'");
	check_error("sample 0", "[correlator]\n[source s]\nkind = synthetic\nsample = 0\n",
		    "t.conf:4: ", "bad value '0' for 'sample'");
	check_error("filter in a sink", "[sink s]\nkind = test\nfilter = kernel\n",
		    "t.conf:3: ", "unknown key 'filter' in [sink s] (kind 'test')");
	check_error("correlator key in a source", "[source s]\nkind = synthetic\nttl_ms = 5\n",
		    "t.conf:3: ", "unknown key 'ttl_ms' in [source s] (kind 'synthetic')");
	check_error(
		"kind in the wrong role", "[source f]\nkind = folded\n", "t.conf:2: ",
		"kind 'folded' cannot be used in [source f] (known: test, cupti, cpu, pmu, synthetic, replay, inproc)");
	check_error(
		"backoff_max < backoff_min",
		"[supervisor]\nbackoff_min_ms = 500\nbackoff_max_ms = 100\n[sink a]\nkind=test\n",
		"t.conf:3: ", "backoff_max_ms (100) is less than backoff_min_ms (500)");
	check_error("backoff_min above the default max",
		    "[sink a]\nkind=test\n[supervisor]\nbackoff_min_ms = 5000\n",
		    "t.conf:4: ", "backoff_max_ms (2000) is less than backoff_min_ms (5000)");
	check_error("watchdog < 2 * heartbeat",
		    "[supervisor]\nwatchdog_ms = 150\nheartbeat_ms = 100\n[sink a]\nkind=test\n",
		    "t.conf:2: ", "watchdog_ms (150) must be at least 2 * heartbeat_ms (100)");
	check_error("no actors", "[supervisor]\nstrategy = one_for_all\n", "t.conf:1: ",
		    "no actors: add a [source NAME], [correlator] or [sink NAME] section");
	check_error("empty file", "", "t.conf:1: ", "no actors");
	check_error("only comments", "; nothing\n# here\n\n", "t.conf:1: ", "no actors");
	check_error("control character", "[sink a]\nkind = te\001st\n",
		    "t.conf:2: ", "control character 0x01");
	check_error("value too long",
		    "[sink a]\nkind = test\nexit_code = "
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000"
		    "0000000000000000000000000000000000000000000000000000000000000000\n",
		    "t.conf:3: ", "value for 'exit_code' too long (at most 511 characters)");

	/* 1024 characters: one over the limit; the line after it is still read. */
	text = malloc(2048);
	if (!text)
		tap_bail("malloc");
	strcpy(text, "[sink a]\nkind = test\n# ");
	for (i = strlen("# "); i < 1024; i++)
		strcat(text, "x");
	strcat(text, "\nexit_code = x\n");
	check_error("line too long", text, "t.conf:3: ", "line too long (at most 1023 characters)");
	check_error("and the next line is still read", text,
		    "t.conf:4: ", "bad value 'x' for 'exit_code'");
	free(text);

	/* 64 actors are fine, 65 are not: 32 shards + 32 sinks, then one source more. */
	text = malloc(8192);
	if (!text)
		tap_bail("malloc");
	strcpy(text, "[correlator]\nkind = test\nshards = 32\n");
	for (i = 0; i < 32; i++)
		sprintf(text + strlen(text), "[sink s%zu]\nkind = test\n", i);
	{
		struct conf *conf = NULL;

		tap_ok(load(text, &conf) == 0 && conf && conf->n_actors == 64, "64 actors load");
		conf__free(conf);
	}
	strcat(text, "[source extra]\nkind = test\n");
	check_error("65 actors", text, "t.conf:68: ", "too many actors: at most 64");
	free(text);
}

static void test_many_errors(void)
{
	struct conf *conf = NULL;
	char text[4096] = "";
	unsigned int i;
	int ret;

	/* Errors from every pass come out in line order, each on its own line. */
	ret = load("[sink a]\n" /* 1 */
		   "kind = foo\n" /* 2: unknown kind */
		   "[source b]\n" /* 3 */
		   "kind = test\n" /* 4 */
		   "exit_code = 300\n" /* 5: out of range */
		   "bogus line\n" /* 6: no '=' */
		   "exit_code = 1\n" /* 7: duplicate */
		   "[widget w]\n" /* 8: unknown section */
		   "x = 1\n" /* 9: ignored: its section was rejected */
		   "[supervisor]\n" /* 10 */
		   "heartbeat_ms = 5\n", /* 11: out of range */
		   &conf);
	tap_ok(ret == -EINVAL && conf == NULL, "several errors: rejected");
	tap_eq_u64(err_lines(), 6, "several errors: six messages");
	tap_ok(err_text && !strncmp(err_text, "t.conf:2: unknown kind", 22) &&
		       err_find("t.conf:5: ", "bad value '300'") &&
		       err_find("t.conf:6: ", "expected 'key = value'") &&
		       err_find("t.conf:7: ",
				"duplicate key 'exit_code' in [source b] (first at line 5)") &&
		       err_find("t.conf:8: ", "unknown section [widget w]") &&
		       err_find("t.conf:11: ", "heartbeat_ms"),
	       "several errors: each reported at its line, in order");
	tap_ok(err_text && strstr(err_text, "t.conf:8:") < strstr(err_text, "t.conf:11:"),
	       "several errors: sorted by line");

	/* 30 bad lines: the first 20 are printed. Line 31 reports "no actors" at line 1. */
	for (i = 0; i < 30; i++)
		strcat(text, "oops\n");
	ret = load(text, &conf);
	tap_ok(ret == -EINVAL && conf == NULL, "30 errors: rejected");
	tap_eq_u64(err_lines(), 20, "30 errors: 20 printed");
	tap_ok(err_find("t.conf:1: ", "no actors") && err_find("t.conf:19: ", "oops") &&
		       !err_find("t.conf:20: ", "oops"),
	       "30 errors: the earliest 20 by line");
}

static void test_parsers(void)
{
	unsigned long long v;
	int b;

	v = 42;
	tap_ok(conf_parse_uint("0", 0, 10, &v) == 0 && v == 0, "uint 0");
	tap_ok(conf_parse_uint("007", 0, 10, &v) == 0 && v == 7, "uint with leading zeros");
	tap_ok(conf_parse_uint("18446744073709551615", 0, ULLONG_MAX, &v) == 0 && v == ULLONG_MAX,
	       "uint at 2^64-1");
	v = 42;
	tap_ok(conf_parse_uint("18446744073709551616", 0, ULLONG_MAX, &v) == -EINVAL && v == 42,
	       "uint overflow rejected, out untouched");
	tap_ok(conf_parse_uint("99999999999999999999999", 0, ULLONG_MAX, &v) == -EINVAL,
	       "uint far overflow");
	tap_ok(conf_parse_uint("-1", 0, 10, &v) == -EINVAL, "uint negative");
	tap_ok(conf_parse_uint("+1", 0, 10, &v) == -EINVAL, "uint with plus sign");
	tap_ok(conf_parse_uint("1x", 0, 10, &v) == -EINVAL, "uint trailing junk");
	tap_ok(conf_parse_uint("1 ", 0, 10, &v) == -EINVAL, "uint trailing blank");
	tap_ok(conf_parse_uint(" 1", 0, 10, &v) == -EINVAL, "uint leading blank");
	tap_ok(conf_parse_uint("0x10", 0, 100, &v) == -EINVAL, "uint hex is not decimal");
	tap_ok(conf_parse_uint("", 0, 10, &v) == -EINVAL, "uint empty");
	tap_ok(conf_parse_uint(NULL, 0, 10, &v) == -EINVAL, "uint NULL");
	tap_ok(conf_parse_uint("10", 0, 10, &v) == 0 && v == 10, "uint at max");
	tap_ok(conf_parse_uint("11", 0, 10, &v) == -EINVAL, "uint above max");
	tap_ok(conf_parse_uint("4", 5, 10, &v) == -EINVAL, "uint below min");

	for (b = 0; b < 4; b++) {
		static const char *const yes[] = { "yes", "on", "true", "1" };
		static const char *const no[] = { "no", "off", "false", "0" };
		int got = -1;

		tap_ok(conf_parse_bool(yes[b], &got) == 0 && got == 1, "bool %s", yes[b]);
		tap_ok(conf_parse_bool(no[b], &got) == 0 && got == 0, "bool %s", no[b]);
	}
	b = 7;
	tap_ok(conf_parse_bool("Yes", &b) == -EINVAL && b == 7, "bool is lower case only");
	tap_ok(conf_parse_bool("2", &b) == -EINVAL, "bool 2");
	tap_ok(conf_parse_bool("", &b) == -EINVAL, "bool empty");
	tap_ok(conf_parse_bool("yes ", &b) == -EINVAL, "bool trailing blank");

	tap_ok(conf_parse_duration("5", 0, ULLONG_MAX, &v) == 0 && v == 5, "duration bare = ms");
	tap_ok(conf_parse_duration("5ms", 0, ULLONG_MAX, &v) == 0 && v == 5, "duration ms");
	tap_ok(conf_parse_duration("2s", 0, ULLONG_MAX, &v) == 0 && v == 2000, "duration s");
	tap_ok(conf_parse_duration("3m", 0, ULLONG_MAX, &v) == 0 && v == 180000, "duration m");
	tap_ok(conf_parse_duration("0s", 0, 10, &v) == 0 && v == 0, "duration zero");
	v = 42;
	tap_ok(conf_parse_duration("1h", 0, ULLONG_MAX, &v) == -EINVAL && v == 42,
	       "duration h is not a unit, out untouched");
	tap_ok(conf_parse_duration("5 s", 0, ULLONG_MAX, &v) == -EINVAL, "duration blank in");
	tap_ok(conf_parse_duration("s", 0, ULLONG_MAX, &v) == -EINVAL, "duration unit only");
	tap_ok(conf_parse_duration("5sec", 0, ULLONG_MAX, &v) == -EINVAL, "duration sec");
	tap_ok(conf_parse_duration("5S", 0, ULLONG_MAX, &v) == -EINVAL, "duration upper case");
	tap_ok(conf_parse_duration("-5s", 0, ULLONG_MAX, &v) == -EINVAL, "duration negative");
	tap_ok(conf_parse_duration("1.5s", 0, ULLONG_MAX, &v) == -EINVAL, "duration fraction");
	tap_ok(conf_parse_duration("307445734561825861m", 0, ULLONG_MAX, &v) == -EINVAL,
	       "duration overflow in the unit");
	tap_ok(conf_parse_duration("18446744073709551616", 0, ULLONG_MAX, &v) == -EINVAL,
	       "duration overflow in the digits");
	tap_ok(conf_parse_duration("60m", 1, 3600000, &v) == 0 && v == 3600000,
	       "duration range upper bound");
	tap_ok(conf_parse_duration("61m", 1, 3600000, &v) == -EINVAL, "duration above max");
	tap_ok(conf_parse_duration("0ms", 1, 3600000, &v) == -EINVAL, "duration below min");
	tap_ok(conf_parse_duration("", 0, 10, &v) == -EINVAL, "duration empty");

	tap_ok(!strcmp(conf_role__name(CONF_ROLE_SINK), "sink") &&
		       !strcmp(conf_role__name(CONF_ROLE_CORRELATOR), "correlator") &&
		       !strcmp(conf_role__name(CONF_ROLE_SOURCE), "source"),
	       "role names");
	tap_ok(!strcmp(conf_strategy__name(CONF_ONE_FOR_ONE), "one_for_one") &&
		       !strcmp(conf_strategy__name(CONF_ONE_FOR_ALL), "one_for_all") &&
		       !strcmp(conf_strategy__name(CONF_REST_FOR_ONE), "rest_for_one"),
	       "strategy names");
	tap_ok(!strcmp(conf_restart__name(CONF_PERMANENT), "permanent") &&
		       !strcmp(conf_restart__name(CONF_TRANSIENT), "transient") &&
		       !strcmp(conf_restart__name(CONF_TEMPORARY), "temporary"),
	       "restart names");
	tap_ok(!strcmp(conf_restart__name((enum conf_restart)9), "?"), "out-of-range name is ?");
}

static void test_files(void)
{
	char path[] = "/tmp/xpusup-config-test-XXXXXX";
	char *printed = NULL;
	struct conf *conf = NULL;
	size_t len = 0;
	FILE *err;
	int fd, ret;

	fd = mkstemp(path);
	if (fd < 0)
		tap_bail("mkstemp: %s", strerror(errno));
	if (write(fd, full, sizeof(full) - 1) != (ssize_t)(sizeof(full) - 1))
		tap_bail("write: %s", strerror(errno));
	close(fd);

	err = open_memstream(&printed, &len);
	if (!err)
		tap_bail("open_memstream: %s", strerror(errno));
	ret = conf__load(path, &conf, err);
	tap_ok(ret == 0 && conf && conf->n_actors == 7 && !strcmp(conf->path, path),
	       "conf__load reads a real file");
	conf__free(conf);
	conf = NULL;

	/* Errors name the path as given. */
	fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0 || write(fd, "oops\n", 5) != 5)
		tap_bail("append: %s", strerror(errno));
	close(fd);
	ret = conf__load(path, &conf, err);
	fflush(err);
	tap_ok(ret == -EINVAL && conf == NULL, "a broken file is rejected");
	{
		char want[128];

		snprintf(want, sizeof(want), "%s:39: expected 'key = value'", path);
		tap_ok(printed && strstr(printed, want), "message names the path and line");
	}
	unlink(path);

	fclose(err);
	free(printed);
	printed = NULL;
	err = open_memstream(&printed, &len);
	if (!err)
		tap_bail("open_memstream: %s", strerror(errno));
	ret = conf__load("/nonexistent/pipeline.conf", &conf, err);
	fclose(err);
	tap_ok(ret == -ENOENT && conf == NULL, "missing file is -ENOENT");
	tap_ok(printed &&
		       !strcmp(printed, "/nonexistent/pipeline.conf: No such file or directory\n"),
	       "missing file: \"PATH: reason\"");
	free(printed);

	ret = conf__load("/tmp", &conf, NULL);
	tap_ok(ret == -EISDIR && conf == NULL, "a directory is -EISDIR (and err may be NULL)");
}

static void test_strategies(void)
{
	struct correlator_strategies st = { 0 };

	tap_ok(!correlator_strategies__parse("correlation_id, timestamp(2ms)", &st) && st.exact &&
		       st.window_ms == 2,
	       "strategies: correlation_id, timestamp(2ms)");
	tap_ok(!correlator_strategies__parse("timestamp(1000ms)", &st) && !st.exact &&
		       st.window_ms == 1000,
	       "strategies: timestamp alone");
	tap_ok(correlator_strategies__parse("timestamp(2ms), correlation_id", &st) == -EINVAL &&
		       correlator_strategies__parse("correlation_id,", &st) == -EINVAL &&
		       correlator_strategies__parse("correlation_id, correlation_id", &st) ==
			       -EINVAL &&
		       correlator_strategies__parse("timestamp(0ms)", &st) == -EINVAL &&
		       correlator_strategies__parse("", &st) == -EINVAL,
	       "strategies: wrong order, trailing comma, duplicates, zero window, empty");
}

/* Seed 000's composites: the filter and enrich lists. */
static void test_stages(void)
{
	unsigned int keep, st;
	const unsigned int control = 1u << XPU_REC_STRING | 1u << XPU_REC_PROC_EXEC |
				     1u << XPU_REC_PROC_EXIT | 1u << XPU_REC_CLOCK_SYNC |
				     1u << XPU_REC_LOSS;

	tap_ok(!conf_parse_filter("kernel, memcpy", &keep) &&
		       keep == (1u << XPU_REC_GPU_KERNEL | 1u << XPU_REC_GPU_MEMCPY | control),
	       "filter: kinds kept, control records always");
	tap_ok(!conf_parse_filter("!cpu_sample, !pmu", &keep) &&
		       !(keep & 1u << XPU_REC_CPU_SAMPLE) && !(keep & 1u << XPU_REC_PMU_COUNTER) &&
		       (keep & 1u << XPU_REC_GPU_KERNEL) && (keep & control) == control,
	       "filter: every kind but the negated ones");
	tap_ok(!conf_parse_filter("all", &keep) && keep == ~0u, "filter: all");
	tap_ok(conf_parse_filter("kernel, !range", &keep) == -EINVAL &&
		       conf_parse_filter("all, kernel", &keep) == -EINVAL &&
		       conf_parse_filter("string", &keep) == -EINVAL &&
		       conf_parse_filter("kernel,", &keep) == -EINVAL &&
		       conf_parse_filter("", &keep) == -EINVAL,
	       "filter: mixed, all with more, a control kind, trailing comma, empty are refused");
	tap_ok(!conf_parse_enrich("names, streams", &st) &&
		       st == (CONF_ENRICH_NAMES | CONF_ENRICH_STREAMS),
	       "enrich: a list");
	tap_ok(!conf_parse_enrich("none", &st) && st == 0, "enrich: none");
	tap_ok(conf_parse_enrich("none, names", &st) == -EINVAL &&
		       conf_parse_enrich("bogus", &st) == -EINVAL,
	       "enrich: none with more, an unknown stage are refused");
	tap_ok(!conf_parse_enrich("symbols", &st) && st == CONF_ENRICH_SYMBOLS, "enrich: symbols");
	tap_ok(!conf_parse_enrich("counters", &st) && st == CONF_ENRICH_COUNTERS,
	       "enrich: counters");
	tap_ok(!conf_parse_enrich("names, stacks, streams, symbols, counters", &st) &&
		       st == CONF_ENRICH_ALL,
	       "enrich: the default list is every stage");
}

static void test_target(void)
{
	struct conf_target t;

	tap_ok(!conf_parse_target("all", &t) && t.mode == CONF_TARGET_ALL && !t.n_pids,
	       "target: all");
	tap_ok(!conf_parse_target("pid:12, 34,56", &t) && t.mode == CONF_TARGET_PIDS &&
		       t.n_pids == 3 && t.pids[0] == 12 && t.pids[2] == 56,
	       "target: a pid list");
	tap_ok(!conf_parse_target("command", &t) && t.mode == CONF_TARGET_TREE && t.command &&
		       !t.n_pids,
	       "target: record's command");
	tap_ok(!conf_parse_target("tree:4242", &t) && t.mode == CONF_TARGET_TREE && t.n_pids == 1 &&
		       t.pids[0] == 4242,
	       "target: a tree");
	tap_ok(!conf_parse_target("cgroup:system.slice/x.service", &t) &&
		       t.mode == CONF_TARGET_CGROUP &&
		       !strcmp(t.cgroup, "/sys/fs/cgroup/system.slice/x.service"),
	       "target: a relative cgroup is under /sys/fs/cgroup");
	tap_ok(!conf_parse_target("cgroup:/sys/fs/cgroup/a", &t) &&
		       !strcmp(t.cgroup, "/sys/fs/cgroup/a"),
	       "target: an absolute cgroup");
	tap_ok(conf_parse_target("tree:1,2", &t) == -EINVAL &&
		       conf_parse_target("pid:", &t) == -EINVAL &&
		       conf_parse_target("pid:0", &t) == -EINVAL &&
		       conf_parse_target("pid:1,x", &t) == -EINVAL &&
		       conf_parse_target("cgroup:", &t) == -EINVAL &&
		       conf_parse_target("cgroup:../x", &t) == -EINVAL &&
		       conf_parse_target("some", &t) == -EINVAL,
	       "target: two roots, empty lists, pid 0, junk, an empty or escaping cgroup are "
	       "refused");
}

/* Whether text loads and its source c reads unwind and stack_bytes as given. */
static bool cpu_unwind_keys(const char *text, const char *unwind, const char *stack_bytes)
{
	const struct conf_actor *a;
	struct conf *conf = NULL;
	bool ok;

	a = load(text, &conf) ? NULL : conf__find(conf, "c");
	ok = a && !strcmp(conf_actor__get(a, "unwind"), unwind) &&
	     !strcmp(conf_actor__get(a, "stack_bytes"), stack_bytes);
	conf__free(conf);
	return ok;
}

/* kind = cpu: the unwinding keys' defaults, and values written read back. */
static void test_cpu(void)
{
	tap_ok(cpu_unwind_keys("[correlator]\n[source c]\nkind = cpu\n", "auto", "16384"),
	       "cpu: defaults unwind auto, stack_bytes 16384");
	tap_ok(cpu_unwind_keys("[correlator]\n[source c]\nkind = cpu\nunwind = fp\n"
			       "stack_bytes = 1032\n",
			       "fp", "1032"),
	       "cpu: unwind = fp and a stack_bytes of 1032 (a multiple of 8) are read back");
	tap_ok(cpu_unwind_keys("[correlator]\n[source c]\nkind = cpu\nunwind = dwarf\n"
			       "stack_bytes = 32768\n",
			       "dwarf", "32768"),
	       "cpu: unwind = dwarf with the largest stack_bytes loads");
}

/* kind = cupti: its keys, their defaults, the options they become. */
static void test_cupti(void)
{
	const struct conf_actor *a;
	struct conf *conf = NULL;
	unsigned int bits = 0;
	int ret;

	ret = load("[correlator]\n[source gpu]\nkind = cupti\n[sink s]\nkind = test\n", &conf);
	if (!tap_ok(ret == 0 && conf, "cupti: a source with no keys loads"))
		tap_bail("ret %d: %s", ret, err_text);
	a = conf__find(conf, "gpu");
	tap_ok(a && a->role == CONF_ROLE_SOURCE && !strcmp(a->kind, "cupti"),
	       "cupti: the source is there");
	tap_ok(a && !strcmp(conf_actor__get(a, "ring_kib"), "8192") &&
		       !strcmp(conf_actor__get(a, "max_processes"), "1024") &&
		       !strcmp(conf_actor__get(a, "activities"),
			       "kernel, memcpy, memset, sync, runtime, driver, overhead, external, nvtx") &&
		       !strcmp(conf_actor__get(a, "launch_stacks"), "inproc") &&
		       !strcmp(conf_actor__get(a, "api_queries"), "no"),
	       "cupti: defaults ring_kib 8192, max_processes 1024, activities all but memory, "
	       "launch_stacks inproc, api_queries no");
	tap_ok(a && !cupti_activities__parse(conf_actor__get(a, "activities"), &bits) &&
		       bits == (XPU_CUPTI_ACT_ALL & ~XPU_CUPTI_ACT_MEMORY),
	       "cupti: the default activities are every one but memory");
	{
		static const char *const words[] = { "inproc", "yes", "marker", "no" };
		static const int modes[] = { LAUNCH_STACKS_INPROC, LAUNCH_STACKS_INPROC,
					     LAUNCH_STACKS_MARKER, LAUNCH_STACKS_NO };
		int mode = -1, good = 1;
		size_t i;

		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			good &= !launch_stacks__parse(words[i], &mode) && mode == modes[i];
		tap_ok(good && launch_stacks__parse("on", &mode) == -EINVAL &&
			       launch_stacks__parse(NULL, &mode) == -EINVAL,
		       "cupti: launch_stacks inproc, yes (its alias), marker, no; nothing else");
	}
	conf__free(conf);
	conf = NULL;

	ret = load("[correlator]\n[source gpu]\nkind = cupti\nring_kib = 64\n"
		   "max_processes = 3\nactivities = kernel, memcpy, nvtx\nlaunch_stacks = no\n"
		   "api_queries = yes\noptional = yes\n",
		   &conf);
	a = ret ? NULL : conf__find(conf, "gpu");
	tap_ok(a && !strcmp(conf_actor__get(a, "ring_kib"), "64") &&
		       !strcmp(conf_actor__get(a, "max_processes"), "3") &&
		       !strcmp(conf_actor__get(a, "launch_stacks"), "no") &&
		       !strcmp(conf_actor__get(a, "api_queries"), "yes") && a->optional,
	       "cupti: keys written are read back");
	tap_ok(a && !cupti_activities__parse(conf_actor__get(a, "activities"), &bits) &&
		       bits == (XPU_CUPTI_ACT_KERNEL | XPU_CUPTI_ACT_MEMCPY | XPU_CUPTI_ACT_NVTX),
	       "cupti: activities become their XPU_CUPTI_ACT_* bits");
	conf__free(conf);
	conf = NULL;

	/* One in-process source, with any other sources beside it. */
	ret = load("[correlator]\n[source gpu]\nkind = cupti\n[source syn]\nkind = synthetic\n",
		   &conf);
	tap_ok(ret == 0 && conf && conf->n_actors == 3, "cupti: beside another kind of source");
	conf__free(conf);
	conf = NULL;

	tap_ok(!cupti_activities__parse("kernel", &bits) && bits == XPU_CUPTI_ACT_KERNEL,
	       "activities: one");
	tap_ok(!cupti_activities__parse("kernel, memcpy, memset, sync, runtime, driver, memory, "
					"overhead, external, nvtx",
					&bits) &&
		       bits == XPU_CUPTI_ACT_ALL,
	       "activities: every name is every bit");
	tap_ok(!cupti_activities__parse("none", &bits) && bits == 0, "activities: none");
	tap_ok(!cupti_activities__parse("all", &bits) && bits == XPU_CUPTI_ACT_ALL,
	       "activities: all");
	tap_ok(!cupti_activities__parse("sync,sync", &bits) && bits == XPU_CUPTI_ACT_SYNC,
	       "activities: a name twice is the name once");
	bits = 7;
	tap_ok(cupti_activities__parse("none, kernel", &bits) == -EINVAL &&
		       cupti_activities__parse("all, nvtx", &bits) == -EINVAL &&
		       cupti_activities__parse("Kernel", &bits) == -EINVAL &&
		       cupti_activities__parse("kernel,", &bits) == -EINVAL &&
		       cupti_activities__parse("", &bits) == -EINVAL &&
		       cupti_activities__parse(NULL, &bits) == -EINVAL && bits == 7,
	       "activities: none or all with more, upper case, trailing comma, empty, NULL are "
	       "refused, out untouched");
}

/* Every kind's table: each row's member fits its type, each default passes. */
static void test_kinds(void)
{
	const struct conf_kind *const *k;
	char why[256];

	for (k = conf_kinds; *k; k++) {
		why[0] = 0;
		tap_ok(!conf_kind__check(*k, why, sizeof(why)), "kind %s: its table is sound%s%s",
		       (*k)->name, why[0] ? ": " : "", why);
	}
	{
		/* A row whose member is not its type's size, one whose default fails. */
		struct wrong {
			int n;
		};
		static const struct conf_key narrow[] = {
			{ .key = "n",
			  CONF_MEMBER(struct wrong, n),
			  .type = CONF_T_UINT,
			  .roles = CONF_SOURCE,
			  .max = 9,
			  .def = "1" },
			{ .key = NULL },
		};
		static const struct conf_key bad_def[] = {
			{ .key = "n",
			  .offset = 0,
			  .size = sizeof(unsigned long long),
			  .type = CONF_T_UINT,
			  .roles = CONF_SOURCE,
			  .max = 9,
			  .def = "10" },
			{ .key = NULL },
		};
		const struct conf_kind k1 = { .name = "k1",
					      .keys = narrow,
					      .options_size = sizeof(struct wrong) };
		const struct conf_kind k2 = { .name = "k2",
					      .keys = bad_def,
					      .options_size = sizeof(unsigned long long) };

		tap_ok(conf_kind__check(&k1, why, sizeof(why)) == -EINVAL &&
			       strstr(why, "n: member"),
		       "a row whose member is an int for an integer key is refused (%s)", why);
		tap_ok(conf_kind__check(&k2, why, sizeof(why)) == -EINVAL &&
			       strstr(why, "the default '10' does not pass"),
		       "a default out of its own range is refused (%s)", why);
	}
	tap_ok(conf_kind__find("cpu") == &cpu_conf_kind && !conf_kind__find("gpu"),
	       "conf_kind__find: cpu is the cpu table, gpu is none");
}

/* A key's text for conf_kind__options: from a NULL-terminated list of key, value pairs. */
static const char *pairs_get(void *ctx, const char *key)
{
	const char *const *kv;

	for (kv = ctx; kv[0]; kv += 2)
		if (!strcmp(kv[0], key))
			return kv[1];
	return NULL;
}

/* The typed options structs: schema defaults, values as written, a mismatched struct. */
static void test_options(void)
{
	struct correlator_options co;
	struct cpu_options cpu;
	struct test_options to;
	struct conf *conf = NULL;
	const struct conf_actor *a;
	int ret;

	ret = load("[correlator]\n[source c]\nkind = cpu\n[sink s]\nkind = test\n", &conf);
	if (!tap_ok(ret == 0 && conf, "options: a file of defaults loads"))
		tap_bail("ret %d: %s", ret, err_text);
	a = conf__find(conf, "correlator.0");
	tap_ok(a && a->schema == &correlator_conf_kind &&
		       !conf_actor__options(a, &co, sizeof(co)) && co.ttl_ms == 10000 &&
		       co.linger_ms == 200 && co.exit_grace_ms == 1000 &&
		       co.max_pending == 1000000 && co.max_waiting == 65536 &&
		       co.max_streams == 16384 && co.stream_idle_ms == 60000 &&
		       co.launch_slack_ms == 100 && co.strategies.exact &&
		       co.strategies.window_ms == 0,
	       "options: correlator defaults are the schema's");
	a = conf__find(conf, "c");
	tap_ok(a && !conf_actor__options(a, &cpu, sizeof(cpu)) && cpu.frequency_hz == 99 &&
		       cpu.event == EV_CPU_CLOCK && cpu.target.mode == CONF_TARGET_ALL &&
		       cpu.kernel_stacks && cpu.user_stacks && cpu.unwind == UNWIND_AUTO &&
		       cpu.stack_bytes == 16384 && !cpu.launch_marker && cpu.ringbuf_kb == 8192 &&
		       cpu.wakeup_kb == 256 && cpu.drain_ms == 50,
	       "options: cpu defaults are the schema's; launch_marker, without one, is NULL");
	tap_ok(a && a->filter == ~0u && a->enrich == CONF_ENRICH_ALL && a->sample == 1 &&
		       a->min_duration_us == 0,
	       "options: a source's stages default to all, every stage, 1 in 1, no minimum");
	tap_ok(a && conf_actor__options(a, &co, sizeof(co)) == -EINVAL,
	       "options: a struct of another kind's size is refused");
	a = conf__find(conf, "s");
	tap_ok(a && !conf_actor__options(a, &to, sizeof(to)) && !to.dump && !to.crash_after_ms &&
		       !to.never_ready,
	       "options: test keys without a default read 0 and NULL");
	conf__free(conf);
	conf = NULL;

	ret = load("[correlator]\nttl_ms = 5\nmax_pending = 16\n"
		   "strategies = correlation_id, timestamp(2ms)\n"
		   "[source c]\nkind = cpu\nfrequency_hz = 997\nevent = auto\nunwind = dwarf\n"
		   "kernel_stacks = off\ntarget = pid:12, 34\nlaunch_marker = lib.so\n"
		   "drain_ms = 7\nfilter = kernel\nenrich = names\nsample = 3\n"
		   "min_duration_us = 9\n"
		   "[sink s]\nkind = test\ndump = d.jsonl\ncrash_after_ms = 4\n",
		   &conf);
	if (!tap_ok(ret == 0 && conf, "options: a file of values loads"))
		tap_bail("ret %d: %s", ret, err_text);
	a = conf__find(conf, "correlator.0");
	tap_ok(a && !conf_actor__options(a, &co, sizeof(co)) && co.ttl_ms == 5 &&
		       co.max_pending == 16 && co.linger_ms == 200 && co.strategies.exact &&
		       co.strategies.window_ms == 2,
	       "options: correlator values as written, the others' defaults");
	a = conf__find(conf, "c");
	tap_ok(a && !conf_actor__options(a, &cpu, sizeof(cpu)) && cpu.frequency_hz == 997 &&
		       cpu.event == EV_AUTO && cpu.unwind == UNWIND_DWARF && !cpu.kernel_stacks &&
		       cpu.user_stacks && cpu.target.mode == CONF_TARGET_PIDS &&
		       cpu.target.n_pids == 2 && cpu.target.pids[1] == 34 && cpu.launch_marker &&
		       !strcmp(cpu.launch_marker, "lib.so") && cpu.drain_ms == 7,
	       "options: cpu values as written (enum, bool, target, text)");
	tap_ok(a && (a->filter & 1u << XPU_REC_GPU_KERNEL) &&
		       !(a->filter & 1u << XPU_REC_CPU_SAMPLE) && a->enrich == CONF_ENRICH_NAMES &&
		       a->sample == 3 && a->min_duration_us == 9,
	       "options: a source's stages as written");
	a = conf__find(conf, "s");
	tap_ok(a && !conf_actor__options(a, &to, sizeof(to)) && to.dump &&
		       !strcmp(to.dump, "d.jsonl") && to.crash_after_ms == 4,
	       "options: test dump and crash_after_ms as written");
	tap_ok(a && conf_actor__written(a, "crash_after_ms") &&
		       !conf_actor__written(a, "ready_delay_ms") &&
		       !strcmp(conf_actor__get(a, "ready_delay_ms"), "0"),
	       "conf_actor__written: a key written, not one only defaulted");
	conf__free(conf);

	/* Out of the schema's range: refused at load, naming file and line. */
	check_error("correlator max_pending below 16", "[correlator]\nmax_pending = 8\n",
		    "t.conf:2: ",
		    "bad value '8' for 'max_pending': expected an integer in 16..16777216");
	check_error("cupti launch_stacks",
		    "[correlator]\n[source g]\nkind = cupti\nlaunch_stacks = on\n", "t.conf:4: ",
		    "bad value 'on' for 'launch_stacks': expected one of inproc, marker, no, yes");

	/* The same schema from another source of values (`xpusup subscribe`'s options). */
	{
		static const char *const given[] = { "queue", "7", "listen", "tcp://a:1", NULL };
		static const char *const bad[] = { "queue", "0", NULL };
		static const char *const none[] = { NULL };
		struct publish_options po;
		struct folded_options fo;
		char why[256] = "";

		tap_ok(!conf_kind__options(&publish_conf_kind, CONF_SINK, pairs_get, (void *)given,
					   &po, sizeof(po), why, sizeof(why)) &&
			       po.queue == 7 && po.linger_ms == 200 &&
			       !strcmp(po.listen, "tcp://a:1") && !po.tls_ca,
		       "options from a getter: values given, defaults for the rest");
		tap_ok(conf_kind__options(&publish_conf_kind, CONF_SINK, pairs_get, (void *)bad,
					  &po, sizeof(po), why, sizeof(why)) == -EINVAL &&
			       !strcmp(why, "bad queue '0': expected an integer in 1..8192"),
		       "options from a getter: out of range is refused with why (%s)", why);
		tap_ok(!conf_kind__options(&folded_conf_kind, CONF_SINK, pairs_get, (void *)none,
					   &fo, sizeof(fo), why, sizeof(why)) &&
			       fo.weight == FOLDED_WEIGHT_NS && fo.snapshot_s == 10 &&
			       fo.max_stacks == 1000000 && !fo.path && !fo.html,
		       "options from a getter: nothing given is every default");
	}
}

/* [format NAME] sections and the group sink that runs them: not actors, read like sinks'
 * sections, and each used by exactly one group. */
#define FORMATS_OK                                                \
	"[sink all]\nkind = group\nformats = flame, trace , st\n" \
	"[format flame]\nkind = folded\npath = f.folded\n"        \
	"[format trace]\nkind = timeline\npath = t.json\n"        \
	"[format st]\nkind = stats\npath = s.json\ninterval_s = 5\n"

static void test_formats(void)
{
	struct stats_options so;
	struct conf *conf = NULL;
	const struct conf_actor *a;
	char path[64];
	int ret;

	ret = load(FORMATS_OK "[correlator]\n", &conf);
	if (!tap_ok(ret == 0 && conf, "formats: a group of three formats loads"))
		tap_bail("ret %d: %s", ret, err_text);
	tap_ok(conf->n_actors == 2 && conf->n_formats == 3 && !conf__find(conf, "flame") &&
		       !strcmp(conf->actors[0].kind, "group"),
	       "formats: the [format] sections are not actors (%u actors, %u formats)",
	       conf->n_actors, conf->n_formats);
	a = conf__find_format(conf, "st");
	tap_ok(a && a->schema == &stats_conf_kind && !strcmp(a->section, "format st") &&
		       a->line == 10 && !conf_actor__options(a, &so, sizeof(so)) &&
		       so.interval_s == 5 && so.window_ms == 1000 && !strcmp(so.path, "s.json"),
	       "formats: a [format] reads as its kind's options, values and defaults");
	a = conf__find_format(conf, "flame");
	tap_ok(a && !strcmp(conf_actor__get(a, "snapshot_s"), "10") &&
		       !conf_actor__path(conf, a, "path", path, sizeof(path)) &&
		       !strcmp(path, "f.folded"),
	       "formats: conf_actor__get and __path on a [format] (%s)", a ? path : "-");
	conf__free(conf);

	check_error(
		"formats: unknown format", FORMATS_OK "[sink b]\nkind = group\nformats = nope\n",
		"t.conf:16: ", "unknown format 'nope' in formats of [sink b]: no [format nope]");
	check_error(
		"formats: a sink's name, not a format",
		"[sink x]\nkind = stats\npath = a\n" FORMATS_OK
		"[sink b]\nkind = group\nformats = x\n",
		"t.conf:19: ", "'x' in formats of [sink b] is [sink x] (line 1), not a [format x]");
	check_error("formats: used by two groups",
		    FORMATS_OK "[sink b]\nkind = group\nformats = trace\n",
		    "t.conf:16: ", "format 'trace' is already used by [sink all] (line 3)");
	check_error("formats: listed twice",
		    FORMATS_OK "[format u]\nkind = stats\npath = u\n"
			       "[sink b]\nkind = group\nformats = u, u\n",
		    "t.conf:19: ", "format 'u' listed twice in formats of [sink b]");
	check_error("formats: unused", FORMATS_OK "[format lone]\nkind = folded\npath = l\n",
		    "t.conf:14: ", "[format lone] is used by no group sink");
	check_error("formats: a ring timeline",
		    "[sink all]\nkind = group\nformats = r\n"
		    "[format r]\nkind = timeline\npath = t.json\nmode = ring\n",
		    "t.conf:7: ",
		    "mode = ring cannot be a [format]: a flight recorder's snapshots "
		    "need a sink of its own");
	check_error(
		"formats: publish is not a format",
		"[sink all]\nkind = group\nformats = p\n"
		"[format p]\nkind = publish\nlisten = tcp://127.0.0.1:1\n",
		"t.conf:5: ",
		"kind 'publish' cannot be used in [format p] (known: folded, timeline, stats, metrics, pprof)");
	check_error("formats: nor a group",
		    "[sink all]\nkind = group\nformats = g\n[format g]\nkind = group\n",
		    "t.conf:5: ", "kind 'group' cannot be used in [format g]");
	check_error("formats: an actor's key", FORMATS_OK "restart = transient\n",
		    "t.conf:14: ", "unknown key 'restart' in [format st] (kind 'stats')");
	check_error("formats: a format's own keys are checked", FORMATS_OK "max_kernels = 1\n",
		    "t.conf:14: ",
		    "bad value '1' for 'max_kernels': expected an integer in 16..1048576");
	check_error("formats: required keys",
		    FORMATS_OK "[format np]\nkind = folded\n"
			       "[sink b]\nkind = group\nformats = np\n",
		    "t.conf:14: ", "missing 'path' in [format np] (kind 'folded')");
	check_error("formats: a group needs its list", FORMATS_OK "[sink b]\nkind = group\n",
		    "t.conf:14: ", "missing 'formats' in [sink b] (kind 'group')");
	check_error("formats: at most 8",
		    "[sink all]\nkind = group\nformats = a, b, c, d, e, f, g, h, i\n",
		    "t.conf:3: ", "too many formats in [sink all]: at most 8");
	check_error("formats: a bad list", FORMATS_OK "[sink b]\nkind = group\nformats = ,\n",
		    "t.conf:16: ", "expected a list of [format] section names");
	check_error("formats: a name", "[format]\nkind = folded\n",
		    "t.conf:1: ", "section [format] needs a name: [format NAME]");
	check_error("formats: one namespace with actors",
		    FORMATS_OK "[sink flame]\nkind = stats\npath = x\n", "t.conf:14: ",
		    "duplicate section name 'flame' (first at line 4 as [format flame])");
	/* A format alone is not a pipeline. */
	check_error("formats: not actors", "[format f]\nkind = folded\npath = x\n",
		    "t.conf:1: ", "no actors");
}

int main(void)
{
	test_formats();
	test_kinds();
	test_options();
	test_strategies();
	test_stages();
	test_target();
	test_cupti();
	test_full();
	test_defaults();
	test_cpu();
	test_errors();
	test_many_errors();
	test_parsers();
	test_files();
	free(err_text);
	return tap_done();
}
