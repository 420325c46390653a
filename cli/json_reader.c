// SPDX-License-Identifier: MIT
/* The bounded streaming JSON reader; see json_reader.h. */
#include "cli/json_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/utf8.h"

int json_reader__init_fd(struct json_reader *r, int fd, size_t bufsize)
{
	*r = (struct json_reader){ .fd = fd, .cap = bufsize ? bufsize : 1 };
	r->own = malloc(r->cap);
	if (!r->own)
		return -ENOMEM;
	r->buf = r->own;
	return 0;
}

void json_reader__init_mem(struct json_reader *r, const void *data, size_t n)
{
	*r = (struct json_reader){ .fd = -1, .buf = data, .cap = n, .len = n, .eof = true };
}

void json_reader__seek(struct json_reader *r, uint64_t off)
{
	r->base = off;
	r->len = r->pos = 0;
	r->eof = false;
	r->read_errno = 0;
	r->err = NULL;
	r->err_off = 0;
}

void json_reader__fini(struct json_reader *r)
{
	free(r->own);
	r->own = NULL;
	r->buf = NULL;
}

/* The next piece of the file after the buffer; false at its end or on a read error. */
bool json_reader__fill(struct json_reader *r)
{
	ssize_t n;

	if (r->eof || r->fd < 0)
		return false;
	r->base += r->len;
	r->pos = r->len = 0;
	do
		n = pread(r->fd, r->own, r->cap, (off_t)r->base);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		if (n < 0)
			r->read_errno = errno;
		r->eof = true;
		return false;
	}
	r->len = (size_t)n;
	return true;
}

int json_reader__fail(struct json_reader *r, const char *msg)
{
	if (!r->err) {
		r->err = r->read_errno		  ? strerror(r->read_errno) :
			 json_reader__peek(r) < 0 ? "unexpected end of file" :
						    msg;
		r->err_off = json_reader__offset(r);
	}
	return -1;
}

