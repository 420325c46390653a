/* SPDX-License-Identifier: MIT */
/*
 * What walk_test.c and walk_test_nofp.c share: the recursion without frame pointers lives in
 * its own file, compiled with -O2 -fomit-frame-pointer whatever the build type.
 */
#ifndef XPUSUP_UNWIND_WALK_TEST_H
#define XPUSUP_UNWIND_WALK_TEST_H

#include "unwind/walk.h"

/* The registers of a frame and a copy of the stack from its sp up. */
struct stack_capture {
	struct unwind_regs regs;
	__u8 *bytes;
	__u64 len, cap;
};

/* walk_test.c: fills *cap with its own registers and stack. Returns 0. */
long walk_test_capture(struct stack_capture *cap);

/* walk_test_nofp.c: depth + 1 nested calls of itself, each holding data (not a frame pointer)
 * in rbp across the call, the innermost calling walk_test_capture. Returns a sum that keeps
 * the data live. */
long walk_test_nofp_level(int depth, struct stack_capture *cap);

#endif /* XPUSUP_UNWIND_WALK_TEST_H */
