// SPDX-License-Identifier: MIT
/*
 * Fuzz target for the streaming JSON reader of `xpusup check` (cli/json_reader.c). The input
 * is one JSON text. Properties beyond "no crash":
 *   1. two walks agree exactly (accepted, or refused with the same words at the same byte):
 *      skip_value, and a walk that decodes every string and number (each_member for
 *      objects, each_element for arrays) as `xpusup check` does;
 *   2. the same text read from a file through a buffer of 1 to 8 bytes (the first byte of
 *      the input picks it), every token split at every boundary, gives the same answer;
 *   3. a refusal has words and an offset within the input; an acceptance has neither;
 *   4. every decoded string that fits its buffer is well-formed UTF-8 (escapes included),
 *      as long as its length, and hashes to its bytes; a cut one is a prefix of whole
 *      characters; a number's text is its grammar's characters, integer exactly when it has
 *      no fraction or exponent.
 */
#include "cli/json_reader.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/utf8.h"
#include "tests/fuzz/fuzz.h"

static void check_utf8(const char *s, size_t n)
{
	const unsigned char *b = (const unsigned char *)s;
	size_t i = 0, len;

	while (i < n) {
		if (b[i] < 0x80) {
			i++;
			continue;
		}
		len = xpu_utf8_len(b + i, n - i);
		if (!len)
			abort();
		i += len;
	}
}

static void check_string(const struct json_str *s, size_t cap0)
{
	if (s->len < s->cap) { /* all of it kept */
		check_utf8(s->buf, s->len);
		if (s->buf[s->len] || s->hash != xpu_hash_bytes(s->buf, s->len))
			abort();
	} else { /* cut at a character boundary: what is kept is whole characters */
		if (s->cap > cap0)
			abort();
		if (s->cap)
			check_utf8(s->buf, s->cap);
	}
}

static void check_number(const struct json_num *n)
{
	size_t i, kept = n->len < sizeof(n->text) ? n->len : sizeof(n->text) - 1;
	bool integer = true;

	if (strlen(n->text) != kept || !kept)
		abort();
	for (i = 0; i < kept; i++) {
		if (!strchr("-+0123456789.eE", n->text[i]))
			abort();
		if (strchr(".eE", n->text[i]))
			integer = false;
	}
	if (n->len < sizeof(n->text) && integer != n->integer)
		abort();
}

static int walk(struct json_reader *r, unsigned int depth);

struct walk_ctx {
	unsigned int depth;
};

static int element(struct json_reader *r, void *arg)
{
	const struct walk_ctx *w = arg;

	return walk(r, w->depth + 1);
}

static int member(struct json_reader *r, const char *key, void *arg)
{
	const struct walk_ctx *w = arg;

	if (strlen(key) > 23)
		abort();
	return walk(r, w->depth + 1);
}

/* The value at the reader, decoded, with skip_value's words for every error. */
static int walk(struct json_reader *r, unsigned int depth)
{
	char small[8], big[64];
	struct json_str s;
	struct json_num n;
	struct walk_ctx w = { depth };
	int c;

	json_reader__skip_ws(r);
	c = json_reader__peek(r);
	if ((c == '{' || c == '[') && depth >= JSON_READER_MAX_DEPTH)
		return json_reader__fail(r, "nesting deeper than 256");
	if (c == '{')
		return json_reader__each_member(r, member, &w);
	if (c == '[')
		return json_reader__each_element(r, "expected an array", "expected , or ]", element,
						 &w);
	if (c == '"') {
		/* alternate the buffer sizes: a short one cuts most strings */
		s = depth & 1 ? (struct json_str){ small, sizeof(small), 0, 0 } :
				(struct json_str){ big, sizeof(big), 0, 0 };
		if (json_reader__string(r, &s))
			return -1;
		check_string(&s, depth & 1 ? sizeof(small) : sizeof(big));
		return 0;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		if (json_reader__number(r, &n))
			return -1;
		check_number(&n);
		return 0;
	}
	return json_reader__skip_value(r, depth); /* literals and errors */
}

struct outcome {
	int rc;
	const char *err;
	uint64_t off;
};

static struct outcome finish(struct json_reader *r, int rc)
{
	struct outcome o;

	if (!rc)
		rc = json_reader__end(r);
	o = (struct outcome){ rc, r->err, r->err_off };
	json_reader__fini(r);
	return o;
}

static void same(struct outcome a, struct outcome b)
{
	if (a.rc != b.rc || (a.rc && (a.off != b.off || strcmp(a.err, b.err))))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct outcome skipped, walked, split;
	struct json_reader r;

	if (size > (1u << 16))
		return 0;
	json_reader__init_mem(&r, data, size);
	skipped = finish(&r, json_reader__skip_value(&r, 0));
	if (skipped.rc ? !skipped.err || skipped.off > size : skipped.err != NULL)
		abort();

	json_reader__init_mem(&r, data, size);
	walked = finish(&r, walk(&r, 0));
	same(skipped, walked);

	if (fd < 0)
		fd = memfd_create("json_reader_fuzz", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	if (json_reader__init_fd(&r, fd, size ? data[0] % 8u + 1 : 1))
		return 0;
	split = finish(&r, walk(&r, 0));
	same(walked, split);
	return 0;
}
