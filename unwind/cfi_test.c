// SPDX-License-Identifier: MIT
/*
 * cfi_test - the CFI reader (cfi.c) against an independent one, and on broken input.
 *
 * The oracle is binutils' readelf --debug-dump=frames-interp: for this test program, the libc
 * it runs with and cfi_test_lib (a library with .debug_frame only, argv[1]), every row of its
 * table (LOC CFA rbx rbp ... ra) is looked up at its first address and in its middle, through
 * .eh_frame_hdr and through the index alone, and must give the same CFA, return address and
 * rbp rules and the same range. readelf writes "exp" for any expression: the rows of .plt
 * must come back as CFI_CFA_PLT, other expressions as the realigned-stack forms or -ENOTSUP,
 * counted (they must be rare).
 *
 * Then synthetic sections, assembled here byte by byte, give exact answers for every
 * instruction and augmentation cfi.c reads (golden bytes), and malformed variants of them
 * (truncated at every length, bogus lengths, CIE pointers to themselves, huge augmentation
 * lengths, too deep remember_state, too many instructions) must give error returns. Every
 * section lives in an allocation of exactly its size, so ASan sees a read past it.
 */
#include "unwind/cfi.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tap.h"

/* --- the files ---------------------------------------------------------------------- */

struct elf_file {
	const char *path;
	void *map;
	size_t size;
	struct cfi_sections sec;
	__u64 plt_start, plt_end; /* .plt, .plt.sec: where "exp" CFAs are the PLT's */
};

static bool in_file(const struct elf_file *f, __u64 off, __u64 len)
{
	return off <= f->size && len <= f->size - off;
}

/* Maps path and finds its CFI sections through the section headers: 0 or -errno. */
static int elf_file__open(struct elf_file *f, const char *path)
{
	Elf64_Shdr sh, strtab;
	Elf64_Ehdr eh;
	struct stat st;
	unsigned int i;
	const char *name;
	int fd;

	memset(f, 0, sizeof(*f));
	f->path = path;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(eh)) {
		close(fd);
		return -EINVAL;
	}
	f->size = (size_t)st.st_size;
	f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f->map == MAP_FAILED)
		return -errno;
	memcpy(&eh, f->map, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    !in_file(f, eh.e_shoff, (__u64)eh.e_shnum * sizeof(sh)) || eh.e_shstrndx >= eh.e_shnum)
		return -EINVAL;
	memcpy(&strtab, (char *)f->map + eh.e_shoff + eh.e_shstrndx * sizeof(sh), sizeof(sh));
	for (i = 0; i < eh.e_shnum; i++) {
		memcpy(&sh, (char *)f->map + eh.e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type == SHT_NOBITS || !in_file(f, sh.sh_offset, sh.sh_size) ||
		    !in_file(f, strtab.sh_offset + sh.sh_name, 16))
			continue;
		name = (const char *)f->map + strtab.sh_offset + sh.sh_name;
		if (sh.sh_flags & SHF_COMPRESSED)
			tap_diag("%s: %s is compressed: not read", path, name);
		else if (!strcmp(name, ".eh_frame_hdr"))
			f->sec = (struct cfi_sections){
				.eh_frame_hdr = (const __u8 *)f->map + sh.sh_offset,
				.eh_frame_hdr_len = sh.sh_size,
				.eh_frame_hdr_vaddr = sh.sh_addr,
				.eh_frame = f->sec.eh_frame,
				.eh_frame_len = f->sec.eh_frame_len,
				.eh_frame_vaddr = f->sec.eh_frame_vaddr,
				.debug_frame = f->sec.debug_frame,
				.debug_frame_len = f->sec.debug_frame_len,
			};
		else if (!strcmp(name, ".eh_frame") && sh.sh_size) {
			f->sec.eh_frame = (const __u8 *)f->map + sh.sh_offset;
			f->sec.eh_frame_len = sh.sh_size;
			f->sec.eh_frame_vaddr = sh.sh_addr;
		} else if (!strcmp(name, ".debug_frame")) {
			f->sec.debug_frame = (const __u8 *)f->map + sh.sh_offset;
			f->sec.debug_frame_len = sh.sh_size;
		} else if (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec")) {
			if (!f->plt_end || sh.sh_addr < f->plt_start)
				f->plt_start = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > f->plt_end)
				f->plt_end = sh.sh_addr + sh.sh_size;
		}
	}
	return 0;
}

static void elf_file__close(struct elf_file *f)
{
	if (f->map && f->map != MAP_FAILED)
		munmap(f->map, f->size);
}

/* --- readelf's tables --------------------------------------------------------------- */

struct row {
	__u64 loc;
	char cfa[24], rbp[16], ra[16]; /* "" when readelf has no such column */
};

struct block {
	__u64 off, cie; /* in its section */
	__u64 pc_begin, pc_end; /* FDE */
	size_t row0, n_rows;
	bool debug; /* .debug_frame, else .eh_frame */
	bool is_cie;
	bool signal; /* CIE: 'S' in the augmentation */
};

struct table {
	struct row *rows;
	size_t n_rows, cap_rows;
	struct block *blocks;
	size_t n_blocks, cap_blocks;
};

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : 1024;
	p = realloc(p, *cap * size);
	if (!p)
		tap_bail("out of memory");
	return p;
}

/* Copies the whitespace-separated token i of line (0-based) into out; "" when there is none.
 * readelf writes a register rule as "r10 (r10)": a word in parentheses belongs to the one
 * before it. */
static void token(const char *line, unsigned int i, char *out, size_t size)
{
	const char *p = line, *start;
	size_t n;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		start = p;
		do {
			while (*p == ' ')
				p++;
			while (*p && *p != ' ' && *p != '\t' && *p != '\n')
				p++;
		} while (p[0] == ' ' && p[1] == '(');
		if (p == start || !i--)
			break;
	}
	n = (size_t)(p - start) < size - 1 ? (size_t)(p - start) : size - 1;
	memcpy(out, start, n);
	out[n] = '\0';
}

