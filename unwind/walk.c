// SPDX-License-Identifier: MIT
/*
 * The frame walk (walk.h). One step turns a frame's registers into its caller's: through the
 * CFI rule of the frame's code when the rule callback has one, else through the frame
 * pointer when it looks like one. The walk ends at the first step that cannot be made, and
 * says why; since the stack pointer must strictly grow at every step, a walk over garbage
 * ends too, at the latest after max frames.
 */
#include "unwind/walk.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* A step that found the caller: not an end. */
#define STEP_ON (-1)

/* The caller's registers from a CFI rule: STEP_ON or why the walk ends. */
static int step_cfi(const struct unwind_ops *ops, const struct cfi_rule *rule,
		    const struct unwind_regs *regs, struct unwind_regs *caller)
{
	__u64 cfa;

	switch (rule->cfa) {
	case CFI_CFA_SP:
		cfa = regs->sp + (__u64)(__s64)rule->cfa_off;
		break;
	case CFI_CFA_FP:
		cfa = regs->fp + (__u64)(__s64)rule->cfa_off;
		break;
	case CFI_CFA_PLT:
		cfa = regs->sp + (__u64)(__s64)rule->cfa_off +
		      ((regs->ip & 15) >= rule->plt_split ? 8 : 0);
		break;
	case CFI_CFA_FP_DEREF:
		if (ops->read(ops->ctx, regs->fp + (__u64)(__s64)rule->cfa_off, &cfa))
			return UNWIND_END_STACK;
		break;
	default:
		return UNWIND_END_BAD_CFI;
	}
	switch (rule->ra) {
	case CFI_REG_AT_CFA:
		if (ops->read(ops->ctx, cfa + (__u64)(__s64)rule->ra_off, &caller->ip))
			return UNWIND_END_STACK;
		break;
	case CFI_REG_UNDEFINED:
		return UNWIND_END_OUTERMOST;
	default:
		return UNWIND_END_BAD_CFI;
	}
	switch (rule->fp) {
	case CFI_REG_SAME:
		caller->fp = regs->fp;
		break;
	case CFI_REG_AT_CFA:
		if (ops->read(ops->ctx, cfa + (__u64)(__s64)rule->fp_off, &caller->fp))
			return UNWIND_END_STACK;
		break;
	case CFI_REG_AT_FP:
		if (ops->read(ops->ctx, regs->fp + (__u64)(__s64)rule->fp_off, &caller->fp))
			return UNWIND_END_STACK;
		break;
	case CFI_REG_UNDEFINED:
		caller->fp = 0;
		break;
	default:
		return UNWIND_END_BAD_CFI;
	}
	caller->sp = cfa;
	return STEP_ON;
}

/*
 * The caller's registers from the frame pointer: [fp] is the caller's fp, [fp + 8] the return
 * address, the caller's sp is past both. no_rule: the end to report when fp is not a frame
 * pointer. A zero fp is the outermost frame (the x86-64 psABI: "the user code should mark the
 * deepest stack frame by setting the frame pointer to zero").
 */
static int step_fp(const struct unwind_ops *ops, const struct unwind_regs *regs, int no_rule,
		   struct unwind_regs *caller)
{
	if (!regs->fp)
		return UNWIND_END_OUTERMOST;
	if (regs->fp & 7 || regs->fp < regs->sp || regs->fp > UINT64_MAX - 16)
		return no_rule;
	if (ops->read(ops->ctx, regs->fp, &caller->fp) ||
	    ops->read(ops->ctx, regs->fp + 8, &caller->ip))
		return UNWIND_END_STACK;
	caller->sp = regs->fp + 16;
	return STEP_ON;
}

__u32 unwind__walk(const struct unwind_ops *ops, struct unwind_regs regs, __u32 flags, __u64 *ips,
		   __u32 max, struct unwind_result *res)
{
	struct unwind_result r = { .end = UNWIND_END_MAX_FRAMES };
	struct unwind_regs caller = { 0 };
	struct cfi_rule rule;
	bool exact = true; /* regs.ip is where the thread is, not a return address */
	bool by_cfi;
	int end, err;

	if (max)
		ips[r.n++] = regs.ip;
	while (r.n) {
		err = -ENOENT;
		if (!(flags & UNWIND_FP_ONLY))
			/* A return address is past the call: ip - 1 is in the calling insn, which
			 * may be the last of its function (a noreturn call) or of its row. */
			err = ops->rule(ops->ctx, exact ? regs.ip : regs.ip - 1, &rule);
		by_cfi = !err;
		if (by_cfi)
			end = step_cfi(ops, &rule, &regs, &caller);
		else if (flags & UNWIND_NO_FP)
			end = err == -ENOENT ? UNWIND_END_NO_RULE : UNWIND_END_BAD_CFI;
		else
			end = step_fp(ops, &regs,
				      err == -ENOENT ? UNWIND_END_NO_RULE : UNWIND_END_BAD_CFI,
				      &caller);
		if (end == STEP_ON && !caller.ip)
			end = UNWIND_END_OUTERMOST;
		else if (end == STEP_ON && caller.sp <= regs.sp)
			end = UNWIND_END_LOOP;
		if (end != STEP_ON) {
			r.end = (enum unwind_end)end;
			break;
		}
		/* Checked after the step, so that a stack of exactly max frames is complete. */
		if (r.n == max)
			break;
		ips[r.n++] = caller.ip;
		if (by_cfi)
			r.n_cfi++;
		else
			r.n_fp++;
		/* Past a signal frame (the kernel's sigreturn trampoline) the caller was
		 * interrupted, not calling: its ip is exact. */
		exact = by_cfi && rule.signal;
		regs = caller;
	}
	if (res)
		*res = r;
	return r.n;
}

const char *unwind_end__name(enum unwind_end end)
{
	static const char *const names[UNWIND_END_MAX] = {
		[UNWIND_END_OUTERMOST] = "outermost", [UNWIND_END_MAX_FRAMES] = "max_frames",
		[UNWIND_END_STACK] = "stack",	      [UNWIND_END_NO_RULE] = "no_rule",
		[UNWIND_END_BAD_CFI] = "bad_cfi",     [UNWIND_END_LOOP] = "loop",
	};

	return (unsigned int)end < UNWIND_END_MAX ? names[end] : "unknown";
}

int unwind_copy__read(void *ctx, __u64 addr, __u64 *val)
{
	const struct unwind_copy *copy = ctx;
	__u64 off = addr - copy->sp; /* wraps to a huge offset below sp */

	if (addr < copy->sp || copy->len < 8 || off > copy->len - 8)
		return -EFAULT;
	memcpy(val, copy->bytes + off, 8); /* a copy need not keep the stack's alignment */
	return 0;
}
