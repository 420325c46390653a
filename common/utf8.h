/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_COMMON_UTF8_H
#define XPUSUP_COMMON_UTF8_H

#include <stddef.h>

/*
 * xpu_utf8_len - the length (2 to 4) of the well-formed multi-byte UTF-8 sequence at s, with
 * n >= 1 bytes left, or 0 when there is none: a byte below 0x80 (ASCII is the caller's case),
 * a stray continuation byte, a lead byte that can only start an overlong form (0xc0, 0xc1) or
 * a code point above U+10FFFF (0xf5 and up), a sequence cut short by the end, an overlong
 * 3- or 4-byte form, a surrogate (U+D800-U+DFFF). That is RFC 3629's grammar: the
 * second byte's range depends on the lead byte, every later byte is 0x80-0xbf.
 *
 * The one validator of the project: the sinks decide with it which bytes of a name stay as
 * they are in JSON and HTML, and `xpusup check` which input is valid JSON text.
 */
static inline size_t xpu_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

#endif /* XPUSUP_COMMON_UTF8_H */
