// SPDX-License-Identifier: MIT
/*
 * The DWARF CFI reader (cfi.h): .eh_frame_hdr's search table, a sorted index of .eh_frame and
 * .debug_frame for files without one, and the call frame instruction interpreter.
 *
 * Every read goes through a cursor bounded by the entry (CIE, FDE, expression block) it is in,
 * and an entry is bounded by its section: a length, offset or count that points elsewhere is
 * an error, never a read. Reads past the bound stick as the cursor's error and read as 0, so a
 * parse checks once per field group instead of after every byte, and loops test the error in
 * their condition. The interpreter runs the CIE's then the FDE's instructions up to the
 * target address and tracks only what the walk needs: the CFA, rbp and the return address;
 * the other columns are parsed and dropped.
 *
 * References: DWARF 5 section 6.4 (call frame information), the LSB 5.0 .eh_frame and
 * .eh_frame_hdr formats (pointer encodings, 'z' augmentations), the x86-64 psABI (DWARF
 * register numbers: 6 rbp, 7 rsp, 16 the return address).
 */
#include "unwind/cfi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "x86-64 CFI, read in host order");

/* Pointer encodings (DW_EH_PE_*): the low nibble is the format, 0x70 what it is relative to. */
enum {
	PE_ABSPTR = 0x00,
	PE_ULEB128 = 0x01,
	PE_UDATA2 = 0x02,
	PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04,
	PE_SIGNED = 0x08, /* a signed absptr */
	PE_SLEB128 = 0x09,
	PE_SDATA2 = 0x0a,
	PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_FORMAT = 0x0f,
	PE_PCREL = 0x10,
	PE_DATAREL = 0x30,
	PE_APPLY = 0x70,
	PE_INDIRECT = 0x80,
	PE_OMIT = 0xff,
};

/* Call frame instructions (DW_CFA_*). The first three carry an operand in their low 6 bits. */
enum {
	CFA_ADVANCE_LOC = 0x40,
	CFA_OFFSET = 0x80,
	CFA_RESTORE = 0xc0,
	CFA_NOP = 0x00,
	CFA_SET_LOC = 0x01,
	CFA_ADVANCE_LOC1 = 0x02,
	CFA_ADVANCE_LOC2 = 0x03,
	CFA_ADVANCE_LOC4 = 0x04,
	CFA_OFFSET_EXTENDED = 0x05,
	CFA_RESTORE_EXTENDED = 0x06,
	CFA_UNDEFINED = 0x07,
	CFA_SAME_VALUE = 0x08,
	CFA_REGISTER = 0x09,
	CFA_REMEMBER_STATE = 0x0a,
	CFA_RESTORE_STATE = 0x0b,
	CFA_DEF_CFA = 0x0c,
	CFA_DEF_CFA_REGISTER = 0x0d,
	CFA_DEF_CFA_OFFSET = 0x0e,
	CFA_DEF_CFA_EXPRESSION = 0x0f,
	CFA_EXPRESSION = 0x10,
	CFA_OFFSET_EXTENDED_SF = 0x11,
	CFA_DEF_CFA_SF = 0x12,
	CFA_DEF_CFA_OFFSET_SF = 0x13,
	CFA_VAL_OFFSET = 0x14,
	CFA_VAL_OFFSET_SF = 0x15,
	CFA_VAL_EXPRESSION = 0x16,
	CFA_GNU_ARGS_SIZE = 0x2e,
	CFA_GNU_NEGATIVE_OFFSET_EXTENDED = 0x2f,
};

/* The DWARF operations of the two CFA expressions we follow. */
enum {
	OP_DEREF = 0x06,
	OP_AND = 0x1a,
	OP_PLUS = 0x22,
	OP_SHL = 0x24,
	OP_GE = 0x2a,
	OP_LIT0 = 0x30,
	OP_LIT3 = 0x33,
	OP_LIT15 = 0x3f,
	OP_BREG0 = 0x70,
};

enum { REG_FP = 6, REG_SP = 7, REG_RA = 16 };

#define STATES_MAX 16 /* DW_CFA_remember_state depth; gcc nests 1 or 2 */
#define INSNS_MAX 100000 /* instructions run per lookup, CIE and FDE together */

/* One section as the parser sees it. */
struct section {
	const __u8 *p;
	__u64 len;
	__u64 vaddr; /* of p[0], the base of pcrel pointers; only when has_vaddr */
	bool has_vaddr;
	bool eh; /* .eh_frame conventions: CIE id 0, CIE pointers relative to themselves */
	__u8 which; /* enum which_section, for the index */
};

enum which_section { SEC_EH_FRAME, SEC_DEBUG_FRAME };

