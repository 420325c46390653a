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

/* The table of the minor version of version (PY_VERSION_HEX), or NULL (none known). Only
 * the offset fields are set: version, source, the addresses and path are the caller's. */
const struct py_layout *py_table__find(__u32 version);

/* Print a layout's offsets as "field value" lines (what tables_test.sh compares). */
void py_layout__print(const struct py_layout *l, FILE *f);

/* Read len bytes at addr in pid's memory: 0, -ESRCH (gone), -EFAULT (not all of it is
 * mapped), another -errno (-EPERM: not allowed). */
int py_mem__read(__u32 pid, __u64 addr, void *buf, size_t len);

/* Tests: the clock py_codes checks the age of its entries with (CLOCK_MONOTONIC, ns), so a
 * test can make a second pass without waiting for one. NULL: the real clock. */
void py_codes__set_clock(struct py_codes *c, __u64 (*now_ns)(void));

#endif /* XPUSUP_PYTHON_INTERNAL_H */
