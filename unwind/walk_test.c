// SPDX-License-Identifier: MIT
/*
 * walk_test - the frame walk (walk.c).
 *
 * First on made-up stacks with made-up rules: each way a walk ends, the frame pointer
 * fallback, the CFA forms, exact ips after a signal frame, the copy's bounds.
 *
 * Then for real: main calls walk_test_nofp_level (walk_test_nofp.c, -O2 -fomit-frame-pointer,
 * rbp holding data) 9 deep, the innermost captures its registers and copies 32 KiB of the
 * stack (at most up to the stack's top), and the copy is unwound with the CFI of the loaded
 * images, found as the CUPTI injection library finds its own: dl_iterate_phdr, the
 * PT_GNU_EH_FRAME segment, .eh_frame from its eh_frame_ptr. The frames, named by dladdr, must
 * be every level in order, then main; and a frame-pointer walk of the same copy must not get
 * to main, or the test would prove nothing.
 */
#include "unwind/walk.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "unwind/walk_test.h"

/* --- made-up stacks ----------------------------------------------------------------- */

#define FAKE_SP 0x7fff0000ull

struct fake_rule {
	__u64 start, end;
	int rc;
	struct cfi_rule rule;
};

struct fake {
	const struct fake_rule *rules;
	unsigned int n_rules;
	struct unwind_copy copy;
	__u64 asked[16];
	unsigned int n_asked;
};

static int fake_rule(void *ctx, __u64 addr, struct cfi_rule *out)
{
	struct fake *f = ctx;
	unsigned int i;

	if (f->n_asked < 16)
		f->asked[f->n_asked++] = addr;
	for (i = 0; i < f->n_rules; i++) {
		if (addr >= f->rules[i].start && addr < f->rules[i].end) {
			*out = f->rules[i].rule;
			return f->rules[i].rc;
		}
	}
	return -ENOENT;
}

static int fake_read(void *ctx, __u64 addr, __u64 *val)
{
	return unwind_copy__read(&((struct fake *)ctx)->copy, addr, val);
}

/* Word i of the fake stack is at FAKE_SP + 8 * i. */
static __u64 at(unsigned int i)
{
	return FAKE_SP + 8ull * i;
}

#define RULE_SIGNAL_PLT(cfa_, off_, ra_, fp_, fp_off_, signal_, split_)                   \
	{                                                                                 \
		.cfa = (cfa_), .cfa_off = (off_), .ra = (ra_), .ra_off = -8, .fp = (fp_), \
		.fp_off = (fp_off_), .signal = (signal_), .plt_split = (split_)           \
	}
#define RULE(cfa_, off_, ra_, fp_, fp_off_) RULE_SIGNAL_PLT(cfa_, off_, ra_, fp_, fp_off_, 0, 0)
#define AT_CFA CFI_REG_AT_CFA
#define SAME CFI_REG_SAME

/* ops over rules and a copy of len bytes at FAKE_SP */
static struct unwind_ops fake_init(struct fake *f, const struct fake_rule *rules,
				   unsigned int n_rules, const void *stack, size_t len)
{
	memset(f, 0, sizeof(*f));
	f->rules = rules;
	f->n_rules = n_rules;
	f->copy = (struct unwind_copy){ FAKE_SP, stack, len };
	return (struct unwind_ops){ fake_read, fake_rule, f };
}

