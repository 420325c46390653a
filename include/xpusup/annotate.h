/* SPDX-License-Identifier: MIT */
/*
 * xpusup annotate API: user ranges, marks and counters from inside a profiled program
 * (docs/inproc.md). Link libxpusup_annotate (shared or static).
 *
 *	void step(void)
 *	{
 *		XPU_SCOPE("step");		a range until the end of the enclosing block
 *		xpu_range_push("forward");	explicit push/pop nest per thread
 *		...
 *		xpu_range_pop();
 *		xpu_counter("batch_size", 64);
 *		xpu_mark("checkpoint");
 *	}
 *
 * Under `xpusup record` (or with XPUSUP_SESSION_DIR naming a session with an inproc source)
 * every call becomes a RANGE (or PMU_COUNTER) record in the session. Without a session the
 * library says so once on stderr ("xpusup: ...") at load and every call is one predictable
 * branch; registered callbacks still see every call. No call ever blocks on the profiler or
 * fails the program: when the ring is full the record is dropped and counted.
 *
 * All functions are thread-safe; ranges nest per thread. name must be a NUL-terminated string;
 * at most XPU_RANGE_NAME_MAX (1024) bytes of it are recorded. NULL records as "".
 */
#ifndef XPUSUP_ANNOTATE_H
#define XPUSUP_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XPU_ANNOTATE_API __attribute__((visibility("default")))

/* Begin a range on the calling thread; xpu_range_pop ends the innermost one. */
XPU_ANNOTATE_API void xpu_range_push(const char *name);

/* End the calling thread's innermost range. A pop without a push is ignored (and counted). */
XPU_ANNOTATE_API void xpu_range_pop(void);

/* An instantaneous event on the calling thread. */
XPU_ANNOTATE_API void xpu_mark(const char *name);

/* A sample of a named value on the calling thread (a PMU_COUNTER record of scope THREAD;
 * the name travels once as a STRING record). Negative values travel two's-complement. */
XPU_ANNOTATE_API void xpu_counter(const char *name, int64_t value);

/* 1 when records go to a session, 0 when the library disabled itself. */
XPU_ANNOTATE_API int xpu_annotate_enabled(void);

/* Records this process dropped because its ring was full (the session learns of them too,
 * as LOSS records). */
XPU_ANNOTATE_API uint64_t xpu_annotate_dropped(void);

enum xpu_annotate_phase {
	XPU_ANNOTATE_PUSH = 1, /* the values of enum xpu_range_phase */
	XPU_ANNOTATE_POP = 2,
	XPU_ANNOTATE_MARK = 5,
	XPU_ANNOTATE_COUNTER = 6,
};

/*
 * The in-process event recorder: fn(phase, name, value, ts_ns, tid, ctx) is called on the
 * calling thread for every push, pop, mark and counter, with or without a session. name is
 * the caller's string, valid only during the call (for a pop: the name of the range it
 * ends, or NULL past 64 levels of nesting); value is the counter's value, else 0; ts_ns is
 * CLOCK_MONOTONIC. A callback must not call the annotate API itself.
 */
typedef void (*xpu_annotate_fn)(int phase, const char *name, int64_t value, uint64_t ts_ns,
				uint32_t tid, void *ctx);

/*
 * xpu_annotate_add_callback - register fn with ctx (at most 16 at a time).
 * Returns 0, -EINVAL for a NULL fn, -EEXIST when (fn, ctx) is registered, -ENOSPC when full.
 */
XPU_ANNOTATE_API int xpu_annotate_add_callback(xpu_annotate_fn fn, void *ctx);

/*
 * xpu_annotate_remove_callback - unregister (fn, ctx). A call already running on another
 * thread may still finish after this returns; ctx must stay valid until those threads have
 * moved on. Returns 0 or -ENOENT.
 */
XPU_ANNOTATE_API int xpu_annotate_remove_callback(xpu_annotate_fn fn, void *ctx);

/* Scope guard: push now, pop when the enclosing block is left (return, break, exception). */
static inline void xpu__scope_pop(const int *unused)
{
	(void)unused;
	xpu_range_pop();
}

#define XPU__CAT2(a, b) a##b
#define XPU__CAT(a, b) XPU__CAT2(a, b)
#define XPU_SCOPE(name)                           \
	const int XPU__CAT(xpu__scope_, __LINE__) \
		__attribute__((cleanup(xpu__scope_pop), unused)) = (xpu_range_push(name), 0)

#ifdef __cplusplus
}
#endif

#endif /* XPUSUP_ANNOTATE_H */
