/* SPDX-License-Identifier: MIT */
/*
 * libvendor_standin.so: what makes CUDA's libraries hard to walk, in 20 lines. Built with
 * -O2 -fomit-frame-pointer (cupti/meson.build), vendor_launch keeps a value of its own in
 * rbp while it calls the tool's callback, as libcuda's code does: a frame-pointer walk from
 * inside the callback takes that value for the caller's frame and is lost there, while the
 * CFI that every x86-64 object carries (for C++ exceptions) still says where the caller's
 * frame is. The in-process capture (cupti/launch_stack.c) must walk through it to the
 * application.
 *
 * Built with VENDOR_FRAME_POINTERS (libvendor_standin_fp.so) it is an ordinary
 * frame-pointer build: the launch marker's uprobe, which walks frame pointers, gets
 * through it, so the marker path can be tested on its own merits.
 */
#include "cupti/vendor_standin.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT __attribute__((noinline)) long vendor_launch(vendor_callback_fn cb, void *arg, long work)
{
#ifdef VENDOR_FRAME_POINTERS
	long live = work * 2654435761l + 1;
#else
	/* The asm statements pin live to rbp where they are; rbp is callee-saved, so it stays
	 * there across the call: what the callback finds in rbp is this number. */
	register long live __asm__("rbp") = work * 2654435761l + 1;
#endif

	__asm__ volatile("" : "+r"(live));
	cb(arg);
	__asm__ volatile("" : "+r"(live));
	return live ^ work;
}