static void check_fake_walk(void)
{
	/* frame 0 in 0x1000 (cfa sp+16), frame 1 in 0x2000 (no CFI: its frame pointer),
	 * frame 2 in 0x3000 (cfa fp+16, rbp saved), frame 3 in 0x4000 (ra undefined) */
	static const struct fake_rule rules[] = {
		{ 0x1000, 0x1100, 0, RULE(CFI_CFA_SP, 16, AT_CFA, SAME, 0) },
		{ 0x3000, 0x3100, 0, RULE(CFI_CFA_FP, 16, AT_CFA, AT_CFA, -16) },
		{ 0x4000, 0x4100, 0, RULE(CFI_CFA_SP, 8, CFI_REG_UNDEFINED, SAME, 0) },
	};
	__u64 stack[16] = { 0 }, ips[8];
	struct fake f;
	struct unwind_ops ops = fake_init(&f, rules, 3, stack, sizeof(stack));
	struct unwind_regs regs = { 0x1010, FAKE_SP, at(4) };
	struct unwind_result res;
	__u32 n;

	stack[1] = 0x2005; /* frame 0's return address at cfa - 8 = sp + 8 */
	stack[4] = at(8); /* frame 1's frame: the caller's fp, then the return address */
	stack[5] = 0x3005;
	stack[8] = at(12); /* frame 2's saved rbp at cfa - 16 (cfa = fp + 16) */
	stack[9] = 0x4005;

	n = unwind__walk(&ops, regs, 0, ips, 8, &res);
	tap_ok(n == 4 && res.n == 4 && ips[0] == 0x1010 && ips[1] == 0x2005 && ips[2] == 0x3005 &&
		       ips[3] == 0x4005 && res.end == UNWIND_END_OUTERMOST,
	       "CFI, frame pointer, CFI, outermost: %u frames, %s", n, unwind_end__name(res.end));
	tap_ok(res.n_cfi == 2 && res.n_fp == 1, "two frames by CFI, one by the frame pointer");
	tap_ok(f.n_asked == 4 && f.asked[0] == 0x1010 && f.asked[1] == 0x2004 &&
		       f.asked[2] == 0x3004 && f.asked[3] == 0x4004,
	       "rules asked for ip, then return address - 1");
	n = unwind__walk(&ops, regs, 0, ips, 4, &res);
	tap_ok(n == 4 && res.end == UNWIND_END_OUTERMOST, "exactly max frames is complete");
	n = unwind__walk(&ops, regs, 0, ips, 3, &res);
	tap_ok(n == 3 && res.end == UNWIND_END_MAX_FRAMES, "one frame short: max_frames");
	n = unwind__walk(&ops, regs, 0, ips, 0, &res);
	tap_ok(n == 0 && res.end == UNWIND_END_MAX_FRAMES, "max 0: no frames");
	n = unwind__walk(&ops, regs, UNWIND_NO_FP, ips, 8, &res);
	tap_ok(n == 2 && res.end == UNWIND_END_NO_RULE, "NO_FP: ends where there is no rule");
	f.n_asked = 0;
	n = unwind__walk(&ops, regs, UNWIND_FP_ONLY, ips, 8, NULL);
	tap_ok(n == 3 && ips[1] == 0x3005 && f.n_asked == 0,
	       "FP_ONLY: frame pointers only, no rule asked (%u frames)", n);
}

static void check_fake_signal(void)
{
	static const struct fake_rule rules[] = {
		{ 0x1000, 0x1100, 0, RULE_SIGNAL_PLT(CFI_CFA_SP, 16, AT_CFA, SAME, 0, 1, 0) },
	};
	__u64 stack[4] = { 0, 0x1020, 0, 0 }, ips[8];
	struct fake f;
	struct unwind_ops ops = fake_init(&f, rules, 1, stack, sizeof(stack));

	unwind__walk(&ops, (struct unwind_regs){ 0x1010, FAKE_SP, 0 }, 0, ips, 8, NULL);
	tap_ok(f.n_asked >= 2 && f.asked[1] == 0x1020,
	       "past a signal frame the rule is asked for the exact ip");
}

