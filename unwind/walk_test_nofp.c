// SPDX-License-Identifier: MIT
/*
 * The recursion walk_test unwinds: built with -O2 -fomit-frame-pointer, and rbp forced to hold
 * a live, odd value (never a frame pointer) across each call, so that only the CFI can walk
 * through these frames, and a frame-pointer walk stops at the first one.
 */
#include "unwind/walk_test.h"

__attribute__((noinline, visibility("default"))) long
walk_test_nofp_level(int depth, struct stack_capture *cap)
{
	register long data __asm__("rbp") = 0x5a5a000000000001l + 2l * depth;
	long r;

	__asm__ volatile("" : "+r"(data)); /* in rbp here ... */
	r = depth > 0 ? walk_test_nofp_level(depth - 1, cap) : walk_test_capture(cap);
	__asm__ volatile("" : "+r"(data)); /* ... and after the call: saved and restored */
	return r + data;
}
