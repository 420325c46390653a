/* SPDX-License-Identifier: MIT */
/*
 * A bounded MessagePack pull reader: a cursor over one span of bytes that reads one value or
 * one container header at a time. It is what the wire decoder (common/wire_dec.c) is built
 * on, and it knows nothing of the wire format.
 *
 * Why not msgpack-c's unpacker: it sizes its allocations from the lengths a message declares,
 * so a 20-byte message can ask for gigabytes. Here every read checks what is left before it
 * loads a byte, every declared length or count is checked against the bytes that are left
 * (an array element takes at least one byte, a map entry at least two) before the caller sees
 * it, nothing is allocated, and mp_reader__skip() steps over a value of any type with a
 * bounded explicit stack, not recursion. Strings and bins point into the span.
 *
 * Errors: every read returns 0 or -EBADMSG. On -EBADMSG the reader records the reason (static
 * text) and where the failed value starts (mp_reader__offset()); callers pass the error
 * straight up. Where the cursor is after a failure is not specified (a value out of range has
 * been read past), except that it never leaves the span.
 *
 * The hot reads are static inline here so that a decoder's per-key loop can inline them
 * (common/wire_dec.c flattens its event loop for that); skip, rare, is in msgpack_reader.c.
 */
#ifndef XPUSUP_COMMON_MSGPACK_READER_H
#define XPUSUP_COMMON_MSGPACK_READER_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/types.h>

/* The deepest nesting mp_reader__skip() follows whatever max_depth says: its explicit stack
 * is a fixed array of this many levels (plus one for the value itself). */
#define MP_READER_DEPTH_MAX 32

struct mp_reader {
	const __u8 *base; /* the span: [base, end) */
	const __u8 *p; /* the next byte to read */
	const __u8 *end;
	__u32 max_depth; /* containers nested deeper than this fail; <= MP_READER_DEPTH_MAX */
	const char *reason; /* the last failure's reason; NULL: none */
	const __u8 *fail_at; /* and where in the span it happened */
};

/* mp_reader__init - a reader over [buf, buf + len) (buf NULL: an empty span) that follows
 * containers max_depth deep at most (clamped to MP_READER_DEPTH_MAX). */
static inline void mp_reader__init(struct mp_reader *r, const void *buf, size_t len,
				   __u32 max_depth)
{
	r->base = buf ? buf : (const void *)"";
	r->p = r->base;
	r->end = buf ? r->base + len : r->base;
	r->max_depth = max_depth < MP_READER_DEPTH_MAX ? max_depth : MP_READER_DEPTH_MAX;
	r->reason = NULL;
	r->fail_at = NULL;
}

/* mp_reader__fail - record reason (static text) at `at` and return -EBADMSG: for callers
 * whose own checks (a range, a shape) reject a value the reader read fine. */
static inline int mp_reader__fail(struct mp_reader *r, const __u8 *at, const char *reason)
{
	r->reason = reason;
	r->fail_at = at;
	return -EBADMSG;
}

static inline size_t mp_reader__left(const struct mp_reader *r)
{
	return (size_t)(r->end - r->p);
}

/* Where the last failure happened, as an offset into the span (0 when none). */
static inline size_t mp_reader__offset(const struct mp_reader *r)
{
	return r->fail_at ? (size_t)(r->fail_at - r->base) : 0;
}

/* mp_reader__enter - a container that starts at `at` and sits at depth (the outermost value
 * is at depth 1): 0, or -EBADMSG "depth limit" past max_depth. */
static inline int mp_reader__enter(struct mp_reader *r, const __u8 *at, __u32 depth)
{
	return depth > r->max_depth ? mp_reader__fail(r, at, "depth limit") : 0;
}

/* A big-endian integer of n = 1, 2, 4 or 8 bytes (the host is little-endian: event.h). */
static inline __u64 mp_load_be(const __u8 *p, size_t n)
{
	__u16 v16;
	__u32 v32;
	__u64 v64;

	switch (n) {
	case 1:
		return p[0];
	case 2:
		memcpy(&v16, p, 2);
		return __builtin_bswap16(v16);
	case 4:
		memcpy(&v32, p, 4);
		return __builtin_bswap32(v32);
	case 8:
		memcpy(&v64, p, 8);
		return __builtin_bswap64(v64);
	default:
		/* no caller passes another width; an explicit case 8 also keeps gcc's
		 * -Warray-bounds (under -fsanitize) from pairing the 8-byte load with a
		 * shorter literal on a path it cannot rule out */
		return 0;
	}
}

