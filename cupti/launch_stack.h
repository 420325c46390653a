/* SPDX-License-Identifier: MIT */
/*
 * In-process launch stacks (docs/cupti.md, "Launch stacks"): the CUPTI injection library
 * walks the launching thread's stack itself, at the launch callback, with the DWARF CFI of
 * the images loaded in its own process (unwind/cfi.h, unwind/walk.h), and writes the LAUNCH
 * record into its own ring. CUDA's libraries have no frame pointers; their CFI is in memory
 * all the same, because C++ exceptions need it.
 *
 * Safety: every stack word the walk reads lies in the calling thread's own stack, between
 * the caller's stack pointer and the top of the stack (pthread_getattr_np); CFI is read only
 * inside the loaded segment that holds it. Garbage in either gives a wrong or short stack,
 * never a fault in the profiled program.
 *
 * Threads: every function may be called from any thread at once. Each thread has its own
 * state (stack bounds, a rule cache), made on its first capture and freed when it exits.
 */
#ifndef XPUSUP_CUPTI_LAUNCH_STACK_H
#define XPUSUP_CUPTI_LAUNCH_STACK_H

#include <linux/types.h>

#include "unwind/walk.h"

/* Counters of every capture in this process since it started (launch_stack__stats). */
struct launch_stack_stats {
	__u64 captured; /* LAUNCH records handed to put */
	__u64 truncated; /* ... whose walk ended before the outermost frame */
	__u64 failed; /* captures that produced no record (no stack bounds, no memory) */
	__u64 frames; /* frames in the records handed to put */
	__u64 cache_hits, cache_misses; /* rule look-ups answered by the thread's cache, or not */
	__u64 modules; /* MODULE records handed to put (the process's executable mappings, sent
			* before the first LAUNCH and again when the loader's set changes) */
	__u64 modules_lost; /* ... that put refused, or that could not be gathered */
	__u64 py_stacks; /* LAUNCH records handed to put with Python frames (XPU_STACK_F_PY) */
	__u64 py_frames; /* Python frames in them */
	__u64 py_truncated; /* ... whose chain went on past XPU_PY_MAX_FRAMES */
	__u64 py_bad; /* ... whose chain ended at a frame that could not be read */
};

/* Where a finished record goes: 0, or -errno (a full ring: -ENOSPC, still "captured"). */
typedef int (*launch_stack_put_fn)(void *ctx, const void *rec, __u32 size);

/*
 * launch_stack__record - capture the calling thread's stack and hand a complete LAUNCH
 * record (include/xpusup/event.h: ts_ns now, CLOCK_MONOTONIC; this pid and tid;
 * correlation_id; api_id) to put, on this thread, before returning. The frames start at
 * the return address into the function that called launch_stack__record and go outward,
 * innermost first, at most XPU_MAX_FRAMES. When the thread is running Python, the Python
 * frames it is executing follow them (XPU_STACK_F_PY, python/self.h), as the launch marker's
 * uprobe adds them (actors/cpu/profile.bpf.c).
 *
 * Before the first LAUNCH, and the first after the loader's set of images changed, the
 * process's executable mappings go to put as MODULE records (one thread sends them).
 *
 * Returns put's return value, or -EFAULT (the stack pointer is outside the stack this
 * thread was given: an alternate signal stack, a coroutine), -ENOMEM (no thread state),
 * -ENOTSUP (this file was built without frame pointers). The record is put's to keep: it
 * lives on this function's stack.
 */
int launch_stack__record(__u64 correlation_id, __u32 api_id, launch_stack_put_fn put, void *ctx);

/*
 * launch_stack__capture - the walk alone, into ips (max frames), for tests and the bench:
 * ips[0] is the return address into the caller. flags are unwind__walk's (UNWIND_FP_ONLY:
 * what a frame-pointer walk would find). res may be NULL. Counts nothing.
 *
 * Returns the number of frames, or -EFAULT, -ENOMEM, -ENOTSUP as launch_stack__record.
 */
int launch_stack__capture(__u64 *ips, __u32 max, __u32 flags, struct unwind_result *res);

/* launch_stack__stats - a snapshot of the counters (each read atomically, not all at once). */
void launch_stack__stats(struct launch_stack_stats *st);

/* launch_stack__forget - empty the calling thread's rule cache (the bench's cold rows). */
void launch_stack__forget(void);

#endif /* XPUSUP_CUPTI_LAUNCH_STACK_H */