/* the ends: the copy's end, a cycle, a zero return address, no rule */
static void check_fake_ends(void)
{
	static const struct fake_rule rules[] = {
		{ 0x1000, 0x1010, 0, RULE(CFI_CFA_SP, 8, AT_CFA, SAME, 0) },
		{ 0x1010, 0x1020, 0, RULE(CFI_CFA_SP, 4096, AT_CFA, SAME, 0) },
		{ 0x1020, 0x1030, -EBADMSG, { 0 } },
		{ 0x1030, 0x1040, 0, RULE(CFI_CFA_FP, 8, AT_CFA, SAME, 0) },
	};
	static const struct {
		struct unwind_regs regs;
		enum unwind_end end; /* after 1 frame */
		const char *what;
	} cases[] = {
		{ { 0x1030, FAKE_SP + 8, FAKE_SP }, UNWIND_END_LOOP, "a cfa at sp" },
		{ { 0x1018, FAKE_SP, 0 }, UNWIND_END_STACK, "a cfa past the copy" },
		{ { 0x1028, FAKE_SP, FAKE_SP + 3 },
		  UNWIND_END_BAD_CFI,
		  "bad CFI, no frame pointer" },
		{ { 0x9000, FAKE_SP, FAKE_SP - 16 }, UNWIND_END_NO_RULE, "no rule, fp below sp" },
		{ { 0x9000, FAKE_SP, 0 }, UNWIND_END_OUTERMOST, "no rule, fp 0 (the psABI's end)" },
		{ { 0x1008, FAKE_SP + 8, 0 }, UNWIND_END_OUTERMOST, "a zero return address" },
	};
	__u64 words[16], ips[64];
	struct fake f;
	struct unwind_ops ops = fake_init(&f, rules, 4, words, sizeof(words));
	struct unwind_result res;
	unsigned int i;
	__u32 n;

	for (i = 0; i < 16; i++)
		words[i] = 0x1008; /* each frame returns to 0x1008: cfa sp + 8, ra at sp */
	n = unwind__walk(&ops, (struct unwind_regs){ 0x1008, FAKE_SP, 0 }, 0, ips, 64, &res);
	tap_ok(n == 17 && res.end == UNWIND_END_STACK, "up to the copy's end: stack (%u frames)",
	       n);
	memset(words, 0, sizeof(words));
	words[0] = 0x1234; /* a return address for the loop; the rest are 0 */
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = unwind__walk(&ops, cases[i].regs, 0, ips, 8, &res);
		tap_ok(n == 1 && res.end == cases[i].end, "%s: %s (%u frames)", cases[i].what,
		       unwind_end__name(res.end), n);
	}
}

/* the PLT, a realigned frame (cfa from [fp + N], rbp at [fp]) */
static void check_fake_forms(void)
{
	static const struct fake_rule rules[] = {
		{ 0x5000, 0x5010, 0, RULE_SIGNAL_PLT(CFI_CFA_PLT, 8, AT_CFA, SAME, 0, 0, 11) },
		{ 0x6000, 0x6100, 0, RULE(CFI_CFA_FP_DEREF, -8, AT_CFA, CFI_REG_AT_FP, 0) },
	};
	__u64 stack[16] = { 0 }, ips[4];
	struct fake f;
	struct unwind_ops ops = fake_init(&f, rules, 2, stack, sizeof(stack));

	stack[0] = 0x6005; /* ip & 15 = 10 < 11: cfa sp + 8, ra at sp */
	stack[1] = 0x6006; /* ip & 15 = 11: cfa sp + 16, ra at sp + 8 */
	stack[4] = at(12); /* realigned: [fp] = the caller's rbp, [fp - 8] = the cfa */
	stack[3] = at(10);
	stack[9] = 0x7777; /* its return address at cfa - 8 */
	unwind__walk(&ops, (struct unwind_regs){ 0x500a, FAKE_SP, at(4) }, UNWIND_NO_FP, ips, 3,
		     NULL);
	tap_ok(ips[1] == 0x6005 && ips[2] == 0x7777,
	       "PLT before the push (ip & 15 < 11), then a realigned frame");
	unwind__walk(&ops, (struct unwind_regs){ 0x500b, FAKE_SP, at(4) }, UNWIND_NO_FP, ips, 2,
		     NULL);
	tap_ok(ips[1] == 0x6006, "PLT after the push (ip & 15 >= 11): the cfa 8 higher");
}

static void check_copy(void)
{
	__u8 bytes[24];
	struct unwind_copy c = { 0x1000, bytes, sizeof(bytes) };
	__u64 v = 0, i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (__u8)i;
	tap_ok(!unwind_copy__read(&c, 0x1010, &v) && v == 0x1716151413121110ull,
	       "the last word of the copy");
	tap_ok(!unwind_copy__read(&c, 0x1003, &v) && v == 0x0a09080706050403ull,
	       "an unaligned word");
	tap_ok(unwind_copy__read(&c, 0x1011, &v) == -EFAULT, "a word past the end: -EFAULT");
	tap_ok(unwind_copy__read(&c, 0xfff, &v) == -EFAULT, "below sp: -EFAULT");
	tap_ok(unwind_copy__read(&c, UINT64_MAX - 3, &v) == -EFAULT, "near 2^64: -EFAULT");
	c.len = 7;
	tap_ok(unwind_copy__read(&c, 0x1000, &v) == -EFAULT, "a copy shorter than a word");
	c = (struct unwind_copy){ UINT64_MAX - 15, bytes, 16 };
	tap_ok(!unwind_copy__read(&c, UINT64_MAX - 7, &v), "a copy that ends at 2^64");
	tap_ok(!strcmp(unwind_end__name(UNWIND_END_LOOP), "loop") &&
		       !strcmp(unwind_end__name(UNWIND_END_MAX), "unknown"),
	       "end names");
}

