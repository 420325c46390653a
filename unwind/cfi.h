/* SPDX-License-Identifier: MIT */
/*
 * DWARF call frame information (CFI), read from an ELF file's .eh_frame (through its
 * .eh_frame_hdr search table when there is one) or .debug_frame: for a code address, the
 * rule that finds the caller's frame. x86-64 only (docs/unwind.md).
 *
 * The bytes are untrusted: a file on disk may be truncated, corrupt or hostile. Every read
 * is bounds-checked against the section it is in, every loop is bounded, nothing recurses:
 * a malformed table is an error return, never a crash or a hang (cfi_fuzz replays a corpus
 * in CI).
 *
 * The same code serves the correlator (files mapped from disk, actors/correlator/unwind.c)
 * and the CUPTI injection library (the loaded images of its own process, cupti/launch_stack.c),
 * so it allocates only in cfi_index__build and keeps no state between calls.
 */
#ifndef XPUSUP_UNWIND_CFI_H
#define XPUSUP_UNWIND_CFI_H

#include <linux/types.h>
#include <stddef.h>

/* How the canonical frame address (CFA, the caller's sp after the return) is found. */
enum cfi_cfa {
	CFI_CFA_SP = 1, /* sp + cfa_off */
	CFI_CFA_FP = 2, /* fp + cfa_off */
	CFI_CFA_PLT = 3, /* sp + cfa_off, + 8 more when (ip & 15) >= plt_split: a lazy PLT's
			  * expression, the one expression x86-64 linkers emit (binutils: 11,
			  * 10 with IBT, 5 with BND) */
	CFI_CFA_FP_DEREF = 4, /* the word at fp + cfa_off (a realigned stack: gcc's
			       * DW_OP_breg6 N; DW_OP_deref) */
};

/* Where a register of the caller is found. */
enum cfi_reg {
	CFI_REG_SAME = 0, /* unchanged: the caller's value is the callee's */
	CFI_REG_AT_CFA = 1, /* saved at cfa + offset */
	CFI_REG_UNDEFINED = 2, /* lost; for the return address: the outermost frame */
	CFI_REG_AT_FP = 3, /* fp only: saved at the callee's fp + fp_off (gcc's realigned
			    * frames: DW_CFA_expression rbp, DW_OP_breg6 N) */
};

/* One row of the CFI table, for the ELF virtual addresses [start, end). */
struct cfi_rule {
	__u64 start, end;
	__s32 cfa_off;
	__s32 ra_off; /* ra == CFI_REG_AT_CFA: the return address is at cfa + ra_off */
	__s32 fp_off; /* fp == CFI_REG_AT_CFA: the caller's fp is at cfa + fp_off;
		       * fp == CFI_REG_AT_FP: at fp + fp_off */
	__u8 cfa; /* enum cfi_cfa */
	__u8 ra; /* enum cfi_reg: never SAME or AT_FP */
	__u8 fp; /* enum cfi_reg */
	__u8 signal; /* the CIE says 'S': a signal frame, ip is exact, not a return address */
	__u8 plt_split; /* cfa == CFI_CFA_PLT: see there */
};

/*
 * The CFI sections of one ELF file, as bytes in this process's memory (a mapping of the
 * file, or a loaded image), with the ELF virtual address of each one's first byte (sh_addr;
 * pc-relative pointer encodings need it). A section that is absent has NULL and 0.
 * eh_frame_len may be an upper bound (a loaded image knows where .eh_frame starts from
 * .eh_frame_hdr, not where it ends: the end of its segment will do).
 */
struct cfi_sections {
	const __u8 *eh_frame_hdr;
	__u64 eh_frame_hdr_len, eh_frame_hdr_vaddr;
	const __u8 *eh_frame;
	__u64 eh_frame_len, eh_frame_vaddr;
	const __u8 *debug_frame;
	__u64 debug_frame_len;
};

/*
 * A sorted table of the FDEs of .eh_frame and .debug_frame, for files whose .eh_frame_hdr is
 * missing or unusable, and for .debug_frame, which has no search table of its own.
 */
struct cfi_index;

/*
 * cfi_index__build - scan sec's .eh_frame (only when it has no usable .eh_frame_hdr) and
 * .debug_frame, and sort their FDEs by address. Malformed entries are skipped and counted
 * (cfi_index__bad); a scan never reads past a section.
 *
 * Returns the index (free it with cfi_index__free), or NULL with errno set: ENOMEM, or
 * ENOENT when there is nothing to index (the .eh_frame_hdr alone will do).
 * sec's bytes must stay valid and unchanged while the index is used.
 */
struct cfi_index *cfi_index__build(const struct cfi_sections *sec);
void cfi_index__free(struct cfi_index *idx);
size_t cfi_index__bytes(const struct cfi_index *idx); /* memory it holds */
__u64 cfi_index__bad(const struct cfi_index *idx); /* entries skipped as malformed */

/*
 * cfi__find - the rule for ELF virtual address vaddr: the FDE that covers it is found through
 * .eh_frame_hdr's table, else through idx (may be NULL), and its CIE's and its own call
 * frame instructions are run up to vaddr.
 *
 * Returns 0 and fills *out (out->start/end: the range of addresses the same rule holds for,
 * within the FDE), or -ENOENT (no FDE covers vaddr), -EBADMSG (the CFI is malformed:
 * out-of-bounds offsets, unknown opcodes or encodings, more than a bounded number of
 * instructions or remembered states), -ENOTSUP (well-formed, but a rule this unwinder does not
 * follow: a CFA from another register or from an expression other than the PLT and realigned
 * stack forms).
 */
int cfi__find(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr,
	      struct cfi_rule *out);

/* A stable lowercase word for a cfi__find error ("no_fde", "bad_cfi", "unsupported"). */
const char *cfi__strerror(int err);

#endif /* XPUSUP_UNWIND_CFI_H */
