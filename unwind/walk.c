// SPDX-License-Identifier: MIT
/* The frame walk: contract in walk.h, design in docs/unwind.md. */
#include "unwind/walk.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

static const char *const end_names[UNWIND_END_MAX] = {
	[UNWIND_END_OUTERMOST] = "outermost", [UNWIND_END_MAX_FRAMES] = "max_frames",
	[UNWIND_END_STACK] = "stack",	      [UNWIND_END_NO_RULE] = "no_rule",
	[UNWIND_END_BAD_CFI] = "bad_cfi",     [UNWIND_END_LOOP] = "loop",
};

const char *unwind_end__name(enum unwind_end end)
{
	return (unsigned int)end < UNWIND_END_MAX ? end_names[end] : "unknown";
}

int unwind_copy__read(void *ctx, __u64 addr, __u64 *val)
{
	const struct unwind_copy *c = ctx;

	/* addr - sp wraps to a huge value below sp: one comparison covers both sides */
	if (addr - c->sp > c->len || c->len - (addr - c->sp) < 8)
		return -EFAULT;
	memcpy(val, c->bytes + (addr - c->sp), 8);
	return 0;
}

/* One step through the frame pointer: the frame's fp points at the saved fp, the return
 * address above it. Sound only when fp lies at or above sp and both words can be read. */
static int step_fp(const struct unwind_ops *ops, struct unwind_regs *r, __u64 *ra)
{
	__u64 saved_fp;

	if (r->fp % 8 || r->fp < r->sp || r->fp > UINT64_MAX - 16)
		return -EINVAL;
	if (ops->read(ops->ctx, r->fp, &saved_fp) || ops->read(ops->ctx, r->fp + 8, ra))
		return -EFAULT;
	r->sp = r->fp + 16;
	r->fp = saved_fp;
	return 0;
}

/* One step through a CFI rule: 0, -EFAULT (a read failed), -EINVAL (the rule cannot be
 * applied), or 1 when the return address is undefined (the outermost frame). */
static int step_cfi(const struct unwind_ops *ops, const struct cfi_rule *rule,
		    struct unwind_regs *r, __u64 *ra)
{
	__u64 cfa, fp = r->fp;

	switch (rule->cfa) {
	case CFI_CFA_SP:
		cfa = r->sp + (__u64)(__s64)rule->cfa_off;
		break;
	case CFI_CFA_FP:
		cfa = r->fp + (__u64)(__s64)rule->cfa_off;
		break;
	case CFI_CFA_PLT:
		cfa = r->sp + (__u64)(__s64)rule->cfa_off + ((r->ip & 15) >= 11 ? 8 : 0);
		break;
	case CFI_CFA_FP_DEREF:
		if (ops->read(ops->ctx, r->fp + (__u64)(__s64)rule->cfa_off, &cfa))
			return -EFAULT;
		break;
	default:
		return -EINVAL;
	}
	if (rule->ra == CFI_REG_UNDEFINED)
		return 1;
	if (rule->ra != CFI_REG_AT_CFA)
		return -EINVAL; /* the return address kept in a register: not at a call */
	if (ops->read(ops->ctx, cfa + (__u64)(__s64)rule->ra_off, ra))
		return -EFAULT;
	if (rule->fp == CFI_REG_AT_CFA) {
		if (ops->read(ops->ctx, cfa + (__u64)(__s64)rule->fp_off, &fp))
			return -EFAULT;
	} else if (rule->fp == CFI_REG_UNDEFINED) {
		fp = 0;
	}
	r->sp = cfa;
	r->fp = fp;
	return 0;
}

__u32 unwind__walk(const struct unwind_ops *ops, struct unwind_regs regs, __u32 flags, __u64 *ips,
		   __u32 max, struct unwind_result *res)
{
	struct unwind_result out = { .end = UNWIND_END_MAX_FRAMES };
	bool exact = true; /* ip is where the thread is, not a return address */
	struct cfi_rule rule;
	__u64 ra, old_sp;
	int err, step;

	while (out.n < max) {
		ips[out.n++] = regs.ip;
		old_sp = regs.sp;
		err = -ENOENT;
		if (!(flags & UNWIND_FP_ONLY))
			err = ops->rule(ops->ctx, exact ? regs.ip : regs.ip - 1, &rule);
		step = -EINVAL;
		if (!err) {
			step = step_cfi(ops, &rule, &regs, &ra);
			if (step == 1) {
				out.end = UNWIND_END_OUTERMOST;
				break;
			}
			if (!step)
				out.n_cfi++;
		}
		/* No rule, or one that could not be applied: the frame pointer, if it leads
		 * on. A CFI rule whose reads fell off the stack is not second-guessed. */
		if (step && step != -EFAULT && !(flags & UNWIND_NO_FP)) {
			step = step_fp(ops, &regs, &ra);
			if (!step)
				out.n_fp++;
		}
		if (step) {
			if (step == -EFAULT)
				out.end = UNWIND_END_STACK;
			else if (err && err != -ENOENT)
				out.end = UNWIND_END_BAD_CFI;
			else
				out.end = UNWIND_END_NO_RULE;
			break;
		}
		if (!ra) {
			out.end = UNWIND_END_OUTERMOST;
			break;
		}
		if (regs.sp <= old_sp) {
			out.end = UNWIND_END_LOOP;
			break;
		}
		exact = !err && rule.signal;
		regs.ip = ra;
	}
	if (res)
		*res = out;
	return out.n;
}
