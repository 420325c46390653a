// SPDX-License-Identifier: MIT
/*
 * The DWARF CFI reader: contract in cfi.h, design in docs/unwind.md.
 *
 * All reads go through struct rd, which knows the bytes it may read and the ELF virtual
 * address of the first one (for pc-relative pointers); a read past the end sets rd.bad and
 * yields 0, and every caller checks rd.bad before it trusts what it read. Nothing recurses;
 * the call frame program runs at most INSN_MAX instructions with at most STATE_MAX remembered
 * states; a CIE is looked up once per FDE (never a chain).
 */
#include "unwind/cfi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define INSN_MAX 100000 /* call frame instructions run for one lookup */
#define STATE_MAX 16 /* DW_CFA_remember_state depth */
#define AUG_MAX 8 /* augmentation characters we look at */

/* DWARF register numbers on x86-64 */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* DW_EH_PE_* pointer encodings */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APP 0x70
#define PE_INDIRECT 0x80
#define PE_PCREL 0x10
#define PE_DATAREL 0x30

enum section { SEC_EH = 0, SEC_DEBUG = 1 };

struct rd {
	const __u8 *base, *p, *end;
	__u64 base_vaddr; /* ELF vaddr of base[0]; pcrel pointers are relative to it */
	__u64 datarel; /* .eh_frame_hdr's vaddr, for datarel pointers */
	bool bad;
};

