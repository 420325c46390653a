/* SPDX-License-Identifier: MIT */
/*
 * Python frames merged into native stacks in the correlator (docs/python.md).
 *
 * A CPU_SAMPLE or LAUNCH from the CPU source may carry the Python frames its thread was
 * running (XPU_STACK_F_PY, include/xpusup/event.h): code object addresses and instruction
 * offsets, grouped by the activation of the interpreter's eval function that ran them. Here,
 * before the join, each native frame in the eval function is replaced by the Python frames of
 * its activation, innermost first, as py-spy --native does; each becomes a Python frame
 * address (common/pyframe.h) whose line is read from the code object now, while the process
 * is there to read. After the join the names of those frames come from the same cache of code
 * objects (python/python.h), the native ones from the symbolizer.
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_PYSTACK_H
#define XPUSUP_ACTORS_CORRELATOR_PYSTACK_H

#include <linux/types.h>

#include "python/python.h"
#include "xpusup/event.h"

struct pystack;

struct pystack_stats {
	__u64 stacks; /* records whose Python frames were merged */
	__u64 frames; /* Python frames put into stacks */
	__u64 dropped; /* frames left out: a Python one that is no code object (or one that no
			* frame address can carry), any one past XPU_MAX_FRAMES */
	__u64 unmatched; /* activations with no eval frame in the native stack: put outermost */
	__u64 no_layout; /* records of a process whose interpreter could not be read here */
	__u64 ns; /* time spent merging (lines read from code objects included), in total */
	__u64 named; /* Python frames named on the way out */
	__u64 unnamed; /* ... that kept their address (the code object could not be read) */
	struct py_codes_stats codes;
};

struct pystack *pystack__new(void);
void pystack__free(struct pystack *ps);

/*
 * pystack__merge - write into out (cap bytes, 8-byte aligned) the CPU_SAMPLE or LAUNCH rec
 * (validated; without a stack copy: one is unwound first) with the Python frames py merged
 * into its user frames and without its Python stack (XPU_STACK_F_PY cleared). py is the
 * record's Python stack as it came (rec itself may be an unwound copy that no longer has it).
 * At most XPU_MAX_FRAMES user frames are kept, the innermost. ps may be NULL (it could not be
 * made): the record then keeps its native frames only.
 *
 * Returns the size of the record written, or -ENOSPC (cap).
 */
int pystack__merge(struct pystack *ps, const void *rec, const struct xpu_py_stack *py, void *out,
		   __u32 cap);

/* names[i] for every Python frame of ips[0..n) of pid (others untouched): "QUALNAME
 * (FILE:LINE)", or NULL when the code object could not be read. Valid until
 * pystack__collect. */
void pystack__name(struct pystack *ps, __u32 pid, const __u64 *ips, __u32 n, const char **names);

/* pid exec'd or is gone: its interpreter and code objects are forgotten. */
void pystack__drop_pid(struct pystack *ps, __u32 pid);

/* Frees names no batch uses any more: call after a batch went out. */
void pystack__collect(struct pystack *ps);

/* The counters; codes.cached is the most code objects held at once so far. */
void pystack__stats(struct pystack *ps, struct pystack_stats *out);

#endif /* XPUSUP_ACTORS_CORRELATOR_PYSTACK_H */
