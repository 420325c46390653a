/* SPDX-License-Identifier: MIT */
/*
 * A bounded streaming JSON reader (RFC 8259, strict UTF-8): `xpusup check` walks traces of
 * hundreds of MB with it without holding them. It reads a file through a fixed buffer (pread,
 * so a second reader on the same fd can look elsewhere) or a buffer in memory, and hands the
 * caller one token at a time; the caller drives the grammar (each_member for objects, its own
 * loop for arrays, skip_value for what it does not care about).
 *
 * Bounded: a string or number is stored only up to the caller's buffer (strings are hashed
 * whole with xpu_fnv1a64 and cut at a character boundary), nesting deeper than
 * JSON_READER_MAX_DEPTH is refused, every byte read checks for the end of the input. Nothing
 * in the input can make it read or write out of bounds.
 *
 * Errors: every function that reads returns 0 or -1; the first error stops the walk and is
 * kept: r->err (words: "bad escape in a string", "unexpected end of file", strerror of a
 * failed read) and r->err_off, the byte offset of the input where it stopped being JSON.
 * Later calls after an error may return -1 again but keep the first error.
 *
 * Calling order: json_reader__init_fd or json_reader__init_mem, then any reads, then
 * json_reader__fini. json_reader__seek starts again anywhere (an fd reader only).
 */
#ifndef XPUSUP_CLI_JSON_READER_H
#define XPUSUP_CLI_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_READER_MAX_DEPTH 256 /* containers the reader follows; a trace needs 5 */
#define JSON_NUM_KEEP 40 /* bytes of a number's text kept (and NUL) */

struct json_reader {
	int fd; /* -1: the input is buf[0..len) in memory */
	unsigned char *own; /* the fd reader's buffer */
	const unsigned char *buf;
	size_t cap, len, pos;
	uint64_t base; /* input offset of buf[0] */
	bool eof;
	int read_errno; /* errno of a failed read */
	const char *err; /* the first error; the walk stops there */
	uint64_t err_off;
};

/*
 * json_reader__init_fd - read the file fd from offset 0 through a buffer of bufsize bytes
 * (at least 1; 1 MiB reads a large file fast). The fd stays the caller's. 0 or -ENOMEM.
 */
int json_reader__init_fd(struct json_reader *r, int fd, size_t bufsize);

/* json_reader__init_mem - read the n bytes at data (kept by the caller while reading). */
void json_reader__init_mem(struct json_reader *r, const void *data, size_t n);

/* json_reader__seek - read on from input offset off, the error forgotten (fd readers). */
void json_reader__seek(struct json_reader *r, uint64_t off);

/* json_reader__fini - free the buffer; a reader zeroed or finished before is fine. */
void json_reader__fini(struct json_reader *r);

bool json_reader__fill(struct json_reader *r);

/* The byte at the reader (not taken), or -1 at the end of the input or after a read error. */
static inline int json_reader__peek(struct json_reader *r)
{
	if (r->pos < r->len || json_reader__fill(r))
		return r->buf[r->pos];
	return -1;
}

/* The byte at the reader, taken, or -1 at the end. */
static inline int json_reader__getc(struct json_reader *r)
{
	int c = json_reader__peek(r);

	if (c >= 0)
		r->pos++;
	return c;
}

/* The input offset of the byte at the reader. */
static inline uint64_t json_reader__offset(const struct json_reader *r)
{
	return r->base + r->pos;
}

/*
 * json_reader__fail - record msg as the error at the reader's offset (unless there is one
 * already): "unexpected end of file" instead at the end of the input, a read error's words
 * after one. Returns -1, for `return json_reader__fail(r, "...")`.
 */
int json_reader__fail(struct json_reader *r, const char *msg);

/* json_reader__skip_ws - past JSON white space (space, tab, CR, LF). */
void json_reader__skip_ws(struct json_reader *r);

/* json_reader__expect - white space, then the byte want, taken; else fail with msg. */
int json_reader__expect(struct json_reader *r, int want, const char *msg);

/* A decoded string: its first cap - 1 bytes (whole characters), NUL terminated, and its whole
 * length and xpu_fnv1a64 hash. The caller sets buf and cap (cap 0: nothing kept). */
struct json_str {
	char *buf;
	size_t cap, len;
	uint64_t hash;
};

/*
 * json_reader__string - the string at the reader (it must be at its '"'), escapes decoded
 * (a \u escape of a lone surrogate reads as U+FFFD), UTF-8 validated strictly (xpu_utf8_len).
 * s NULL: validate and skip it. 0 or -1. s->cap may shrink to where a character was cut.
 */
int json_reader__string(struct json_reader *r, struct json_str *s);

/* A number's text (the first JSON_NUM_KEEP - 1 bytes) and form. */
struct json_num {
	char text[JSON_NUM_KEEP];
	size_t len; /* of the whole text; >= sizeof(text) when cut */
	bool integer; /* no fraction, no exponent */
};

/* json_reader__number - the number at the reader (RFC 8259's grammar: no leading zeros, no
 * '+', digits after '.' and in the exponent). 0 or -1. */
int json_reader__number(struct json_reader *r, struct json_num *n);

/* json_num__i64 - an integer number (not cut) that fits int64_t, into *v. */
bool json_num__i64(const struct json_num *n, int64_t *v);

/* json_reader__literal - exactly word (true, false, null) at the reader. 0 or -1. */
int json_reader__literal(struct json_reader *r, const char *word);

/*
 * json_reader__skip_value - white space and one value of any kind, validated and dropped.
 * depth: the containers the value is inside (a value inside depth JSON_READER_MAX_DEPTH or more
 * containers that is itself one fails with "nesting deeper than 256"). 0 or -1.
 */
int json_reader__skip_value(struct json_reader *r, unsigned int depth);

/*
 * json_reader__each_member - white space and the object at the reader: for each member,
 * member(r, key, arg) with the reader at its value (after white space); it must take the value
 * whole and return 0, or nonzero to stop. Keys longer than 23 bytes are given as "" (they
 * match nothing a caller looks for). 0, -1 (a syntax error), or what member returned.
 */
int json_reader__each_member(struct json_reader *r,
			     int (*member)(struct json_reader *r, const char *key, void *arg),
			     void *arg);

/*
 * json_reader__each_element - white space and the array at the reader (else fail with
 * not_array): for each element, element(r, arg) with the reader at it (after white space); it
 * must take the element whole and return 0, or nonzero to stop. A missing separator fails
 * with no_comma. 0, -1 (a syntax error), or what element returned.
 */
int json_reader__each_element(struct json_reader *r, const char *not_array, const char *no_comma,
			      int (*element)(struct json_reader *r, void *arg), void *arg);

/* json_reader__end - white space, then the end of the input: the text is whole ("data after
 * the end of the JSON text" otherwise; a read error is one too). 0 or -1. */
int json_reader__end(struct json_reader *r);

#endif /* XPUSUP_CLI_JSON_READER_H */
