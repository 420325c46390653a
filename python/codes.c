/* SPDX-License-Identifier: MIT */
/*
 * Naming code objects read from another process (docs/python.md, "Naming code objects").
 *
 * A Python frame reaches the correlator as a code object's address and an instruction
 * offset. This reads the code object from the process (its type, qualified name, file,
 * first line and location table), turns the offset into a line with the location table
 * (3.11's format, the same in 3.12 and 3.13), and gives "QUALNAME (FILE:LINE)" names.
 *
 * Everything read is untrusted: the address comes from a BPF program that read it from the
 * process, which may have freed the object since. The type pointer must be PyCode_Type, every
 * length is bounded before anything is read, strings are checked to be compact str objects,
 * and invalid UTF-8 (or a NUL) becomes '?'.
 *
 * The cache holds at most max_codes code objects, keyed by (pid, address), in a hash table of
 * slots evicted by a clock (a second chance for an entry used since the hand last passed).
 * An entry checked more than a second ago is compared again with the process (its type,
 * the addresses of its strings and table, its first line): a code object freed and another
 * allocated at its address is read again. Names are interned per entry and line, so a
 * (pid, code, line) gives the same pointer each time; the names of an entry that is evicted,
 * dropped or read again are retired, not freed, until py_codes__collect, because the
 * correlator holds them in a batch it has not sent yet.
 *
 * Each process's entries are also linked in a list of their own, found by pid in a small
 * open-addressed table: a process's exit drops its entries without a pass over every slot
 * (megabytes at the default size, read at each exit of any process, Python or not: most of a
 * millisecond a process in an exec storm, docs/performance.md).
 */
#include "python/python.h"
#include "python/internal.h"

#include "common/mix.h"
#include "common/oatab.h"
#include "xpusup/event.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define QUALNAME_MAX 256 /* bytes of UTF-8 kept of a qualified name */
#define FILENAME_MAX_BYTES 1024 /* bytes of UTF-8 kept of a file name */
#define LINETABLE_MAX (64u << 10) /* bytes of a location table read; a line past it is 0 */
#define CODE_HEADER_MAX 512 /* bytes of a code object read, its fields all within */
#define REVALIDATE_NS 1000000000ull

struct code_name {
	__u32 line;
	char *name;
};

/* What was read of a code object: where its parts are (what tells whether the address
 * holds the same object still) and what names it. */
struct code_read {
	__u64 type, qualname_addr, filename_addr, linetable_addr;
	__s32 firstlineno;
	char *qualname, *filename;
	unsigned char *linetable;
	__u32 linetable_len;
};

struct code_entry {
	__u32 pid;
	__u64 code;
	__u64 checked_ns;
	struct code_read obj;
	struct code_name *names;
	__u32 n_names, cap_names;
	__s32 next; /* the hash chain, or the free list; -1 ends either */
	__s32 pid_prev, pid_next; /* the process's list, newest first; -1 ends it */
	bool used, referenced;
};

/* A process with entries: the newest of them. */
struct pid_slot {
	__u32 pid;
	__s32 head; /* -1: an empty slot */
};

struct py_codes {
	struct code_entry *slots;
	__u32 max_codes, n_used, hand;
	__s32 free_head;
	__s32 *buckets;
	__u32 bucket_mask;
	struct pid_slot *pids; /* bucket_mask + 1 slots: at most max_codes processes, half full */
	char **retired; /* names waiting for py_codes__collect */
	size_t n_retired, cap_retired;
	struct py_codes_stats stats;
	__u64 (*now_ns)(void);
};

int py_mem__read(__u32 pid, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	char path[64];
	ssize_t n;
	int fd;

	if (!len)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		return -EFAULT;
	if (errno != ENOSYS)
		return errno == ENOMEM ? -EFAULT : -errno;
	/* Kernels built without process_vm_readv: the same through /proc/PID/mem. */
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = pread(fd, buf, len, (off_t)addr);
	close(fd);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno != EIO ? -errno : -EFAULT;
}

static __u64 monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

struct py_codes *py_codes__new(__u32 max_codes)
{
	struct py_codes *c;
	__u32 n_buckets = 1, i;

