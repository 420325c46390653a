// SPDX-License-Identifier: MIT
/*
 * Python frames merged into native stacks (pystack.c), on records built here: each native
 * frame in the eval function is replaced by the Python frames of its activation, in order;
 * activations with no eval frame left go outermost; a launch's frames are return addresses;
 * the record loses its Python stack and flag; the stack stays within XPU_MAX_FRAMES. The pid
 * is this test's own, which runs no interpreter: the frames keep line 0 and no name, as they
 * would for a process gone before its code objects could be read (python_test reads real
 * interpreters).
 */
#include "actors/correlator/pystack.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/pyframe.h"
#include "tests/tap.h"

#define EVAL 0x500000ull /* the eval function: [EVAL, EVAL + 0x1000) */
#define REC_MAX 65536

static _Alignas(8) unsigned char rec[REC_MAX], out[REC_MAX];

/* A CPU_SAMPLE (launch false) or LAUNCH with nk kernel frames, user frames u and the Python
 * frames of codes (entry: the outermost of an activation), in rec. */
static const void *build(bool launch, __u32 nk, const __u64 *u, __u32 nu, const __u64 *codes,
			 const bool *entry, __u32 npy)
{
	struct xpu_py_stack *py;
	struct xpu_py_frame *f;
	__u64 k[4] = { 0xffffffff81000010ull, 0xffffffff81000020ull };
	__u32 i, base;
	int size;

	memset(rec, 0, sizeof(rec));
	if (launch)
		size = xpu_launch__build(rec, sizeof(rec), 1, (__u32)getpid(), 7, 42, 1, u, nu);
	else
		size = xpu_cpu_sample__build(rec, sizeof(rec), 1, (__u32)getpid(), 7, 0, 1, "py", k,
					     nk, u, nu);
	if (size < 0)
		tap_bail("unable to build a record: %d", size);
	base = (__u32)size;
	py = (struct xpu_py_stack *)(rec + base);
	py->eval_start = EVAL;
	py->eval_end = EVAL + 0x1000;
	py->version = 0x030b02f0;
	py->n = (__u16)npy;
	f = (struct xpu_py_frame *)(py + 1);
	for (i = 0; i < npy; i++)
		f[i] = (struct xpu_py_frame){ codes[i], 10 + i,
					      entry[i] ? XPU_PY_FRAME_F_ENTRY : 0 };
	((struct xpu_rec *)rec)->size = base + xpu_py_stack__size(npy);
	((struct xpu_rec *)rec)->flags |= XPU_STACK_F_PY;
	if (xpu_rec__validate(rec, ((struct xpu_rec *)rec)->size))
		tap_bail("the record built is not valid");
	return rec;
}

static const __u64 *user_of(const void *r, __u32 *n)
{
	const struct xpu_rec *h = r;

	if (h->type == XPU_REC_LAUNCH) {
		*n = ((const struct xpu_launch *)r)->n_user;
		return ((const struct xpu_launch *)r)->ips;
	}
	*n = ((const struct xpu_cpu_sample *)r)->n_user;
	return ((const struct xpu_cpu_sample *)r)->ips +
	       ((const struct xpu_cpu_sample *)r)->n_kernel;
}

static __u64 P(__u64 code)
{
	return xpu_pyframe__ip(code, 0);
}

static bool same(const __u64 *got, __u32 n, const __u64 *want, __u32 m)
{
	__u32 i;

	if (n != m) {
		tap_diag("%u frames, want %u", n, m);
		return false;
	}
	for (i = 0; i < n; i++)
		if (got[i] != want[i]) {
			tap_diag("frame %u: %#llx, want %#llx", i, (unsigned long long)got[i],
				 (unsigned long long)want[i]);
			return false;
		}
	return true;
}

static int merge(struct pystack *ps, const void *r)
{
	const struct xpu_rec *h = r;
	int n = pystack__merge(ps, r, xpu_py_stack__of(h), out, sizeof(out));

	if (n > 0 && xpu_rec__validate(out, (size_t)n))
		tap_diag("the merged record is not valid");
	return n;
}

