// SPDX-License-Identifier: MIT
/*
 * The streaming JSON reader (json_reader.h) without `xpusup check`: valid texts accepted,
 * invalid ones refused with the exact words and byte offset, the same answer from memory and
 * from a file read through buffers of 1 to 7 bytes (every token split at every byte), strings
 * decoded (escapes, surrogate pairs, a lone surrogate as U+FFFD, cut at a character boundary,
 * hashed whole), numbers' text and form, members' keys.
 */
#include "cli/json_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hash.h"
#include "tests/tap.h"

/* A whole JSON text: one value, white space around it, nothing after. */
static int text(struct json_reader *r)
{
	return json_reader__skip_value(r, 0) || json_reader__end(r) ? -1 : 0;
}

struct outcome {
	int rc;
	const char *err;
	uint64_t off;
};

static struct outcome from_mem(const char *in, size_t n)
{
	struct json_reader r;
	char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees a read past the end */
	struct outcome o;

	memcpy(copy, in, n);
	json_reader__init_mem(&r, copy, n);
	o.rc = text(&r);
	o.err = r.err;
	o.off = r.err_off;
	json_reader__fini(&r);
	free(copy);
	return o;
}

static int memfd_of(const char *in, size_t n)
{
	int fd = memfd_create("json", MFD_CLOEXEC);

	if (fd < 0 || write(fd, in, n) != (ssize_t)n)
		tap_bail("unable to make a memfd");
	return fd;
}

static struct outcome from_fd(int fd, size_t bufsize)
{
	struct json_reader r;
	struct outcome o;

	if (json_reader__init_fd(&r, fd, bufsize))
		tap_bail("out of memory");
	o.rc = text(&r);
	o.err = r.err;
	o.off = r.err_off;
	json_reader__fini(&r);
	return o;
}

static bool same(struct outcome a, struct outcome b)
{
	if (a.rc != b.rc)
		return false;
	return !a.rc || (a.off == b.off && !strcmp(a.err, b.err));
}

/* in (n bytes) is valid, or fails with err at off; alike from memory and through buffers. */
static void one(const char *in, size_t n, const char *err, uint64_t off, const char *what)
{
	struct outcome m = from_mem(in, n), f;
	bool split_ok = true;
	size_t bs;
	int fd = memfd_of(in, n);

	for (bs = 1; bs <= 7 && split_ok; bs++) {
		f = from_fd(fd, bs);
		split_ok = same(m, f);
		if (!split_ok)
			fprintf(stderr, "#   %s: buffer of %zu bytes: rc %d '%s' at %llu\n", what,
				bs, f.rc, f.err ? f.err : "", (unsigned long long)f.off);
	}
	f = from_fd(fd, 1u << 20);
	split_ok = split_ok && same(m, f);
	close(fd);
	if (!err) {
		if (m.rc)
			fprintf(stderr, "#   refused: '%s' at %llu\n", m.err,
				(unsigned long long)m.off);
		tap_ok(!m.rc && split_ok, "valid: %s", what);
		return;
	}
	if (!m.rc || strcmp(m.err, err) || m.off != off)
		fprintf(stderr, "#   got rc %d '%s' at %llu\n", m.rc, m.err ? m.err : "",
			(unsigned long long)m.off);
	tap_ok(m.rc && !strcmp(m.err, err) && m.off == off && split_ok,
	       "invalid: %s: '%s' at byte %llu", what, err, (unsigned long long)off);
}

#define VALID(s, what) one(s, sizeof(s) - 1, NULL, 0, what)
#define INVALID(s, err, off, what) one(s, sizeof(s) - 1, err, off, what)

