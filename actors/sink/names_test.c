// SPDX-License-Identifier: MIT
/*
 * One name, one spelling: common/json_escape.h's byte policy, and a golden test that the
 * sinks' formats write one awkward kernel name the same way.
 *
 * - The escaper: each class of byte (printable ASCII, '"' and '\', control bytes, 0x7f,
 *   well-formed UTF-8 of 2 to 4 bytes, bytes outside UTF-8, a sequence cut short), the
 *   script flag, and the piecewise form: only whole characters, *used saying how far.
 * - The golden test: one GPU kernel named `naïve_k<float>"q\`, a control byte and a 0xff,
 *   through the stats, timeline and folded formats. stats.json and trace.json must spell it
 *   identically (the golden spelling below); flame.html writes folded's line by the same rule
 *   with '<' and '>' escaped for its <script>, and keeps the UTF-8 "ï" as it is (it used to
 *   become "\u00c3\u00af", which a browser shows as "Ã¯").
 *   `xpusup status` prints no kernel names (actors, counters, rings), so it is not here; its
 *   json_str uses the same escaper.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json_escape.h"
#include "tests/tap.h"

static char dir[128];

static const char *env_get(void *ctx, const char *key)
{
	(void)ctx;
	(void)key;
	return NULL; /* defaults: stats.txt beside stats.json, flame.html beside flame.folded */
}

static int env_path(void *ctx, const char *key, char *buf, size_t size)
{
	if (strcmp(key, "path"))
		return -ENOENT;
	snprintf(buf, size, "%s/%s", dir, (const char *)ctx);
	return 0;
}

/* The escaped text of s (n bytes) as a NUL-terminated string. */
static const char *esc(const char *s, size_t n, unsigned int flags)
{
	static char buf[256];
	size_t len = xpu_json_escape(buf, sizeof(buf) - 1, s, n, NULL, flags);

	buf[len] = 0;
	return buf;
}

static bool is(const char *got, const char *want)
{
	if (!strcmp(got, want))
		return true;
	tap_diag("got  '%s'", got);
	tap_diag("want '%s'", want);
	return false;
}

