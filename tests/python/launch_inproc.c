// SPDX-License-Identifier: MIT
/*
 * The in-process launch stack of a Python caller (tests/python/launch_inproc.py): loaded with
 * ctypes, it calls launch_stack__record as the CUPTI library's launch callback does
 * (cupti/inject.c), keeps the LAUNCH record, and names its Python frames with python/'s code
 * reader on its own pid, for the script to compare with what Python says of itself.
 *
 *   inproc_launch()          one capture from the calling thread: 0, or -errno (the record
 *                            does not validate: -EBADMSG)
 *   inproc_launch_c_thread() the same from a thread made here, that never ran Python
 *   inproc_has_python()      1 when the kept record has XPU_STACK_F_PY, else 0
 *   inproc_frames(buf, cap)  the kept record's Python frames, innermost first, one line each:
 *                            "E " (XPU_PY_FRAME_F_ENTRY) or "- ", then "QUALNAME (FILE:LINE)";
 *                            returns n, or -errno
 *   inproc_stats(out[6])     captured, failed, py_stacks, py_frames, py_truncated, py_bad
 *   inproc_bad_layout(what)  before the first capture: read frames with a layout made wrong
 *                            (1: f_code 8 bytes off, 2: the current frame's offset 8 bytes
 *                            off, 3: previous 8 bytes off); 0, or -errno
 *   inproc_bench(n, out[3])  ns per launch_stack__record, per py_self__stack alone and per
 *                            native walk alone (launch_stack__capture), over n calls each
 *
 * And the library's path into a session (tests/cupti_test.sh), as cupti_gpu_standin takes it:
 *   inproc_session_open()    the hello to the session's cupti actor (shm/inproc.h): the
 *                            reply's options, or -errno (the reason on stderr)
 *   fake_launch(first, n)    n LAUNCH records with correlation ids first.., into its ring,
 *                            captured as inject.c's launch callback does; returns the number
 *                            not put
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti/launch_stack.h"
#include "python/python.h"
#include "python/self.h"
#include "shm/inproc.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define EXPORT __attribute__((visibility("default"), noinline))

EXPORT int inproc_launch(void);
EXPORT int inproc_launch_c_thread(void);
EXPORT int inproc_has_python(void);
EXPORT int inproc_frames(char *buf, size_t cap);
EXPORT void inproc_stats(uint64_t *out);
EXPORT void inproc_bench(uint32_t n, double *out);
EXPORT int inproc_bad_layout(int what);
EXPORT int inproc_session_open(void);
EXPORT int fake_launch(uint64_t first, uint32_t n);

static _Alignas(8) unsigned char kept[XPU_REC_MAX_SIZE];
static __u32 kept_size;

static int keep(void *ctx, const void *rec, __u32 size)
{
	if (size > sizeof(kept))
		return -ENOSPC;
	memcpy(kept, rec, size);
	kept_size = size;
	return 0;
}

static int keep_nothing(void *ctx, const void *rec, __u32 size)
{
	return 0;
}

EXPORT int inproc_launch(void)
{
	int err;

	kept_size = 0;
	err = launch_stack__record(7, 211, keep, NULL);
	if (err)
		return err;
	if (((const struct xpu_rec *)kept)->type != XPU_REC_LAUNCH)
		return -EPROTO;
	err = xpu_rec__validate(kept, kept_size);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
	return err;
}

static void *c_thread(void *arg)
{
	*(int *)arg = inproc_launch();
	return NULL;
}

EXPORT int inproc_launch_c_thread(void)
{
	pthread_t t;
	int ret = -EINVAL;

	if (pthread_create(&t, NULL, c_thread, &ret))
		return -EAGAIN;
	pthread_join(t, NULL);
	return ret;
}

EXPORT int inproc_has_python(void)
{
	return kept_size && ((const struct xpu_rec *)kept)->flags & XPU_STACK_F_PY ? 1 : 0;
}

EXPORT int inproc_frames(char *buf, size_t cap)
{
	static struct py_layout layout;
	static struct py_codes *codes;
	const struct xpu_py_stack *py = xpu_py_stack__of((const struct xpu_rec *)kept);
	const struct xpu_py_frame *f;
	size_t len = 0;
	const char *name;
	__u32 i, line;
	int err, w;

	buf[0] = '\0';
	if (!kept_size || !py)
		return 0;
	if (!codes) {
		err = py_layout__detect((__u32)getpid(), &layout, NULL, 0);
		if (err)
			return err;
		codes = py_codes__new(1024);
		if (!codes)
			return -ENOMEM;
	}
	if (py->eval_start != layout.eval_start || py->eval_end != layout.eval_end ||
	    py->version != layout.version)
		return -EPROTO;
	f = (const struct xpu_py_frame *)(py + 1);
	for (i = 0; i < py->n; i++) {
		err = py_codes__line(codes, (__u32)getpid(), &layout, f[i].code, f[i].lasti, &line);
		if (err)
			return err;
		name = py_codes__name(codes, (__u32)getpid(), f[i].code, line);
		if (!name)
			return -ENOMEM;
		w = snprintf(buf + len, cap - len, "%s %s\n",
			     f[i].flags & XPU_PY_FRAME_F_ENTRY ? "E" : "-", name);
		if (w < 0 || (size_t)w >= cap - len)
			return -ENOSPC;
		len += (size_t)w;
	}
	return py->n;
}

EXPORT int inproc_bad_layout(int what)
{
	struct py_layout l;
	int err;

	err = py_layout__detect((__u32)getpid(), &l, NULL, 0);
	if (err)
		return err;
	if (what == 1)
		l.frame_code += 8;
	else if (what == 2 && l.tstate_current_frame != PY_OFF_NONE)
		l.tstate_current_frame += 8;
	else if (what == 2)
		l.cframe_current_frame += 8;
	else if (what == 3)
		l.frame_previous += 8;
	else
		return -EINVAL;
	py_self__use_layout(&l);
	return 0;
}

EXPORT void inproc_stats(uint64_t *out)
{
	struct launch_stack_stats st;

	launch_stack__stats(&st);
	out[0] = st.captured;
	out[1] = st.failed;
	out[2] = st.py_stacks;
	out[3] = st.py_frames;
	out[4] = st.py_truncated;
	out[5] = st.py_bad;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

EXPORT void inproc_bench(uint32_t n, double *out)
{
	_Alignas(8) unsigned char py[PY_SELF_MAX];
	__u64 ips[XPU_MAX_FRAMES];
	struct unwind_result res;
	double t0;
	uint32_t i;

	launch_stack__record(1, 211, keep_nothing, NULL); /* warm: modules, rule cache */
	t0 = now_ns();
	for (i = 0; i < n; i++)
		launch_stack__record(1, 211, keep_nothing, NULL);
	out[0] = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		py_self__stack(py, sizeof(py));
	out[1] = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		launch_stack__capture(ips, XPU_MAX_FRAMES, 0, &res);
	out[2] = (now_ns() - t0) / n;
	__asm__ volatile("" ::: "memory");
}

static struct ring *ring;

EXPORT int inproc_session_open(void)
{
	char why[256];
	__u32 options;
	int sock, err;

	/* the socket stays open for the life of the process: closing it says we are gone */
	err = inproc__connect(XPU_INPROC_CUPTI, 2000, &sock, &ring, &options, why, sizeof(why));
	if (err) {
		fprintf(stderr, "launch_inproc: %s\n", why);
		return err;
	}
	return (int)(options & 0x7fffffff);
}

static int put_ring(void *ctx, const void *rec, __u32 size)
{
	return ring__write(ring, rec, size);
}

EXPORT int fake_launch(uint64_t first, uint32_t n)
{
	int not_put = 0;
	uint32_t i;

	if (!ring)
		return (int)n;
	for (i = 0; i < n; i++)
		not_put += launch_stack__record(first + i, 211, put_ring, NULL) != 0;
	ring__flush(ring);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
	return not_put;
}
