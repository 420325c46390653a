// SPDX-License-Identifier: MIT
/*
 * Fuzz target for the CFI reader (unwind/cfi.c).
 *
 * The input is a header, then the sections it describes (little-endian):
 *
 *	0   u8	flags: 1 .eh_frame_hdr, 2 .eh_frame, 4 .debug_frame, 8 build an index
 *	1   u8	probe stride - 1
 *	2   u16	.eh_frame_hdr length
 *	4   u16	.eh_frame length
 *	6   u32	.eh_frame_hdr vaddr
 *	10  u32	.eh_frame vaddr
 *	14  u32	first probe address
 *	18	.eh_frame_hdr bytes, .eh_frame bytes, then .debug_frame: the rest
 *
 * (a short input reads as if padded with zeros). Each section is copied into an allocation of
 * exactly its size, so ASan sees a read past it. Addresses probed: 32 from the first probe
 * address by the stride, and the first entries of .eh_frame_hdr's table as it would read
 * them; from each probe that finds a rule, the next rows, by following rule.end.
 *
 * Properties beyond "no crash, no leak, no hang":
 *   - cfi_index__build gives an index, or NULL with errno ENOENT or ENOMEM;
 *   - cfi__find returns 0, -ENOENT, -EBADMSG or -ENOTSUP, the same twice in a row;
 *   - a rule holds its address (start <= vaddr < end) and its fields are in their enums.
 * tests/fuzz/cfi_seeds.py writes the seed corpus (corpus/cfi).
 */
#include "unwind/cfi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

#define HEADER 18
#define PROBES 32
#define TABLE_PROBES 64
#define ROWS_FOLLOWED 32

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "cfi_fuzz: property violated: %s\n", what);
		abort();
	}
}

static __u64 le(const uint8_t *p, unsigned int n)
{
	__u64 v = 0;

	memcpy(&v, p, n);
	return v;
}

/* Looks vaddr up, checks the answer; returns the rule's end to probe next, or 0. */
static __u64 probe(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr)
{
	struct cfi_rule r, again;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(&again, 0, sizeof(again));
	rc = cfi__find(sec, idx, vaddr, &r);
	require(rc == 0 || rc == -ENOENT || rc == -EBADMSG || rc == -ENOTSUP,
		"cfi__find returns 0, -ENOENT, -EBADMSG or -ENOTSUP");
	require(cfi__strerror(rc) != NULL, "every return has a name");
	require(cfi__find(sec, idx, vaddr, &again) == rc && (rc || !memcmp(&r, &again, sizeof(r))),
		"cfi__find keeps no state");
	if (rc)
		return 0;
	require(r.start <= vaddr && vaddr < r.end, "the rule's range holds its address");
	require(r.cfa >= CFI_CFA_SP && r.cfa <= CFI_CFA_FP_DEREF, "cfa is an enum cfi_cfa");
	require(r.ra == CFI_REG_AT_CFA || r.ra == CFI_REG_UNDEFINED,
		"the return address is at the cfa or undefined");
	require(r.fp <= CFI_REG_AT_FP, "fp is an enum cfi_reg");
	require(r.signal <= 1, "signal is 0 or 1");
	require(r.cfa != CFI_CFA_PLT || (r.plt_split >= 1 && r.plt_split <= 15),
		"a PLT splits its 16 bytes");
	return r.end;
}

static void probe_rows(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr)
{
	unsigned int i;

	for (i = 0; i < ROWS_FOLLOWED && vaddr; i++)
		vaddr = probe(sec, idx, vaddr);
}

/* An exact-size copy of n bytes (NULL for none), so that a read past it is ASan's to see. */
static __u8 *section_copy(const uint8_t *p, size_t n)
{
	__u8 *c;

	if (!n)
		return NULL;
	c = malloc(n);
	require(c != NULL, "allocation");
	memcpy(c, p, n);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t h[HEADER] = { 0 };
	struct cfi_sections sec = { 0 };
	struct cfi_index *idx = NULL;
	size_t hdr_len, eh_len, rest, i;
	__u64 base, stride;
	__u8 *hdr, *eh, *dbg;

	memcpy(h, data, size < HEADER ? size : HEADER);
	rest = size < HEADER ? 0 : size - HEADER;
	data += size < HEADER ? size : HEADER;
	hdr_len = le(h + 2, 2) < rest ? le(h + 2, 2) : rest;
	rest -= hdr_len;
	eh_len = le(h + 4, 2) < rest ? le(h + 4, 2) : rest;
	rest -= eh_len;
	hdr = section_copy(data, (h[0] & 1) ? hdr_len : 0);
	eh = section_copy(data + hdr_len, (h[0] & 2) ? eh_len : 0);
	dbg = section_copy(data + hdr_len + eh_len, (h[0] & 4) ? rest : 0);
	sec = (struct cfi_sections){ hdr, hdr ? hdr_len : 0, le(h + 6, 4),
				     eh,  eh ? eh_len : 0,   le(h + 10, 4),
				     dbg, dbg ? rest : 0 };

	if (h[0] & 8) {
		errno = 0;
		idx = cfi_index__build(&sec);
		require(idx || errno == ENOENT || errno == ENOMEM,
			"no index: ENOENT (nothing to index) or ENOMEM");
		require(!idx || cfi_index__bytes(idx) > 0, "an index holds memory");
		(void)cfi_index__bad(idx);
	}
	base = le(h + 14, 4);
	stride = (__u64)h[1] + 1;
	for (i = 0; i < PROBES; i++)
		probe_rows(&sec, idx, base + i * stride);
	/* the addresses .eh_frame_hdr's table starts FDEs at, read as cfi.c reads the common
	 * form (version 1, u32 count, datarel sdata4 pairs after 12 bytes) */
	for (i = 0; hdr && hdr_len >= 12 && i < TABLE_PROBES && 12 + 8 * i + 8 <= hdr_len; i++)
		probe_rows(&sec, idx, le(h + 6, 4) + (__u64)(__s64)(__s32)le(hdr + 12 + 8 * i, 4));
	cfi_index__free(idx);
	free(hdr);
	free(eh);
	free(dbg);
	return 0;
}
