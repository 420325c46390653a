// SPDX-License-Identifier: MIT
/*
 * Fuzz target for the CFI reader together with the frame walk (unwind/cfi.c, unwind/walk.c): the bytes
 * of a file on disk (correlator) or of a loaded image (CUPTI library), which may be truncated,
 * corrupt or hostile (docs/unwind.md).
 *
 * The input: a 6-byte header, then the sections back to back.
 *	byte 0		bit 0: there is an .eh_frame_hdr, bit 1: .eh_frame, bit 2: .debug_frame
 *	bytes 1-2	length of .eh_frame_hdr (LE), bytes 3-4 of .eh_frame; .debug_frame is the
 *			rest
 *	byte 5		seeds the addresses looked up
 * .eh_frame_hdr's vaddr is 0x1000 and .eh_frame follows it, as linkers lay them out.
 *
 * Not only "does not crash": every rule found covers the address asked for; the index never
 * says it holds more than the sections could; a walk over the input as a stack copy, with the
 * reader's rules, stops within its bound.
 */
#include "unwind/cfi.h"
#include "unwind/walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

#define HDR_VADDR 0x1000ull
#define WALK_MAX 64

struct fuzz_ctx {
	struct unwind_copy copy;
	const struct cfi_sections *sec;
	const struct cfi_index *idx;
};

static int read_copy(void *ctx, __u64 addr, __u64 *val)
{
	return unwind_copy__read(&((struct fuzz_ctx *)ctx)->copy, addr, val);
}

static int rule_of(void *ctx, __u64 addr, struct cfi_rule *out)
{
	const struct fuzz_ctx *f = ctx;

	return cfi__find(f->sec, f->idx, addr, out);
}

static void check_rule(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr)
{
	struct cfi_rule r;
	int err = cfi__find(sec, idx, vaddr, &r);

	if (err != 0 && err != -ENOENT && err != -EBADMSG && err != -ENOTSUP)
		abort();
	if (!err &&
	    (vaddr < r.start || vaddr >= r.end || r.cfa < CFI_CFA_SP || r.cfa > CFI_CFA_FP_DEREF ||
	     (r.ra != CFI_REG_AT_CFA && r.ra != CFI_REG_UNDEFINED) || r.fp > CFI_REG_AT_FP ||
	     (r.cfa == CFI_CFA_PLT && (r.plt_split < 1 || r.plt_split > 15))))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_sections sec = { 0 };
	struct cfi_index *idx;
	struct fuzz_ctx ctx;
	struct unwind_ops ops = { .read = read_copy, .rule = rule_of, .ctx = &ctx };
	struct unwind_result res;
	__u64 ips[WALK_MAX], hdr_len, eh_len, seed, vaddr;
	const uint8_t *p;
	unsigned int i;
	__u8 *copy;

	if (size < 6)
		return 0;
	hdr_len = data[1] | (__u64)data[2] << 8;
	eh_len = data[3] | (__u64)data[4] << 8;
	seed = data[5];
	p = data + 6;
	size -= 6;
	if (hdr_len > size)
		hdr_len = size;
	if (eh_len > size - hdr_len)
		eh_len = size - hdr_len;
	/* each section in a buffer of its own, so ASan sees any read past its end */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, p, size);
	if (data[0] & 1) {
		sec.eh_frame_hdr = copy;
		sec.eh_frame_hdr_len = hdr_len;
		sec.eh_frame_hdr_vaddr = HDR_VADDR;
	}
	if (data[0] & 2) {
		sec.eh_frame = copy + hdr_len;
		sec.eh_frame_len = eh_len;
		sec.eh_frame_vaddr = HDR_VADDR + hdr_len;
	}
	if (data[0] & 4) {
		sec.debug_frame = copy + hdr_len + eh_len;
		sec.debug_frame_len = size - hdr_len - eh_len;
	}
	idx = cfi_index__build(&sec);
	if (!idx && errno != ENOENT && errno != ENOMEM)
		abort();
	/* An FDE takes at least 8 bytes, so at most size / 8 entries; the table starts at 256
	 * and doubles (entries of at most 32 bytes): the index cannot outgrow the input. */
	if (idx && cfi_index__bytes(idx) > 256 + 32 * (256 + 2 * (size / 8 + 1)))
		abort();
	for (i = 0; i < 16; i++) {
		vaddr = HDR_VADDR + ((seed * 2654435761u + i * 97) % (size + 64));
		check_rule(&sec, idx, vaddr);
	}
	/* the input as a stack, walked with these rules from an ip inside it */
	ctx = (struct fuzz_ctx){ .copy = { .sp = 0x7fff0000, .bytes = copy, .len = size },
				 .sec = &sec,
				 .idx = idx };
	if (unwind__walk(&ops,
			 (struct unwind_regs){ .ip = HDR_VADDR + seed,
					       .sp = 0x7fff0000,
					       .fp = 0x7fff0000 + (seed & ~7ull) },
			 0, ips, WALK_MAX, &res) > WALK_MAX ||
	    res.n > WALK_MAX || res.end >= UNWIND_END_MAX)
		abort();
	cfi_index__free(idx);
	free(copy);
	return 0;
}