static void syntax(void)
{
	static char deep[2 * JSON_READER_MAX_DEPTH + 2];

	VALID("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"k\",\"pid\":1,\"tid\":2,\"ts\":1.5,"
	      "\"dur\":0.25,\"args\":{}}],\"displayTimeUnit\":\"ns\"}",
	      "a trace");
	VALID(" [ 1 , -0 , 0.5e+3 , 1E-2 , true , false , null , \"\" , [ ] , { } ] \n",
	      "every kind of value, white space anywhere");
	VALID("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"", "every escape");
	VALID("\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"",
	      "UTF-8 of 2, 3 and 4 bytes, U+10FFFF");
	INVALID("", "unexpected end of file", 0, "nothing");
	INVALID("[1,]", "expected a value", 3, "a trailing comma");
	INVALID("{\"a\":1,}", "expected a member name", 7, "a trailing comma in an object");
	INVALID("{\"a\" 1}", "expected :", 5, "no colon");
	INVALID("{\"a\":1 \"b\":2}", "expected , or }", 7, "no comma in an object");
	INVALID("[1 2]", "expected , or ]", 3, "no comma in an array");
	INVALID("[NaN]", "expected a value", 1, "NaN");
	INVALID("[tru]", "bad literal (true, false or null)", 4, "a cut literal");
	INVALID("[01]", "a number with a leading zero", 2, "a leading zero");
	INVALID("[1.]", "no digits after a decimal point", 3, "no fraction digits");
	INVALID("[1e+]", "no digits in an exponent", 4, "no exponent digits");
	INVALID("[-]", "bad number", 2, "a lone minus");
	INVALID("[12", "unexpected end of file", 3, "a truncated array");
	INVALID("[1.5e", "unexpected end of file", 5, "a truncated number");
	INVALID("\"abc", "unexpected end of file", 4, "a truncated string");
	INVALID("\"a\\x\"", "bad escape in a string", 3, "a bad escape");
	INVALID("\"\\u12g4\"", "bad \\u escape", 5, "a bad \\u escape");
	INVALID("\"\\ud83d\\n\"", "bad escape after a high surrogate", 8,
		"a high surrogate and another escape");
	INVALID("\"a\tb\"", "control character in a string", 2, "a tab in a string");
	INVALID("\"\xc3\x28\"", "invalid UTF-8", 2, "a lead byte without its continuation");
	INVALID("\"\x80\"", "invalid UTF-8", 2, "a stray continuation byte");
	INVALID("\"\xc0\xaf\"", "invalid UTF-8", 2, "an overlong lead byte");
	INVALID("\"\xe0\x80\xaf\"", "invalid UTF-8", 2, "an overlong 3-byte form");
	INVALID("\"\xed\xa0\x80\"", "invalid UTF-8", 2, "an encoded surrogate");
	INVALID("\"\xf4\x90\x80\x80\"", "invalid UTF-8", 2, "above U+10FFFF");
	INVALID("\"\xf0\x9f\x98\"", "invalid UTF-8", 4, "a 4-byte form cut short by the quote");
	INVALID("\"\xe2\x82", "unexpected end of file", 3, "a 3-byte form cut by the end");
	INVALID("{}}", "data after the end of the JSON text", 2, "data after the text");

	memset(deep, '[', JSON_READER_MAX_DEPTH);
	memset(deep + JSON_READER_MAX_DEPTH, ']', JSON_READER_MAX_DEPTH);
	one(deep, 2 * JSON_READER_MAX_DEPTH, NULL, 0, "256 arrays deep");
	memset(deep, '[', JSON_READER_MAX_DEPTH + 1);
	memset(deep + JSON_READER_MAX_DEPTH + 1, ']', JSON_READER_MAX_DEPTH + 1);
	one(deep, 2 * JSON_READER_MAX_DEPTH + 2, "nesting deeper than 256", JSON_READER_MAX_DEPTH,
	    "257 arrays deep");
}

/* The decoded string of in (one JSON string) kept in a buffer of cap bytes. */
static int decode(const char *in, size_t cap, char *buf, struct json_str *s)
{
	struct json_reader r;

	*s = (struct json_str){ buf, cap, 0, 0 };
	json_reader__init_mem(&r, in, strlen(in));
	return json_reader__string(&r, s);
}

static void strings(void)
{
	const char *full = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbd";
	char buf[64];
	struct json_str s;
	int rc;

	rc = decode("\"a\\u00e9\\u20ac\\ud83d\\ude00\\udc00\"", sizeof(buf), buf, &s);
	tap_ok(!rc && !strcmp(buf, full) && s.len == strlen(full),
	       "escapes decode to UTF-8; a lone low surrogate to U+FFFD");
	tap_eq_u64(s.hash, xpu_hash_bytes(full, strlen(full)), "the hash is of the decoded bytes");
	rc = decode("\"\\ud800\\u0041\"", sizeof(buf), buf, &s);
	tap_ok(!rc && !strcmp(buf, "\xef\xbf\xbd"
				   "A"),
	       "a high surrogate before another \\u: U+FFFD, then that character");
	rc = decode("\"a\xc3\xa9\xe2\x82\xac\"", 4, buf, &s);
	tap_ok(!rc && !strcmp(buf, "a\xc3\xa9") && s.len == 6,
	       "cut to a buffer of 4: whole characters only (a, e-acute), the length whole");
	tap_eq_u64(s.hash, xpu_hash_bytes("a\xc3\xa9\xe2\x82\xac", 6), "a cut string hashes whole");
	rc = decode("\"abc\"", 0, NULL, &s);
	tap_ok(!rc && s.len == 3, "no buffer: length and hash only");
	rc = decode("\"x\\u0000y\"", sizeof(buf), buf, &s);
	tap_ok(!rc && s.len == 3 && !memcmp(buf, "x\0y", 4), "an escaped NUL is kept");
}

static void numbers(void)
{
	static const struct {
		const char *in;
		bool integer, fits;
		int64_t v;
	} cases[] = {
		{ "0", true, true, 0 },
		{ "-12", true, true, -12 },
		{ "9223372036854775807", true, true, INT64_MAX },
		{ "9223372036854775808", true, false, 0 },
		{ "1.5", false, false, 0 },
		{ "2e3", false, false, 0 },
		{ "1234567890123456789012345678901234567890123", true, false, 0 },
	};
	struct json_reader r;
	struct json_num n;
	unsigned int i;
	int64_t v;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool fits;
		int rc;

		json_reader__init_mem(&r, cases[i].in, strlen(cases[i].in));
		rc = json_reader__number(&r, &n);
		fits = json_num__i64(&n, &v);
		tap_ok(!rc && n.len == strlen(cases[i].in) && n.integer == cases[i].integer &&
			       fits == cases[i].fits && (!fits || v == cases[i].v) &&
			       !strncmp(n.text, cases[i].in, sizeof(n.text) - 1),
		       "number %.24s: text, form, int64", cases[i].in);
	}
}

