// SPDX-License-Identifier: MIT
/*
 * msgpack_reader_test - the bounded MessagePack reader (common/msgpack_reader.h) on its own:
 * every type at every width it comes in, the boundaries between widths, and the malformed
 * and truncated forms of each. Every prefix of every valid value must fail with -EBADMSG
 * without reading past the prefix: each prefix is copied into a buffer of exactly its length
 * (ASan builds catch a read past it), and the failure must be placed inside it.
 */
#include "common/msgpack_reader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

struct sample {
	const char *what;
	const __u8 *bytes;
	size_t len;
};

#define B(...) (const __u8[]){ __VA_ARGS__ }, sizeof((const __u8[]){ __VA_ARGS__ })

/* One read of a value: 0 or -EBADMSG, the value kept in *out as an integer for comparison. */
typedef int (*read_fn)(struct mp_reader *r, __u64 *out);

static int read_u64(struct mp_reader *r, __u64 *out)
{
	return mp_reader__u64(r, out);
}

static int read_u32(struct mp_reader *r, __u64 *out)
{
	__u32 v = 0;
	int ret = mp_reader__u32(r, &v);

	*out = v;
	return ret;
}

static int read_u16(struct mp_reader *r, __u64 *out)
{
	__u16 v = 0;
	int ret = mp_reader__u16(r, &v);

	*out = v;
	return ret;
}

static int read_s32(struct mp_reader *r, __u64 *out)
{
	__s32 v = 0;
	int ret = mp_reader__s32(r, &v);

	*out = (__u64)(__s64)v;
	return ret;
}

static int read_nil(struct mp_reader *r, __u64 *out)
{
	*out = 0;
	return mp_reader__nil(r);
}

static int read_bool(struct mp_reader *r, __u64 *out)
{
	bool v = false;
	int ret = mp_reader__bool(r, &v);

	*out = v;
	return ret;
}

static int read_str_len(struct mp_reader *r, __u64 *out)
{
	const __u8 *s;
	__u32 len = 0;
	int ret = mp_reader__str(r, &s, &len, "not a str");

	*out = len;
	return ret;
}

static int read_bin_len(struct mp_reader *r, __u64 *out)
{
	const __u8 *s;
	__u32 len = 0;
	int ret = mp_reader__bin(r, &s, &len);

	*out = len;
	return ret;
}

static int read_array_n(struct mp_reader *r, __u64 *out)
{
	__u32 n = 0;
	int ret = mp_reader__array(r, &n, "not an array");

	*out = n;
	return ret;
}

static int read_map_n(struct mp_reader *r, __u64 *out)
{
	__u32 n = 0;
	int ret = mp_reader__map(r, &n, "not a map");

	*out = n;
	return ret;
}

static int read_skip(struct mp_reader *r, __u64 *out)
{
	*out = 0;
	return mp_reader__skip(r, 1);
}

/*
 * Read bytes[0..len) with fn: expect 0, *out == want and the cursor at consumed. Then every
 * proper prefix must fail with -EBADMSG, leave the cursor inside the span and record a reason
 * at an offset inside the prefix (a container's sample holds exactly its count of the
 * smallest elements, so that a prefix cannot hold them).
 */
static void expect_read(const char *what, read_fn fn, const __u8 *bytes, size_t len,
			size_t consumed, __u64 want)
{
	struct mp_reader r;
	__u64 got = 0;
	size_t cut;
	int ret, prefix_ok = 1;

	mp_reader__init(&r, bytes, len, 8);
	ret = fn(&r, &got);
	tap_ok(ret == 0 && got == want && (size_t)(r.p - r.base) == consumed,
	       "%s: reads %llu, consumes %zu bytes (ret %d, got %llu, consumed %zu)", what,
	       (unsigned long long)want, consumed, ret, (unsigned long long)got,
	       (size_t)(r.p - r.base));
	for (cut = 0; cut < len; cut++) {
		__u8 *copy = malloc(cut ? cut : 1);

		memcpy(copy, bytes, cut);
		mp_reader__init(&r, cut ? copy : NULL, cut, 8);
		ret = fn(&r, &got);
		if (ret != -EBADMSG || r.p > r.end || !r.reason || mp_reader__offset(&r) > cut)
			prefix_ok = 0;
		free(copy);
	}
	tap_ok(prefix_ok, "%s: every truncation is -EBADMSG and reads nothing", what);
}