	if (!max_codes || max_codes > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	while (n_buckets < 2 * max_codes)
		n_buckets <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->slots = calloc(max_codes, sizeof(*c->slots));
	c->buckets = malloc(n_buckets * sizeof(*c->buckets));
	c->pids = malloc(n_buckets * sizeof(*c->pids));
	if (!c->slots || !c->buckets || !c->pids) {
		free(c->slots);
		free(c->buckets);
		free(c->pids);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n_buckets; i++) {
		c->buckets[i] = -1;
		c->pids[i].head = -1;
	}
	for (i = 0; i < max_codes; i++)
		c->slots[i].next = i + 1 < max_codes ? (__s32)(i + 1) : -1;
	c->free_head = 0;
	c->bucket_mask = n_buckets - 1;
	c->max_codes = max_codes;
	c->now_ns = monotonic_ns;
	return c;
}

void py_codes__set_clock(struct py_codes *c, __u64 (*now_ns)(void))
{
	c->now_ns = now_ns ? now_ns : monotonic_ns;
}

static __u32 bucket_of(const struct py_codes *c, __u32 pid, __u64 code)
{
	__u64 h = (code >> 4) * 0x9e3779b97f4a7c15ull ^ (__u64)pid * 0xc2b2ae3d27d4eb4full;

	return (__u32)(h >> 32) & c->bucket_mask;
}

/* ---- the processes' lists ---- */

static __u32 pid_home(__u32 pid)
{
	return (__u32)xpu_mix64(pid);
}

/* pid's slot, or the empty slot where it would go (the table is at most half full). */
static __u32 pid_find(const struct py_codes *c, __u32 pid)
{
	__u32 i = pid_home(pid) & c->bucket_mask;

	while (c->pids[i].head >= 0 && c->pids[i].pid != pid)
		i = (i + 1) & c->bucket_mask;
	return i;
}

static bool pids_empty(const void *tab, uint32_t slot)
{
	return ((const struct py_codes *)tab)->pids[slot].head < 0;
}

static uint32_t pids_home(const void *tab, uint32_t slot)
{
	return pid_home(((const struct py_codes *)tab)->pids[slot].pid);
}

static void pids_move(void *tab, uint32_t to, uint32_t from)
{
	struct py_codes *c = tab;

	c->pids[to] = c->pids[from];
}

static void pids_clear(void *tab, uint32_t slot)
{
	((struct py_codes *)tab)->pids[slot].head = -1;
}

static const struct oatab_ops pids_ops = { pids_empty, pids_home, pids_move, pids_clear };

/* Put a new entry at the head of its process's list. */
static void pid_link(struct py_codes *c, struct code_entry *e)
{
	__u32 s = pid_find(c, e->pid);
	__s32 idx = (__s32)(e - c->slots);

	e->pid_prev = -1;
	e->pid_next = c->pids[s].head; /* -1 for a process new to the table */
	if (e->pid_next >= 0)
		c->slots[e->pid_next].pid_prev = idx;
	c->pids[s] = (struct pid_slot){ .pid = e->pid, .head = idx };
}

/* Take an entry out of its process's list; the process's slot goes with its last entry. */
static void pid_unlink(struct py_codes *c, struct code_entry *e)
{
	__u32 s;

	if (e->pid_next >= 0)
		c->slots[e->pid_next].pid_prev = e->pid_prev;
	if (e->pid_prev >= 0) {
		c->slots[e->pid_prev].pid_next = e->pid_next;
		return;
	}
	s = pid_find(c, e->pid);
	if (e->pid_next >= 0)
		c->pids[s].head = e->pid_next;
	else
		oatab__delete(c, c->bucket_mask, s, &pids_ops);
}

/* ---- the entries ---- */

static struct code_entry *lookup(struct py_codes *c, __u32 pid, __u64 code)
{
	__s32 i;