static void test_policy(void)
{
	char buf[16];
	size_t used, len;

	tap_ok(is(esc("plain name_1 (x)", 16, 0), "plain name_1 (x)"), "printable ASCII is kept");
	tap_ok(is(esc("a\"b\\c", 5, 0), "a\\\"b\\\\c"), "'\"' and '\\' are escaped");
	tap_ok(is(esc("\x00\x01\n\x1f\x7f", 5, 0), "\\u0000\\u0001\\u000a\\u001f\\u007f"),
	       "control bytes and 0x7f are \\u00XX, no shorthands");
	tap_ok(is(esc("\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 11, 0),
		  "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	       "well-formed UTF-8 of 2, 3 and 4 bytes is kept");
	tap_ok(is(esc("\xff\x80\xc0\xaf\xed\xa0\x80", 7, 0),
		  "\\u00ff\\u0080\\u00c0\\u00af\\u00ed\\u00a0\\u0080"),
	       "bytes outside UTF-8 (stray, overlong, surrogate) are their Latin-1 code points");
	tap_ok(is(esc("x\xe2\x82", 3, 0), "x\\u00e2\\u0082"),
	       "a sequence cut short by the end: its bytes one by one");
	tap_ok(is(esc("</script>", 9, XPU_JSON_ESCAPE_SCRIPT), "\\u003c/script\\u003e") &&
		       is(esc("</script>", 9, 0), "</script>"),
	       "the script flag escapes '<' and '>', only it");
	len = xpu_json_escape(buf, 7, "ab\x01\xc3\xa9", 5, &used, 0);
	tap_ok(len == 2 && used == 2 && !memcmp(buf, "ab", 2),
	       "only whole characters: \\u0001 does not fit after \"ab\" in 7 bytes");
	len = xpu_json_escape(buf, 9, "ab\x01\xc3\xa9", 5, &used, 0);
	tap_ok(len == 8 && used == 3, "nor does the 2-byte é in the 1 byte left of 9");
	len = xpu_json_escape(buf, sizeof(buf), "ab\x01\xc3\xa9", 5, &used, 0);
	tap_ok(len == 10 && used == 5, "all of it in 16");
}

/* The name of the event, as the golden files spell it. */
static const char kernel_name[] = "na\xc3\xafve_k<float>\"q\\\x01\xff";
/* stats.json and trace.json: one spelling */
static const char golden_json[] = "na\xc3\xafve_k<float>\\\"q\\\\\\u0001\\u00ff";
/* flame.html: folded's leaf frame ("[gpu] " and the name, as flame.folded has it) by the same
 * rule, with '<' and '>' escaped */
/* folded's line: the control byte is '_' there, as in every frame (sinks.md) */
static const char golden_html[] = "[gpu] na\xc3\xafve_k\\u003cfloat\\u003e\\\"q\\\\_\\u00ff";

static char *run_format(const struct fmt_ops *ops, const char *file, const char *read)
{
	struct fmt_env env = { .ctx = (void *)file, .get = env_get, .path = env_path };
	struct xpu_wire_batch b = { .version = 1, .producer = 1, .n_events = 1 };
	struct xpu_cevent e = { .kind = XPU_REC_GPU_KERNEL,
				.id = 1,
				.pid = 42,
				.tid = 42,
				.ts_ns = 1000000,
				.end_ns = 1005000,
				.name = kernel_name,
				.name_len = sizeof(kernel_name) - 1 };
	char why[512], path[256];
	void *st = NULL;

	if (ops->open(&st, &env, why, sizeof(why))) {
		tap_diag("%s: open: %s", ops->kind, why);
		return NULL;
	}
	ops->batch(st, &b, &e);
	if (ops->finish(st, why, sizeof(why)))
		tap_diag("%s: finish: %s", ops->kind, why);
	ops->free(st);
	snprintf(path, sizeof(path), "%s/%s", dir, read);
	return tap_slurp(path);
}

static bool has(const char *text, const char *before, const char *spelling)
{
	char want[512];

	snprintf(want, sizeof(want), "%s%s\"", before, spelling);
	if (text && strstr(text, want))
		return true;
	tap_diag("missing: %s", want);
	return false;
}

static void test_golden(void)
{
	char *stats = run_format(&fmt_stats, "stats.json", "stats.json");
	char *trace = run_format(&fmt_timeline, "trace.json", "trace.json");
	char *html = run_format(&fmt_folded, "flame.folded", "flame.html");
	static const char folded_name[] = "[gpu] na\xc3\xafve_k<float>\"q\\_\xff";
	char again[256];
	const char *line;

	tap_ok(has(stats, "{\"name\": \"", golden_json),
	       "stats.json spells the name the golden way");
	tap_ok(has(trace, "\"name\":\"", golden_json), "trace.json spells it the same way");
	tap_ok(has(html, ";", golden_html),
	       "flame.html: folded's line by the same rule, '<' '>' escaped, UTF-8 kept");
	/* the escaper itself gives those spellings: the formats add nothing of their own */
	snprintf(again, sizeof(again), "%s", esc(kernel_name, sizeof(kernel_name) - 1, 0));
	line = esc(folded_name, sizeof(folded_name) - 1, XPU_JSON_ESCAPE_SCRIPT);
	tap_ok(is(again, golden_json) && is(line, golden_html),
	       "the golden spellings are xpu_json_escape's");
	free(stats);
	free(trace);
	free(html);
}

int main(void)
{
	char cmd[200];

	snprintf(dir, sizeof(dir), "/tmp/xpusup-names-test-%d", (int)getpid());
	if (mkdir(dir, 0755) && errno != EEXIST)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	test_policy();
	test_golden();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		tap_diag("could not remove %s", dir);
	return tap_done();
}