static void expect_bad(const char *what, read_fn fn, const __u8 *bytes, size_t len,
		       const char *reason)
{
	struct mp_reader r;
	__u64 got;
	int ret;

	mp_reader__init(&r, bytes, len, 2);
	ret = fn(&r, &got);
	if (!tap_ok(ret == -EBADMSG && r.reason && !strcmp(r.reason, reason) &&
			    mp_reader__offset(&r) < (len ? len : 1),
		    "%s: -EBADMSG \"%s\"", what, reason))
		fprintf(stderr, "#   got %d \"%s\"\n", ret, r.reason ? r.reason : "(none)");
}

static void test_ints(void)
{
	/* every encoding of an unsigned integer, at the edges of its width */
	expect_read("fixint 0", read_u64, B(0x00), 1, 0);
	expect_read("fixint 127", read_u64, B(0x7f), 1, 127);
	expect_read("uint8 255", read_u64, B(0xcc, 0xff), 2, 255);
	expect_read("uint16 65535", read_u64, B(0xcd, 0xff, 0xff), 3, 65535);
	expect_read("uint32 max", read_u64, B(0xce, 0xff, 0xff, 0xff, 0xff), 5, UINT32_MAX);
	expect_read("uint64 max", read_u64, B(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		    9, UINT64_MAX);
	expect_read("uint64 0x0102..08", read_u64, B(0xcf, 1, 2, 3, 4, 5, 6, 7, 8), 9,
		    0x0102030405060708ull);
	/* non-negative values in signed encodings are unsigned values too */
	expect_read("int8 100", read_u64, B(0xd0, 100), 2, 100);
	expect_read("int16 300", read_u64, B(0xd1, 0x01, 0x2c), 3, 300);
	expect_read("int32 70000", read_u64, B(0xd2, 0, 1, 0x11, 0x70), 5, 70000);
	expect_read("int64 1", read_u64, B(0xd3, 0, 0, 0, 0, 0, 0, 0, 1), 9, 1);
	/* the member's width bounds it */
	expect_read("u16 65535", read_u16, B(0xcd, 0xff, 0xff), 3, 65535);
	expect_bad("u16 65536", read_u16, B(0xce, 0, 1, 0, 0), "integer out of range");
	expect_read("u32 max", read_u32, B(0xce, 0xff, 0xff, 0xff, 0xff), 5, UINT32_MAX);
	expect_bad("u32 2^32", read_u32, B(0xcf, 0, 0, 0, 1, 0, 0, 0, 0), "integer out of range");
	expect_bad("negative fixint as unsigned", read_u64, B(0xff),
		   "negative integer for an unsigned field");
	expect_bad("int8 -1 as unsigned", read_u64, B(0xd0, 0xff),
		   "negative integer for an unsigned field");
	expect_bad("int64 min as unsigned", read_u64, B(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0),
		   "negative integer for an unsigned field");
	/* signed */
	expect_read("s32 fixint -1", read_s32, B(0xff), 1, (__u64)-1);
	expect_read("s32 fixint -32", read_s32, B(0xe0), 1, (__u64)-32);
	expect_read("s32 int8 -128", read_s32, B(0xd0, 0x80), 2, (__u64)-128);
	expect_read("s32 int16 -32768", read_s32, B(0xd1, 0x80, 0), 3, (__u64)-32768);
	expect_read("s32 int32 min", read_s32, B(0xd2, 0x80, 0, 0, 0), 5, (__u64)(__s64)INT32_MIN);
	expect_read("s32 int64 -2", read_s32,
		    B(0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe), 9, (__u64)-2);
	expect_read("s32 uint32 int32 max", read_s32, B(0xce, 0x7f, 0xff, 0xff, 0xff), 5,
		    INT32_MAX);
	expect_bad("s32 int64 below int32", read_s32,
		   B(0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff), "integer out of range");
	expect_bad("s32 uint32 2^31", read_s32, B(0xce, 0x80, 0, 0, 0), "integer out of range");
	/* other types where an integer belongs */
	expect_bad("nil as integer", read_u64, B(0xc0), "expected an integer");
	expect_bad("float as integer", read_u64, B(0xca, 0, 0, 0, 0), "expected an integer");
	expect_bad("str as integer", read_u64, B(0xa1, 'x'), "expected an integer");
	expect_bad("empty span", read_u64, NULL, 0, "truncated");
}

/* Not inlined: GCC's bounds warning would see the 8-byte load of a float64 applied to the
 * float32 samples below, on a path their first byte rules out. */
static __attribute__((noinline)) int read_float(struct mp_reader *r, double *d)
{
	return mp_reader__float(r, d);
}

static void test_floats(void)
{
	static const __u8 f32_half[] = { 0xca, 0x3f, 0x00, 0x00, 0x00 };
	static const __u8 f64_third[] = { 0xcb, 0x3f, 0xd5, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55 };
	static const __u8 f64_nan[] = { 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0 };
	struct mp_reader r;
	double d = 0;
	size_t cut;
	int ok = 1;

	mp_reader__init(&r, f32_half, sizeof(f32_half), 1);
	tap_ok(!read_float(&r, &d) && d == 0.5 && r.p == r.end, "float32 0.5");
	mp_reader__init(&r, f64_third, sizeof(f64_third), 1);
	tap_ok(!read_float(&r, &d) && d == 1.0 / 3 && r.p == r.end, "float64 1/3");
	mp_reader__init(&r, f64_nan, sizeof(f64_nan), 1);
	tap_ok(!read_float(&r, &d) && isnan(d), "float64 NaN is read (checks are the caller's)");
	for (cut = 0; cut < sizeof(f64_third); cut++) {
		mp_reader__init(&r, cut ? f64_third : NULL, cut, 1);
		if (read_float(&r, &d) != -EBADMSG || strcmp(r.reason, "truncated"))
			ok = 0;
	}
	for (cut = 0; cut < sizeof(f32_half); cut++) {
		mp_reader__init(&r, cut ? f32_half : NULL, cut, 1);
		if (read_float(&r, &d) != -EBADMSG || strcmp(r.reason, "truncated"))
			ok = 0;
	}
	tap_ok(ok, "every truncated float32 and float64 is \"truncated\"");
	mp_reader__init(&r, (const __u8[]){ 0x01 }, 1, 1);
	tap_ok(read_float(&r, &d) == -EBADMSG && !strcmp(r.reason, "expected a float"),
	       "an integer is not a float");
}

static void test_scalars(void)
{
	expect_read("nil", read_nil, B(0xc0), 1, 0);
	expect_bad("false as nil", read_nil, B(0xc2), "expected nil");
	expect_read("false", read_bool, B(0xc2), 1, 0);
	expect_read("true", read_bool, B(0xc3), 1, 1);
	expect_bad("nil as bool", read_bool, B(0xc0), "expected a boolean");
	expect_bad("0 as bool", read_bool, B(0x00), "expected a boolean");
}

static void test_strs(void)
{
	static __u8 str8[2 + 200], str16[3 + 300], str32[5 + 7], bin16[3 + 256];
	struct mp_reader r;
	const __u8 *s;
	__u32 len;

	str8[0] = 0xd9;
	str8[1] = 200;
	str16[0] = 0xda;
	str16[1] = 300 >> 8;
	str16[2] = 300 & 0xff;
	str32[0] = 0xdb;
	str32[4] = 7;
	bin16[0] = 0xc5;
	bin16[1] = 1;
	expect_read("fixstr empty", read_str_len, B(0xa0), 1, 0);
	expect_read("fixstr 31", read_str_len,
		    B(0xbf, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
		      21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31),
		    32, 31);
	expect_read("str8 200", read_str_len, str8, sizeof(str8), sizeof(str8), 200);
	expect_read("str16 300", read_str_len, str16, sizeof(str16), sizeof(str16), 300);
	expect_read("str32 7", read_str_len, str32, sizeof(str32), sizeof(str32), 7);
	expect_bad("str8 longer than the span", read_str_len, B(0xd9, 5, 'a', 'b'),
		   "string longer than the message");
	expect_bad("str32 of 4 GiB", read_str_len, B(0xdb, 0xff, 0xff, 0xff, 0xff, 'a'),
		   "string longer than the message");
	expect_bad("bin as str", read_str_len, B(0xc4, 0), "not a str");
	expect_read("bin8 empty", read_bin_len, B(0xc4, 0), 2, 0);
	expect_read("bin8 3", read_bin_len, B(0xc4, 3, 1, 2, 3), 5, 3);
	expect_read("bin16 256", read_bin_len, bin16, sizeof(bin16), sizeof(bin16), 256);
	expect_read("bin32 1", read_bin_len, B(0xc6, 0, 0, 0, 1, 9), 6, 1);
	expect_bad("bin16 longer than the span", read_bin_len, B(0xc5, 0, 9, 1),
		   "bin or ext longer than the message");
	expect_bad("str as bin", read_bin_len, B(0xa1, 'x'), "expected a bin");

	mp_reader__init(&r, (const __u8[]){ 0xa3, 'a', 'b', 'c', 0x01 }, 5, 1);
	tap_ok(!mp_reader__str(&r, &s, &len, "x") && len == 3 && !memcmp(s, "abc", 3) &&
		       s == r.base + 1 && *r.p == 0x01,
	       "a str points into the span, the cursor after it");
}

static void test_containers(void)
{
	static __u8 arr16[3 + 1000], arr32[5 + 3], map16[3 + 2 * 20];

	arr16[0] = 0xdc;
	arr16[1] = 1000 >> 8;
	arr16[2] = 1000 & 0xff;
	arr32[0] = 0xdd;
	arr32[4] = 3; /* array32 may carry a small count too */
	map16[0] = 0xde;
	map16[2] = 20;
	expect_read("fixarray 0", read_array_n, B(0x90), 1, 0);
	expect_read("fixarray 15", read_array_n,
		    B(0x9f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 1, 15);
	/* a header is read alone: its elements are the caller's */
	expect_read("array16 1000", read_array_n, arr16, sizeof(arr16), 3, 1000);
	expect_read("array32 3", read_array_n, arr32, sizeof(arr32), 5, 3);
	expect_read("fixmap 1", read_map_n, B(0x81, 0x00, 0x00), 1, 1);
	expect_read("map16 20", read_map_n, map16, sizeof(map16), 3, 20);
	expect_read("map32 1", read_map_n, B(0xdf, 0, 0, 0, 1, 0, 0), 5, 1);
	expect_bad("array16 longer than the span", read_array_n, B(0xdc, 0, 3, 0, 0),
		   "array longer than the message");
	expect_bad("array32 of 4 G elements", read_array_n, B(0xdd, 0xff, 0xff, 0xff, 0xff),
		   "array longer than the message");
	/* a map entry takes two bytes at least */
	expect_bad("fixmap 2 in 4 bytes", read_map_n, B(0x82, 0, 0, 0),
		   "map longer than the message");
	expect_bad("map as array", read_array_n, B(0x80), "not an array");
	expect_bad("array as map", read_map_n, B(0x90), "not a map");
}

static void test_skip(void)
{
	const struct sample ok[] = {
		{ "fixint", B(0x05) },
		{ "nil", B(0xc0) },
		{ "true", B(0xc3) },
		{ "negative fixint", B(0xe5) },
		{ "uint64", B(0xcf, 1, 2, 3, 4, 5, 6, 7, 8) },
		{ "int16", B(0xd1, 0xff, 0xfe) },
		{ "float32", B(0xca, 0, 0, 0, 0) },
		{ "float64", B(0xcb, 0, 0, 0, 0, 0, 0, 0, 0) },
		{ "fixstr", B(0xa2, 'h', 'i') },
		{ "str8", B(0xd9, 1, 'x') },
		{ "str16", B(0xda, 0, 1, 'x') },
		{ "str32", B(0xdb, 0, 0, 0, 1, 'x') },
		{ "bin8", B(0xc4, 2, 1, 2) },
		{ "bin32", B(0xc6, 0, 0, 0, 1, 7) },
		{ "fixext4", B(0xd6, 1, 1, 2, 3, 4) },
		{ "fixext16", B(0xd8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16) },
		{ "ext8", B(0xc7, 2, 9, 1, 2) },
		{ "ext16", B(0xc8, 0, 1, 9, 1) },
		{ "ext32", B(0xc9, 0, 0, 0, 0, 9) },
		{ "array16 of mixed", B(0xdc, 0, 3, 0x01, 0xa1, 'a', 0xc0) },
		{ "array32 empty", B(0xdd, 0, 0, 0, 0) },
		{ "map of array", B(0x81, 0xa1, 'k', 0x92, 0x01, 0x02) },
		{ "map16 1", B(0xde, 0, 1, 0x01, 0x02) },
		{ "map32 1", B(0xdf, 0, 0, 0, 1, 0x01, 0x02) },
		{ "nested to depth 3", B(0x91, 0x91, 0x91, 0x05) },
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		/* a trailing byte after each: skip stops at the value's end */
		__u8 *buf = malloc(ok[i].len + 1);
		struct mp_reader r;
		int ret;

		memcpy(buf, ok[i].bytes, ok[i].len);
		buf[ok[i].len] = 0x42;
		mp_reader__init(&r, buf, ok[i].len + 1, 8);
		ret = mp_reader__skip(&r, 1);
		tap_ok(!ret && r.p == buf + ok[i].len, "skip %s", ok[i].what);
		free(buf);
		expect_read(ok[i].what, read_skip, ok[i].bytes, ok[i].len, ok[i].len, 0);
	}
	expect_bad("skip 0xc1", read_skip, B(0xc1), "reserved type byte 0xc1");
	expect_bad("skip an array in an array in an array past depth 2", read_skip,
		   B(0x91, 0x91, 0x91, 0x00), "depth limit");
	expect_bad("skip a map of 2 G entries", read_skip, B(0xdf, 0x7f, 0xff, 0xff, 0xff, 0x00),
		   "map longer than the message");
	expect_bad("skip an ext longer than the span", read_skip, B(0xc7, 9, 1, 0),
		   "bin or ext longer than the message");
	expect_bad("skip a str longer than the span", read_skip, B(0xa5, 'a'),
		   "string longer than the message");
}

static void test_depth_clamp(void)
{
	/* 40 nested arrays: past MP_READER_DEPTH_MAX whatever max_depth the caller asked for */
	__u8 deep[41];
	struct mp_reader r;

	memset(deep, 0x91, 40);
	deep[40] = 0x00;
	mp_reader__init(&r, deep, sizeof(deep), 1000);
	tap_ok(r.max_depth == MP_READER_DEPTH_MAX && mp_reader__skip(&r, 1) == -EBADMSG &&
		       !strcmp(r.reason, "depth limit"),
	       "max_depth is clamped to MP_READER_DEPTH_MAX");
	mp_reader__init(&r, deep + 40 - MP_READER_DEPTH_MAX + 1, MP_READER_DEPTH_MAX, 1000);
	tap_ok(!mp_reader__skip(&r, 1) && r.p == r.end, "%d nested arrays are skipped",
	       MP_READER_DEPTH_MAX - 1);
}

int main(void)
{
	test_ints();
	test_floats();
	test_scalars();
	test_strs();
	test_containers();
	test_skip();
	test_depth_clamp();
	return tap_done();
}