	for (i = c->buckets[bucket_of(c, pid, code)]; i >= 0; i = c->slots[i].next)
		if (c->slots[i].pid == pid && c->slots[i].code == code)
			return &c->slots[i];
	return NULL;
}

static void code_read__free(struct code_read *r)
{
	free(r->qualname);
	free(r->filename);
	free(r->linetable);
	r->qualname = r->filename = NULL;
	r->linetable = NULL;
	r->linetable_len = 0;
}

static bool code_read__same(const struct code_read *a, const struct code_read *b)
{
	return a->type == b->type && a->qualname_addr == b->qualname_addr &&
	       a->filename_addr == b->filename_addr && a->linetable_addr == b->linetable_addr &&
	       a->firstlineno == b->firstlineno;
}

/* Hand an entry's names to py_codes__collect and free the rest of what it read. On no
 * memory for the list the names are leaked rather than freed under a reader. */
static void entry__retire(struct py_codes *c, struct code_entry *e)
{
	__u32 i;

	if (c->n_retired + e->n_names > c->cap_retired) {
		size_t cap = (c->cap_retired ? c->cap_retired * 2 : 64) + e->n_names;
		char **r = realloc(c->retired, cap * sizeof(*r));

		if (r) {
			c->retired = r;
			c->cap_retired = cap;
		}
	}
	for (i = 0; i < e->n_names; i++)
		if (c->n_retired < c->cap_retired)
			c->retired[c->n_retired++] = e->names[i].name;
	free(e->names);
	e->names = NULL;
	e->n_names = e->cap_names = 0;
	code_read__free(&e->obj);
}

/* Take an entry out of the table and put its slot on the free list. */
static void entry__remove(struct py_codes *c, struct code_entry *e)
{
	__s32 idx = (__s32)(e - c->slots), *p = &c->buckets[bucket_of(c, e->pid, e->code)];

	while (*p >= 0 && *p != idx)
		p = &c->slots[*p].next;
	if (*p == idx)
		*p = e->next;
	pid_unlink(c, e);
	entry__retire(c, e);
	e->used = false;
	e->next = c->free_head;
	c->free_head = idx;
	c->n_used--;
}

/* A free slot, evicting with the clock when every slot is in use. */
static struct code_entry *slot__take(struct py_codes *c)
{
	struct code_entry *e;

