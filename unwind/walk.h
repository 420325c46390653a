/* SPDX-License-Identifier: MIT */
/*
 * The frame walk: from a thread's registers and a way to read its stack, the return
 * addresses of its frames, innermost first. Each frame is unwound with the CFI rule of its
 * code (unwind/cfi.h) when the caller's rule callback has one, else with the frame pointer
 * when that looks sound, so a stack through code without CFI (JIT, stripped) degrades frame
 * by frame instead of ending at the first such frame. x86-64.
 *
 * The walk allocates nothing and makes no system call; the callbacks decide where the
 * memory and the rules come from (a stack copy and files on disk in the correlator, the live
 * stack and loaded images in the CUPTI injection library).
 */
#ifndef XPUSUP_UNWIND_WALK_H
#define XPUSUP_UNWIND_WALK_H

#include <linux/types.h>
#include <stdbool.h>

#include "unwind/cfi.h"

struct unwind_regs {
	__u64 ip, sp, fp; /* rip, rsp, rbp */
};

/* Why a walk ended. */
enum unwind_end {
	UNWIND_END_OUTERMOST = 0, /* a frame whose return address is undefined or 0: complete */
	UNWIND_END_MAX_FRAMES, /* the caller's array was full: truncated */
	UNWIND_END_STACK, /* a read fell outside the stack (the end of a copy): truncated */
	UNWIND_END_NO_RULE, /* no CFI for ip, and the frame pointer does not lead on */
	UNWIND_END_BAD_CFI, /* the rule callback said the CFI is malformed or unsupported */
	UNWIND_END_LOOP, /* the stack pointer did not move up: a cycle or garbage */
	UNWIND_END_MAX,
};

struct unwind_ops {
	/* Reads the 8 bytes at addr into *val: 0, or -EFAULT outside the stack. */
	int (*read)(void *ctx, __u64 addr, __u64 *val);
	/* The rule for the code at addr (an address in the process: the walk passes ip for
	 * the innermost frame and for signal frames, ip - 1 for return addresses): 0,
	 * -ENOENT (no CFI there: the walk tries the frame pointer), or -EBADMSG/-ENOTSUP
	 * (the walk tries the frame pointer too, and counts the frame as bad CFI if that
	 * fails). */
	int (*rule)(void *ctx, __u64 addr, struct cfi_rule *out);
	void *ctx;
};

struct unwind_result {
	__u32 n; /* frames in ips[] */
	__u32 n_cfi; /* ... of which reached through a CFI rule */
	__u32 n_fp; /* ... of which reached through the frame pointer */
	enum unwind_end end;
};

/* Walk flags. */
#define UNWIND_FP_ONLY (1u << 0) /* never ask for a rule: frame pointers only */
#define UNWIND_NO_FP (1u << 1) /* never fall back to the frame pointer */

/*
 * unwind__walk - ips[0] = regs.ip, then the return address of each frame, at most max.
 * A return address of 0 ends the walk (outermost). Returns the number of frames (also in
 * res->n); res may be NULL.
 */
__u32 unwind__walk(const struct unwind_ops *ops, struct unwind_regs regs, __u32 flags, __u64 *ips,
		   __u32 max, struct unwind_result *res);

/* A stable lowercase word for an end ("outermost", "max_frames", "stack", "no_rule",
 * "bad_cfi", "loop"). */
const char *unwind_end__name(enum unwind_end end);

/* A stack copy as the read callback's ctx: bytes[0] is the word at sp. */
struct unwind_copy {
	__u64 sp;
	const __u8 *bytes;
	__u64 len;
};

/* unwind_ops.read over a struct unwind_copy. */
int unwind_copy__read(void *ctx, __u64 addr, __u64 *val);

#endif /* XPUSUP_UNWIND_WALK_H */
