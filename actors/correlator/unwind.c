// SPDX-License-Identifier: MIT
/* Copied stacks unwound in the correlator: contract in unwind.h. */
#include "actors/correlator/unwind.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "xpusup/event.h"

/* The walk's context: the copy it reads, the process whose files give the rules. */
struct walk_ctx {
	struct unwind_copy copy;
	struct symbolizer *sym;
	__u32 pid;
};

static int read_copy(void *ctx, __u64 addr, __u64 *val)
{
	return unwind_copy__read(&((struct walk_ctx *)ctx)->copy, addr, val);
}

static int rule_of(void *ctx, __u64 addr, struct cfi_rule *out)
{
	const struct walk_ctx *w = ctx;

	return symbolizer__rule(w->sym, w->pid, addr, out);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

int stack_unwind__record(struct symbolizer *sym, const void *rec, void *out, __u32 cap,
			 struct stack_unwind_stats *st)
{
	const struct xpu_rec *h = rec;
	const struct xpu_stack_copy *c = xpu_stack_copy__of(h);
	__u64 ips[XPU_MAX_FRAMES + 1], t0 = now_ns();
	struct walk_ctx w = { .sym = sym, .pid = h->pid };
	struct unwind_ops ops = { .read = read_copy, .rule = rule_of, .ctx = &w };
	struct unwind_result res;
	struct unwind_regs regs;
	__u32 n, skip = 0, size;

	if (!c)
		return -EINVAL;
	w.copy = (struct unwind_copy){ .sp = c->sp, .bytes = (const __u8 *)(c + 1), .len = c->len };
	regs = (struct unwind_regs){ .ip = c->ip, .sp = c->sp, .fp = c->fp };
	n = unwind__walk(&ops, regs, sym ? 0 : UNWIND_FP_ONLY, ips, XPU_MAX_FRAMES + 1, &res);
	if (h->type == XPU_REC_LAUNCH)
		skip = n ? 1 : 0; /* the marker's own entry: the stack starts at its caller */
	if (n - skip > XPU_MAX_FRAMES)
		n = XPU_MAX_FRAMES + skip;
	if (h->type == XPU_REC_CPU_SAMPLE) {
		const struct xpu_cpu_sample *s = rec;
		struct xpu_cpu_sample *o = out;

		size = xpu_cpu_sample__size(s->n_kernel, n - skip);
		if (cap < size)
			return -ENOSPC;
		memcpy(o, s, sizeof(*s) + 8u * s->n_kernel);
		memcpy(o->ips + s->n_kernel, ips + skip, 8u * (n - skip));
		o->n_user = (__u16)(n - skip);
	} else {
		const struct xpu_launch *l = rec;
		struct xpu_launch *o = out;

		size = xpu_launch__size(n - skip);
		if (cap < size)
			return -ENOSPC;
		memcpy(o, l, sizeof(*l));
		memcpy(o->ips, ips + skip, 8u * (n - skip));
		o->n_user = (__u16)(n - skip);
	}
	((struct xpu_rec *)out)->size = size;
	/* a Python stack stays behind too: the caller merges it from rec (pystack.h) */
	((struct xpu_rec *)out)->flags = h->flags & ~(XPU_STACK_F_COPY | XPU_STACK_F_PY);
	st->stacks++;
	st->ends[res.end < UNWIND_END_MAX ? res.end : UNWIND_END_BAD_CFI]++;
	st->frames_cfi += res.n_cfi;
	st->frames_fp += res.n_fp;
	if (!sym)
		st->no_maps++;
	st->ns += now_ns() - t0;
	return (int)size;
}