	if (c->free_head < 0) {
		for (;;) {
			e = &c->slots[c->hand];
			c->hand = (c->hand + 1) % c->max_codes;
			if (!e->referenced)
				break;
			e->referenced = false;
		}
		entry__remove(c, e);
		c->stats.evicted++;
	}
	e = &c->slots[c->free_head];
	c->free_head = e->next;
	return e;
}

/* Append the UTF-8 of code point cp to out (room for 4 more bytes checked by the caller);
 * '?' for a surrogate, a code point past U+10FFFF, or a NUL. */
static size_t utf8_put(unsigned char *out, __u32 cp)
{
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
		out[0] = '?';
		return 1;
	}
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * The str at addr as UTF-8, at most max bytes (whole characters), into a new string.
 * Only compact str objects (every str a code object holds): the characters follow the
 * header, one byte each for ASCII and latin-1, two or four otherwise.
 */
static int read_str(__u32 pid, const struct py_layout *l, __u64 addr, size_t max, char **out)
{
	unsigned char hdr[256], *raw = NULL, *utf8 = NULL;
	__u32 state, kind;
	__s64 length;
	size_t n_chars, i, len = 0;
	__u64 data;
	int err;

	size_t need = l->unicode_length + 8u > l->unicode_state + 4u ? l->unicode_length + 8u :
								       l->unicode_state + 4u;

	/* Only what tells the kind and length: a short str may end before the compact
	 * header would. */
	if (need > sizeof(hdr))
		return -EINVAL;
	err = py_mem__read(pid, addr, hdr, need);
	if (err)
		return err;
	memcpy(&length, hdr + l->unicode_length, sizeof(length));
	memcpy(&state, hdr + l->unicode_state, sizeof(state));
	kind = PY_STATE_KIND(state);
	if (!PY_STATE_COMPACT(state) || (kind != 1 && kind != 2 && kind != 4) || length < 0 ||
	    (PY_STATE_ASCII(state) && kind != 1))
		return -EINVAL;
	data = addr + (PY_STATE_ASCII(state) ? l->unicode_ascii_data : l->unicode_compact_data);
	n_chars = (size_t)length < max ? (size_t)length : max; /* each one 1 byte or more */
	raw = malloc(n_chars * kind + 1);
	utf8 = malloc(max + 1);
	if (!raw || !utf8) {
		err = -ENOMEM;
		goto free_bufs;
	}
	err = py_mem__read(pid, data, raw, n_chars * kind);
	if (err)
		goto free_bufs;
	for (i = 0; i < n_chars; i++) {
		unsigned char tmp[4];
		__u32 cp;
		size_t k;

		if (kind == 1) {
			cp = raw[i];
			if (PY_STATE_ASCII(state) && cp >= 0x80)
				cp = '?';
		} else if (kind == 2) {
			__u16 u;

			memcpy(&u, raw + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, raw + 4 * i, 4);
		}
		k = utf8_put(tmp, cp);
		if (len + k > max)
			break;
		memcpy(utf8 + len, tmp, k);
		len += k;
	}
	utf8[len] = '\0';
	*out = (char *)utf8;
	utf8 = NULL;
free_bufs:
	free(raw);
	free(utf8);
	return err;
}

static int read_linetable(__u32 pid, const struct py_layout *l, __u64 addr, unsigned char **out,
			  __u32 *len_out)
{
	unsigned char hdr[256];
	__s64 size;
	unsigned char *buf;
	size_t len;
	int err;

	if (l->bytes_data > sizeof(hdr) || l->bytes_size + 8u > l->bytes_data)
		return -EINVAL;
	err = py_mem__read(pid, addr, hdr, l->bytes_data);
	if (err)
		return err;
	memcpy(&size, hdr + l->bytes_size, sizeof(size));
	if (size < 0)
		return -EINVAL;
	len = (size_t)size < LINETABLE_MAX ? (size_t)size : LINETABLE_MAX;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	err = py_mem__read(pid, addr + l->bytes_data, buf, len);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len_out = (__u32)len;
	return 0;
}

/* The fields of the code object at code that name it, into r (its identity, not its
 * strings): -EINVAL when it is not a code object. */
static int read_code_header(__u32 pid, const struct py_layout *l, __u64 code, struct code_read *r)
{
	unsigned char buf[CODE_HEADER_MAX];
	size_t need = 0;
	int err;

#define NEED(off, size)                                \
	do {                                           \
		if ((size_t)(off) + (size) > need)     \
			need = (size_t)(off) + (size); \
	} while (0)
	NEED(l->object_type, 8);
	NEED(l->code_qualname, 8);
	NEED(l->code_filename, 8);
	NEED(l->code_linetable, 8);
	NEED(l->code_firstlineno, 4);
#undef NEED
	if (need > sizeof(buf))
		return -EINVAL;
	err = py_mem__read(pid, code, buf, need);
	if (err)
		return err;
	memcpy(&r->type, buf + l->object_type, 8);
	if (!l->code_type || r->type != l->code_type)
		return -EINVAL;
	memcpy(&r->qualname_addr, buf + l->code_qualname, 8);
	memcpy(&r->filename_addr, buf + l->code_filename, 8);
	memcpy(&r->linetable_addr, buf + l->code_linetable, 8);
	memcpy(&r->firstlineno, buf + l->code_firstlineno, 4);
	return 0;
}

/* Read the parts of the code object whose header is in r. */
static int read_code(__u32 pid, const struct py_layout *l, struct code_read *r)
{
	int err;

	err = read_str(pid, l, r->qualname_addr, QUALNAME_MAX, &r->qualname);
	if (!err)
		err = read_str(pid, l, r->filename_addr, FILENAME_MAX_BYTES, &r->filename);
	if (!err)
		err = read_linetable(pid, l, r->linetable_addr, &r->linetable, &r->linetable_len);
	return err;
}

static __u32 scan_varint(const unsigned char *t, __u32 len, __u32 *pos)
{
	__u32 read, val, shift = 0;

	if (*pos >= len)
		return 0;
	read = t[(*pos)++];
	val = read & 63;
	while (read & 64 && *pos < len && shift < 24) {
		read = t[(*pos)++];
		shift += 6;
		val |= (read & 63) << shift;
	}
	return val;
}

static __s32 scan_svarint(const unsigned char *t, __u32 len, __u32 *pos)
{
	__u32 v = scan_varint(t, len, pos);

	return v & 1 ? -(__s32)(v >> 1) : (__s32)(v >> 1);
}

/*
 * The line of the instruction at byte offset addr with CPython 3.11's location table
 * (Objects/locations.md): entries of one byte with bit 7 set, code = bits 3..6 and the code
 * units covered = bits 0..2 + 1, then their operands. Code 15: no location; 14 (long) and
 * 13 (no columns) start with the line delta as a signed varint; 10..12: delta 0..2; 0..9:
 * same line. The line starts at co_firstlineno. 0 when the table says none or ends first.
 */
static __u32 linetable_line(const unsigned char *t, __u32 len, __s32 firstlineno, __u64 addr)
{
	__s64 line = firstlineno;
	__u64 start = 0;
	__u32 pos = 0;

	while (pos < len) {
		__u32 b = t[pos], code = (b >> 3) & 15, p = pos + 1;
		__u64 end = start + ((b & 7) + 1) * 2;

		if (!(b & 0x80))
			return 0; /* not an entry's first byte: not a table CPython wrote */
		if (code == 13 || code == 14)
			line += scan_svarint(t, len, &p);
		else if (code >= 10 && code <= 12)
			line += code - 10;
		if (addr < end)
			return code == 15 || line <= 0 || line > UINT32_MAX ? 0 : (__u32)line;
		start = end;
		for (pos++; pos < len && !(t[pos] & 0x80); pos++)
			;
	}
	return 0;
}

int py_codes__line(struct py_codes *c, __u32 pid, const struct py_layout *layout, __u64 code,
		   __u32 lasti, __u32 *line)
{
	struct code_entry *e = lookup(c, pid, code);
	struct code_read fresh = { 0 };
	__u64 now = c->now_ns();
	int err;

	if (e && now - e->checked_ns > REVALIDATE_NS) {
		err = read_code_header(pid, layout, code, &fresh);
		if (!err && !code_read__same(&fresh, &e->obj)) {
			err = read_code(pid, layout, &fresh);
			if (!err) {
				entry__retire(c, e);
				e->obj = fresh;
				c->stats.revalidated++;
			}
		}
		if (err) {
			code_read__free(&fresh);
			entry__remove(c, e);
			c->stats.failed++;
			return err;
		}
		e->checked_ns = now;
	}
	if (!e) {
		err = read_code_header(pid, layout, code, &fresh);
		if (!err)
			err = read_code(pid, layout, &fresh);
		if (err) {
			code_read__free(&fresh);
			c->stats.failed++;
			return err;
		}
		e = slot__take(c);
		*e = (struct code_entry){
			.pid = pid,
			.code = code,
			.checked_ns = now,
			.obj = fresh,
			.next = c->buckets[bucket_of(c, pid, code)],
			.used = true,
		};
		c->buckets[bucket_of(c, pid, code)] = (__s32)(e - c->slots);
		pid_link(c, e);
		c->n_used++;
		c->stats.resolved++;
	}
	e->referenced = true;
	if (lasti == XPU_PY_LASTI_NONE)
		*line = e->obj.firstlineno > 0 ? (__u32)e->obj.firstlineno : 0;
	else
		*line = linetable_line(e->obj.linetable, e->obj.linetable_len, e->obj.firstlineno,
				       (__u64)lasti * 2);
	return 0;
}

const char *py_codes__name(struct py_codes *c, __u32 pid, __u64 code, __u32 line)
{
	struct code_entry *e = lookup(c, pid, code);
	size_t len;
	char *name;
	__u32 i;

	if (!e)
		return NULL;
	e->referenced = true;
	for (i = 0; i < e->n_names; i++)
		if (e->names[i].line == line)
			return e->names[i].name;
	if (e->n_names == e->cap_names) {
		__u32 cap = e->cap_names ? e->cap_names * 2 : 4;
		struct code_name *names = realloc(e->names, cap * sizeof(*names));

		if (!names)
			return NULL;
		e->names = names;
		e->cap_names = cap;
	}
	len = strlen(e->obj.qualname) + strlen(e->obj.filename) + 16;
	name = malloc(len);
	if (!name)
		return NULL;
	snprintf(name, len, "%s (%s:%u)", e->obj.qualname, e->obj.filename, line);
	e->names[e->n_names++] = (struct code_name){ line, name };
	return name;
}

void py_codes__drop_pid(struct py_codes *c, __u32 pid)
{
	__s32 i, next;

	/* each removal takes the head off the list (and, the last, the process's slot) */
	for (i = c->pids[pid_find(c, pid)].head; i >= 0; i = next) {
		next = c->slots[i].pid_next;
		entry__remove(c, &c->slots[i]);
	}
}

void py_codes__collect(struct py_codes *c)
{
	size_t i;

	for (i = 0; i < c->n_retired; i++)
		free(c->retired[i]);
	c->n_retired = 0;
}

void py_codes__stats(const struct py_codes *c, struct py_codes_stats *out)
{
	*out = c->stats;
	out->cached = c->n_used;
}

void py_codes__free(struct py_codes *c)
{
	__u32 i;

	if (!c)
		return;
	for (i = 0; i < c->max_codes; i++)
		if (c->slots[i].used)
			entry__retire(c, &c->slots[i]);
	py_codes__collect(c);
	free(c->retired);
	free(c->slots);
	free(c->buckets);
	free(c->pids);
	free(c);
}