static bool have(struct rd *r, __u64 n)
{
	if (r->bad || (__u64)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	return true;
}

static __u64 get_le(struct rd *r, unsigned int n)
{
	__u64 v = 0;
	unsigned int i;

	if (!have(r, n))
		return 0;
	for (i = 0; i < n; i++)
		v |= (__u64)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* A LEB128 number; sign-extended when sign is set. */
static __u64 get_leb(struct rd *r, bool sign)
{
	__u64 v = 0;
	unsigned int shift = 0;
	__u8 b;

	do {
		if (!have(r, 1))
			return 0;
		b = *r->p++;
		if (shift < 64)
			v |= (__u64)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80 && shift < 70);
	if (b & 0x80)
		r->bad = true;
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

static __u64 get_uleb(struct rd *r)
{
	return get_leb(r, false);
}

static __s64 get_sleb(struct rd *r)
{
	return (__s64)get_leb(r, true);
}

static void skip(struct rd *r, __u64 n)
{
	if (have(r, n))
		r->p += n;
}

/* A pointer in encoding enc. -ENOTSUP for indirect ones, -EBADMSG for the rest we do not
 * know; the value in *out. */
static int get_ptr(struct rd *r, __u8 enc, __u64 *out)
{
	__u64 field = r->base_vaddr + (__u64)(r->p - r->base), v;

	if (enc == PE_OMIT)
		return -EBADMSG;
	switch (enc & PE_FORMAT) {
	case 0x00:
		v = get_le(r, 8);
		break;
	case 0x01:
		v = get_uleb(r);
		break;
	case 0x02:
		v = get_le(r, 2);
		break;
	case 0x03:
		v = get_le(r, 4);
		break;
	case 0x04:
		v = get_le(r, 8);
		break;
	case 0x09:
		v = (__u64)get_sleb(r);
		break;
	case 0x0a:
		v = (__u64)(__s64)(__s16)get_le(r, 2);
		break;
	case 0x0b:
		v = (__u64)(__s64)(__s32)get_le(r, 4);
		break;
	case 0x0c:
		v = get_le(r, 8);
		break;
	default:
		return -EBADMSG;
	}
	switch (enc & PE_APP) {
	case 0x00:
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_DATAREL:
		v += r->datarel;
		break;
	default:
		return -EBADMSG;
	}
	if (r->bad)
		return -EBADMSG;
	if (enc & PE_INDIRECT)
		return -ENOTSUP;
	*out = v;
	return 0;
}

/* A CIE, as far as the lookup needs it. */
struct cie {
	__u64 code_align;
	__s64 data_align;
	__u64 ra_reg;
	__u8 fde_enc; /* pointer encoding of the FDE's addresses */
	bool aug_z, signal;
	const __u8 *insns, *insns_end;
};

/* An FDE: its addresses and its instructions. */
struct fde {
	__u64 pc_begin, pc_end;
	const __u8 *insns, *insns_end;
	struct cie cie;
};

/* A reader over the bytes of section sec of s, starting at offset off. */
static bool rd_at(struct rd *r, const struct cfi_sections *s, enum section sec, __u64 off)
{
	const __u8 *b = sec == SEC_EH ? s->eh_frame : s->debug_frame;
	__u64 len = sec == SEC_EH ? s->eh_frame_len : s->debug_frame_len;

	*r = (struct rd){ .base = b,
			  .base_vaddr = sec == SEC_EH ? s->eh_frame_vaddr : 0,
			  .datarel = s->eh_frame_hdr_vaddr };
	if (!b || off >= len)
		return false;
	r->end = b + len; /* b is not NULL: no arithmetic on a null pointer */
	r->p = b + off;
	return true;
}

/* The length field of an entry: *id_off is where its id starts, *end where the entry ends.
 * 0, -ENOENT for the zero terminator, -EBADMSG. */
static int entry_bounds(struct rd *r, bool *wide, const __u8 **end)
{
	__u64 len = get_le(r, 4);

	*wide = len == 0xffffffffu;
	if (*wide)
		len = get_le(r, 8);
	if (r->bad)
		return -EBADMSG;
	if (!len)
		return -ENOENT;
	if (len > (__u64)(r->end - r->p))
		return -EBADMSG;
	*end = r->p + len;
	return 0;
}

static int cie_parse(const struct cfi_sections *s, enum section sec, __u64 off, struct cie *c)
{
	char aug[AUG_MAX + 1];
	const __u8 *end, *aug_end = NULL;
	unsigned int n = 0, i;
	struct rd r;
	__u64 id, personality;
	__u8 version, enc;
	bool wide;
	int err;

	if (!rd_at(&r, s, sec, off))
		return -EBADMSG;
	err = entry_bounds(&r, &wide, &end);
	if (err)
		return -EBADMSG;
	r.end = end;
	id = get_le(&r, wide ? 8 : 4);
	if (sec == SEC_EH ? id != 0 : id != (wide ? ~0ull : 0xffffffffull))
		return -EBADMSG;
	version = (__u8)get_le(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return -EBADMSG;
	/* The augmentation string, NUL-terminated, within the entry. */
	while (have(&r, 1) && *r.p) {
		if (n < AUG_MAX)
			aug[n] = (char)*r.p;
		n++;
		r.p++;
	}
	skip(&r, 1);
	if (r.bad || n > AUG_MAX)
		return -EBADMSG;
	aug[n] = 0;
	if (version == 4) {
		if (get_le(&r, 1) != 8) /* address size */
			return -EBADMSG;
		skip(&r, 1); /* segment selector size */
	}
	*c = (struct cie){ 0 }; /* .debug_frame: absolute 8-byte addresses */
	c->code_align = get_uleb(&r);
	c->data_align = get_sleb(&r);
	c->ra_reg = version == 1 ? get_le(&r, 1) : get_uleb(&r);
	if (r.bad || !c->code_align || c->ra_reg != REG_RA)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		switch (aug[i]) {
		case 'z':
			if (i != 0)
				return -EBADMSG;
			c->aug_z = true;
			{
				__u64 alen = get_uleb(&r);

				if (r.bad || alen > (__u64)(r.end - r.p))
					return -EBADMSG;
				aug_end = r.p + alen;
			}
			break;
		case 'R':
			c->fde_enc = (__u8)get_le(&r, 1);
			break;
		case 'L':
			skip(&r, 1);
			break;
		case 'P':
			enc = (__u8)get_le(&r, 1);
			err = get_ptr(&r, enc & ~PE_INDIRECT, &personality);
			if (err)
				return err;
			break;
		case 'S':
			c->signal = true;
			break;
		case 'B': /* arm64's BTI marker: nothing to read */
			break;
		default:
			/* without 'z' an unknown letter hides how much to skip */
			if (!c->aug_z)
				return -EBADMSG;
			i = n; /* the rest is skipped through the 'z' length */
			break;
		}
		if (r.bad)
			return -EBADMSG;
	}
	if (aug_end) {
		if (r.p > aug_end)
			return -EBADMSG;
		r.p = aug_end;
	}
	c->insns = r.p;
	c->insns_end = end;
	return 0;
}

/* The FDE at off of section sec; -ENOENT when off holds a CIE or the terminator. */
static int fde_parse(const struct cfi_sections *s, enum section sec, __u64 off, struct fde *f)
{
	const __u8 *end, *id_at;
	__u64 cie_ptr, cie_off, range;
	struct rd r;
	bool wide;
	int err;

	if (!rd_at(&r, s, sec, off))
		return -EBADMSG;
	err = entry_bounds(&r, &wide, &end);
	if (err)
		return err;
	r.end = end;
	id_at = r.p;
	cie_ptr = get_le(&r, wide ? 8 : 4);
	if (r.bad)
		return -EBADMSG;
	if (sec == SEC_EH) {
		if (!cie_ptr)
			return -ENOENT; /* a CIE */
		cie_off = (__u64)(id_at - s->eh_frame);
		if (cie_ptr > cie_off)
			return -EBADMSG;
		cie_off -= cie_ptr;
	} else {
		if (cie_ptr == (wide ? ~0ull : 0xffffffffull))
			return -ENOENT;
		cie_off = cie_ptr;
	}
	if (cie_off == off)
		return -EBADMSG;
	err = cie_parse(s, sec, cie_off, &f->cie);
	if (err)
		return err;
	err = get_ptr(&r, f->cie.fde_enc, &f->pc_begin);
	if (err)
		return err;
	err = get_ptr(&r, f->cie.fde_enc & PE_FORMAT, &range); /* a length: no application */
	if (err)
		return err;
	if (range > ~0ull - f->pc_begin)
		return -EBADMSG;
	f->pc_end = f->pc_begin + range;
	if (f->cie.aug_z)
		skip(&r, get_uleb(&r));
	if (r.bad)
		return -EBADMSG;
	f->insns = r.p;
	f->insns_end = end;
	return 0;
}

/* ---- the call frame program ---------------------------------------------------------- */

enum cfa_how { CFA_REG, CFA_PLT, CFA_DEREF, CFA_UNSUPPORTED };
enum reg_how { R_SAME, R_OFFSET, R_UNDEF, R_UNSUPPORTED };

struct reg_rule {
	__u8 how;
	__s64 off;
};

struct row {
	__u8 cfa_how;
	__u64 cfa_reg;
	__s64 cfa_off;
	struct reg_rule fp, ra;
};

struct machine {
	struct row row, initial;
	struct row saved[STATE_MAX];
	unsigned int depth;
	__u64 loc, target, next; /* next: where the row at target stops holding */
	unsigned int insns;
	bool done;
};

/* v * the data alignment factor, wrapping (hostile CFI may overflow; the results are
 * range-checked before they become a rule). */
static __s64 scaled(__u64 v, const struct cie *c)
{
	return (__s64)(v * (__u64)c->data_align);
}

static struct reg_rule *reg_of(struct row *row, __u64 reg)
{
	if (reg == REG_RBP)
		return &row->fp;
	if (reg == REG_RA)
		return &row->ra;
	return NULL;
}

/* The CFA expressions we follow: gcc's realigned stack, and every linker's PLT entry. */
static void cfa_expr(struct row *row, const __u8 *e, __u64 len)
{
	static const __u8 plt_tail[] = { 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	struct rd r = { .base = e, .p = e, .end = e + len };
	__s64 off;

	row->cfa_how = CFA_UNSUPPORTED;
	if (len < 2)
		return;
	if (e[0] == 0x76) { /* DW_OP_breg6 N; DW_OP_deref */
		r.p++;
		off = get_sleb(&r);
		if (!r.bad && r.end - r.p == 1 && *r.p == 0x06) {
			row->cfa_how = CFA_DEREF;
			row->cfa_off = off;
		}
	} else if (e[0] == 0x77) { /* DW_OP_breg7 N; DW_OP_breg16 0; lit15; and; lit11; ... */
		r.p++;
		off = get_sleb(&r);
		if (!r.bad && (__u64)(r.end - r.p) == sizeof(plt_tail) &&
		    !memcmp(r.p, plt_tail, sizeof(plt_tail))) {
			row->cfa_how = CFA_PLT;
			row->cfa_off = off;
		}
	}
}

static void set_reg(struct row *row, __u64 reg, __u8 how, __s64 off)
{
	struct reg_rule *rr = reg_of(row, reg);

	if (rr)
		*rr = (struct reg_rule){ .how = how, .off = off };
}

/* Advance the location; past the target the row in force is the answer. */
static void advance(struct machine *m, __u64 delta)
{
	__u64 next = m->loc + delta;

	if (next < m->loc)
		next = ~0ull;
	if (next > m->target) {
		m->next = next;
		m->done = true;
		return;
	}
	m->loc = next;
}

/* Run the instructions [p, end) (a CIE's when cie is true: no advancing matters there).
 * 0 or -EBADMSG. */
static int run(struct machine *m, const struct cie *c, const __u8 *p, const __u8 *end,
	       enum section sec, const struct cfi_sections *s, bool cie)
{
	struct rd r = { .base = p, .p = p, .end = end, .datarel = s->eh_frame_hdr_vaddr };
	__u64 reg, len, v;
	__u8 op;

	if (sec == SEC_EH)
		r.base_vaddr = s->eh_frame_vaddr + (__u64)(p - s->eh_frame);
	while (!m->done && r.p < r.end) {
		if (++m->insns > INSN_MAX)
			return -EBADMSG;
		op = *r.p++;
		switch (op & 0xc0) {
		case 0x40: /* DW_CFA_advance_loc */
			if (!cie)
				advance(m, (op & 0x3f) * c->code_align);
			continue;
		case 0x80: /* DW_CFA_offset */
			v = get_uleb(&r);
			set_reg(&m->row, op & 0x3f, R_OFFSET, scaled((__u64)v, c));
			goto next;
		case 0xc0: /* DW_CFA_restore */
			if (reg_of(&m->row, op & 0x3f))
				*reg_of(&m->row, op & 0x3f) = *reg_of(&m->initial, op & 0x3f);
			continue;
		default:
			break;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			if (sec == SEC_EH) {
				if (get_ptr(&r, c->fde_enc, &v))
					return -EBADMSG;
			} else {
				v = get_le(&r, 8);
			}
			if (!cie && !r.bad) {
				if (v < m->loc)
					return -EBADMSG;
				advance(m, v - m->loc);
			}
			break;
		case 0x02: /* advance_loc1 */
		case 0x03: /* advance_loc2 */
		case 0x04: /* advance_loc4 */
			v = get_le(&r, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
			if (!cie && !r.bad)
				advance(m, v * c->code_align);
			break;
		case 0x05: /* offset_extended */
			reg = get_uleb(&r);
			v = get_uleb(&r);
			set_reg(&m->row, reg, R_OFFSET, scaled((__u64)v, c));
			break;
		case 0x06: /* restore_extended */
			reg = get_uleb(&r);
			if (reg_of(&m->row, reg))
				*reg_of(&m->row, reg) = *reg_of(&m->initial, reg);
			break;
		case 0x07: /* undefined */
			set_reg(&m->row, get_uleb(&r), R_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_reg(&m->row, get_uleb(&r), R_SAME, 0);
			break;
		case 0x09: /* register */
			reg = get_uleb(&r);
			get_uleb(&r);
			set_reg(&m->row, reg, R_UNSUPPORTED, 0);
			break;
		case 0x0a: /* remember_state */
			if (m->depth >= STATE_MAX)
				return -EBADMSG;
			m->saved[m->depth++] = m->row;
			break;
		case 0x0b: /* restore_state */
			if (!m->depth)
				return -EBADMSG;
			m->row = m->saved[--m->depth];
			break;
		case 0x0c: /* def_cfa */
			m->row.cfa_how = CFA_REG;
			m->row.cfa_reg = get_uleb(&r);
			m->row.cfa_off = (__s64)get_uleb(&r);
			break;
		case 0x0d: /* def_cfa_register */
			m->row.cfa_how = CFA_REG;
			m->row.cfa_reg = get_uleb(&r);
			break;
		case 0x0e: /* def_cfa_offset */
			m->row.cfa_off = (__s64)get_uleb(&r);
			break;
		case 0x0f: /* def_cfa_expression */
			len = get_uleb(&r);
			if (have(&r, len)) {
				cfa_expr(&m->row, r.p, len);
				r.p += len;
			}
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = get_uleb(&r);
			skip(&r, get_uleb(&r));
			set_reg(&m->row, reg, R_UNSUPPORTED, 0);
			break;
		case 0x11: /* offset_extended_sf */
			reg = get_uleb(&r);
			set_reg(&m->row, reg, R_OFFSET, scaled((__u64)get_sleb(&r), c));
			break;
		case 0x12: /* def_cfa_sf */
			m->row.cfa_how = CFA_REG;
			m->row.cfa_reg = get_uleb(&r);
			m->row.cfa_off = scaled((__u64)get_sleb(&r), c);
			break;
		case 0x13: /* def_cfa_offset_sf */
			m->row.cfa_off = scaled((__u64)get_sleb(&r), c);
			break;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = get_uleb(&r);
			if (op == 0x14)
				get_uleb(&r);
			else
				get_sleb(&r);
			set_reg(&m->row, reg, R_UNSUPPORTED, 0);
			break;
		case 0x2e: /* GNU_args_size */
			get_uleb(&r);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = get_uleb(&r);
			set_reg(&m->row, reg, R_OFFSET, scaled(0 - get_uleb(&r), c));
			break;
		default:
			return -EBADMSG;
		}
next:
		if (r.bad)
			return -EBADMSG;
	}
	return r.bad ? -EBADMSG : 0;
}

static int reg_out(const struct reg_rule *rr, __u8 *how, __s32 *off)
{
	switch (rr->how) {
	case R_SAME:
		*how = CFI_REG_SAME;
		return 0;
	case R_UNDEF:
		*how = CFI_REG_UNDEFINED;
		return 0;
	case R_OFFSET:
		if (rr->off < INT32_MIN || rr->off > INT32_MAX)
			return -EBADMSG;
		*how = CFI_REG_AT_CFA;
		*off = (__s32)rr->off;
		return 0;
	default:
		return -ENOTSUP;
	}
}

static int fde_rule(const struct cfi_sections *s, enum section sec, const struct fde *f,
		    __u64 vaddr, struct cfi_rule *out)
{
	struct machine *m;
	int err;

	if (vaddr < f->pc_begin || vaddr >= f->pc_end)
		return -ENOENT;
	m = &(struct machine){ .loc = f->pc_begin, .target = vaddr, .next = f->pc_end };
	m->row.ra.how = R_SAME;
	err = run(m, &f->cie, f->cie.insns, f->cie.insns_end, sec, s, true);
	if (err)
		return err;
	m->initial = m->row;
	err = run(m, &f->cie, f->insns, f->insns_end, sec, s, false);
	if (err)
		return err;
	*out = (struct cfi_rule){ .start = m->loc,
				  .end = m->next < f->pc_end ? m->next : f->pc_end,
				  .signal = f->cie.signal };
	switch (m->row.cfa_how) {
	case CFA_REG:
		if (m->row.cfa_reg == REG_RSP)
			out->cfa = CFI_CFA_SP;
		else if (m->row.cfa_reg == REG_RBP)
			out->cfa = CFI_CFA_FP;
		else
			return -ENOTSUP;
		break;
	case CFA_PLT:
		out->cfa = CFI_CFA_PLT;
		break;
	case CFA_DEREF:
		out->cfa = CFI_CFA_FP_DEREF;
		break;
	default:
		return -ENOTSUP;
	}
	if (m->row.cfa_off < INT32_MIN || m->row.cfa_off > INT32_MAX)
		return -EBADMSG;
	out->cfa_off = (__s32)m->row.cfa_off;
	err = reg_out(&m->row.ra, &out->ra, &out->ra_off);
	if (err)
		return err;
	if (out->ra == CFI_REG_SAME)
		return -ENOTSUP; /* no rule for the return address: not a frame we can leave */
	/* A caller's rbp we cannot find is lost, not fatal: later frames may not need it. */
	if (reg_out(&m->row.fp, &out->fp, &out->fp_off))
		out->fp = CFI_REG_UNDEFINED;
	return 0;
}

/* ---- finding the FDE ----------------------------------------------------------------- */

/* Through .eh_frame_hdr: 0 and the FDE's offset in .eh_frame, -ENOENT (no entry at or below
 * vaddr), -ENODATA (no usable table: use the index), -EBADMSG. */
static int hdr_search(const struct cfi_sections *s, __u64 vaddr, __u64 *fde_off)
{
	struct rd r = { .base = s->eh_frame_hdr,
			.p = s->eh_frame_hdr,
			.base_vaddr = s->eh_frame_hdr_vaddr,
			.datarel = s->eh_frame_hdr_vaddr };
	__u64 eh_ptr, count, lo, hi, mid, loc, fde;
	__u8 version, ptr_enc, count_enc, table_enc;
	const __u8 *table;

	if (!s->eh_frame_hdr || !s->eh_frame)
		return -ENODATA;
	r.end = s->eh_frame_hdr + s->eh_frame_hdr_len; /* not before: no arithmetic on NULL */
	version = (__u8)get_le(&r, 1);
	ptr_enc = (__u8)get_le(&r, 1);
	count_enc = (__u8)get_le(&r, 1);
	table_enc = (__u8)get_le(&r, 1);
	if (r.bad || version != 1 || get_ptr(&r, ptr_enc, &eh_ptr))
		return -ENODATA;
	/* datarel|sdata4 table: the one every linker writes */
	if (count_enc == PE_OMIT || table_enc != 0x3b || get_ptr(&r, count_enc, &count))
		return -ENODATA;
	if (count > (__u64)(r.end - r.p) / 8)
		return -EBADMSG;
	table = r.p;
	lo = 0;
	hi = count;
	while (lo < hi) { /* the first entry above vaddr */
		mid = lo + (hi - lo) / 2;
		r.p = table + mid * 8;
		loc = s->eh_frame_hdr_vaddr + (__u64)(__s64)(__s32)get_le(&r, 4);
		if (loc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	r.p = table + (lo - 1) * 8 + 4;
	fde = s->eh_frame_hdr_vaddr + (__u64)(__s64)(__s32)get_le(&r, 4);
	if (r.bad || fde < s->eh_frame_vaddr || fde - s->eh_frame_vaddr >= s->eh_frame_len)
		return -EBADMSG;
	*fde_off = fde - s->eh_frame_vaddr;
	return 0;
}

struct index_entry {
	__u64 pc_begin, pc_end;
	__u64 off : 63;
	__u64 sec : 1;
};

struct cfi_index {
	struct index_entry *v;
	size_t n;
	__u64 bad;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct index_entry *x = a, *y = b;

	return x->pc_begin < y->pc_begin ? -1 : x->pc_begin > y->pc_begin;
}

/* Every FDE of section sec into idx; malformed entries counted and skipped, a broken length
 * ends the scan. 0 or -ENOMEM. */
static int index_scan(struct cfi_index *idx, size_t *cap, const struct cfi_sections *s,
		      enum section sec)
{
	__u64 len = sec == SEC_EH ? s->eh_frame_len : s->debug_frame_len, off = 0;
	const __u8 *end;
	struct fde f;
	struct rd r;
	bool wide;
	int err;

	while (off < len && rd_at(&r, s, sec, off)) {
		err = entry_bounds(&r, &wide, &end);
		if (err == -ENOENT && sec == SEC_EH)
			break; /* .eh_frame's terminator */
		if (err) {
			if (err != -ENOENT)
				idx->bad++;
			break;
		}
		err = fde_parse(s, sec, off, &f);
		if (!err && f.pc_end > f.pc_begin) {
			if (idx->n == *cap) {
				size_t ncap = *cap ? *cap * 2 : 256;
				struct index_entry *v = realloc(idx->v, ncap * sizeof(*v));

				if (!v)
					return -ENOMEM;
				idx->v = v;
				*cap = ncap;
			}
			idx->v[idx->n++] = (struct index_entry){
				.pc_begin = f.pc_begin, .pc_end = f.pc_end, .off = off, .sec = sec
			};
		} else if (err && err != -ENOENT) {
			idx->bad++;
		}
		off = (__u64)(end - (sec == SEC_EH ? s->eh_frame : s->debug_frame));
	}
	return 0;
}

struct cfi_index *cfi_index__build(const struct cfi_sections *sec)
{
	struct cfi_index *idx;
	size_t cap = 0;
	__u64 unused;
	bool eh;

	/* .eh_frame needs no index when its table answers (a probe tells) */
	eh = sec->eh_frame && hdr_search(sec, ~0ull, &unused) == -ENODATA;
	if (!eh && !sec->debug_frame) {
		errno = ENOENT;
		return NULL;
	}
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return NULL;
	if ((eh && index_scan(idx, &cap, sec, SEC_EH)) ||
	    (sec->debug_frame && index_scan(idx, &cap, sec, SEC_DEBUG))) {
		cfi_index__free(idx);
		errno = ENOMEM;
		return NULL;
	}
	if (idx->n) /* qsort must not be given a NULL array, even empty */
		qsort(idx->v, idx->n, sizeof(*idx->v), entry_cmp);
	return idx;
}

void cfi_index__free(struct cfi_index *idx)
{
	if (!idx)
		return;
	free(idx->v);
	free(idx);
}

size_t cfi_index__bytes(const struct cfi_index *idx)
{
	return idx ? sizeof(*idx) + idx->n * sizeof(*idx->v) : 0;
}

__u64 cfi_index__bad(const struct cfi_index *idx)
{
	return idx ? idx->bad : 0;
}

/* Through the index: the FDEs that begin at or below vaddr, nearest first (a few, for the
 * odd file whose FDEs overlap). */
static int index_find(const struct cfi_sections *s, const struct cfi_index *idx, __u64 vaddr,
		      struct cfi_rule *out)
{
	size_t lo = 0, hi = idx->n, mid, tries;
	struct fde f;
	int err = -ENOENT;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (idx->v[mid].pc_begin <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (tries = 0; lo > 0 && tries < 4; lo--, tries++) {
		const struct index_entry *e = &idx->v[lo - 1];

		if (vaddr >= e->pc_end)
			continue;
		err = fde_parse(s, e->sec, e->off, &f);
		if (!err)
			return fde_rule(s, e->sec, &f, vaddr, out);
	}
	return err;
}

int cfi__find(const struct cfi_sections *sec, const struct cfi_index *idx, __u64 vaddr,
	      struct cfi_rule *out)
{
	struct fde f;
	__u64 off;
	int err;

	err = hdr_search(sec, vaddr, &off);
	if (!err) {
		err = fde_parse(sec, SEC_EH, off, &f);
		if (!err)
			err = fde_rule(sec, SEC_EH, &f, vaddr, out);
		if (err != -ENOENT || !idx)
			return err == -ENODATA ? -ENOENT : err;
	} else if (err == -EBADMSG && !idx) {
		return err;
	}
	/* no table, or it did not cover vaddr: .debug_frame (and a table-less .eh_frame) */
	return idx ? index_find(sec, idx, vaddr, out) : -ENOENT;
}

const char *cfi__strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -ENOENT:
		return "no_fde";
	case -ENOTSUP:
		return "unsupported";
	default:
		return "bad_cfi";
	}
}
