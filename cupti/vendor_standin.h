/* SPDX-License-Identifier: MIT */
/*
 * libvendor_standin.so: a stand-in for CUDA's libraries in the launch-stack tests
 * (cupti/vendor_standin.c).
 */
#ifndef XPUSUP_CUPTI_VENDOR_STANDIN_H
#define XPUSUP_CUPTI_VENDOR_STANDIN_H

/* The callback a tool registers, called at every launch (CUPTI's, in CUDA). */
typedef void (*vendor_callback_fn)(void *arg);

/* vendor_launch - "launch" work: calls cb(arg) on the calling thread, with a value of its
 * own live in rbp across the call, and returns a value computed from work. */
long vendor_launch(vendor_callback_fn cb, void *arg, long work);

#endif /* XPUSUP_CUPTI_VENDOR_STANDIN_H */
