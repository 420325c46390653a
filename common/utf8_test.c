// SPDX-License-Identifier: MIT
/* common/utf8.h: the boundaries of RFC 3629's table, each side of each, and an exhaustive
 * check of every 1- to 3-byte input against a decoder written from the definition. */
#include "common/utf8.h"

#include <stdint.h>

#include "tests/tap.h"

/* Decode from the definition: the code point and the shortest length that encodes it. */
static size_t reference(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80 || s[0] >= 0xf8 || (s[0] & 0xc0) == 0x80)
		return 0;
	len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	if (n < len)
		return 0;
	c = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < (len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u))
		return 0; /* overlong */
	if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return len;
}

int main(void)
{
	static const struct {
		unsigned char b[4];
		size_t n, want;
		const char *what;
	} cases[] = {
		{ { 0x41 }, 1, 0, "ASCII is not a multi-byte sequence" },
		{ { 0xc2, 0x80 }, 2, 2, "U+0080" },
		{ { 0xc1, 0xbf }, 2, 0, "overlong 2-byte" },
		{ { 0xe0, 0x9f, 0xbf }, 3, 0, "overlong 3-byte" },
		{ { 0xe0, 0xa0, 0x80 }, 3, 3, "U+0800" },
		{ { 0xed, 0x9f, 0xbf }, 3, 3, "U+D7FF" },
		{ { 0xed, 0xa0, 0x80 }, 3, 0, "surrogate U+D800" },
		{ { 0xef, 0xbf, 0xbf }, 3, 3, "U+FFFF" },
		{ { 0xf0, 0x8f, 0xbf, 0xbf }, 4, 0, "overlong 4-byte" },
		{ { 0xf0, 0x90, 0x80, 0x80 }, 4, 4, "U+10000" },
		{ { 0xf4, 0x8f, 0xbf, 0xbf }, 4, 4, "U+10FFFF" },
		{ { 0xf4, 0x90, 0x80, 0x80 }, 4, 0, "above U+10FFFF" },
		{ { 0xe2, 0x82, 0xac }, 2, 0, "euro sign cut short" },
		{ { 0x80 }, 1, 0, "stray continuation byte" },
	};
	unsigned char b[4] = { 0 };
	unsigned bad = 0;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_eq_u64(xpu_utf8_len(cases[i].b, cases[i].n), cases[i].want, "%s",
			   cases[i].what);
	for (uint32_t v = 0; v < 1u << 24; v++) {
		b[0] = (unsigned char)(v >> 16);
		b[1] = (unsigned char)(v >> 8);
		b[2] = (unsigned char)v;
		for (size_t n = 1; n <= 3; n++)
			bad += xpu_utf8_len(b, n) != reference(b, n);
	}
	tap_eq_u64(bad, 0, "every 1- to 3-byte input agrees with the definition");
	for (uint32_t v = 0; v < 1u << 16; v++) {
		b[0] = 0xf0 | (unsigned char)(v >> 12 & 7);
		b[1] = (unsigned char)(0x80 | (v >> 6 & 0x3f)) ^ (unsigned char)(v >> 15 << 6);
		b[2] = (unsigned char)(0x80 | (v & 0x3f));
		b[3] = 0xbf;
		bad += xpu_utf8_len(b, 4) != reference(b, 4);
	}
	tap_eq_u64(bad, 0, "4-byte leads with every second byte agree with the definition");
	return tap_done();
}