void json_reader__skip_ws(struct json_reader *r)
{
	int c;

	while ((c = json_reader__peek(r)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		r->pos++;
}

int json_reader__expect(struct json_reader *r, int want, const char *msg)
{
	json_reader__skip_ws(r);
	if (json_reader__peek(r) != want)
		return json_reader__fail(r, msg);
	r->pos++;
	return 0;
}

static void str_put(struct json_str *s, const void *bytes, size_t n)
{
	if (!s)
		return;
	if (s->len + n < s->cap) {
		memcpy(s->buf + s->len, bytes, n);
		s->buf[s->len + n] = 0;
	} else if (s->len < s->cap) {
		s->buf[s->len] = 0; /* a character is kept whole or not at all */
		s->cap = s->len;
	}
	s->len += n;
	s->hash = xpu_fnv1a64(s->hash, bytes, n);
}

static int hex4(struct json_reader *r, unsigned int *v)
{
	int i, c;

	*v = 0;
	for (i = 0; i < 4; i++) {
		c = json_reader__peek(r);
		if (c >= '0' && c <= '9')
			*v = *v << 4 | (unsigned int)(c - '0');
		else if (c >= 0 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*v = *v << 4 | (unsigned int)((c | 0x20) - 'a' + 10);
		else
			return json_reader__fail(r, "bad \\u escape"); /* at the digit */
		r->pos++;
	}
	return 0;
}

static void put_utf8(struct json_str *s, unsigned int cp)
{
	unsigned char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	str_put(s, b, n);
}

/* One escape after the backslash. A lone surrogate decodes to U+FFFD, as lenient readers do. */
static int escape(struct json_reader *r, struct json_str *s)
{
	unsigned int cp, lo;
	int c = json_reader__peek(r);
	char ch;

	switch (c) {
	case '"':
	case '\\':
	case '/':
		ch = (char)c;
		break;
	case 'b':
		ch = '\b';
		break;
	case 'f':
		ch = '\f';
		break;
	case 'n':
		ch = '\n';
		break;
	case 'r':
		ch = '\r';
		break;
	case 't':
		ch = '\t';
		break;
	case 'u':
		r->pos++;
		if (hex4(r, &cp))
			return -1;
		if (cp >= 0xd800 && cp < 0xdc00 && json_reader__peek(r) == '\\') {
			json_reader__getc(r);
			if (json_reader__peek(r) != 'u')
				return json_reader__fail(r, "bad escape after a high surrogate");
			r->pos++;
			if (hex4(r, &lo))
				return -1;
			if (lo >= 0xdc00 && lo < 0xe000) {
				put_utf8(s, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
				return 0;
			}
			put_utf8(s, 0xfffd);
			cp = lo;
		}
		put_utf8(s, cp >= 0xd800 && cp < 0xe000 ? 0xfffd : cp);
		return 0;
	default:
		return json_reader__fail(r, "bad escape in a string"); /* at the letter */
	}
	r->pos++;
	str_put(s, &ch, 1);
	return 0;
}

/*
 * Whether the n bytes at b (1 to 4) begin some well-formed sequence: xpu_utf8_len of them
 * completed with continuation bytes. With the lead alone, the second byte's range depends on
 * the lead (0x80-0x8f after 0xf4, 0xa0-0xbf after 0xe0), and 0x80 or 0xbf is in every one.
 */
static bool utf8_starts(const unsigned char *b, size_t n)
{
	unsigned char t[4] = { 0x80, 0x80, 0x80, 0x80 };

	memcpy(t, b, n);
	if (xpu_utf8_len(t, sizeof(t)))
		return true;
	t[1] = 0xbf;
	return n == 1 && xpu_utf8_len(t, sizeof(t));
}

/* The rest of a multi-byte character led by c (taken). An error is at the first byte that
 * cannot continue it, which may be in the next read. */
static int utf8_char(struct json_reader *r, int c, struct json_str *s)
{
	unsigned char b[4] = { (unsigned char)c };
	size_t n = r->len - r->pos + 1;
	int d;

	/* the whole character in the buffer: the common case */
	n = xpu_utf8_len(r->buf + r->pos - 1, n);
	if (n) {
		str_put(s, r->buf + r->pos - 1, n);
		r->pos += n - 1;
		return 0;
	}
	if (!utf8_starts(b, 1))
		return json_reader__fail(r, "invalid UTF-8");
	for (n = 1; !xpu_utf8_len(b, n); n++) {
		d = json_reader__peek(r);
		if (d < 0)
			return json_reader__fail(r, "invalid UTF-8");
		b[n] = (unsigned char)d;
		if (!utf8_starts(b, n + 1))
			return json_reader__fail(r, "invalid UTF-8");
		r->pos++;
	}
	str_put(s, b, n);
	return 0;
}

int json_reader__string(struct json_reader *r, struct json_str *s)
{
	int c;

	if (s) {
		s->len = 0;
		s->hash = XPU_FNV1A64_BASIS;
		if (s->cap)
			s->buf[0] = 0;
	}
	if (json_reader__getc(r) != '"')
		return json_reader__fail(r, "expected a string");
	for (;;) {
		/* the plain bytes of the buffer in one go: most strings have nothing else */
		size_t start = r->pos;

		while (r->pos < r->len && r->buf[r->pos] >= 0x20 && r->buf[r->pos] < 0x80 &&
		       r->buf[r->pos] != '"' && r->buf[r->pos] != '\\')
			r->pos++;
		if (r->pos > start)
			str_put(s, r->buf + start, r->pos - start);
		c = json_reader__peek(r); /* refills at the end of the buffer */
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
			continue;
		json_reader__getc(r);
		if (c == '"')
			return 0;
		if (c < 0)
			return json_reader__fail(r, "unterminated string");
		if (c == '\\') {
			if (escape(r, s))
				return -1;
		} else if (c < 0x20) {
			r->pos--;
			return json_reader__fail(r, "control character in a string");
		} else if (utf8_char(r, c, s)) {
			return -1;
		}
	}
}

static void num_put(struct json_num *n, int c)
{
	if (n->len + 1 < sizeof(n->text)) {
		n->text[n->len] = (char)c;
		n->text[n->len + 1] = 0;
	}
	n->len++;
}

static int digits(struct json_reader *r, struct json_num *n, const char *msg)
{
	int c = json_reader__peek(r);

	if (c < '0' || c > '9')
		return json_reader__fail(r, msg);
	while ((c = json_reader__peek(r)) >= '0' && c <= '9') {
		num_put(n, c);
		r->pos++;
	}
	return 0;
}

int json_reader__number(struct json_reader *r, struct json_num *n)
{
	int c;

	n->len = 0;
	n->text[0] = 0;
	n->integer = true;
	if (json_reader__peek(r) == '-')
		num_put(n, json_reader__getc(r));
	c = json_reader__peek(r);
	if (c == '0') {
		num_put(n, json_reader__getc(r));
		c = json_reader__peek(r);
		if (c >= '0' && c <= '9')
			return json_reader__fail(r, "a number with a leading zero");
	} else if (digits(r, n, "bad number")) {
		return -1;
	}
	if (json_reader__peek(r) == '.') {
		n->integer = false;
		num_put(n, json_reader__getc(r));
		if (digits(r, n, "no digits after a decimal point"))
			return -1;
	}
	c = json_reader__peek(r);
	if (c == 'e' || c == 'E') {
		n->integer = false;
		num_put(n, json_reader__getc(r));
		c = json_reader__peek(r);
		if (c == '+' || c == '-')
			num_put(n, json_reader__getc(r));
		if (digits(r, n, "no digits in an exponent"))
			return -1;
	}
	return 0;
}

bool json_num__i64(const struct json_num *n, int64_t *v)
{
	char *end;

	if (!n->integer || n->len >= sizeof(n->text))
		return false;
	errno = 0;
	*v = strtoll(n->text, &end, 10);
	return !errno && !*end;
}

int json_reader__literal(struct json_reader *r, const char *word)
{
	for (; *word; word++, r->pos++)
		if (json_reader__peek(r) != *word) /* the error at the first wrong letter */
			return json_reader__fail(r, "bad literal (true, false or null)");
	return 0;
}

/* After a container's opening byte: true (and taken) when it closes at once. */
static bool closes_at_once(struct json_reader *r, int close)
{
	json_reader__skip_ws(r);
	if (json_reader__peek(r) != close)
		return false;
	r->pos++;
	return true;
}

/* After an item of a container: 1 at its close (taken), 0 after a comma, else fail with
 * no_comma at the byte that is neither. */
static int next_item(struct json_reader *r, int close, const char *no_comma)
{
	int c;

	json_reader__skip_ws(r);
	c = json_reader__getc(r);
	if (c == close)
		return 1;
	if (c == ',')
		return 0;
	if (c >= 0)
		r->pos--;
	return json_reader__fail(r, no_comma);
}

static int skip_container(struct json_reader *r, unsigned int depth, int open)
{
	int close = open == '{' ? '}' : ']', next;

	if (depth >= JSON_READER_MAX_DEPTH)
		return json_reader__fail(r, "nesting deeper than 256");
	json_reader__getc(r);
	if (closes_at_once(r, close))
		return 0;
	for (;;) {
		json_reader__skip_ws(r);
		if (open == '{') {
			if (json_reader__peek(r) != '"')
				return json_reader__fail(r, "expected a member name");
			if (json_reader__string(r, NULL) ||
			    json_reader__expect(r, ':', "expected :"))
				return -1;
		}
		if (json_reader__skip_value(r, depth + 1))
			return -1;
		next = next_item(r, close, open == '{' ? "expected , or }" : "expected , or ]");
		if (next)
			return next < 0 ? -1 : 0;
	}
}

int json_reader__skip_value(struct json_reader *r, unsigned int depth)
{
	struct json_num n;
	int c;

	json_reader__skip_ws(r);
	c = json_reader__peek(r);
	switch (c) {
	case '{':
	case '[':
		return skip_container(r, depth, c);
	case '"':
		return json_reader__string(r, NULL);
	case 't':
		return json_reader__literal(r, "true");
	case 'f':
		return json_reader__literal(r, "false");
	case 'n':
		return json_reader__literal(r, "null");
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return json_reader__number(r, &n);
		return json_reader__fail(r, "expected a value");
	}
}

int json_reader__each_member(struct json_reader *r,
			     int (*member)(struct json_reader *r, const char *key, void *arg),
			     void *arg)
{
	char kbuf[24];
	struct json_str key = { kbuf, sizeof(kbuf), 0, 0 };
	int next, err;

	if (json_reader__expect(r, '{', "expected an object"))
		return -1;
	if (closes_at_once(r, '}'))
		return 0;
	for (;;) {
		json_reader__skip_ws(r);
		key.cap = sizeof(kbuf);
		if (json_reader__peek(r) != '"')
			return json_reader__fail(r, "expected a member name");
		if (json_reader__string(r, &key) || json_reader__expect(r, ':', "expected :"))
			return -1;
		json_reader__skip_ws(r);
		err = member(r, key.len < sizeof(kbuf) ? kbuf : "", arg);
		if (err)
			return err;
		next = next_item(r, '}', "expected , or }");
		if (next)
			return next < 0 ? -1 : 0;
	}
}

int json_reader__each_element(struct json_reader *r, const char *not_array, const char *no_comma,
			      int (*element)(struct json_reader *r, void *arg), void *arg)
{
	int next, err;

	if (json_reader__expect(r, '[', not_array))
		return -1;
	if (closes_at_once(r, ']'))
		return 0;
	for (;;) {
		json_reader__skip_ws(r);
		err = element(r, arg);
		if (err)
			return err;
		next = next_item(r, ']', no_comma);
		if (next)
			return next < 0 ? -1 : 0;
	}
}

int json_reader__end(struct json_reader *r)
{
	json_reader__skip_ws(r);
	if (json_reader__peek(r) >= 0)
		return json_reader__fail(r, "data after the end of the JSON text");
	if (r->read_errno)
		return json_reader__fail(r, "read error");
	return 0;
}