/* --- this process's stack ------------------------------------------------------------ */

#define DEPTH 8 /* walk_test_nofp_level(DEPTH) .. (0): DEPTH + 1 frames */
#define COPY_MAX (32u << 10)

struct module {
	__u64 bias, start, end; /* the executable segments, as loaded */
	struct cfi_sections sec; /* at ELF vaddrs: the image's, minus bias */
};

static struct module modules[64];
static unsigned int n_modules;
static __u64 stack_top;
static __u8 stack_copy[COPY_MAX];

/* The image's CFI as the loader mapped it: .eh_frame_hdr is the PT_GNU_EH_FRAME segment,
 * .eh_frame starts where its eh_frame_ptr says and ends, at the latest, with its segment. */
static int add_module(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct module *m = &modules[n_modules];
	const ElfW(Phdr) *hdr = NULL, *ph;
	__u64 eh_vaddr = 0;
	__s32 rel;
	int i;

	if (n_modules == sizeof(modules) / sizeof(modules[0]))
		return 1;
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->start = UINT64_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = ph;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (m->bias + ph->p_vaddr < m->start)
				m->start = m->bias + ph->p_vaddr;
			if (m->bias + ph->p_vaddr + ph->p_memsz > m->end)
				m->end = m->bias + ph->p_vaddr + ph->p_memsz;
		}
	}
	if (!hdr || m->start >= m->end)
		return 0;
	m->sec.eh_frame_hdr = (const __u8 *)(uintptr_t)(m->bias + hdr->p_vaddr);
	m->sec.eh_frame_hdr_len = hdr->p_memsz;
	m->sec.eh_frame_hdr_vaddr = hdr->p_vaddr;
	if (hdr->p_memsz < 8 || m->sec.eh_frame_hdr[1] != 0x1b) /* pcrel | sdata4, as ld writes */
		return 0;
	memcpy(&rel, m->sec.eh_frame_hdr + 4, 4);
	eh_vaddr = hdr->p_vaddr + 4 + (__u64)(__s64)rel;
	for (i = 0; i < info->dlpi_phnum; i++) {
		ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && eh_vaddr >= ph->p_vaddr &&
		    eh_vaddr < ph->p_vaddr + ph->p_memsz) {
			m->sec.eh_frame = (const __u8 *)(uintptr_t)(m->bias + eh_vaddr);
			m->sec.eh_frame_len = ph->p_vaddr + ph->p_memsz - eh_vaddr;
			m->sec.eh_frame_vaddr = eh_vaddr;
		}
	}
	if (m->sec.eh_frame)
		n_modules++;
	return 0;
}

static int image_rule(void *ctx, __u64 addr, struct cfi_rule *out)
{
	unsigned int i;
	int err;

	for (i = 0; i < n_modules; i++) {
		if (addr < modules[i].start || addr >= modules[i].end)
			continue;
		err = cfi__find(&modules[i].sec, NULL, addr - modules[i].bias, out);
		if (!err) {
			out->start += modules[i].bias;
			out->end += modules[i].bias;
		}
		return err;
	}
	return -ENOENT;
}

/* The end of the mapping that holds sp (the stack's top), or 0. */
static __u64 find_stack_top(__u64 sp)
{
	unsigned long long start, end;
	char line[512];
	__u64 top = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && sp >= start && sp < end)
			top = end;
	fclose(f);
	return top;
}

/* Word by word and not through memcpy: ASan would see the other frames' redzones. */
__attribute__((no_sanitize_address)) static void copy_words(__u8 *dst, __u64 src, __u64 len)
{
	const volatile __u64 *s = (const volatile __u64 *)(uintptr_t)src;
	__u64 i, w;

	for (i = 0; i < len / 8; i++) {
		w = s[i];
		memcpy(dst + 8 * i, &w, 8);
	}
}

