/* SPDX-License-Identifier: MIT */
/* Appending formatted text to a fixed buffer, for code that builds JSON or messages. */
#ifndef XPUSUP_COMMON_APPENDF_H
#define XPUSUP_COMMON_APPENDF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * xpu_appendf - append to buf (size bytes) at *len like snprintf, always NUL-terminated when
 * size > 0. *len counts what would have been written, so *len >= size after the last call
 * means the text did not fit (as snprintf's return value says).
 */
__attribute__((format(printf, 4, 5))) static inline void
xpu_appendf(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

#endif /* XPUSUP_COMMON_APPENDF_H */
