/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_COMMON_JSON_ESCAPE_H
#define XPUSUP_COMMON_JSON_ESCAPE_H
/*
 * The project's one JSON string escaper: every name a program of ours writes into JSON
 * (stats.json, trace.json, the flame graph page's data, `xpusup status --json`) goes through
 * it, so one kernel name is spelled the same way in every file.
 *
 * Names are bytes (docs/wire.md): nothing promises UTF-8. The byte policy, so that every
 * output is valid JSON (RFC 8259, UTF-8) and no byte is lost:
 *
 *	well-formed UTF-8 (xpu_utf8_len)	kept as it is
 *	printable ASCII				kept, but '"' and '\' as \" and \\
 *	control bytes (0x00-0x1f) and 0x7f	\u00XX (no \n, \t shorthands: one rule)
 *	any other byte (not part of		\u00XX: the code point of the same value
 *	  well-formed UTF-8: 0x80-0xff)		  (Latin-1), so the byte can be recovered
 *
 * XPU_JSON_ESCAPE_SCRIPT also writes '<' and '>' as \u003c and \u003e, for a string inside an
 * HTML <script> (the flame graph page): "</script>" in a name must not end the script. The
 * value of the string is the same either way.
 *
 * Hex digits are lowercase. Inline, like common/utf8.h: the timeline sink escapes every
 * event's names and stack on its hot path.
 */
#include <stddef.h>
#include <string.h>

#include "common/utf8.h"

#define XPU_JSON_ESCAPE_SCRIPT 1u

/* The most bytes n input bytes become: \u00XX for each. */
#define XPU_JSON_ESCAPED_MAX(n) (6 * (size_t)(n))

/*
 * xpu_json_escape - the escaped characters of s (n bytes), without the quotes around them and
 * without a NUL, into dst (cap bytes). Only whole characters are written: it stops before the
 * first one that does not fit. Returns the bytes written; *used (when not NULL) says how many
 * bytes of s they stand for. With cap >= XPU_JSON_ESCAPED_MAX(n) everything fits.
 */
static inline size_t xpu_json_escape(char *dst, size_t cap, const char *s, size_t n, size_t *used,
				     unsigned int flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, k;

	while (i < n) {
		unsigned char c = u[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' &&
		    (!(flags & XPU_JSON_ESCAPE_SCRIPT) || (c != '<' && c != '>'))) {
			if (o == cap)
				break;
			dst[o++] = (char)c;
			i++;
			continue;
		}
		if (c >= 0x80 && (k = xpu_utf8_len(u + i, n - i))) {
			if (cap - o < k)
				break;
			memcpy(dst + o, u + i, k);
			o += k;
			i += k;
			continue;
		}
		if (c == '"' || c == '\\') {
			if (cap - o < 2)
				break;
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else { /* a control byte, 0x7f, a byte outside UTF-8, or '<' '>' in a script */
			if (cap - o < 6)
				break;
			memcpy(dst + o, "\\u00", 4);
			dst[o + 4] = hex[c >> 4];
			dst[o + 5] = hex[c & 15];
			o += 6;
		}
		i++;
	}
	if (used)
		*used = i;
	return o;
}

/*
 * xpu_json_escape_to - the same, handed to write(ctx, bytes, len) in pieces, for a writer
 * without a buffer of its own (a FILE, an out.h file).
 */
static inline void xpu_json_escape_to(const char *s, size_t n, unsigned int flags,
				      void (*write)(void *ctx, const char *p, size_t len),
				      void *ctx)
{
	char buf[256];
	size_t len, used;

	while (n) {
		len = xpu_json_escape(buf, sizeof(buf), s, n, &used, flags);
		write(ctx, buf, len);
		s += used;
		n -= used;
	}
}

#endif /* XPUSUP_COMMON_JSON_ESCAPE_H */
