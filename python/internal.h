/* SPDX-License-Identifier: MIT */
/*
 * What python/'s files share and its tests reach (not part of the API in python.h).
 *
 * The tables: the offsets of the release builds of CPython on x86-64 for each minor version
 * this reads, as the compiler lays out the internal headers (tables_test.sh checks them
 * against those headers).
 */
#ifndef XPUSUP_PYTHON_INTERNAL_H
#define XPUSUP_PYTHON_INTERNAL_H

#include "python/python.h"

#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>

/* PyASCIIObject.state, the same bits in 3.11, 3.12 and 3.13 (interned:2, kind:3, compact:1,
 * ascii:1, then ready or statically_allocated); tables_test.sh checks them with the
 * compiler's bitfields (unicode_state_bits). */
#define PY_STATE_KIND(s) (((s) >> 2) & 7u)
#define PY_STATE_COMPACT(s) (((s) >> 5) & 1u)
#define PY_STATE_ASCII(s) (((s) >> 6) & 1u)
#define PY_STATE_BITS(kind, compact, ascii) ((kind) << 2 | (compact) << 5 | (ascii) << 6)

/* The table of the minor version of version (PY_VERSION_HEX), or NULL (none known). Only
 * the offset fields are set: version, source, the addresses and path are the caller's. */
const struct py_layout *py_table__find(__u32 version);

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), as 3.13.0 lays it out. */
struct py_debug_offsets_313 {
	char cookie[8];
	__u64 version;
	__u64 free_threaded;
	struct {
		__u64 size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		__u64 size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		__u64 size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct {
		__u64 size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		__u64 size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		__u64 size, ob_type;
	} pyobject;
	struct {
		__u64 size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		__u64 size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		__u64 size, ma_keys, ma_values;
	} dict_object;
	struct {
		__u64 size, ob_fval;
	} float_object;
	struct {
		__u64 size, lv_tag, ob_digit;
	} long_object;
	struct {
		__u64 size, ob_size, ob_sval;
	} bytes_object;
	struct {
		__u64 size, state, length, asciiobject_size;
	} unicode_object;
	struct {
		__u64 size, collecting;
	} gc;
};

/* The layout of a 3.13 from the _Py_DebugOffsets at l->runtime in pid; l holds the 3.13
 * table, the version and the addresses on entry (detect.c says what is checked). 0, or
 * -ENOTSUP with why set when they do not match, or the read's -errno. */
int py_layout__from_debug_offsets(__u32 pid, struct py_layout *l, char *why, size_t why_len);

/* Print a layout's offsets as "field value" lines (what tables_test.sh compares). */
void py_layout__print(const struct py_layout *l, FILE *f);

/* Read len bytes at addr in pid's memory: 0, -ESRCH (gone), -EFAULT (not all of it is
 * mapped), another -errno (-EPERM: not allowed). */
int py_mem__read(__u32 pid, __u64 addr, void *buf, size_t len);

/* Tests: the clock py_codes checks the age of its entries with (CLOCK_MONOTONIC, ns), so a
 * test can make a second pass without waiting for one. NULL: the real clock. */
void py_codes__set_clock(struct py_codes *c, __u64 (*now_ns)(void));

#endif /* XPUSUP_PYTHON_INTERNAL_H */
