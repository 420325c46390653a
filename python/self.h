/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's own Python frames, read in process (docs/cupti.md, "Python launch
 * stacks"): what the CPU source's BPF program reads from outside at a sample or at the launch
 * marker (actors/cpu/profile.bpf.c, py_stack), for code that runs inside the profiled
 * process on the thread itself: the CUPTI injection library at a launch callback
 * (cupti/launch_stack.c). Same walk, same block (include/xpusup/event.h, XPU_STACK_F_PY), so
 * the correlator merges and names it the same way (actors/correlator/pystack.c).
 */
#ifndef XPUSUP_PYTHON_SELF_H
#define XPUSUP_PYTHON_SELF_H

#include <linux/types.h>
#include <stddef.h>

#include "python/python.h"
#include "xpusup/event.h"

/* The most bytes py_self__stack writes: a struct xpu_py_stack and XPU_PY_MAX_FRAMES frames. */
#define PY_SELF_MAX (sizeof(struct xpu_py_stack) + sizeof(struct xpu_py_frame) * XPU_PY_MAX_FRAMES)

/*
 * py_self__stack - the Python frames the calling thread is executing, innermost first, as a
 * struct xpu_py_stack and its frames at dst (8-byte aligned, cap >= PY_SELF_MAX bytes). May be called from any thread at once, with or without the GIL, but not from a
 * signal handler (the first call in a process finds the interpreter: python.h,
 * py_layout__detect, which opens files and allocates).
 *
 * The first call decides for the whole process whether it runs a CPython this can read; if
 * it does not, every call returns 0. A CPython that cannot be read (a version not supported,
 * frames that do not read as its layout says) is said once on stderr.
 *
 * Returns the bytes written (xpu_py_stack__size(n), n >= 1); 0 when there are no frames
 * (not Python, a thread that never ran Python, nothing running in Python now); -ENOSPC
 * when cap is below PY_SELF_MAX.
 */
int py_self__stack(void *dst, size_t cap);

/*
 * py_self__use_layout - tests: read frames with l, not with what py_layout__detect finds (a
 * wrong layout must turn Python frames off, not fault). Call before the first py_self__stack
 * of the process; l is copied.
 */
void py_self__use_layout(const struct py_layout *l);

#endif /* XPUSUP_PYTHON_SELF_H */