/* The index of the column named name in readelf's header line, or -1. */
static int column_of(const char *header, const char *name)
{
	char tok[32];
	int i;

	for (i = 0; i < 64; i++) {
		token(header, (unsigned int)i, tok, sizeof(tok));
		if (!tok[0])
			return -1;
		if (!strcmp(tok, name))
			return i;
	}
	return -1;
}

static int read_table(const char *path, struct table *t)
{
	char cmd[4200], line[1024], kind[16], hdr[1024] = "";
	int sec = -1, rbp_col = -1, ra_col = -1; /* sec: 0 .eh_frame, 1 .debug_frame */
	struct block *b = NULL;
	unsigned long long off, len, id;
	const char *p, *q;
	FILE *in;

	snprintf(cmd, sizeof(cmd), "readelf -wN --debug-dump=frames-interp '%s' 2>/dev/null", path);
	in = popen(cmd, "r");
	if (!in)
		return -errno;
	while (fgets(line, sizeof(line), in)) {
		if (!strncmp(line, "Contents of the ", 16)) {
			/* only this file's sections, not a separate debug file readelf found */
			p = strstr(line, "loaded from ");
			sec = strstr(line, ".debug_frame") ? 1 : strstr(line, ".eh_frame") ? 0 : -1;
			if (p && strncmp(p + 12, path, strlen(path)))
				sec = -1;
			b = NULL;
			continue;
		}
		if (sec < 0)
			continue;
		if (line[0] == '\n') {
			b = NULL;
			continue;
		}
		if (sscanf(line, "%llx %llx %llx %15s", &off, &len, &id, kind) == 4 &&
		    (!strcmp(kind, "FDE") || !strcmp(kind, "CIE"))) {
			t->blocks =
				grow(t->blocks, &t->cap_blocks, t->n_blocks, sizeof(*t->blocks));
			b = &t->blocks[t->n_blocks++];
			memset(b, 0, sizeof(*b));
			b->off = off;
			b->debug = sec == 1;
			b->is_cie = kind[0] == 'C';
			b->row0 = t->n_rows;
			if (b->is_cie) {
				p = strchr(line, '"');
				q = p ? strchr(p + 1, '"') : NULL;
				b->signal = p && q && memchr(p, 'S', (size_t)(q - p));
			} else if (!(p = strstr(line, "cie=")) ||
				   sscanf(p, "cie=%llx pc=%llx..%llx", &off, &id, &len) != 3) {
				tap_bail("unable to parse readelf's line: %s", line);
			} else {
				b->cie = off;
				b->pc_begin = id;
				b->pc_end = len;
			}
			continue;
		}
		if (!b)
			continue;
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			snprintf(hdr, sizeof(hdr), "%s", line);
			rbp_col = column_of(hdr, "rbp");
			ra_col = column_of(hdr, "ra");
			continue;
		}
		t->rows = grow(t->rows, &t->cap_rows, t->n_rows, sizeof(*t->rows));
		{
			struct row *r = &t->rows[t->n_rows++];
			char loc[32];

			token(line, 0, loc, sizeof(loc));
			r->loc = strtoull(loc, NULL, 16);
			token(line, 1, r->cfa, sizeof(r->cfa));
			r->rbp[0] = r->ra[0] = '\0';
			if (rbp_col > 0)
				token(line, (unsigned int)rbp_col, r->rbp, sizeof(r->rbp));
			if (ra_col > 0)
				token(line, (unsigned int)ra_col, r->ra, sizeof(r->ra));
			b->n_rows++;
		}
	}
	return pclose(in) == 0 ? 0 : -EIO;
}

static const struct block *cie_of(const struct table *t, const struct block *fde)
{
	size_t i;

	for (i = 0; i < t->n_blocks; i++)
		if (t->blocks[i].is_cie && t->blocks[i].debug == fde->debug &&
		    t->blocks[i].off == fde->cie)
			return &t->blocks[i];
	return NULL;
}

/* --- one row against cfi__find ------------------------------------------------------- */

/* A register column of readelf: "c-16" (saved at cfa - 16), "u", "s", "exp", others. */
enum col { COL_NONE, COL_AT_CFA, COL_U, COL_S, COL_EXP, COL_OTHER };

static enum col col_parse(const char *s, long *off)
{
	char *end;

	if (!s[0])
		return COL_NONE;
	if (s[0] == 'c' && (s[1] == '-' || s[1] == '+')) {
		*off = strtol(s + 1, &end, 10);
		return *end ? COL_OTHER : COL_AT_CFA;
	}
	if (!strcmp(s, "u"))
		return COL_U;
	if (!strcmp(s, "s"))
		return COL_S;
	if (!strcmp(s, "exp"))
		return COL_EXP;
	return COL_OTHER; /* a register, vexp, v+N */
}

struct tally {
	__u64 lookups, rows, mismatches, unsupported, plt, fp_deref, at_fp, skipped_overlap;
};

static bool plt_row(const struct elf_file *f, __u64 addr)
{
	return addr >= f->plt_start && addr < f->plt_end;
}