__attribute__((noinline, visibility("default"))) long walk_test_capture(struct stack_capture *cap)
{
	__u64 ip, sp, fp;

	/* one asm: the three registers at the same instruction, whose CFI describes this
	 * frame (in the body, past the prologue, the stack pointer does not move) */
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(fp));
	cap->regs = (struct unwind_regs){ ip, sp, fp };
	cap->len = stack_top > sp && stack_top - sp < cap->cap ? stack_top - sp : cap->cap;
	copy_words(cap->bytes, sp, cap->len);
	return 0;
}

/* The name of the function holding ip (a return address past its call when ret), or "?". */
static const char *name_of(__u64 ip, bool ret)
{
	Dl_info info;

	if (dladdr((void *)(uintptr_t)(ret ? ip - 1 : ip), &info) && info.dli_sname)
		return info.dli_sname;
	return "?";
}

/* The index of the first frame from `from` named name, or n. */
static __u32 find_frame(const __u64 *ips, __u32 n, __u32 from, const char *name)
{
	for (; from < n; from++)
		if (!strcmp(name_of(ips[from], from > 0), name))
			return from;
	return n;
}

static void check_own_stack(void)
{
	struct stack_capture cap = { .bytes = stack_copy, .cap = COPY_MAX };
	struct unwind_copy copy;
	struct unwind_ops ops = { unwind_copy__read, image_rule, &copy };
	struct unwind_result res, fp_res;
	__u64 ips[64], fp_ips[64];
	__u32 n, i, first, level, main_at;
	bool in_order = true;

	stack_top = find_stack_top((__u64)(uintptr_t)&cap);
	dl_iterate_phdr(add_module, NULL);
	if (!tap_ok(stack_top && n_modules >= 2, "stack top %#llx, CFI of %u loaded images",
		    (unsigned long long)stack_top, n_modules))
		return;
	walk_test_nofp_level(DEPTH, &cap);
	copy = (struct unwind_copy){ cap.regs.sp, cap.bytes, cap.len };
	tap_ok(cap.regs.fp & 1, "rbp held data, not a frame pointer (%#llx)",
	       (unsigned long long)cap.regs.fp);

	n = unwind__walk(&ops, cap.regs, 0, ips, 64, &res);
	for (i = 0; i < n; i++)
		tap_diag("  #%u %#llx %s", i, (unsigned long long)ips[i], name_of(ips[i], i > 0));
	tap_diag("  %u frames (%u by CFI, %u by frame pointer), end: %s, copy of %llu bytes", n,
		 res.n_cfi, res.n_fp, unwind_end__name(res.end), (unsigned long long)cap.len);
	tap_ok(n > 0 && !strcmp(name_of(ips[0], false), "walk_test_capture"),
	       "frame 0 is walk_test_capture");
	first = find_frame(ips, n, 0, "walk_test_nofp_level");
	for (level = 0; level <= DEPTH; level++)
		if (first + level >= n ||
		    strcmp(name_of(ips[first + level], true), "walk_test_nofp_level"))
			in_order = false;
	tap_ok(first == 1 && in_order, "then the %d levels of walk_test_nofp_level", DEPTH + 1);
	main_at = find_frame(ips, n, first + DEPTH + 1, "main");
	tap_ok(main_at < n, "then main (frame %u)", main_at);
	tap_ok(res.n_cfi >= main_at &&
		       (res.end == UNWIND_END_OUTERMOST || res.end == UNWIND_END_STACK),
	       "by CFI all the way, ending at the outermost frame or the copy's end (%s)",
	       unwind_end__name(res.end));

	n = unwind__walk(&ops, cap.regs, UNWIND_FP_ONLY, fp_ips, 64, &fp_res);
	tap_ok(find_frame(fp_ips, n, 0, "main") == n,
	       "frame pointers alone do not get to main (%u frames, %s)", n,
	       unwind_end__name(fp_res.end));
	n = unwind__walk(&ops, cap.regs, UNWIND_NO_FP, fp_ips, 64, &fp_res);
	tap_ok(n == res.n && !memcmp(fp_ips, ips, n * sizeof(*ips)),
	       "the CFI alone gives the same frames");
}

__attribute__((visibility("default"))) int main(void)
{
	check_fake_walk();
	check_fake_signal();
	check_fake_ends();
	check_fake_forms();
	check_copy();
	check_own_stack();
	return tap_done();
}