/* A bounded read position in a section. The first error sticks; reads after it return 0. */
struct cursor {
	const struct section *s;
	__u64 pos, end;
	int err;
};

static struct cursor cursor_at(const struct section *s, __u64 pos, __u64 end)
{
	struct cursor c = { .s = s, .pos = pos, .end = end };

	if (end > s->len || pos > end)
		c.err = -EBADMSG;
	return c;
}

static void fail(struct cursor *c, int err)
{
	if (!c->err)
		c->err = err;
	c->pos = c->end;
}

/* The n bytes at the cursor, or NULL (and the cursor fails) when they pass its end. */
static const __u8 *take(struct cursor *c, __u64 n)
{
	const __u8 *p;

	if (c->err || n > c->end - c->pos) {
		fail(c, -EBADMSG);
		return NULL;
	}
	p = c->s->p + c->pos;
	c->pos += n;
	return p;
}

static __u64 get_le(struct cursor *c, unsigned int n)
{
	const __u8 *p = take(c, n);
	__u64 v = 0;

	if (p)
		memcpy(&v, p, n); /* little-endian host (asserted above); p may be unaligned */
	return v;
}

static __u8 get_u8(struct cursor *c)
{
	return (__u8)get_le(c, 1);
}

/* A LEB128 number; bits past 64 are dropped (a hostile number is only long, not wrong). */
static __u64 get_leb(struct cursor *c, bool is_signed)
{
	unsigned int shift = 0;
	__u64 v = 0;
	__u8 b;

	do {
		b = get_u8(c);
		if (shift < 64)
			v |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while ((b & 0x80) && !c->err);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

static __u64 get_uleb(struct cursor *c)
{
	return get_leb(c, false);
}

static __s64 get_sleb(struct cursor *c)
{
	return (__s64)get_leb(c, true);
}

/*
 * A pointer in encoding enc. base_datarel: what DW_EH_PE_datarel is relative to (only
 * .eh_frame_hdr has one: its own address). Fails the cursor with -EBADMSG on a format or
 * application we cannot compute (textrel, funcrel, aligned, pcrel without a vaddr), and with
 * -ENOTSUP on indirect (the value would be the address of the pointer, not the pointer).
 */
static __u64 get_ptr(struct cursor *c, __u8 enc, const __u64 *base_datarel)
{
	__u64 field = c->pos, v;

	/* bytes of each fixed-size format; the 0x08 bit says signed */
	static const __u8 size[PE_FORMAT + 1] = {
		[PE_ABSPTR] = 8, [PE_UDATA2] = 2, [PE_UDATA4] = 4, [PE_UDATA8] = 8,
		[PE_SIGNED] = 8, [PE_SDATA2] = 2, [PE_SDATA4] = 4, [PE_SDATA8] = 8,
	};
	__u8 format = enc & PE_FORMAT, n = size[format];

	if (format == PE_ULEB128 || format == PE_SLEB128) {
		v = get_leb(c, format == PE_SLEB128);
	} else if (n) {
		v = get_le(c, n);
		if ((format & PE_SIGNED) && n < 8 && (v >> (8 * n - 1)))
			v |= ~0ull << (8 * n);
	} else {
		fail(c, -EBADMSG);
		return 0;
	}
	switch (enc & PE_APPLY) {
	case 0:
		break;
	case PE_PCREL:
		if (!c->s->has_vaddr)
			fail(c, -EBADMSG);
		v += c->s->vaddr + field;
		break;
	case PE_DATAREL:
		if (!base_datarel)
			fail(c, -EBADMSG);
		else
			v += *base_datarel;
		break;
	default:
		fail(c, -EBADMSG);
	}
	if (enc & PE_INDIRECT)
		fail(c, -ENOTSUP);
	return v;
}

/* One CIE or FDE: where its parts are. */
struct entry {
	__u64 start; /* its length field */
	__u64 id_pos; /* its CIE id or CIE pointer */
	__u64 body; /* past the id */
	__u64 end; /* past the entry */
	__u64 cie; /* FDE: the offset of its CIE (not checked yet) */
	bool is_cie;
};

/* The entry at off: 0, 1 at a terminator (length 0), or -EBADMSG. */
static int read_entry(const struct section *s, __u64 off, struct entry *e)
{
	struct cursor c = cursor_at(s, off, s->len);
	unsigned int id_size = 4;
	__u64 len, id;

	len = get_le(&c, 4);
	if (len == 0xffffffff) { /* 64-bit DWARF: the length follows, ids are 8 bytes */
		len = get_le(&c, 8);
		id_size = 8;
	} else if (len >= 0xfffffff0) {
		return -EBADMSG; /* reserved */
	}
	if (c.err)
		return c.err;
	if (!len)
		return 1;
	if (len > s->len - c.pos)
		return -EBADMSG;
	e->start = off;
	e->id_pos = c.pos;
	e->end = c.pos + len;
	c.end = e->end;
	id = get_le(&c, id_size);
	if (c.err)
		return c.err;
	e->body = c.pos;
	if (s->eh) {
		e->is_cie = id == 0;
		if (!e->is_cie && id > e->id_pos)
			return -EBADMSG;
		e->cie = e->id_pos - id;
	} else {
		e->is_cie = id == (id_size == 8 ? ~0ull : 0xffffffffull);
		e->cie = id;
	}
	return 0;
}

struct cie {
	__u64 insns, end; /* its initial instructions */
	__u64 code_align;
	__s64 data_align;
	__u8 fde_enc; /* 'R': how the FDEs' pc_begin and pc_range are encoded */
	bool aug_z; /* the FDEs have an augmentation data length */
	bool signal; /* 'S' */
};

/* The CIE at off: 0, -EBADMSG, or -ENOTSUP (well-formed but not for x86-64 or too old). */
static int read_cie(const struct section *s, __u64 off, struct cie *cie)
{
	struct cursor c, aug_data;
	__u64 aug, ra, aug_len;
	struct entry e;
	__u8 version, ch;
	int err;

	err = read_entry(s, off, &e);
	if (err)
		return err > 0 ? -EBADMSG : err;
	if (!e.is_cie)
		return -EBADMSG; /* an FDE's CIE pointer to another FDE */
	c = cursor_at(s, e.body, e.end);
	version = get_u8(&c);
	if (version != 1 && version != 3 && version != 4)
		return -EBADMSG;
	aug = c.pos;
	while (get_u8(&c))
		;
	if (version == 4 && (get_u8(&c) != 8 || get_u8(&c) != 0) && !c.err)
		return -ENOTSUP; /* address size 8, no segment selector: x86-64 */
	cie->code_align = get_uleb(&c);
	cie->data_align = get_sleb(&c);
	ra = version == 1 ? get_u8(&c) : get_uleb(&c);
	if (c.err)
		return c.err;
	if (ra != REG_RA)
		return -ENOTSUP;
	cie->fde_enc = PE_ABSPTR;
	cie->signal = false;
	cie->aug_z = s->p[aug] == 'z';
	cie->end = e.end;
	if (!cie->aug_z) {
		/* "" is DWARF's own form; "eh" and other pre-'z' strings cannot be skipped */
		if (s->p[aug])
			return -ENOTSUP;
		cie->insns = c.pos;
		return 0;
	}
	aug_len = get_uleb(&c);
	if (c.err || aug_len > c.end - c.pos)
		return -EBADMSG;
	aug_data = cursor_at(s, c.pos, c.pos + aug_len);
	cie->insns = aug_data.end;
	for (aug++; (ch = s->p[aug]) && !aug_data.err; aug++) {
		if (ch == 'R') {
			cie->fde_enc = get_u8(&aug_data);
		} else if (ch == 'P') {
			__u8 enc = get_u8(&aug_data);

			if (enc != PE_OMIT) /* skipped: only its size matters, indirect or not */
				get_ptr(&aug_data, enc & PE_FORMAT, NULL);
		} else if (ch == 'L') {
			get_u8(&aug_data);
		} else if (ch == 'S') {
			cie->signal = true;
		} else {
			break; /* unknown: 'z' says how much data to skip, as libgcc does */
		}
	}
	return aug_data.err;
}

struct fde {
	__u64 pc_begin, pc_end;
	__u64 insns, end;
};

static int read_fde(const struct section *s, const struct entry *e, const struct cie *cie,
		    struct fde *fde)
{
	struct cursor c = cursor_at(s, e->body, e->end);
	__u64 range;

	fde->pc_begin = get_ptr(&c, cie->fde_enc, NULL);
	range = get_ptr(&c, cie->fde_enc & PE_FORMAT, NULL); /* a length: never relative */
	if (cie->aug_z)
		take(&c, get_uleb(&c)); /* the LSDA pointer */
	if (c.err)
		return c.err;
	fde->pc_end = fde->pc_begin + range;
	if (fde->pc_end < fde->pc_begin)
		return -EBADMSG;
	fde->insns = c.pos;
	fde->end = e->end;
	return 0;
}

/* The FDE at off, with its CIE. */
static int read_fde_at(const struct section *s, __u64 off, struct cie *cie, struct fde *fde)
{
	struct entry e;
	int err = read_entry(s, off, &e);

	if (err)
		return err > 0 ? -EBADMSG : err;
	if (e.is_cie)
		return -EBADMSG;
	err = read_cie(s, e.cie, cie);
	return err ? err : read_fde(s, &e, cie, fde);
}

/* --- .eh_frame_hdr ------------------------------------------------------------------- */

/* The search table the hdr path reads: entries of two sdata4 relative to the hdr. */
#define HDR_TABLE_ENC (PE_DATAREL | PE_SDATA4)

struct hdr {
	struct section s;
	__u64 table; /* offset of the first entry */
	__u64 count;
};

/* sec's .eh_frame_hdr when we can search it: 0, or -ENOENT (none, or not a form we read:
 * the index scans .eh_frame instead). */
static int hdr_open(const struct cfi_sections *sec, struct hdr *h)
{
	struct cursor c;
	__u8 ptr_enc, count_enc, table_enc;

	if (!sec->eh_frame_hdr || !sec->eh_frame)
		return -ENOENT;
	h->s = (struct section){ .p = sec->eh_frame_hdr,
				 .len = sec->eh_frame_hdr_len,
				 .vaddr = sec->eh_frame_hdr_vaddr,
				 .has_vaddr = true };
	c = cursor_at(&h->s, 0, h->s.len);
	if (get_u8(&c) != 1)
		return -ENOENT;
	ptr_enc = get_u8(&c);
	count_enc = get_u8(&c);
	table_enc = get_u8(&c);
	if (ptr_enc != PE_OMIT) /* .eh_frame's address: sec already has it */
		get_ptr(&c, ptr_enc, &h->s.vaddr);
	if (count_enc == PE_OMIT || table_enc != HDR_TABLE_ENC)
		return -ENOENT;
	h->count = get_ptr(&c, count_enc, &h->s.vaddr);
	if (c.err || h->count > (c.end - c.pos) / 8)
		return -ENOENT;
	h->table = c.pos;
	return 0;
}

/* How many of the n sorted keys key(table, i) are at or below x: the last of them is the
 * entry whose range may hold x. One search for the hdr's table and the index. */
static __u64 count_at_or_below(const void *table, __u64 n, __u64 (*key)(const void *, __u64),
			       __u64 x)
{
	__u64 lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (key(table, mid) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static __u64 hdr_field(const struct hdr *h, __u64 i, unsigned int which)
{
	__s32 v;

	memcpy(&v, h->s.p + h->table + 8 * i + 4 * which, 4);
	return h->s.vaddr + (__u64)(__s64)v;
}

static __u64 hdr_key(const void *h, __u64 i)
{
	return hdr_field(h, i, 0);
}

/* The .eh_frame offset of the FDE whose table entry is the last at or below vaddr: 0,
 * -ENOENT, -EBADMSG (it points outside .eh_frame). */
static int hdr_search(const struct cfi_sections *sec, const struct hdr *h, __u64 vaddr, __u64 *off)
{
	__u64 lo = count_at_or_below(h, h->count, hdr_key, vaddr), fde;

	if (!lo)
		return -ENOENT;
	fde = hdr_field(h, lo - 1, 1);
	if (fde < sec->eh_frame_vaddr || fde - sec->eh_frame_vaddr >= sec->eh_frame_len)
		return -EBADMSG;
	*off = fde - sec->eh_frame_vaddr;
	return 0;
}

/* --- the index ---------------------------------------------------------------------- */

struct index_entry {
	__u64 pc_begin, pc_end;
	__u32 off; /* of the FDE in its section */
	__u32 which; /* enum which_section */
};

struct cfi_index {
	struct index_entry *e;
	size_t n, cap;
	__u64 bad;
	struct section eh_frame, debug_frame;
};

static struct section eh_frame_section(const struct cfi_sections *sec)
{
	return (struct section){ .p = sec->eh_frame,
				 .len = sec->eh_frame ? sec->eh_frame_len : 0,
				 .vaddr = sec->eh_frame_vaddr,
				 .has_vaddr = true,
				 .eh = true,
				 .which = SEC_EH_FRAME };
}

static struct section debug_frame_section(const struct cfi_sections *sec)
{
	return (struct section){ .p = sec->debug_frame,
				 .len = sec->debug_frame ? sec->debug_frame_len : 0,
				 .which = SEC_DEBUG_FRAME };
}

static int index_add(struct cfi_index *idx, const struct fde *fde, __u64 off, __u32 which)
{
	if (idx->n == idx->cap) {
		size_t cap = idx->cap ? 2 * idx->cap : 256;
		struct index_entry *e;

		if (cap > SIZE_MAX / sizeof(*e))
			return -ENOMEM;
		e = realloc(idx->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		idx->e = e;
		idx->cap = cap;
	}
	idx->e[idx->n++] = (struct index_entry){ fde->pc_begin, fde->pc_end, (__u32)off, which };
	return 0;
}

/* Every FDE of s into idx: 0 or -ENOMEM. An entry we cannot read is counted in idx->bad;
 * one whose length we cannot trust ends the scan, since the next entry is found from it. */
static int index_scan(struct cfi_index *idx, const struct section *s)
{
	__u64 off = 0, cie_off = UINT64_MAX;
	struct cie cie;
	struct fde fde;
	struct entry e;
	int err, cie_err = -EBADMSG;

	while (off < s->len) {
		err = read_entry(s, off, &e);
		if (err > 0)
			break; /* the terminator */
		if (err) {
			idx->bad++;
			break;
		}
		off = e.end; /* > e.start: the loop ends */
		if (e.is_cie)
			continue;
		if (e.cie != cie_off) { /* FDEs share a few CIEs, and come in runs */
			cie_off = e.cie;
			cie_err = read_cie(s, e.cie, &cie);
		}
		if (cie_err || read_fde(s, &e, &cie, &fde) || e.start > UINT32_MAX) {
			idx->bad++;
			continue;
		}
		if (fde.pc_end == fde.pc_begin)
			continue;
		if (index_add(idx, &fde, e.start, s->which))
			return -ENOMEM;
	}
	return 0;
}

static int by_pc(const void *a, const void *b)
{
	const struct index_entry *x = a, *y = b;

	if (x->pc_begin != y->pc_begin)
		return x->pc_begin < y->pc_begin ? -1 : 1;
	if (x->which != y->which)
		return x->which < y->which ? -1 : 1; /* .eh_frame first: the one kept */
	return (x->off > y->off) - (x->off < y->off);
}

void cfi_index__free(struct cfi_index *idx)
{
	if (!idx)
		return;
	free(idx->e);
	free(idx);
}

size_t cfi_index__bytes(const struct cfi_index *idx)
{
	return idx ? sizeof(*idx) + idx->cap * sizeof(*idx->e) : 0;
}

__u64 cfi_index__bad(const struct cfi_index *idx)
{
	return idx ? idx->bad : 0;
}

struct cfi_index *cfi_index__build(const struct cfi_sections *sec)
{
	struct cfi_index *idx;
	struct hdr h;
	size_t i, kept;
	bool scan_eh = sec->eh_frame && sec->eh_frame_len && hdr_open(sec, &h);

	if (!scan_eh && !(sec->debug_frame && sec->debug_frame_len)) {
		errno = ENOENT;
		return NULL;
	}
	idx = calloc(1, sizeof(*idx));
	if (!idx) {
		errno = ENOMEM;
		return NULL;
	}
	idx->eh_frame = eh_frame_section(sec);
	idx->debug_frame = debug_frame_section(sec);
	if (scan_eh && index_scan(idx, &idx->eh_frame))
		goto free_index;
	if (index_scan(idx, &idx->debug_frame))
		goto free_index;
	if (idx->n)
		qsort(idx->e, idx->n, sizeof(*idx->e), by_pc);
	/* A function described twice (.eh_frame and .debug_frame) keeps its .eh_frame FDE. */
	for (i = 0, kept = 0; i < idx->n; i++)
		if (!kept || idx->e[i].pc_begin != idx->e[kept - 1].pc_begin)
			idx->e[kept++] = idx->e[i];
	idx->n = kept;
	return idx;
free_index:
	cfi_index__free(idx);
	errno = ENOMEM;
	return NULL;
}

static __u64 index_key(const void *e, __u64 i)
{
	return ((const struct index_entry *)e)[i].pc_begin;
}

/* The index entry whose range holds vaddr, or NULL. */
static const struct index_entry *index_search(const struct cfi_index *idx, __u64 vaddr)
{
	__u64 lo = count_at_or_below(idx->e, idx->n, index_key, vaddr);

	return lo && vaddr < idx->e[lo - 1].pc_end ? &idx->e[lo - 1] : NULL;
}

/* --- the interpreter ---------------------------------------------------------------- */

/* What we know of a tracked register (rbp, the return address). */
enum how {
	HOW_SAME,
	HOW_AT_CFA, /* saved at cfa + off */
	HOW_UNDEFINED,
	HOW_AT_FP, /* saved at fp + off: DW_CFA_expression DW_OP_breg6 off */
	HOW_UNSUPPORTED, /* in another register, or an expression we do not follow */
};

struct reg_rule {
	__s64 off;
	__u8 how;
};

struct row {
	__u64 cfa_reg;
	__s64 cfa_off;
	__u64 expr, expr_len; /* the DW_CFA_def_cfa_expression block, when cfa_expr */
	bool cfa_expr;
	struct reg_rule fp, ra;
};

struct interp {
	const struct section *s;
	const struct cie *cie;
	__u64 target; /* run up to the row that holds here */
	__u64 loc; /* where the current row starts */
	__u64 next; /* where the next row starts, once stopped */
	bool stopped;
	unsigned int insns;
	unsigned int depth;
	struct row row, initial; /* initial: after the CIE, for DW_CFA_restore */
	struct row saved[STATES_MAX];
};

static struct reg_rule *column(struct row *row, __u64 reg)
{
	return reg == REG_FP ? &row->fp : reg == REG_RA ? &row->ra : NULL;
}

static void set_reg(struct interp *in, __u64 reg, __u8 how, __s64 off)
{
	struct reg_rule *r = column(&in->row, reg);

	if (r)
		*r = (struct reg_rule){ off, how };
}

/* A factored offset: an operand times the data alignment factor, wrapping (no UB). */
static __s64 factored(const struct interp *in, __u64 v)
{
	return (__s64)(v * (__u64)in->cie->data_align);
}

/* The row moves to loc, or the run stops there when loc is past the target. */
static void advance(struct interp *in, struct cursor *c, __u64 loc)
{
	if (loc < in->loc) {
		fail(c, -EBADMSG); /* backwards, or a wrapped delta */
	} else if (loc > in->target) {
		in->next = loc;
		in->stopped = true;
	} else {
		in->loc = loc;
	}
}

/* The expression block of DW_CFA_expression/val_expression for reg (the operands are read:
 * the block). Only rbp's "DW_OP_breg6 N" (a realigned frame: the caller's rbp at [rbp + N])
 * is followed; any other expression for a tracked register makes it unsupported. */
static void reg_expression(struct interp *in, struct cursor *c, __u64 reg, bool val)
{
	__u64 len = get_uleb(c), start = c->pos;
	struct cursor e;
	__s64 off;

	if (!take(c, len) || !column(&in->row, reg))
		return;
	e = cursor_at(in->s, start, start + len);
	if (!val && reg == REG_FP && get_u8(&e) == OP_BREG0 + REG_FP) {
		off = get_sleb(&e);
		if (!e.err && e.pos == e.end) {
			set_reg(in, reg, HOW_AT_FP, off);
			return;
		}
	}
	set_reg(in, reg, HOW_UNSUPPORTED, 0);
}

static void restore(struct interp *in, __u64 reg)
{
	struct reg_rule *r = column(&in->row, reg);

	if (r)
		*r = *column(&in->initial, reg);
}

/* Runs the instructions in [pos, end) until the row past the target: 0 or -EBADMSG. */
static int run(struct interp *in, __u64 pos, __u64 end)
{
	struct cursor c = cursor_at(in->s, pos, end);
	__u64 reg, v;
	__u8 op;

	while (!c.err && c.pos < c.end && !in->stopped) {
		if (++in->insns > INSNS_MAX)
			return -EBADMSG;
		op = get_u8(&c);
		switch (op & 0xc0) {
		case CFA_ADVANCE_LOC:
			advance(in, &c, in->loc + (op & 0x3f) * in->cie->code_align);
			continue;
		case CFA_OFFSET:
			set_reg(in, op & 0x3f, HOW_AT_CFA, factored(in, get_uleb(&c)));
			continue;
		case CFA_RESTORE:
			restore(in, op & 0x3f);
			continue;
		}
		switch (op) {
		case CFA_NOP:
			break;
		case CFA_SET_LOC:
			advance(in, &c, get_ptr(&c, in->cie->fde_enc, NULL));
			break;
		case CFA_ADVANCE_LOC1:
			advance(in, &c, in->loc + get_le(&c, 1) * in->cie->code_align);
			break;
		case CFA_ADVANCE_LOC2:
			advance(in, &c, in->loc + get_le(&c, 2) * in->cie->code_align);
			break;
		case CFA_ADVANCE_LOC4:
			advance(in, &c, in->loc + get_le(&c, 4) * in->cie->code_align);
			break;
		case CFA_OFFSET_EXTENDED:
			reg = get_uleb(&c);
			set_reg(in, reg, HOW_AT_CFA, factored(in, get_uleb(&c)));
			break;
		case CFA_OFFSET_EXTENDED_SF:
			reg = get_uleb(&c);
			set_reg(in, reg, HOW_AT_CFA, factored(in, (__u64)get_sleb(&c)));
			break;
		case CFA_GNU_NEGATIVE_OFFSET_EXTENDED:
			reg = get_uleb(&c);
			set_reg(in, reg, HOW_AT_CFA, factored(in, 0 - get_uleb(&c)));
			break;
		case CFA_RESTORE_EXTENDED:
			restore(in, get_uleb(&c));
			break;
		case CFA_UNDEFINED:
			set_reg(in, get_uleb(&c), HOW_UNDEFINED, 0);
			break;
		case CFA_SAME_VALUE:
			set_reg(in, get_uleb(&c), HOW_SAME, 0);
			break;
		case CFA_REGISTER:
			reg = get_uleb(&c);
			get_uleb(&c);
			set_reg(in, reg, HOW_UNSUPPORTED, 0);
			break;
		case CFA_VAL_OFFSET:
		case CFA_VAL_OFFSET_SF:
			reg = get_uleb(&c);
			get_uleb(&c); /* the value is cfa + N: never a saved rbp or ra */
			set_reg(in, reg, HOW_UNSUPPORTED, 0);
			break;
		case CFA_REMEMBER_STATE:
			if (in->depth == STATES_MAX)
				return -EBADMSG;
			in->saved[in->depth++] = in->row;
			break;
		case CFA_RESTORE_STATE:
			if (!in->depth)
				return -EBADMSG;
			/* the CFA too, as gcc and LLVM emit it (DWARF 5 says registers only) */
			in->row = in->saved[--in->depth];
			break;
		case CFA_DEF_CFA:
			in->row.cfa_reg = get_uleb(&c);
			in->row.cfa_off = (__s64)get_uleb(&c);
			in->row.cfa_expr = false;
			break;
		case CFA_DEF_CFA_SF:
			in->row.cfa_reg = get_uleb(&c);
			in->row.cfa_off = factored(in, (__u64)get_sleb(&c));
			in->row.cfa_expr = false;
			break;
		case CFA_DEF_CFA_REGISTER:
			in->row.cfa_reg = get_uleb(&c);
			in->row.cfa_expr = false;
			break;
		case CFA_DEF_CFA_OFFSET:
			in->row.cfa_off = (__s64)get_uleb(&c);
			break;
		case CFA_DEF_CFA_OFFSET_SF:
			in->row.cfa_off = factored(in, (__u64)get_sleb(&c));
			break;
		case CFA_DEF_CFA_EXPRESSION:
			v = get_uleb(&c);
			in->row.expr = c.pos;
			in->row.expr_len = v;
			in->row.cfa_expr = true;
			take(&c, v);
			break;
		case CFA_EXPRESSION:
		case CFA_VAL_EXPRESSION:
			reg = get_uleb(&c);
			reg_expression(in, &c, reg, op == CFA_VAL_EXPRESSION);
			break;
		case CFA_GNU_ARGS_SIZE:
			get_uleb(&c);
			break;
		default:
			return -EBADMSG;
		}
	}
	return c.err;
}

/*
 * The CFA expressions we follow. The PLT's, as binutils writes it for lazy PLTs (16-byte
 * entries, the push of the relocation index at a fixed offset in each):
 *	DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 *	DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * that is rsp + 8, + 8 when (rip & 15) >= N; N is 11 for the classic PLT, 10 with IBT
 * (endbr64 first), 5 for BND. And gcc's realigned stack (DRAP): DW_OP_breg6 (rbp) N;
 * DW_OP_deref. Returns 0 or -ENOTSUP.
 */
static int cfa_expression(const struct section *s, const struct row *row, struct cfi_rule *out)
{
	static const __u8 plt_head[] = { OP_BREG0 + REG_RA, 0, OP_LIT15, OP_AND };
	static const __u8 plt_tail[] = { OP_GE, OP_LIT3, OP_SHL, OP_PLUS };
	struct cursor c = cursor_at(s, row->expr, row->expr + row->expr_len);
	__u8 op = get_u8(&c), lit;
	__s64 off = get_sleb(&c);
	const __u8 *p;

	if (c.err || off < INT32_MIN || off > INT32_MAX)
		return -ENOTSUP;
	out->cfa_off = (__s32)off;
	if (op == OP_BREG0 + REG_FP) {
		if (get_u8(&c) != OP_DEREF || c.pos != c.end)
			return -ENOTSUP;
		out->cfa = CFI_CFA_FP_DEREF;
		return 0;
	}
	p = take(&c, sizeof(plt_head) + 1 + sizeof(plt_tail));
	if (op != OP_BREG0 + REG_SP || !p || c.pos != c.end ||
	    memcmp(p, plt_head, sizeof(plt_head)) ||
	    memcmp(p + sizeof(plt_head) + 1, plt_tail, sizeof(plt_tail)))
		return -ENOTSUP;
	lit = p[sizeof(plt_head)];
	if (lit <= OP_LIT0 || lit > OP_LIT15)
		return -ENOTSUP;
	out->cfa = CFI_CFA_PLT;
	out->plt_split = (__u8)(lit - OP_LIT0);
	return 0;
}

/* The tracked register rule as cfi.h says it; false when it cannot be said. */
static bool reg_out(const struct reg_rule *r, __u8 *how, __s32 *off)
{
	if (r->off < INT32_MIN || r->off > INT32_MAX)
		return false;
	*off = (__s32)r->off;
	switch (r->how) {
	case HOW_SAME:
		*how = CFI_REG_SAME;
		return true;
	case HOW_AT_CFA:
		*how = CFI_REG_AT_CFA;
		return true;
	case HOW_UNDEFINED:
		*how = CFI_REG_UNDEFINED;
		return true;
	case HOW_AT_FP:
		*how = CFI_REG_AT_FP;
		return true;
	default:
		return false;
	}
}

static int row_out(const struct interp *in, const struct row *row, struct cfi_rule *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (row->cfa_expr) {
		err = cfa_expression(in->s, row, out);
		if (err)
			return err;
	} else if (row->cfa_reg == REG_SP || row->cfa_reg == REG_FP) {
		if (row->cfa_off < INT32_MIN || row->cfa_off > INT32_MAX)
			return -ENOTSUP;
		out->cfa = row->cfa_reg == REG_SP ? CFI_CFA_SP : CFI_CFA_FP;
		out->cfa_off = (__s32)row->cfa_off;
	} else {
		return -ENOTSUP;
	}
	if (!reg_out(&row->ra, &out->ra, &out->ra_off) ||
	    !reg_out(&row->fp, &out->fp, &out->fp_off))
		return -ENOTSUP;
	/* the return address is not a register the caller had: "same" would loop */
	if (out->ra == CFI_REG_SAME || out->ra == CFI_REG_AT_FP)
		return -ENOTSUP;
	out->signal = in->cie->signal;
	return 0;
}

/* The rule for vaddr from the FDE at off in s: 0, -ENOENT (its range does not hold vaddr),
 * -EBADMSG, -ENOTSUP. */
static int find_in(const struct section *s, __u64 off, __u64 vaddr, struct cfi_rule *out)
{
	struct interp in;
	struct cie cie;
	struct fde fde;
	int err;

	err = read_fde_at(s, off, &cie, &fde);
	if (err)
		return err;
	if (vaddr < fde.pc_begin || vaddr >= fde.pc_end)
		return -ENOENT;
	in.s = s;
	in.cie = &cie;
	in.target = vaddr;
	in.loc = fde.pc_begin;
	in.stopped = false;
	in.insns = 0;
	in.depth = 0;
	/* Before the CIE says otherwise: rbp is callee-saved (unchanged), the return address
	 * unknown; the CFA rsp + 0 is never used: every CIE defines one. */
	in.row = (struct row){ .cfa_reg = REG_SP,
			       .fp = { 0, HOW_SAME },
			       .ra = { 0, HOW_UNDEFINED } };
	in.initial = in.row;
	err = run(&in, cie.insns, cie.end);
	if (err)
		return err;
	in.initial = in.row;
	in.depth = 0; /* a CIE's remembered states are not the FDE's to restore */
	err = run(&in, fde.insns, fde.end);
	if (err)
		return err;
	err = row_out(&in, &in.row, out);
	if (err)
		return err;
	out->start = in.loc;
	out->end = in.stopped && in.next < fde.pc_end ? in.next : fde.pc_end;
	return 0;
}

int cfi__find(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr,
	      struct cfi_rule *out)
{
	const struct index_entry *e;
	struct section eh;
	struct hdr h;
	__u64 off;
	int err;

	if (!hdr_open(sec, &h)) {
		eh = eh_frame_section(sec);
		err = hdr_search(sec, &h, vaddr, &off);
		if (!err)
			err = find_in(&eh, off, vaddr, out);
		if (err != -ENOENT)
			return err;
	}
	if (!idx)
		return -ENOENT;
	e = index_search(idx, vaddr);
	if (!e)
		return -ENOENT;
	return find_in(e->which == SEC_EH_FRAME ? &idx->eh_frame : &idx->debug_frame, e->off, vaddr,
		       out);
}

const char *cfi__strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -ENOENT:
		return "no_fde";
	case -EBADMSG:
		return "bad_cfi";
	case -ENOTSUP:
		return "unsupported";
	default:
		return "error";
	}
}