/* Whether cfi__find's answer for addr matches readelf's row [start, end). */
static bool row_matches(const struct elf_file *f, const struct row *row, __u64 start, __u64 end,
			bool signal, int rc, const struct cfi_rule *r, struct tally *t)
{
	enum col ra, rbp;
	long ra_off = 0, rbp_off = 0, cfa_off = 0;
	char cfa_reg[8] = "";
	bool unsupported;

	ra = col_parse(row->ra, &ra_off);
	rbp = col_parse(row->rbp, &rbp_off);
	if (sscanf(row->cfa, "%7[a-z0-9]%ld", cfa_reg, &cfa_off) != 2)
		cfa_reg[0] = '\0';
	/* what cfi.c may decline: readelf shows an expression or another register */
	unsupported = (strcmp(cfa_reg, "rsp") && strcmp(cfa_reg, "rbp") &&
		       !(!strcmp(row->cfa, "exp") && plt_row(f, start))) ||
		      rbp == COL_EXP || rbp == COL_OTHER || ra == COL_EXP || ra == COL_OTHER ||
		      ra == COL_S;
	if (rc == -ENOTSUP && unsupported) {
		t->unsupported++;
		return true;
	}
	if (rc)
		return false;
	if (r->start != start || r->end != end || r->signal != signal)
		return false;
	if (!strcmp(row->cfa, "exp")) {
		if (plt_row(f, start)) {
			if (r->cfa != CFI_CFA_PLT || r->cfa_off != 8 ||
			    (r->plt_split != 11 && r->plt_split != 10))
				return false;
			t->plt++;
		} else if (r->cfa == CFI_CFA_FP_DEREF) {
			t->fp_deref++;
		} else {
			return false;
		}
	} else if (r->cfa != (!strcmp(cfa_reg, "rsp") ? CFI_CFA_SP : CFI_CFA_FP) ||
		   !strcmp(cfa_reg, "") || (strcmp(cfa_reg, "rsp") && strcmp(cfa_reg, "rbp")) ||
		   r->cfa_off != cfa_off) {
		return false;
	}
	if ((ra == COL_AT_CFA && (r->ra != CFI_REG_AT_CFA || r->ra_off != ra_off)) ||
	    (ra == COL_U && r->ra != CFI_REG_UNDEFINED))
		return false;
	switch (rbp) {
	case COL_NONE:
	case COL_S:
		return r->fp == CFI_REG_SAME;
	case COL_U: /* readelf's "not set yet" and DW_CFA_undefined alike */
		return r->fp == CFI_REG_SAME || r->fp == CFI_REG_UNDEFINED;
	case COL_AT_CFA:
		return r->fp == CFI_REG_AT_CFA && r->fp_off == rbp_off;
	case COL_EXP:
		t->at_fp += r->fp == CFI_REG_AT_FP;
		return r->fp == CFI_REG_AT_FP;
	default:
		return false;
	}
}

static void report(const struct row *row, __u64 addr, int rc, const struct cfi_rule *r, __u64 start,
		   __u64 end)
{
	tap_diag("  at %#llx: readelf [%#llx, %#llx) cfa %s rbp '%s' ra '%s'; cfi__find %s: "
		 "[%#llx, %#llx) cfa %u%+d rbp %u%+d ra %u%+d signal %u",
		 (unsigned long long)addr, (unsigned long long)start, (unsigned long long)end,
		 row->cfa, row->rbp, row->ra, cfi__strerror(rc), (unsigned long long)r->start,
		 (unsigned long long)r->end, r->cfa, r->cfa_off, r->fp, r->fp_off, r->ra, r->ra_off,
		 r->signal);
}

static int by_begin(const void *a, const void *b)
{
	const struct block *x = *(const struct block *const *)a,
			   *y = *(const struct block *const *)b;

	return (x->pc_begin > y->pc_begin) - (x->pc_begin < y->pc_begin);
}

/*
 * Every row of every FDE of t, looked up through sec (and idx), at its first address and its
 * middle; every gap between FDEs must be -ENOENT.
 */
static void check_rows(const struct elf_file *f, const struct table *t,
		       const struct cfi_sections *sec, const struct cfi_index *idx, const char *how)
{
	const struct block **fdes = calloc(t->n_blocks + 1, sizeof(*fdes));
	struct tally tl = { 0 };
	struct cfi_rule r;
	size_t i, j, n = 0, gaps = 0, gap_bad = 0;
	int rc;

	if (!fdes)
		tap_bail("out of memory");
	for (i = 0; i < t->n_blocks; i++)
		if (!t->blocks[i].is_cie && t->blocks[i].pc_end > t->blocks[i].pc_begin)
			fdes[n++] = &t->blocks[i];
	qsort(fdes, n, sizeof(*fdes), by_begin);
	for (i = 0; i < n; i++) {
		const struct block *b = fdes[i], *cie = cie_of(t, b);
		const struct row *rows = &t->rows[b->row0];
		size_t n_rows = b->n_rows;
		bool overlap = (i > 0 && fdes[i - 1]->pc_end > b->pc_begin) ||
			       (i + 1 < n && fdes[i + 1]->pc_begin < b->pc_end);

		if (overlap) { /* two FDEs for one address: either answer is right */
			tl.skipped_overlap++;
			continue;
		}
		if (!n_rows && cie && cie->n_rows) { /* all nops: the CIE's rule throughout */
			rows = &t->rows[cie->row0 + cie->n_rows - 1];
			n_rows = 1;
		}
		for (j = 0; j < n_rows; j++) {
			__u64 start = j ? rows[j].loc : b->pc_begin;
			__u64 end = j + 1 < n_rows ? rows[j + 1].loc : b->pc_end;
			__u64 probe[2] = { start, start + (end - start) / 2 };
			unsigned int k;

			if (end <= start)
				continue; /* readelf prints a row per advance, even by 0 */
			tl.rows++;
			for (k = 0; k < 2; k++) {
				if (k && probe[1] == start)
					break;
				memset(&r, 0, sizeof(r));
				rc = cfi__find(sec, idx, probe[k], &r);
				tl.lookups++;
				if (row_matches(f, &rows[j], start, end, cie && cie->signal, rc, &r,
						&tl))
					continue;
				if (tl.mismatches++ < 10)
					report(&rows[j], probe[k], rc, &r, start, end);
			}
		}
		if (i + 1 < n && fdes[i + 1]->pc_begin > b->pc_end && gaps < 2000) {
			gaps++;
			rc = cfi__find(sec, idx, b->pc_end, &r);
			if (rc != -ENOENT && gap_bad++ < 5)
				tap_diag("  gap at %#llx: %s", (unsigned long long)b->pc_end,
					 cfi__strerror(rc));
		}
	}
	tap_ok(tl.mismatches == 0 && tl.rows > 0,
	       "%s, %s: %llu rows of %zu FDEs, %llu lookups match readelf (%llu mismatches)",
	       f->path, how, (unsigned long long)tl.rows, n, (unsigned long long)tl.lookups,
	       (unsigned long long)tl.mismatches);
	tap_ok(gap_bad == 0, "%s, %s: %zu gaps between FDEs are -ENOENT", f->path, how, gaps);
	printf("# %s, %s: -ENOTSUP %llu of %llu lookups; PLT %llu, realigned CFA %llu, rbp at fp "
	       "%llu; overlapping FDEs skipped %llu\n",
	       f->path, how, (unsigned long long)tl.unsupported, (unsigned long long)tl.lookups,
	       (unsigned long long)tl.plt, (unsigned long long)tl.fp_deref,
	       (unsigned long long)tl.at_fp, (unsigned long long)tl.skipped_overlap);
	if (tl.lookups >= 1000) /* a small file's few prologue rows would weigh too much */
		tap_ok(tl.unsupported * 100 <= tl.lookups, "%s, %s: -ENOTSUP is rare (%llu)",
		       f->path, how, (unsigned long long)tl.unsupported);
	if (strstr(f->path, "libc.so"))
		tap_ok(tl.plt > 0, "%s, %s: the PLT's expression is read (%llu lookups)", f->path,
		       how, (unsigned long long)tl.plt);
	if (strstr(f->path, "cfi_test_lib"))
		tap_ok(tl.fp_deref > 0 && tl.at_fp > 0,
		       "%s, %s: the realigned frame's CFA and rbp are read (%llu, %llu)", f->path,
		       how, (unsigned long long)tl.fp_deref, (unsigned long long)tl.at_fp);
	free(fdes);
}

