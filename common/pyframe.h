/* SPDX-License-Identifier: MIT */
/*
 * Python frames as ordinary frames (docs/python.md, docs/wire.md#python-frames).
 *
 * The correlator merges a thread's Python frames into its user stack; each one becomes a
 * frame like any other, with an address and a name. The address is not an instruction
 * pointer: bit 63 clear and bit 62 set, which no user or kernel address on x86-64 or arm64
 * has, then the line in bits 47..61 and the code object's address in bits 0..46:
 *
 *   0 1 LLLLLLLLLLLLLLL CCCC...C (47 bits)
 *
 * so that every reader can tell a Python frame from a native one by its address alone, and
 * the same function at the same line is the same frame everywhere (folded stacks, the
 * timeline's frame table). Its name is "QUALNAME (FILE:LINE)", as py-spy writes it; readers
 * that aggregate by function (flame graphs, stats) cut the ":LINE" off with
 * xpu_pyframe__function_len().
 */
#ifndef XPUSUP_COMMON_PYFRAME_H
#define XPUSUP_COMMON_PYFRAME_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#ifndef __bpf__ /* xpu_pyframe__function is user space's: BPF has no stdio */
#include <stdio.h>
#include <string.h>
#endif

#define XPU_PYFRAME_TAG (1ull << 62)
#define XPU_PYFRAME_LINE_SHIFT 47
#define XPU_PYFRAME_CODE_MASK ((1ull << XPU_PYFRAME_LINE_SHIFT) - 1)
#define XPU_PYFRAME_LINE_MAX 0x7fffu /* a later line is written as this one */
/* The marker the flame graph and stats put before a Python frame's function. */
#define XPU_PYFRAME_MARK "[py] "

static inline bool xpu_pyframe__is(__u64 ip)
{
	return ip >> 62 == 1;
}

/* The frame address of code at line; 0 (never a Python frame) when code does not fit in
 * 47 bits (a 5-level page table's upper half): the caller keeps the native frame then. */
static inline __u64 xpu_pyframe__ip(__u64 code, __u32 line)
{
	if (!code || code > XPU_PYFRAME_CODE_MASK)
		return 0;
	if (line > XPU_PYFRAME_LINE_MAX)
		line = XPU_PYFRAME_LINE_MAX;
	return XPU_PYFRAME_TAG | (__u64)line << XPU_PYFRAME_LINE_SHIFT | code;
}

static inline __u64 xpu_pyframe__code(__u64 ip)
{
	return ip & XPU_PYFRAME_CODE_MASK;
}

static inline __u32 xpu_pyframe__line(__u64 ip)
{
	return (__u32)(ip >> XPU_PYFRAME_LINE_SHIFT) & XPU_PYFRAME_LINE_MAX;
}

/*
 * The bytes of a Python frame's name "QUALNAME (FILE:LINE)" that name its function,
 * "QUALNAME (FILE", without the line and the closing parenthesis; len for a name that does
 * not end that way (then it is the function's name as it is). The line is the digits after
 * the last ':', so a ':' in the file's name is kept.
 */
static inline size_t xpu_pyframe__function_len(const char *name, size_t len)
{
	size_t i = len;

	if (!len || name[len - 1] != ')')
		return len;
	for (i = len - 1; i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9'; i--)
		;
	if (i == len - 1 || i < 2 || name[i - 1] != ':')
		return len;
	return i - 1;
}

#ifndef __bpf__
/*
 * What a reader that aggregates by function (flame graphs, stats) shows for the Python frame
 * ip whose name is name (NULL or "": none): XPU_PYFRAME_MARK and its function,
 * "[py] QUALNAME (FILE)", so every line of a function reads the same; a name without a
 * line stays whole ("[py] NAME"); no name: the code object's address, "[py] 0x7f3a...".
 * Written into buf (size bytes, at least 1), NUL-terminated, cut to fit; returns the
 * length written. Room for any name: XPU_PYFRAME_FUNCTION_SIZE(the longest name).
 */
#define XPU_PYFRAME_FUNCTION_SIZE(name_max) (sizeof(XPU_PYFRAME_MARK) + (name_max) + 2)

static inline size_t xpu_pyframe__function(char *buf, size_t size, __u64 ip, const char *name)
{
	size_t len = name ? strlen(name) : 0, fn = xpu_pyframe__function_len(name, len);
	int n;

	if (!len)
		n = snprintf(buf, size, XPU_PYFRAME_MARK "0x%llx",
			     (unsigned long long)xpu_pyframe__code(ip));
	else
		n = snprintf(buf, size, XPU_PYFRAME_MARK "%.*s%s", (int)fn, name,
			     fn < len ? ")" : "");
	if (n < 0)
		n = 0;
	return (size_t)n < size ? (size_t)n : size - 1;
}
#endif /* !__bpf__ */

#endif /* XPUSUP_COMMON_PYFRAME_H */
