/* SPDX-License-Identifier: MIT */
/*
 * The CFI of this process's own loaded images and a copy of its own stack, for walk_test and
 * unwind_bench (header-only). The images are read as the CUPTI injection library reads its
 * own: dl_iterate_phdr, the PT_GNU_EH_FRAME segment as .eh_frame_hdr, .eh_frame from its
 * eh_frame_ptr up to the end of its segment (cfi.h allows that upper bound).
 */
#ifndef XPUSUP_UNWIND_SELF_CFI_H
#define XPUSUP_UNWIND_SELF_CFI_H

#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "unwind/walk.h"

#define SELF_CFI_MODULES 64

struct self_module {
	__u64 bias, start, end; /* the executable segments, as loaded */
	struct cfi_sections sec; /* at ELF vaddrs: as loaded, minus bias */
};

struct self_cfi {
	struct self_module m[SELF_CFI_MODULES];
	unsigned int n;
};

/* The eh_frame_ptr of a .eh_frame_hdr as ld writes it (pcrel | sdata4), as an ELF vaddr. */
static inline int self_cfi_eh_frame_vaddr(const struct cfi_sections *sec, __u64 *vaddr)
{
	__s32 rel;

	if (sec->eh_frame_hdr_len < 8 || sec->eh_frame_hdr[1] != 0x1b)
		return -ENOTSUP;
	memcpy(&rel, sec->eh_frame_hdr + 4, 4);
	*vaddr = sec->eh_frame_hdr_vaddr + 4 + (__u64)(__s64)rel;
	return 0;
}

static inline int self_cfi_add(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct self_cfi *s = ctx;
	struct self_module *m = &s->m[s->n];
	const ElfW(Phdr) *hdr = NULL, *ph;
	__u64 eh_vaddr;
	int i;

	if (s->n == SELF_CFI_MODULES)
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
	if (self_cfi_eh_frame_vaddr(&m->sec, &eh_vaddr))
		return 0;
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
		s->n++;
	return 0;
}

/* Finds the loaded images and their CFI. Returns how many. */
static inline unsigned int self_cfi__load(struct self_cfi *s)
{
	s->n = 0;
	dl_iterate_phdr(self_cfi_add, s);
	return s->n;
}

/* The rule for addr: cfi__find in the image that holds it. */
static inline int self_cfi__rule(const struct self_cfi *s, __u64 addr, struct cfi_rule *out)
{
	unsigned int i;
	int err;

	for (i = 0; i < s->n; i++) {
		if (addr < s->m[i].start || addr >= s->m[i].end)
			continue;
		err = cfi__find(&s->m[i].sec, NULL, addr - s->m[i].bias, out);
		if (!err) {
			out->start += s->m[i].bias;
			out->end += s->m[i].bias;
		}
		return err;
	}
	return -ENOENT;
}

/* A copy of the stack and the images' CFI: the ctx of self_walk_ops. */
struct self_walk {
	struct unwind_copy copy;
	const struct self_cfi *cfi;
};

static inline int self_walk_read(void *ctx, __u64 addr, __u64 *val)
{
	return unwind_copy__read(&((struct self_walk *)ctx)->copy, addr, val);
}

static inline int self_walk_rule(void *ctx, __u64 addr, struct cfi_rule *out)
{
	return self_cfi__rule(((struct self_walk *)ctx)->cfi, addr, out);
}

/* The end of the mapping that holds sp (the stack's top), or 0. */
static inline __u64 self_stack_top(__u64 sp)
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

/* Copies min(top - sp, cap) bytes of the stack from sp; returns how many. Word by word and
 * not through memcpy: ASan would see the other frames' redzones. */
__attribute__((no_sanitize_address, unused)) static __u64 self_stack_copy(__u8 *dst, __u64 cap,
									  __u64 sp, __u64 top)
{
	const volatile __u64 *s = (const volatile __u64 *)(uintptr_t)sp;
	__u64 i, w, len = top > sp && top - sp < cap ? top - sp : cap;

	for (i = 0; i < len / 8; i++) {
		w = s[i];
		memcpy(dst + 8 * i, &w, 8);
	}
	return len / 8 * 8;
}

/* The registers at this point of the calling function: one asm, so that all three are taken
 * at the instruction whose CFI describes that frame. Use it in the function's body (past the
 * prologue, where the stack pointer does not move). */
#define SELF_REGS(regs)                                                       \
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" \
			 : "=r"((regs).ip), "=r"((regs).sp), "=r"((regs).fp))

#endif /* XPUSUP_UNWIND_SELF_CFI_H */