static void check_file(const char *path)
{
	struct table t = { 0 };
	struct cfi_sections no_hdr;
	struct cfi_index *idx;
	struct elf_file f;
	int err;

	err = elf_file__open(&f, path);
	if (err) {
		tap_ok(0, "%s: unable to map: %s", path, strerror(-err));
		return;
	}
	err = read_table(path, &t);
	if (!tap_ok(!err && t.n_rows > 0, "%s: readelf reads %zu rows", path, t.n_rows))
		goto close_file;

	/* .eh_frame_hdr, and an index for .debug_frame when there is one */
	errno = 0;
	idx = cfi_index__build(&f.sec);
	tap_ok(idx || errno == ENOENT, "%s: index beside .eh_frame_hdr: %s", path,
	       idx ? "built" : "not needed");
	tap_eq_u64(cfi_index__bad(idx), 0, "%s: no malformed entries", path);
	check_rows(&f, &t, &f.sec, idx, f.sec.eh_frame_hdr ? "through .eh_frame_hdr" : "index");
	cfi_index__free(idx);

	if (f.sec.eh_frame_hdr) { /* the same without the hdr: the index scans .eh_frame */
		no_hdr = f.sec;
		no_hdr.eh_frame_hdr = NULL;
		no_hdr.eh_frame_hdr_len = 0;
		idx = cfi_index__build(&no_hdr);
		if (tap_ok(idx != NULL, "%s: index of .eh_frame built (%zu bytes)", path,
			   cfi_index__bytes(idx))) {
			tap_eq_u64(cfi_index__bad(idx), 0, "%s: no malformed entries", path);
			check_rows(&f, &t, &no_hdr, idx, "index only");
		}
		cfi_index__free(idx);
	}
close_file:
	free(t.rows);
	free(t.blocks);
	elf_file__close(&f);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *ctx)
{
	char *out = ctx;

	if (strstr(info->dlpi_name, "/libc.so")) {
		snprintf(out, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* --- synthetic sections --------------------------------------------------------------- */

#define EH_VADDR 0x20000ull
#define HDR_VADDR 0x1f000ull

struct buf {
	__u8 *p;
	size_t n, cap;
};

static void emit(struct buf *b, const void *p, size_t n)
{
	b->p = grow(b->p, &b->cap, b->n + n, 1);
	while (b->n + n > b->cap)
		b->p = grow(b->p, &b->cap, b->cap, 1);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void emit_bytes(struct buf *b, size_t n, ...)
{
	va_list ap;
	__u8 v;

	va_start(ap, n);
	while (n--) {
		v = (__u8)va_arg(ap, int);
		emit(b, &v, 1);
	}
	va_end(ap);
}

#define BYTES(b, ...) emit_bytes(b, sizeof((const __u8[]){ __VA_ARGS__ }), __VA_ARGS__)

static void emit_le(struct buf *b, __u64 v, unsigned int n)
{
	emit(b, &v, n);
}

static void emit_leb(struct buf *b, __u64 v, bool is_signed)
{
	__u8 byte;
	bool more;

	do {
		byte = v & 0x7f;
		v = is_signed ? (__u64)((__s64)v >> 7) : v >> 7;
		more = is_signed ? !((v == 0 && !(byte & 0x40)) || (v == ~0ull && (byte & 0x40))) :
				   v != 0;
		emit_le(b, byte | (more ? 0x80 : 0), 1);
	} while (more);
}

static void patch32(struct buf *b, size_t at, __u32 v)
{
	memcpy(b->p + at, &v, 4);
}

/* A pcrel|sdata4 pointer to vaddr, at the end of .eh_frame being assembled. */
static void emit_pcrel(struct buf *b, __u64 vaddr)
{
	emit_le(b, (__u32)(vaddr - (EH_VADDR + b->n)), 4);
}

/* The ways to break the synthetic .eh_frame; each names what it does to FDE 1 or CIE A. */
enum variant {
	V_NONE,
	V_LEN_RESERVED, /* FDE 1's length 0xfffffff0 */
	V_LEN_PAST_END, /* FDE 1's length past the section */
	V_LEN_64, /* FDE 1's length the 64-bit escape, its "length" the next 8 bytes */
	V_CIE_SELF, /* FDE 1's CIE pointer to itself */
	V_CIE_FDE, /* FDE 2's CIE pointer to FDE 1 */
	V_CIE_BEFORE, /* FDE 1's CIE pointer before the section */
	V_AUG_HUGE, /* CIE A's augmentation length 2^40 */
	V_STATES, /* FDE 1: 17 DW_CFA_remember_state */
	V_RESTORE_EMPTY, /* FDE 1: DW_CFA_restore_state with nothing remembered */
	V_NOPS, /* FDE 1: 100001 DW_CFA_nop */
	V_VERSION, /* CIE A version 2 */
	V_RA_REG, /* CIE A's return address column 5 */
	V_INDIRECT, /* CIE A's FDE encoding indirect */
	V_TEXTREL, /* CIE A's FDE encoding textrel */
	V_BAD_OP, /* FDE 1 starts with DW_CFA_GNU_window_save */
	V_EH_AUG, /* CIE A's augmentation "eh" */
	V_BACKWARD, /* FDE 1: DW_CFA_set_loc before its start */
	V_COUNT,
};

struct syn {
	struct cfi_sections sec;
	__u8 *eh, *hdr, *dbg; /* exact-size copies */
};

static size_t begin_entry(struct buf *b)
{
	size_t at = b->n;

	emit_le(b, 0, 4);
	return at;
}

static void end_entry(struct buf *b, size_t at)
{
	while ((b->n - at) % 8)
		BYTES(b, 0x00); /* DW_CFA_nop */
	patch32(b, at, (__u32)(b->n - at - 4));
}

/* An .eh_frame FDE header for CIE at cie_off, [pc, pc + len); returns its offset. */
static size_t begin_fde(struct buf *b, size_t cie_off, __u64 pc, __u64 len)
{
	size_t at = begin_entry(b);

	emit_le(b, b->n - cie_off, 4);
	emit_pcrel(b, pc);
	emit_le(b, len, 4);
	BYTES(b, 0); /* no augmentation data */
	return at;
}

static __u8 *exact_copy(const struct buf *b)
{
	__u8 *p = malloc(b->n ? b->n : 1);

	if (!p)
		tap_bail("out of memory");
	memcpy(p, b->p, b->n);
	return p;
}

static void build_eh_frame(struct buf *eh, enum variant v, size_t *fde_off, __u64 *fde_pc,
			   size_t *n_fde)
{
	size_t cie_a, cie_b, at, i;

	/* CIE A: "zR", pcrel sdata4, cfa rsp+8, ra at cfa-8 */
	cie_a = begin_entry(eh);
	emit_le(eh, 0, 4);
	BYTES(eh, v == V_VERSION ? 2 : 1);
	if (v == V_EH_AUG)
		emit(eh, "eh", 3);
	else
		emit(eh, "zR", 3);
	BYTES(eh, 0x01, 0x78, v == V_RA_REG ? 5 : 16);
	if (v == V_AUG_HUGE)
		emit_leb(eh, 1ull << 40, false);
	else if (v != V_EH_AUG)
		BYTES(eh, 1);
	if (v != V_EH_AUG)
		BYTES(eh, v == V_INDIRECT ? 0x9b : v == V_TEXTREL ? 0x2b : 0x1b);
	BYTES(eh, 0x0c, 0x07, 0x08, 0x90, 0x01);
	end_entry(eh, cie_a);

	/* FDE 1 [0x1000, 0x1040): a frame set up with rbp */
	at = eh->n;
	fde_off[0] = begin_fde(eh, cie_a, 0x1000, 0x40);
	fde_pc[0] = 0x1000;
	if (v == V_CIE_SELF)
		patch32(eh, at + 4, 4);
	else if (v == V_CIE_BEFORE)
		patch32(eh, at + 4, 0x100000);
	if (v == V_STATES)
		for (i = 0; i < 17; i++)
			BYTES(eh, 0x0a);
	if (v == V_RESTORE_EMPTY)
		BYTES(eh, 0x0b);
	if (v == V_NOPS)
		for (i = 0; i < 100001; i++)
			BYTES(eh, 0x00);
	if (v == V_BAD_OP)
		BYTES(eh, 0x2d);
	if (v == V_BACKWARD) {
		BYTES(eh, 0x01);
		emit_pcrel(eh, 0xff0);
	}
	BYTES(eh, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x70, 0x0c, 0x07, 0x08);
	end_entry(eh, at);
	if (v == V_LEN_RESERVED)
		patch32(eh, at, 0xfffffff0);
	else if (v == V_LEN_PAST_END)
		patch32(eh, at, 0x7ffffff0);
	else if (v == V_LEN_64)
		patch32(eh, at, 0xffffffff);

	/* FDE 2 [0x1100, 0x1140): a PLT, binutils' IBT form (lit10) */
	fde_off[1] = begin_fde(eh, cie_a, 0x1100, 0x40);
	fde_pc[1] = 0x1100;
	if (v == V_CIE_FDE) /* FDE 2's CIE pointer: to FDE 1 */
		patch32(eh, fde_off[1] + 4, (__u32)(fde_off[1] + 4 - fde_off[0]));
	BYTES(eh, 0x0e, 0x10, 0x46, 0x0e, 0x18, 0x4a, 0x0f, 11, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a,
	      0x3a, 0x2a, 0x33, 0x24, 0x22);
	end_entry(eh, fde_off[1]);

	/* FDE 3 [0x1200, 0x1260): gcc's realigned stack (DRAP through r10) */
	fde_off[2] = begin_fde(eh, cie_a, 0x1200, 0x60);
	fde_pc[2] = 0x1200;
	BYTES(eh, 0x45, 0x0c, 0x0a, 0x00, 0x4c, 0x10, 0x06, 0x02, 0x76, 0x00, 0x42, 0x0f, 0x03,
	      0x76, 0x78, 0x06, 0x02, 0x40, 0x0c, 0x07, 0x08, 0x06, 0x06);
	end_entry(eh, fde_off[2]);

	/* FDE 4 [0x1300, 0x1320): remember and restore */
	fde_off[3] = begin_fde(eh, cie_a, 0x1300, 0x20);
	fde_pc[3] = 0x1300;
	BYTES(eh, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x41, 0x0a, 0x0e, 0x08, 0x07, 0x06, 0x44, 0x0b,
	      0x42, 0x0e, 0x20);
	end_entry(eh, fde_off[3]);

	/* CIE B: version 3, "zPLRS" (an indirect personality, an LSDA, a signal frame) */
	cie_b = begin_entry(eh);
	emit_le(eh, 0, 4);
	BYTES(eh, 3);
	emit(eh, "zPLRS", 6);
	BYTES(eh, 0x01, 0x78, 0x10, 7, 0x9b, 0x11, 0x22, 0x33, 0x44, 0x1b, 0x1b);
	BYTES(eh, 0x0c, 0x07, 0x08, 0x90, 0x01);
	end_entry(eh, cie_b);

	/* FDE 5 [0x1400, 0x1410) of CIE B, with an LSDA pointer; the columns we drop */
	fde_off[4] = begin_entry(eh);
	emit_le(eh, eh->n - cie_b, 4);
	emit_pcrel(eh, 0x1400);
	emit_le(eh, 0x10, 4);
	BYTES(eh, 4, 0, 0, 0, 0);
	fde_pc[4] = 0x1400;
	BYTES(eh, 0x02, 0x08, 0x13, 0x7e, 0x2e, 0x10, 0x00, 0x11, 0x03, 0x7d, 0x14, 0x03, 0x02,
	      0x09, 0x03, 0x00);
	end_entry(eh, fde_off[4]);

	/* FDE 6 [0x1500, 0x1510): rbp in another register, then the same again */
	fde_off[5] = begin_fde(eh, cie_a, 0x1500, 0x10);
	fde_pc[5] = 0x1500;
	BYTES(eh, 0x09, 0x06, 0x03, 0x44, 0x08, 0x06);
	end_entry(eh, fde_off[5]);

	/* FDE 7 [0x1600, 0x1610): the outermost frame */
	fde_off[6] = begin_fde(eh, cie_a, 0x1600, 0x10);
	fde_pc[6] = 0x1600;
	BYTES(eh, 0x07, 0x10);
	end_entry(eh, fde_off[6]);

	/* FDE 8 [0x1700, 0x2700): advance_loc2, advance_loc4, set_loc, negative offsets */
	fde_off[7] = begin_fde(eh, cie_a, 0x1700, 0x1000);
	fde_pc[7] = 0x1700;
	BYTES(eh, 0x03, 0x00, 0x02, 0x0e, 0x30, 0x04, 0x00, 0x03, 0x00, 0x00, 0x0e, 0x40, 0x01);
	emit_pcrel(eh, 0x1e00);
	BYTES(eh, 0x0e, 0x48, 0x2f, 0x06, 0x02);
	end_entry(eh, fde_off[7]);
	*n_fde = 8;
	emit_le(eh, 0, 4); /* the terminator */
}

static void build_hdr(struct buf *hdr, const size_t *fde_off, const __u64 *fde_pc, size_t n)
{
	size_t i;

	BYTES(hdr, 1, 0x1b, 0x03, 0x3b);
	emit_le(hdr, (__u32)(EH_VADDR - (HDR_VADDR + 4)), 4);
	emit_le(hdr, n, 4);
	for (i = 0; i < n; i++) {
		emit_le(hdr, (__u32)(fde_pc[i] - HDR_VADDR), 4);
		emit_le(hdr, (__u32)(EH_VADDR + fde_off[i] - HDR_VADDR), 4);
	}
}

/* .debug_frame: a version 4 CIE, a 64-bit DWARF CIE, an FDE of each, and a second FDE for
 * 0x1000 (the index keeps .eh_frame's). */
static void build_debug_frame(struct buf *d)
{
	size_t cie_d, cie_e, at;

	cie_d = begin_entry(d);
	emit_le(d, 0xffffffff, 4);
	BYTES(d, 4, 0, 8, 0, 0x01, 0x78, 0x10, 0x0c, 0x07, 0x08, 0x90, 0x01);
	end_entry(d, cie_d);

	at = begin_entry(d);
	emit_le(d, cie_d, 4);
	emit_le(d, 0x3000, 8);
	emit_le(d, 0x20, 8);
	BYTES(d, 0x44, 0x0e, 0x10);
	end_entry(d, at);

	cie_e = d->n;
	emit_le(d, 0xffffffff, 4);
	emit_le(d, 0, 8);
	emit_le(d, ~0ull, 8);
	BYTES(d, 1, 0, 0x01, 0x78, 0x10, 0x0c, 0x07, 0x08, 0x90, 0x01);
	while ((d->n - cie_e) % 8)
		BYTES(d, 0);
	memcpy(d->p + cie_e + 4, &(__u64){ d->n - cie_e - 12 }, 8);

	at = d->n;
	emit_le(d, 0xffffffff, 4);
	emit_le(d, 0, 8);
	emit_le(d, cie_e, 8);
	emit_le(d, 0x3100, 8);
	emit_le(d, 0x10, 8);
	BYTES(d, 0x42, 0x0e, 0x18);
	while ((d->n - at) % 8)
		BYTES(d, 0);
	memcpy(d->p + at + 4, &(__u64){ d->n - at - 12 }, 8);

	at = begin_entry(d);
	emit_le(d, cie_d, 4);
	emit_le(d, 0x1000, 8);
	emit_le(d, 0x40, 8);
	BYTES(d, 0x0e, 0x63);
	end_entry(d, at);
}

static void syn_build(struct syn *s, enum variant v)
{
	struct buf eh = { 0 }, hdr = { 0 }, dbg = { 0 };
	size_t fde_off[8], n;
	__u64 fde_pc[8];

	build_eh_frame(&eh, v, fde_off, fde_pc, &n);
	build_hdr(&hdr, fde_off, fde_pc, n);
	build_debug_frame(&dbg);
	s->eh = exact_copy(&eh);
	s->hdr = exact_copy(&hdr);
	s->dbg = exact_copy(&dbg);
	s->sec = (struct cfi_sections){ s->hdr, hdr.n,	  HDR_VADDR, s->eh,
					eh.n,	EH_VADDR, s->dbg,    dbg.n };
	free(eh.p);
	free(hdr.p);
	free(dbg.p);
}

static void syn_free(struct syn *s)
{
	free(s->eh);
	free(s->hdr);
	free(s->dbg);
}

struct want {
	__u64 addr;
	int rc;
	__u8 cfa;
	__s32 cfa_off;
	__u8 fp;
	__s32 fp_off;
	__u8 ra;
	__u64 start, end;
	__u8 signal, split;
};

#define SP CFI_CFA_SP
#define SAME CFI_REG_SAME
#define AT CFI_REG_AT_CFA
#define UNDEF CFI_REG_UNDEFINED

static const struct want wants[] = {
	{ 0x1000, 0, SP, 8, SAME, 0, AT, 0x1000, 0x1001, 0, 0 },
	{ 0x1002, 0, SP, 16, AT, -16, AT, 0x1001, 0x1004, 0, 0 },
	{ 0x1010, 0, CFI_CFA_FP, 16, AT, -16, AT, 0x1004, 0x1034, 0, 0 },
	{ 0x103f, 0, SP, 8, AT, -16, AT, 0x1034, 0x1040, 0, 0 },
	{ .addr = 0x1040, .rc = -ENOENT },
	{ 0x1105, 0, SP, 16, SAME, 0, AT, 0x1100, 0x1106, 0, 0 },
	{ 0x1108, 0, SP, 24, SAME, 0, AT, 0x1106, 0x1110, 0, 0 },
	{ 0x113f, 0, CFI_CFA_PLT, 8, SAME, 0, AT, 0x1110, 0x1140, 0, 10 },
	{ .addr = 0x1206, .rc = -ENOTSUP },
	{ .addr = 0x1212, .rc = -ENOTSUP },
	{ 0x1220, 0, CFI_CFA_FP_DEREF, -8, CFI_REG_AT_FP, 0, AT, 0x1213, 0x1253, 0, 0 },
	{ 0x1255, 0, SP, 8, SAME, 0, AT, 0x1253, 0x1260, 0, 0 },
	{ 0x1301, 0, SP, 16, AT, -16, AT, 0x1301, 0x1302, 0, 0 },
	{ 0x1303, 0, SP, 8, UNDEF, 0, AT, 0x1302, 0x1306, 0, 0 },
	{ 0x1306, 0, SP, 16, AT, -16, AT, 0x1306, 0x1308, 0, 0 },
	{ 0x1310, 0, SP, 32, AT, -16, AT, 0x1308, 0x1320, 0, 0 },
	{ 0x1400, 0, SP, 8, SAME, 0, AT, 0x1400, 0x1408, 1, 0 },
	{ 0x1409, 0, SP, 16, SAME, 0, AT, 0x1408, 0x1410, 1, 0 },
	{ .addr = 0x1500, .rc = -ENOTSUP },
	{ 0x1504, 0, SP, 8, SAME, 0, AT, 0x1504, 0x1510, 0, 0 },
	{ 0x1600, 0, SP, 8, SAME, 0, UNDEF, 0x1600, 0x1610, 0, 0 },
	{ 0x1800, 0, SP, 8, SAME, 0, AT, 0x1700, 0x1900, 0, 0 },
	{ 0x1a00, 0, SP, 48, SAME, 0, AT, 0x1900, 0x1c00, 0, 0 },
	{ 0x1d00, 0, SP, 64, SAME, 0, AT, 0x1c00, 0x1e00, 0, 0 },
	{ 0x1f00, 0, SP, 72, AT, 16, AT, 0x1e00, 0x2700, 0, 0 },
	{ 0x3002, 0, SP, 8, SAME, 0, AT, 0x3000, 0x3004, 0, 0 },
	{ 0x3010, 0, SP, 16, SAME, 0, AT, 0x3004, 0x3020, 0, 0 },
	{ 0x3105, 0, SP, 24, SAME, 0, AT, 0x3102, 0x3110, 0, 0 },
	{ .addr = 0x0fff, .rc = -ENOENT },
	{ .addr = 0x5000, .rc = -ENOENT },
};

static bool rule_is(const struct cfi_rule *r, int rc, const struct want *w)
{
	if (rc != w->rc)
		return false;
	return rc ||
	       (r->cfa == w->cfa && r->cfa_off == w->cfa_off && r->fp == w->fp &&
		r->fp_off == w->fp_off && r->ra == w->ra && (w->ra != AT || r->ra_off == -8) &&
		r->start == w->start && r->end == w->end && r->signal == w->signal &&
		(w->cfa != CFI_CFA_PLT || r->plt_split == w->split));
}

static void check_golden(void)
{
	struct cfi_sections no_hdr;
	struct cfi_index *idx[2];
	struct cfi_rule r;
	struct syn s;
	size_t i;
	int m, rc;

	syn_build(&s, V_NONE);
	no_hdr = s.sec;
	no_hdr.eh_frame_hdr = NULL;
	idx[0] = cfi_index__build(&s.sec); /* .debug_frame only */
	idx[1] = cfi_index__build(&no_hdr);
	tap_ok(idx[0] && idx[1] && !cfi_index__bad(idx[0]) && !cfi_index__bad(idx[1]),
	       "synthetic: indexes built, nothing malformed");
	for (m = 0; m < 2; m++) {
		unsigned int bad = 0;

		for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
			memset(&r, 0xa5, sizeof(r));
			rc = cfi__find(m ? &no_hdr : &s.sec, idx[m], wants[i].addr, &r);
			if (!rule_is(&r, rc, &wants[i]) && ++bad)
				tap_diag("  %#llx: %s cfa %u%+d fp %u%+d ra %u%+d [%#llx, %#llx) "
					 "signal %u split %u",
					 (unsigned long long)wants[i].addr, cfi__strerror(rc),
					 r.cfa, r.cfa_off, r.fp, r.fp_off, r.ra, r.ra_off,
					 (unsigned long long)r.start, (unsigned long long)r.end,
					 r.signal, r.plt_split);
		}
		tap_ok(!bad, "synthetic, %s: every instruction and augmentation read right",
		       m ? "index only" : "through .eh_frame_hdr");
	}
	cfi_index__free(idx[0]);
	cfi_index__free(idx[1]);
	syn_free(&s);
}

static bool allowed(int rc)
{
	return rc == 0 || rc == -ENOENT || rc == -EBADMSG || rc == -ENOTSUP;
}

/* Every lookup of wants[] through sec: an allowed return, and the full answer when 0. */
static bool lookups_sane(const struct cfi_sections *sec, bool with_index)
{
	struct cfi_index *idx = with_index ? cfi_index__build(sec) : NULL;
	struct cfi_rule r;
	bool ok = true;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		rc = cfi__find(sec, idx, wants[i].addr, &r);
		if (!allowed(rc) || (!rc && !rule_is(&r, rc, &wants[i])))
			ok = false;
	}
	cfi_index__free(idx);
	return ok;
}

/* Each section cut at every length, in an allocation of exactly that length. */
static void check_truncated(void)
{
	struct syn s;
	struct cfi_sections cut;
	unsigned int which, bad;
	__u64 len, full;
	__u8 *copy;
	static const char *const names[] = { ".eh_frame_hdr", ".eh_frame", ".debug_frame" };

	syn_build(&s, V_NONE);
	for (which = 0; which < 3; which++) {
		full = which == 0 ? s.sec.eh_frame_hdr_len :
		       which == 1 ? s.sec.eh_frame_len :
				    s.sec.debug_frame_len;
		bad = 0;
		for (len = 0; len <= full; len++) {
			copy = malloc(len ? len : 1);
			if (!copy)
				tap_bail("out of memory");
			cut = s.sec;
			if (which == 0) {
				memcpy(copy, s.hdr, len);
				cut.eh_frame_hdr = copy;
				cut.eh_frame_hdr_len = len;
			} else if (which == 1) {
				memcpy(copy, s.eh, len);
				cut.eh_frame = copy;
				cut.eh_frame_len = len;
			} else {
				memcpy(copy, s.dbg, len);
				cut.debug_frame = copy;
				cut.debug_frame_len = len;
			}
			if (!lookups_sane(&cut, false) || !lookups_sane(&cut, true))
				bad++;
			free(copy);
		}
		tap_ok(!bad, "synthetic %s cut at each of %llu lengths: errors or the full answer",
		       names[which], (unsigned long long)full + 1);
	}
	syn_free(&s);
}

static void check_variants(void)
{
	/* Through .eh_frame_hdr at probe, in the broken entry; other, in an FDE that is not
	 * broken, must still be found there when the CIE is intact. */
	static const struct {
		int rc;
		__u64 probe, other;
		bool cie_broken;
	} want[V_COUNT] = {
		[V_LEN_RESERVED] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_LEN_PAST_END] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_LEN_64] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_CIE_SELF] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_CIE_FDE] = { -EBADMSG, 0x1110, 0x1000, false },
		[V_CIE_BEFORE] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_AUG_HUGE] = { -EBADMSG, 0x1000, 0x1110, true },
		[V_STATES] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_RESTORE_EMPTY] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_NOPS] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_VERSION] = { -EBADMSG, 0x1000, 0x1110, true },
		[V_RA_REG] = { -ENOTSUP, 0x1000, 0x1110, true },
		[V_INDIRECT] = { -ENOTSUP, 0x1000, 0x1110, true },
		[V_TEXTREL] = { -EBADMSG, 0x1000, 0x1110, true },
		[V_BAD_OP] = { -EBADMSG, 0x1000, 0x1110, false },
		[V_EH_AUG] = { -ENOTSUP, 0x1000, 0x1110, true },
		[V_BACKWARD] = { -EBADMSG, 0x1000, 0x1110, false },
	};
	struct cfi_sections sec;
	struct cfi_index *idx;
	struct cfi_rule r;
	struct syn s;
	int v, rc, rc_idx, rc_other;

	for (v = V_NONE + 1; v < V_COUNT; v++) {
		syn_build(&s, (enum variant)v);
		sec = s.sec;
		sec.debug_frame = NULL; /* its FDE for 0x1000 would stand in for the broken one */
		sec.debug_frame_len = 0;
		rc = cfi__find(&sec, NULL, want[v].probe, &r);
		rc_other = cfi__find(&sec, NULL, want[v].other, &r);
		sec.eh_frame_hdr = NULL;
		idx = cfi_index__build(&sec);
		rc_idx = idx ? cfi__find(&sec, idx, want[v].probe, &r) : -ENOMEM;
		tap_ok(rc == want[v].rc && allowed(rc_idx) && rc_idx < 0 &&
			       (rc_other == 0 || want[v].cie_broken),
		       "broken variant %d: %s through the hdr, %s through the index (%llu bad); "
		       "the next FDE: %s",
		       v, cfi__strerror(rc), cfi__strerror(rc_idx),
		       (unsigned long long)cfi_index__bad(idx), cfi__strerror(rc_other));
		cfi_index__free(idx);
		syn_free(&s);
	}
}

int main(int argc, char **argv)
{
	char libc[4096] = "", self[4096];

	check_golden();
	check_truncated();
	check_variants();

	if (system("readelf --version >/dev/null 2>&1")) {
		tap_diag("readelf (binutils) not found: the oracle checks are not run");
		return tap_done();
	}
	/* its own name: /proc/self/exe would be readelf's in readelf */
	if (!realpath("/proc/self/exe", self))
		tap_bail("unable to resolve /proc/self/exe: %s", strerror(errno));
	check_file(self);
	dl_iterate_phdr(find_libc, libc);
	if (tap_ok(libc[0] != '\0', "libc found: %s", libc))
		check_file(libc);
	if (argc > 1)
		check_file(argv[1]);
	return tap_done();
}