struct seen {
	char keys[256];
	int values;
};

static int member(struct json_reader *r, const char *key, void *arg)
{
	struct seen *s = arg;

	strncat(s->keys, key[0] ? key : "(long)", sizeof(s->keys) - strlen(s->keys) - 2);
	strcat(s->keys, ",");
	s->values++;
	return json_reader__skip_value(r, 1);
}

static void members(void)
{
	const char *in = " { \"ph\" : \"X\" , \"a\\u0062\":[1,{}], "
			 "\"a_key_of_twenty_four_byt\":0, \"\":null }";
	struct json_reader r;
	struct seen s = { "", 0 };
	int rc;

	json_reader__init_mem(&r, in, strlen(in));
	rc = json_reader__each_member(&r, member, &s);
	tap_ok(!rc && s.values == 4 && !strcmp(s.keys, "ph,ab,(long),(long),"),
	       "each_member: every key decoded, a key over 23 bytes given as \"\" (%s)", s.keys);
	json_reader__init_mem(&r, "[]", 2);
	rc = json_reader__each_member(&r, member, &s);
	tap_ok(rc && !strcmp(r.err, "expected an object") && r.err_off == 0,
	       "each_member on an array: expected an object at byte 0");
}

int main(void)
{
	syntax();
	strings();
	numbers();
	members();
	return tap_done();
}