int main(void)
{
	struct pystack *ps = pystack__new();
	struct pystack_stats st;
	const struct xpu_cpu_sample *s = (const void *)out;
	const __u64 *got;
	const char *names[XPU_MAX_FRAMES];
	__u32 n, i;

	if (!ps)
		tap_bail("pystack__new");

	/* malloc <- long_mul <- eval (hot_a <- train_step <- main) <- PyObject_Call <- eval
	 * (<module>) <- Py_RunMain <- main: two activations, two eval frames */
	{
		const __u64 u[] = { 0x401000,	 0x402000, EVAL + 0x10, 0x403000,
				    EVAL + 0x20, 0x404000, 0x405000 };
		const __u64 codes[] = { 0x7f0000001000, 0x7f0000002000, 0x7f0000003000,
					0x7f0000004000 };
		const bool entry[] = { false, false, true, true };
		const __u64 want[] = { 0x401000, 0x402000,    P(codes[0]), P(codes[1]), P(codes[2]),
				       0x403000, P(codes[3]), 0x404000,	   0x405000 };

		tap_ok(merge(ps, build(false, 2, u, 7, codes, entry, 4)) > 0, "a sample merges");
		got = user_of(out, &n);
		tap_ok(same(got, n, want, 9),
		       "each eval frame is replaced by its activation's Python frames, in order");
		tap_ok(s->n_kernel == 2 && s->ips[0] == 0xffffffff81000010ull,
		       "the kernel frames stay as they were");
		tap_ok(!(s->hdr.flags & XPU_STACK_F_PY) &&
			       s->hdr.size == xpu_cpu_sample__size(2, 9),
		       "the Python stack and its flag are gone");
		pystack__name(ps, (__u32)getpid(), s->ips, 11, names);
		pystack__stats(ps, &st);
		tap_ok(st.stacks == 1 && st.frames == 4 && st.unmatched == 0 && st.no_layout == 1 &&
			       st.unnamed == 4 && st.named == 0,
		       "counted: 1 stack, 4 frames, no interpreter to read here, 4 unnamed");
	}

	/* the native walk stopped before the outer eval frame: the second activation goes
	 * outermost, counted */
	{
		const __u64 u[] = { EVAL + 0x10, 0x403000 };
		const __u64 codes[] = { 0x7f0000001000, 0x7f0000002000, 0x7f0000003000 };
		const bool entry[] = { false, true, false };
		const __u64 want[] = { P(codes[0]), P(codes[1]), 0x403000, P(codes[2]) };

		merge(ps, build(false, 0, u, 2, codes, entry, 3));
		got = user_of(out, &n);
		pystack__stats(ps, &st);
		tap_ok(same(got, n, want, 4) && st.unmatched == 1,
		       "an activation without an eval frame goes outermost, counted");
	}

	/* a launch's frames are return addresses: EVAL itself is the end of the function
	 * before it; EVAL + 1 is a call from the eval function */
	{
		const __u64 u[] = { EVAL, EVAL + 1, 0x404000 };
		const __u64 codes[] = { 0x7f0000001000 };
		const bool entry[] = { true };
		const __u64 want[] = { EVAL, P(codes[0]), 0x404000 };

		merge(ps, build(true, 0, u, 3, codes, entry, 1));
		got = user_of(out, &n);
		tap_ok(same(got, n, want, 3),
		       "a launch's frames are looked up as return addresses");
	}
	/* a sample's innermost frame is where it was: EVAL is in the eval function */
	{
		const __u64 u[] = { EVAL, 0x404000 };
		const __u64 codes[] = { 0x7f0000001000 };
		const bool entry[] = { true };
		const __u64 want[] = { P(codes[0]), 0x404000 };

		merge(ps, build(false, 0, u, 2, codes, entry, 1));
		got = user_of(out, &n);
		tap_ok(same(got, n, want, 2), "a sample's innermost frame is looked up as it is");
	}

	/* a code address no frame address can carry (past 47 bits) is left out, counted; the
	 * activation it ended still ends there */
	{
		const __u64 u[] = { EVAL + 0x10, EVAL + 0x20 };
		const __u64 codes[] = { 0x7f0000001000, 1ull << 50, 0x7f0000003000 };
		const bool entry[] = { false, true, true };
		const __u64 want[] = { P(codes[0]), P(codes[2]) };
		__u64 before;

		pystack__stats(ps, &st);
		before = st.dropped;
		merge(ps, build(false, 0, u, 2, codes, entry, 3));
		got = user_of(out, &n);
		pystack__stats(ps, &st);
		tap_ok(same(got, n, want, 2) && st.dropped == before + 1,
		       "a frame that cannot be carried is left out, its activation's end kept");
	}

	/* past XPU_MAX_FRAMES the outermost frames go, counted */
	{
		__u64 u[XPU_MAX_FRAMES], codes[8];
		bool entry[8] = { false };
		__u64 before;

		for (i = 0; i < XPU_MAX_FRAMES; i++)
			u[i] = 0x410000 + i;
		u[0] = EVAL + 0x10;
		for (i = 0; i < 8; i++)
			codes[i] = 0x7f0000010000 + i * 0x100;
		pystack__stats(ps, &st);
		before = st.dropped;
		merge(ps, build(false, 0, u, XPU_MAX_FRAMES, codes, entry, 8));
		got = user_of(out, &n);
		pystack__stats(ps, &st);
		tap_ok(n == XPU_MAX_FRAMES && got[0] == P(codes[0]) && got[7] == P(codes[7]) &&
			       got[8] == 0x410001 && st.dropped == before + 7,
		       "a stack past XPU_MAX_FRAMES keeps its innermost frames, the rest counted");
	}

	/* without the cache (no memory): the native frames alone */
	{
		const __u64 u[] = { 0x401000, EVAL + 0x10, 0x404000 };
		const __u64 codes[] = { 0x7f0000001000 };
		const bool entry[] = { true };

		merge(NULL, build(false, 0, u, 3, codes, entry, 1));
		got = user_of(out, &n);
		tap_ok(same(got, n, u, 3) && !(s->hdr.flags & XPU_STACK_F_PY),
		       "without a cache the record keeps its native frames");
	}

	/* a record whose Python stack says more frames than it holds is not valid */
	{
		const __u64 u[] = { 0x401000 };
		const __u64 codes[] = { 0x7f0000001000 };
		const bool entry[] = { true };
		struct xpu_rec *h = (struct xpu_rec *)build(false, 0, u, 1, codes, entry, 1);

		((struct xpu_py_stack *)(rec + xpu_cpu_sample__size(0, 1)))->n = 2;
		tap_ok(xpu_rec__validate(h, h->size) == -EBADMSG,
		       "a Python stack longer than its record is refused");
		((struct xpu_py_stack *)(rec + xpu_cpu_sample__size(0, 1)))->n =
			XPU_PY_MAX_FRAMES + 1;
		tap_ok(xpu_rec__validate(h, h->size) == -EBADMSG,
		       "a Python stack over XPU_PY_MAX_FRAMES is refused");
	}
	pystack__free(ps);
	return tap_done();
}