/* The type byte of the next value, not consumed. 0 or -EBADMSG ("truncated"). */
static inline int mp_reader__peek(struct mp_reader *r, __u8 *b)
{
	if (!mp_reader__left(r))
		return mp_reader__fail(r, r->p, "truncated");
	*b = *r->p;
	return 0;
}

/* mp_reader__nil - a nil. 0 or -EBADMSG ("expected nil", "truncated"). */
static inline int mp_reader__nil(struct mp_reader *r)
{
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if (b != 0xc0)
		return mp_reader__fail(r, r->p, "expected nil");
	r->p++;
	return 0;
}

/* mp_reader__bool - a true or a false. 0 or -EBADMSG ("expected a boolean", "truncated"). */
static inline int mp_reader__bool(struct mp_reader *r, bool *v)
{
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if (b != 0xc2 && b != 0xc3)
		return mp_reader__fail(r, r->p, "expected a boolean");
	*v = b == 0xc3;
	r->p++;
	return 0;
}

/*
 * mp_reader__int - one integer in any of MessagePack's encodings (fixint, uint8..64,
 * int8..64). *neg tells a negative value, whose two's complement is in *v; the signed
 * encodings of non-negative values count as non-negative. 0 or -EBADMSG ("expected an
 * integer", "truncated").
 */
static inline int mp_reader__int(struct mp_reader *r, __u64 *v, bool *neg)
{
	const __u8 *at = r->p;
	size_t n;
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if (b <= 0x7f || b >= 0xe0) {
		*v = (__u64)(__s64)(__s8)b;
		*neg = b >= 0xe0;
		r->p++;
		return 0;
	}
	if (b < 0xcc || b > 0xd3)
		return mp_reader__fail(r, at, "expected an integer");
	n = (size_t)1 << (b & 3); /* cc..cf and d0..d3 carry 1, 2, 4, 8 bytes */
	if (mp_reader__left(r) < 1 + n)
		return mp_reader__fail(r, at, "truncated");
	*v = mp_load_be(at + 1, n);
	*neg = false;
	if (b >= 0xd0 && (*v >> (8 * n - 1)) & 1) {
		/* sign-extend the int8..int64 payload */
		if (n < 8)
			*v |= ~(__u64)0 << (8 * n);
		*neg = true;
	}
	r->p += 1 + n;
	return 0;
}

/* mp_reader__uint - an integer in 0..max in any encoding. 0 or -EBADMSG (those of
 * mp_reader__int, "negative integer for an unsigned field", "integer out of range"). */
static inline int mp_reader__uint(struct mp_reader *r, __u64 max, __u64 *v)
{
	const __u8 *at = r->p;
	bool neg;
	int ret;

	ret = mp_reader__int(r, v, &neg);
	if (ret)
		return ret;
	if (neg)
		return mp_reader__fail(r, at, "negative integer for an unsigned field");
	if (*v > max)
		return mp_reader__fail(r, at, "integer out of range");
	return 0;
}

static inline int mp_reader__u64(struct mp_reader *r, __u64 *out)
{
	return mp_reader__uint(r, UINT64_MAX, out);
}

static inline int mp_reader__u32(struct mp_reader *r, __u32 *out)
{
	__u64 v;
	int ret = mp_reader__uint(r, UINT32_MAX, &v);

	if (!ret)
		*out = (__u32)v;
	return ret;
}

static inline int mp_reader__u16(struct mp_reader *r, __u16 *out)
{
	__u64 v;
	int ret = mp_reader__uint(r, UINT16_MAX, &v);

	if (!ret)
		*out = (__u16)v;
	return ret;
}

/* mp_reader__s32 - an integer in INT32_MIN..INT32_MAX in any encoding. */
static inline int mp_reader__s32(struct mp_reader *r, __s32 *out)
{
	const __u8 *at = r->p;
	bool neg;
	__u64 v;
	int ret;

	ret = mp_reader__int(r, &v, &neg);
	if (ret)
		return ret;
	if (neg ? (__s64)v < INT32_MIN : v > INT32_MAX)
		return mp_reader__fail(r, at, "integer out of range");
	*out = (__s32)(__s64)v;
	return 0;
}

/* mp_reader__float - a float32 or a float64 (not an integer). 0 or -EBADMSG ("expected a
 * float", "truncated"). */
static inline int mp_reader__float(struct mp_reader *r, double *out)
{
	const __u8 *at = r->p;
	union {
		__u32 u;
		float f;
	} f32;
	union {
		__u64 u;
		double d;
	} f64;
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if (b == 0xca) {
		if (mp_reader__left(r) < 5)
			return mp_reader__fail(r, at, "truncated");
		f32.u = (__u32)mp_load_be(at + 1, 4);
		*out = f32.f;
		r->p += 5;
		return 0;
	}
	if (b == 0xcb) {
		if (mp_reader__left(r) < 9)
			return mp_reader__fail(r, at, "truncated");
		f64.u = mp_load_be(at + 1, 8);
		*out = f64.d;
		r->p += 9;
		return 0;
	}
	return mp_reader__fail(r, at, "expected a float");
}

/* mp_reader__str - a str of any width (fixstr, str8..32); *s points into the span. 0 or
 * -EBADMSG (not_str when the value is not a str, "truncated", "string longer than the
 * message"). The bytes are not checked (UTF-8 or not is the caller's business). */
static inline int mp_reader__str(struct mp_reader *r, const __u8 **s, __u32 *len,
				 const char *not_str)
{
	const __u8 *at = r->p;
	size_t hdr;
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if ((b & 0xe0) == 0xa0) {
		hdr = 1;
		*len = b & 0x1f;
	} else if (b >= 0xd9 && b <= 0xdb) {
		hdr = 1 + ((size_t)1 << (b - 0xd9)); /* str8, str16, str32 */
		if (mp_reader__left(r) < hdr)
			return mp_reader__fail(r, at, "truncated");
		*len = (__u32)mp_load_be(at + 1, hdr - 1);
	} else {
		return mp_reader__fail(r, at, not_str);
	}
	if (mp_reader__left(r) - hdr < *len)
		return mp_reader__fail(r, at, "string longer than the message");
	*s = at + hdr;
	r->p += hdr + *len;
	return 0;
}

/* mp_reader__bin - a bin8..32; *s points into the span. 0 or -EBADMSG ("expected a bin",
 * "truncated", "bin or ext longer than the message"). */
static inline int mp_reader__bin(struct mp_reader *r, const __u8 **s, __u32 *len)
{
	const __u8 *at = r->p;
	size_t hdr;
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if (b < 0xc4 || b > 0xc6)
		return mp_reader__fail(r, at, "expected a bin");
	hdr = 1 + ((size_t)1 << (b - 0xc4));
	if (mp_reader__left(r) < hdr)
		return mp_reader__fail(r, at, "truncated");
	*len = (__u32)mp_load_be(at + 1, hdr - 1);
	if (mp_reader__left(r) - hdr < *len)
		return mp_reader__fail(r, at, "bin or ext longer than the message");
	*s = at + hdr;
	r->p += hdr + *len;
	return 0;
}

/* An array or map header (map: is_map); *n is its count, checked against the bytes left. */
static inline int mp_reader__container(struct mp_reader *r, bool is_map, __u32 *n,
				       const char *wrong_type)
{
	const __u8 *at = r->p;
	__u8 fix = is_map ? 0x80 : 0x90, wide = is_map ? 0xde : 0xdc;
	size_t hdr;
	__u8 b;

	if (mp_reader__peek(r, &b))
		return -EBADMSG;
	if ((b & 0xf0) == fix) {
		hdr = 1;
		*n = b & 0x0f;
	} else if (b == wide || b == wide + 1) {
		hdr = b == wide ? 3 : 5;
		if (mp_reader__left(r) < hdr)
			return mp_reader__fail(r, at, "truncated");
		*n = (__u32)mp_load_be(at + 1, hdr - 1);
	} else {
		return mp_reader__fail(r, at, wrong_type);
	}
	if ((__u64)*n * (is_map ? 2 : 1) > mp_reader__left(r) - hdr)
		return mp_reader__fail(r, at,
				       is_map ? "map longer than the message" :
						"array longer than the message");
	r->p += hdr;
	return 0;
}

/* mp_reader__array / mp_reader__map - a container's header: *n elements (entries) follow,
 * which the caller reads. 0 or -EBADMSG (wrong_type when the value is something else,
 * "truncated", "array longer than the message", "map longer than the message"). Depth is the
 * caller's to check, with mp_reader__enter(). */
static inline int mp_reader__array(struct mp_reader *r, __u32 *n, const char *wrong_type)
{
	return mp_reader__container(r, false, n, wrong_type);
}

static inline int mp_reader__map(struct mp_reader *r, __u32 *n, const char *wrong_type)
{
	return mp_reader__container(r, true, n, wrong_type);
}

/*
 * mp_reader__skip - step over one value of any type, containers and their contents included.
 * depth: the depth the value has if it is a container (its contents are one deeper). Time is
 * linear in the bytes skipped. 0 or -EBADMSG ("truncated", "depth limit", "reserved type
 * byte 0xc1", "string longer than the message", "bin or ext longer than the message", "array
 * longer than the message", "map longer than the message").
 */
int mp_reader__skip(struct mp_reader *r, __u32 depth);

#endif /* XPUSUP_COMMON_MSGPACK_READER_H */
