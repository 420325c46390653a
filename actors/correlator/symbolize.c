// SPDX-License-Identifier: MIT
/* The symbolizer: contract in symbolize.h, design and limits in docs/symbolize.md. */
#include "actors/correlator/symbolize.h"

#include "actors/correlator/cfi_file.h"

#include <elf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "xpusup/event.h"

/* libstdc++'s demangler (the Itanium C++ ABI one); this file is C, so declared here. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* A miss re-reads a process's maps at most this often: a garbage ip in every sample of a
 * process must not cost a read of /proc/PID/maps per frame. */
#define MAPS_REREAD_NS (100 * 1000000ull)
/* A file that could not be loaded is tried again (from another mapping, maybe of another
 * process that can still be read) at most this often. */
#define FILE_RETRY_NS (1000 * 1000000ull)
/* Files no process maps any more that stay loaded, for the next process that maps them
 * (a build spawning the same compiler thousands of times parses it once). */
#define UNUSED_FILES_MAX 64
/* Processes held at once; beyond, the one with the oldest frame is forgotten. */
#define PROCS_MAX 65536
/* A symbol without a size that has no next symbol covers this much. */
#define LAST_SYM_SIZE 4096
/* Symbols looked at before the one an address falls after, for one that encloses it. */
#define ENCLOSING_MAX 4
/* The maps read buffer is given back after a read that needed more than this. */
#define MAPS_BUF_KEEP (256 * 1024)
#define ARENA_BLOCK (64 * 1024)
/* CFI rules looked up by (file, address): a direct-mapped cache, so the frames a process
 * returns to again and again (its loops) cost a probe, not a run of call frame instructions. */
#define RULE_CACHE_SLOTS 16384

/* sym.name: an offset into the owner's string pool until the symbol is first looked up, then
 * NAME_INTERNED | the id of its interned (demangled) name. */
#define NAME_INTERNED 0x80000000u

/* A function symbol of a file or of the kernel: 16 bytes, sorted by addr, no overlaps at
 * the same address (one symbol per address, chosen as perf does). */
struct sym {
	__u64 addr; /* ELF virtual address; kernel: the address */
	__u32 size; /* bytes covered: st_size, or up to the next symbol when it has none */
	__u32 name;
};

/* A PT_LOAD segment: file offsets [offset, offset + filesz) are loaded at vaddr. */
struct seg {
	__u64 offset, filesz, vaddr;
};

enum objfile_state { OBJFILE_NEW, OBJFILE_LOADED, OBJFILE_FAILED };

/* An ELF file mapped by some process, shared by all of them: key (dev, ino), or path when
 * there is no inode ([vdso]). */
struct objfile {
	struct objfile *next; /* hash chain */
	struct objfile *lru_prev, *lru_next; /* on the unused list while refs == 0 */
	__u64 dev, ino;
	__u64 failed_ns; /* OBJFILE_FAILED: when; tried again FILE_RETRY_NS later */
	unsigned int refs; /* mappings that point here */
	enum objfile_state state;
	bool vdso;
	/* Its CFI for the unwinder: loaded on the first frame that needs it, on the CFI list
	 * (most recently used last) while loaded, dropped first past cfi_bytes_max. */
	struct cfi_file *cfi;
	struct objfile *cfi_prev, *cfi_next;
	__u64 cfi_failed_ns; /* the last load failed then: tried again FILE_RETRY_NS later */
	__u64 serial; /* unique for the symbolizer's life: the rule cache's key, never reused */
	__u32 module_name; /* the interned "[basename]" + 1; 0 until a frame needs it */
	struct seg *segs;
	struct sym *syms;
	char *strs; /* the symbols' names, NUL-terminated, back to back */
	__u32 n_segs, n_syms;
	size_t strs_len;
	char path[]; /* as /proc/PID/maps showed it first, without " (deleted)" */
};

struct mapping {
	__u64 start, end, pgoff;
	struct objfile *file; /* NULL: nothing to name (anonymous, JIT, [vsyscall]) */
};

struct proc {
	struct proc *next; /* hash chain */
	__u32 pid;
	__u32 n_maps;
	struct mapping *maps; /* executable mappings, sorted by start */
	__u64 read_ns; /* when maps were last read; 0: never, or dropped by exec */
	/* What the process reported of itself (symbolizer__module), sorted by start: asked
	 * only where maps have nothing, so a process gone before its maps were read still
	 * resolves. Kept across a failed re-read; dropped by an exec later than the newest. */
	struct mapping *mods;
	__u32 n_mods;
	__u64 mods_ts;
	__u64 used; /* stats.frames at its last frame: the eviction order at PROCS_MAX */
};

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

/* Interned names: text -> id (open addressing over ids) and id -> text. Id 0 is
 * "[unknown]". Texts live in arena blocks and never move or go until symbolizer__free. */
struct names {
	const char **text; /* by id */
	__u32 *hash; /* by id */
	__u32 n, cap;
	__u32 *slots; /* id + 1; 0 empty */
	__u32 mask;
	struct arena_block *arena;
	size_t bytes;
};

struct kernel {
	struct sym *syms;
	char *strs;
	__u32 n_syms;
	size_t strs_len;
	bool loaded; /* tried: kallsyms is read once */
	bool hidden;
};

/* A cached cfi__find answer for (serial, vaddr): err 0 and its rule, or the error. */
struct rule_slot {
	__u64 serial; /* 0: empty */
	__u64 vaddr;
	struct cfi_rule rule;
	int err;
};

struct symbolizer {
	struct proc **procs;
	__u32 proc_mask, n_procs;
	struct proc *last; /* the process of the last frame: a stack's frames share it */
	struct objfile **files;
	__u32 file_mask, n_files, n_loaded;
	struct objfile *unused_head, *unused_tail; /* refs == 0, least recently released first */
	__u32 n_unused;
	struct names names;
	struct kernel kernel;
	char *buf; /* maps read buffer */
	size_t buf_cap;
	struct objfile *cfi_head, *cfi_tail; /* files with CFI loaded, least recently used first */
	__u64 cfi_bytes, cfi_bytes_max, next_serial;
	struct rule_slot *rules; /* RULE_CACHE_SLOTS, allocated on the first rule lookup */
	struct symbolizer_stats st;
};

/* A symbol while a table is built: what choosing among aliases needs. */
struct tmp_sym {
	__u64 addr, size;
	__u32 name;
	__u8 bind;
};

struct tmp_table {
	struct tmp_sym *v;
	size_t n, cap;
	char *strs;
	size_t strs_len, strs_cap;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* Places names and files in table slots only: the low 32 bits of the one FNV-1a do. */
static __u32 hash_str(const char *s, size_t len)
{
	return (__u32)xpu_hash_bytes(s, len);
}

/* Names */

static char *arena_alloc(struct names *nm, size_t len)
{
	struct arena_block *b = nm->arena;
	char *p;

	if (!b || b->size - b->used < len) {
		size_t size = len > ARENA_BLOCK ? len : ARENA_BLOCK;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = nm->arena;
		nm->arena = b;
		nm->bytes += sizeof(*b) + size;
	}
	p = b->data + b->used;
	b->used += len;
	return p;
}

static int names_grow(struct names *nm)
{
	__u32 cap = nm->cap ? nm->cap * 2 : 1024, mask = 2 * cap - 1, i, j;
	const char **text = realloc(nm->text, cap * sizeof(*text));
	__u32 *hash, *slots;

	if (!text)
		return -ENOMEM;
	nm->text = text;
	hash = realloc(nm->hash, cap * sizeof(*hash));
	if (!hash)
		return -ENOMEM;
	nm->hash = hash;
	slots = calloc((size_t)mask + 1, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < nm->n; i++) {
		for (j = nm->hash[i] & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = i + 1;
	}
	free(nm->slots);
	nm->slots = slots;
	nm->mask = mask;
	nm->cap = cap;
	return 0;
}

/* The id of text, interned now if new; -ENOMEM. The table is at most half full. */
static int names_intern(struct names *nm, const char *text)
{
	/* The wire carries names of at most XPU_WIRE_FRAME_NAME_MAX bytes; a longer one (deep
	 * C++ templates) is cut here, so the same cut text is one name. */
	size_t len = strnlen(text, SYMBOLIZER_NAME_MAX);
	__u32 h = hash_str(text, len), i, id;
	char *copy;

	if (nm->n == nm->cap && names_grow(nm))
		return -ENOMEM;
	for (i = h & nm->mask; nm->slots[i]; i = (i + 1) & nm->mask) {
		id = nm->slots[i] - 1;
		if (nm->hash[id] == h && !strncmp(nm->text[id], text, len) && !nm->text[id][len])
			return (int)id;
	}
	if (nm->n >= NAME_INTERNED - 1)
		return -ENOMEM;
	copy = arena_alloc(nm, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	id = nm->n++;
	nm->text[id] = copy;
	nm->hash[id] = h;
	nm->slots[i] = id + 1;
	return (int)id;
}

static void names_free(struct names *nm)
{
	struct arena_block *b, *next;

	for (b = nm->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	free(nm->text);
	free(nm->hash);
	free(nm->slots);
}

static const char *unknown(struct symbolizer *s)
{
	s->st.unknown++;
	return s->names.text[0];
}

/* The first lookup of a symbol: demangle, intern, and remember the id in the symbol itself,
 * so that the next lookup is one load. */
static const char *sym_intern(struct symbolizer *s, struct sym *sym, const char *strs)
{
	const char *raw = strs + sym->name;
	char *demangled = NULL;
	int status, id;

	if (raw[0] == '_' && raw[1] == 'Z')
		demangled = __cxa_demangle(raw, NULL, NULL, &status);
	id = names_intern(&s->names, demangled ? demangled : raw);
	free(demangled);
	if (id < 0)
		return unknown(s);
	sym->name = NAME_INTERNED | (__u32)id;
	return s->names.text[id];
}

static const char *sym_name(struct symbolizer *s, struct sym *sym, const char *strs)
{
	if (sym->name & NAME_INTERNED)
		return s->names.text[sym->name & ~NAME_INTERNED];
	return sym_intern(s, sym, strs);
}

/*
 * The symbol that covers addr, or NULL: the last one that starts at or before it, or, when
 * that one ends before addr, one of the few before it that encloses it (hand-written
 * assembly has entry points inside a larger function: libgmp's __gmpn_modexact_1_odd holds
 * __gmpn_modexact_1c_odd). The walk back is bounded and only taken on a miss.
 */
static struct sym *syms_find(struct sym *v, __u32 n, __u64 addr)
{
	__u32 lo = 0, hi = n, mid, i;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i > 0 && lo - i < ENCLOSING_MAX; i--)
		if (addr - v[i - 1].addr < v[i - 1].size)
			return &v[i - 1];
	return NULL;
}

/* Symbol tables (files and kernel) */

static int tmp_add(struct tmp_table *t, __u64 addr, __u64 size, __u8 bind, const char *name,
		   size_t len)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct tmp_sym *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if (t->strs_cap - t->strs_len < len + 1) {
		size_t cap = t->strs_cap ? 2 * t->strs_cap : 16384;
		char *strs;

		while (cap - t->strs_len < len + 1)
			cap *= 2;
		strs = realloc(t->strs, cap);
		if (!strs)
			return -ENOMEM;
		t->strs = strs;
		t->strs_cap = cap;
	}
	if (t->strs_len + len + 1 >= NAME_INTERNED)
		return -E2BIG;
	memcpy(t->strs + t->strs_len, name, len);
	t->strs[t->strs_len + len] = '\0';
	t->v[t->n++] = (struct tmp_sym){
		.addr = addr, .size = size, .name = (__u32)t->strs_len, .bind = bind
	};
	t->strs_len += len + 1;
	return 0;
}

static int tmp_cmp_addr(const void *a, const void *b)
{
	const struct tmp_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->name > y->name) - (x->name < y->name); /* deterministic among aliases */
}

static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Whether a should name the address rather than its alias b: perf's choose_best_symbol, so
 * that our names are perf's (sized, then strong, then global, then fewer leading
 * underscores, then the longer name). */
static bool sym_better(const struct tmp_sym *a, const struct tmp_sym *b, const char *strs)
{
	const char *na = strs + a->name, *nb = strs + b->name;
	size_t la, lb;

	if (!a->size != !b->size)
		return a->size;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	la = underscores(na);
	lb = underscores(nb);
	if (la != lb)
		return la < lb;
	return strlen(na) > strlen(nb);
}

/* Sort t, keep one symbol per address, give unsized symbols the room up to the next one; the
 * result in *syms (t->strs moves to *strs). 0 or -ENOMEM; t is freed either way. */
static int tmp_finish(struct tmp_table *t, struct sym **syms, __u32 *n_syms, char **strs,
		      size_t *strs_len)
{
	struct sym *v = NULL;
	size_t i, j, n = 0;
	__u64 size;

	if (t->n > UINT32_MAX) {
		free(t->v);
		free(t->strs);
		return -E2BIG;
	}
	if (t->n) {
		qsort(t->v, t->n, sizeof(*t->v), tmp_cmp_addr);
		v = malloc(t->n * sizeof(*v));
		if (!v) {
			free(t->v);
			free(t->strs);
			return -ENOMEM;
		}
	}
	for (i = 0; i < t->n; i = j) {
		const struct tmp_sym *best = &t->v[i];

		for (j = i + 1; j < t->n && t->v[j].addr == t->v[i].addr; j++)
			if (sym_better(&t->v[j], best, t->strs))
				best = &t->v[j];
		size = best->size;
		if (!size)
			size = j < t->n ? t->v[j].addr - best->addr : LAST_SYM_SIZE;
		v[n++] = (struct sym){ .addr = best->addr,
				       .size = size > UINT32_MAX ? UINT32_MAX : (__u32)size,
				       .name = best->name };
	}
	free(t->v);
	if (n && n < t->n) {
		struct sym *shrunk = realloc(v, n * sizeof(*v));

		if (shrunk)
			v = shrunk;
	}
	*syms = v;
	*n_syms = (__u32)n;
	*strs = t->strs;
	*strs_len = t->strs_len;
	return 0;
}

/* Files */

static __u32 objfile_hash(__u64 dev, __u64 ino, const char *path)
{
	if (ino)
		return (__u32)((dev * 0x9e3779b97f4a7c15ull ^ ino * 0xc2b2ae3d27d4eb4full) >> 32);
	return hash_str(path, strlen(path));
}

static struct objfile *objfile_find(struct symbolizer *s, __u64 dev, __u64 ino, const char *path)
{
	struct objfile *f = s->files[objfile_hash(dev, ino, path) & s->file_mask];

	for (; f; f = f->next)
		if (f->dev == dev && f->ino == ino && (ino || !strcmp(f->path, path)))
			return f;
	return NULL;
}

static int files_grow(struct symbolizer *s)
{
	__u32 mask = 2 * s->file_mask + 1, i;
	struct objfile **files = calloc((size_t)mask + 1, sizeof(*files)), *f, *next;

	if (!files)
		return -ENOMEM;
	for (i = 0; i <= s->file_mask; i++) {
		for (f = s->files[i]; f; f = next) {
			__u32 h = objfile_hash(f->dev, f->ino, f->path) & mask;

			next = f->next;
			f->next = files[h];
			files[h] = f;
		}
	}
	free(s->files);
	s->files = files;
	s->file_mask = mask;
	return 0;
}

static void unused_unlink(struct symbolizer *s, struct objfile *f)
{
	if (f->lru_prev)
		f->lru_prev->lru_next = f->lru_next;
	else
		s->unused_head = f->lru_next;
	if (f->lru_next)
		f->lru_next->lru_prev = f->lru_prev;
	else
		s->unused_tail = f->lru_prev;
	f->lru_prev = f->lru_next = NULL;
	s->n_unused--;
}

static void cfi_drop(struct symbolizer *s, struct objfile *f)
{
	if (!f->cfi)
		return;
	if (f->cfi_prev)
		f->cfi_prev->cfi_next = f->cfi_next;
	else
		s->cfi_head = f->cfi_next;
	if (f->cfi_next)
		f->cfi_next->cfi_prev = f->cfi_prev;
	else
		s->cfi_tail = f->cfi_prev;
	f->cfi_prev = f->cfi_next = NULL;
	s->cfi_bytes -= cfi_file__bytes(f->cfi);
	s->st.cfi_files--;
	cfi_file__free(f->cfi);
	f->cfi = NULL;
}

static void objfile_unload(struct symbolizer *s, struct objfile *f)
{
	cfi_drop(s, f);
	if (f->state == OBJFILE_LOADED)
		s->n_loaded--;
	free(f->segs);
	free(f->syms);
	free(f->strs);
	f->segs = NULL;
	f->syms = NULL;
	f->strs = NULL;
	f->n_segs = f->n_syms = 0;
	f->strs_len = 0;
	f->state = OBJFILE_NEW;
}

/* Remove f (refs == 0, on the unused list) from the cache. Names it handed out stay. */
static void objfile_free(struct symbolizer *s, struct objfile *f)
{
	struct objfile **pp = &s->files[objfile_hash(f->dev, f->ino, f->path) & s->file_mask];

	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	s->n_files--;
	unused_unlink(s, f);
	objfile_unload(s, f);
	free(f);
}

/* The file for a mapping, with one more reference; NULL and -ENOMEM in *err. */
static struct objfile *objfile_get(struct symbolizer *s, __u64 dev, __u64 ino, const char *path,
				   int *err)
{
	struct objfile *f = objfile_find(s, dev, ino, path);
	size_t len;
	__u32 h;

	if (f) {
		if (!f->refs++)
			unused_unlink(s, f);
		return f;
	}
	if (s->n_files > s->file_mask && files_grow(s)) {
		*err = -ENOMEM;
		return NULL;
	}
	len = strlen(path);
	f = calloc(1, sizeof(*f) + len + 1);
	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->dev = dev;
	f->ino = ino;
	f->refs = 1;
	f->serial = ++s->next_serial;
	f->vdso = !strcmp(path, "[vdso]");
	memcpy(f->path, path, len + 1);
	h = objfile_hash(dev, ino, path) & s->file_mask;
	f->next = s->files[h];
	s->files[h] = f;
	s->n_files++;
	return f;
}

/* One reference fewer; a file nobody maps joins the unused list, whose oldest are freed. */
static void objfile_put(struct symbolizer *s, struct objfile *f)
{
	if (!f || --f->refs)
		return;
	f->lru_prev = s->unused_tail;
	f->lru_next = NULL;
	if (s->unused_tail)
		s->unused_tail->lru_next = f;
	else
		s->unused_head = f;
	s->unused_tail = f;
	s->n_unused++;
	if (s->n_unused > UNUSED_FILES_MAX)
		objfile_free(s, s->unused_head);
}

/* Our own vdso image in a memfd: the same kernel gives every 64-bit process the same one. */
static int vdso_open(void)
{
	const unsigned char *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Phdr *ph;
	size_t size, end, i;
	ssize_t done;
	int fd, err;

	if (!img || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOENT;
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	ph = (const void *)(img + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		end = ph[i].p_offset + ph[i].p_filesz;
		if (end > size)
			size = end;
	}
	fd = memfd_create("xpusup-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	done = write(fd, img, size);
	if (done != (ssize_t)size) {
		err = done < 0 ? -errno : -EIO;
		close(fd);
		return err;
	}
	return fd;
}

/* Whether fd is the file (dev, ino) of the mapping: a path read from our mount namespace, or
 * after the process has gone, may name another file. */
static bool fd_is(int fd, const struct objfile *f)
{
	struct stat st;

	if (fstat(fd, &st))
		return false;
	return !f->ino || (st.st_dev == f->dev && st.st_ino == f->ino);
}

/*
 * An fd for f's contents, as process pid mapped it at m: through /proc/PID/map_files (the
 * mapping itself: deleted files, other mount namespaces; while the process lives; root),
 * /proc/PID/root/PATH (another mount namespace, while it lives), then PATH as we see it;
 * the last two only when they name the mapping's device and inode. -errno when none.
 */
static int objfile_open(const struct objfile *f, __u32 pid, const struct mapping *m)
{
	char path[64 + PATH_MAX];
	int fd;

	if (f->vdso)
		return vdso_open();
	if (f->path[0] != '/')
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%u/root%s", pid, f->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (fd_is(fd, f))
			return fd;
		close(fd);
	}
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fd_is(fd, f))
		return fd;
	close(fd);
	return -ESTALE;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	/* The file's own .symtab, else separate debug info by build id or .gnu_debuglink
	 * (next to the file, in .debug/, in /usr/lib/debug), else .dynsym plus
	 * .gnu_debugdata. */
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static int segs_load(struct objfile *f, Elf *elf)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n) || !n)
		return -ENOEXEC;
	f->segs = calloc(n, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->n_segs++] = (struct seg){ .offset = ph.p_offset,
						     .filesz = ph.p_filesz,
						     .vaddr = ph.p_vaddr };
	}
	return f->n_segs ? 0 : -ENOEXEC;
}

/* Load f's segments and function symbols from fd (consumed). 0 or -errno. */
static int objfile_load_fd(struct objfile *f, int fd)
{
	struct tmp_table t = { 0 };
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	GElf_Addr addr;
	GElf_Word shndx;
	GElf_Sym sym;
	int i, n, type, err;
	const char *name;
	Dwfl *dwfl;
	Elf *elf;

	dwfl = dwfl_begin(&dwfl_callbacks);
	if (!dwfl) {
		close(fd);
		return -ENOMEM;
	}
	dwfl_report_begin(dwfl);
	/* base 0, add_p_vaddr: a shared object lies at its own p_vaddr (bias 0), so addresses
	 * here are ELF virtual addresses, those the segments translate file offsets to. The
	 * file name (not the fd's /proc path) is where .gnu_debuglink looks. */
	mod = dwfl_report_elf(dwfl, f->path, f->path, fd, 0, true);
	if (!mod) {
		close(fd); /* not consumed on failure */
		err = -ENOEXEC;
		goto end_dwfl;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	elf = dwfl_module_getelf(mod, &bias);
	if (!elf) {
		err = -ENOEXEC;
		goto end_dwfl;
	}
	err = segs_load(f, elf);
	if (err)
		goto end_dwfl;
	n = dwfl_module_getsymtab(mod);
	for (i = 1; i < n; i++) {
		name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
		type = GELF_ST_TYPE(sym.st_info);
		if (!name || !*name || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		err = tmp_add(&t, addr - bias, sym.st_size, GELF_ST_BIND(sym.st_info), name,
			      strlen(name));
		if (err)
			goto free_tmp;
	}
	err = tmp_finish(&t, &f->syms, &f->n_syms, &f->strs, &f->strs_len);
	goto end_dwfl;
free_tmp:
	free(t.v);
	free(t.strs);
end_dwfl:
	dwfl_end(dwfl); /* closes fd when reported */
	return err;
}

/* Load f's symbols, reading it as process pid mapped it at m. 0 or -errno; a failure is
 * counted and not tried again for FILE_RETRY_NS. */
static int objfile_load(struct symbolizer *s, struct objfile *f, __u32 pid, const struct mapping *m,
			__u64 now)
{
	int fd, err;

	if (f->state == OBJFILE_LOADED)
		return 0;
	if (f->state == OBJFILE_FAILED && now - f->failed_ns < FILE_RETRY_NS)
		return -EAGAIN;
	fd = objfile_open(f, pid, m);
	err = fd < 0 ? fd : objfile_load_fd(f, fd);
	if (err) {
		objfile_unload(s, f);
		f->state = OBJFILE_FAILED;
		f->failed_ns = now;
		s->st.files_failed++;
		return err;
	}
	f->state = OBJFILE_LOADED;
	s->n_loaded++;
	s->st.files_loaded++;
	return 0;
}

/* The ELF virtual address at file offset off, through the PT_LOAD segment that holds it. */
static bool objfile_vaddr(const struct objfile *f, __u64 off, __u64 *vaddr)
{
	__u32 i;

	for (i = 0; i < f->n_segs; i++) {
		if (off >= f->segs[i].offset && off - f->segs[i].offset < f->segs[i].filesz) {
			*vaddr = off - f->segs[i].offset + f->segs[i].vaddr;
			return true;
		}
	}
	return false;
}

/* Processes */

static __u32 pid_hash(__u32 pid)
{
	return pid * 0x9e3779b1u;
}

static struct proc *proc_find(struct symbolizer *s, __u32 pid)
{
	struct proc *p;

	if (s->last && s->last->pid == pid)
		return s->last;
	for (p = s->procs[pid_hash(pid) & s->proc_mask]; p; p = p->next)
		if (p->pid == pid)
			return s->last = p;
	return NULL;
}

static void proc_drop_maps(struct symbolizer *s, struct proc *p)
{
	__u32 i;

	for (i = 0; i < p->n_maps; i++)
		objfile_put(s, p->maps[i].file);
	free(p->maps);
	p->maps = NULL;
	p->n_maps = 0;
}

static void proc_drop_mods(struct symbolizer *s, struct proc *p)
{
	__u32 i;

	for (i = 0; i < p->n_mods; i++)
		objfile_put(s, p->mods[i].file);
	free(p->mods);
	p->mods = NULL;
	p->n_mods = 0;
	p->mods_ts = 0;
}

static void proc_remove(struct symbolizer *s, struct proc *p)
{
	struct proc **pp = &s->procs[pid_hash(p->pid) & s->proc_mask];

	while (*pp != p)
		pp = &(*pp)->next;
	*pp = p->next;
	if (s->last == p)
		s->last = NULL;
	s->n_procs--;
	proc_drop_maps(s, p);
	proc_drop_mods(s, p);
	free(p);
}

static int procs_grow(struct symbolizer *s)
{
	__u32 mask = 2 * s->proc_mask + 1, i;
	struct proc **procs = calloc((size_t)mask + 1, sizeof(*procs)), *p, *next;

	if (!procs)
		return -ENOMEM;
	for (i = 0; i <= s->proc_mask; i++) {
		for (p = s->procs[i]; p; p = next) {
			next = p->next;
			p->next = procs[pid_hash(p->pid) & mask];
			procs[pid_hash(p->pid) & mask] = p;
		}
	}
	free(s->procs);
	s->procs = procs;
	s->proc_mask = mask;
	return 0;
}

/* At PROCS_MAX: forget the process whose last frame is the oldest (a missed exit, most
 * likely). A scan, but only when a new process arrives at the limit. */
static void procs_evict(struct symbolizer *s)
{
	struct proc *p, *oldest = NULL;
	__u32 i;

	for (i = 0; i <= s->proc_mask; i++)
		for (p = s->procs[i]; p; p = p->next)
			if (!oldest || p->used < oldest->used)
				oldest = p;
	if (oldest)
		proc_remove(s, oldest);
}

static struct proc *proc_get(struct symbolizer *s, __u32 pid)
{
	struct proc *p = proc_find(s, pid);
	__u32 h;

	if (p)
		return p;
	if (s->n_procs >= PROCS_MAX)
		procs_evict(s);
	if (s->n_procs > s->proc_mask && procs_grow(s))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->used = s->st.frames;
	h = pid_hash(pid) & s->proc_mask;
	p->next = s->procs[h];
	s->procs[h] = p;
	s->n_procs++;
	return s->last = p;
}

/* All of path into s->buf, NUL-terminated; its length in *len. 0 or -errno. */
static int read_all(struct symbolizer *s, const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	size_t n = 0;
	ssize_t got;

	if (fd < 0)
		return -errno;
	for (;;) {
		if (s->buf_cap - n < 4096) {
			size_t cap = s->buf_cap ? 2 * s->buf_cap : 65536;
			char *buf = realloc(s->buf, cap);

			if (!buf) {
				err = -ENOMEM;
				break;
			}
			s->buf = buf;
			s->buf_cap = cap;
		}
		got = read(fd, s->buf + n, s->buf_cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!err) {
		s->buf[n] = '\0';
		*len = n;
	}
	return err;
}

static bool ends_with(const char *s, size_t len, const char *suffix, size_t n)
{
	return len >= n && !memcmp(s + len - n, suffix, n);
}

/*
 * One line of /proc/PID/maps ("start-end perms offset major:minor inode   path"), when it
 * is executable, into *m (with a reference on its file). Returns 1 for a mapping, 0 for a
 * line to skip, -ENOMEM.
 */
static int maps_parse_line(struct symbolizer *s, char *line, struct mapping *m)
{
	unsigned long long start, end, pgoff, major, minor, ino;
	char *p = line, *e, *path;
	size_t len;
	int err = 0;

	start = strtoull(p, &e, 16);
	if (*e != '-')
		return 0;
	end = strtoull(e + 1, &e, 16);
	if (*e != ' ' || strlen(e) < 5 || e[3] != 'x')
		return 0;
	pgoff = strtoull(e + 5, &e, 16);
	major = strtoull(e, &e, 16);
	if (*e != ':')
		return 0;
	minor = strtoull(e + 1, &e, 16);
	ino = strtoull(e, &e, 10);
	path = e + strspn(e, " ");
	len = strlen(path);
	if (ends_with(path, len, " (deleted)", 10)) {
		len -= 10;
		path[len] = '\0';
	}
	*m = (struct mapping){ .start = start, .end = end, .pgoff = pgoff };
	if (path[0] == '/' || !strcmp(path, "[vdso]")) {
		m->file = objfile_get(s, makedev((unsigned int)major, (unsigned int)minor), ino,
				      path, &err);
		if (!m->file)
			return err;
	}
	return 1;
}

/* Read /proc/PID/maps into p->maps. On failure p keeps the maps it had. 0 or -errno. */
static int proc_read_maps(struct symbolizer *s, struct proc *p, __u64 now)
{
	struct mapping *maps = NULL, *grown;
	__u32 n = 0, cap = 0, old_n;
	char path[32], *line, *eol;
	size_t len;
	int err;

	s->st.maps_reads++;
	p->read_ns = now ? now : 1;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	err = read_all(s, path, &len);
	if (err) {
		s->st.maps_missing++;
		return err;
	}
	for (line = s->buf; *line; line = eol) {
		eol = strchr(line, '\n');
		if (eol)
			*eol++ = '\0';
		else
			eol = line + strlen(line);
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			grown = realloc(maps, cap * sizeof(*maps));
			if (!grown) {
				err = -ENOMEM;
				goto put_maps;
			}
			maps = grown;
		}
		err = maps_parse_line(s, line, &maps[n]);
		if (err < 0)
			goto put_maps;
		n += (__u32)err;
	}
	if (s->buf_cap > MAPS_BUF_KEEP) {
		free(s->buf);
		s->buf = NULL;
		s->buf_cap = 0;
	}
	/* A process that has exited but is not reaped yet (a zombie) has a maps file with
	 * nothing in it: that is a process gone, not one without code; keep what was read. */
	if (!n) {
		s->st.maps_missing++;
		free(maps);
		return -ESRCH;
	}
	/* The new maps hold their references before the old ones drop theirs: a file in both
	 * never reaches the unused list. */
	old_n = p->n_maps;
	p->n_maps = 0;
	while (old_n--)
		objfile_put(s, p->maps[old_n].file);
	free(p->maps);
	p->maps = maps;
	p->n_maps = n;
	return 0;
put_maps:
	while (n--)
		objfile_put(s, maps[n].file);
	free(maps);
	return err;
}

/* The first of maps[0..n) (sorted by start) that starts after ip. */
static __u32 maps_upper(const struct mapping *maps, __u32 n, __u64 ip)
{
	__u32 lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (maps[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The one of maps[0..n) that holds ip, or NULL. */
static struct mapping *maps_find(struct mapping *maps, __u32 n, __u64 ip)
{
	__u32 i = maps_upper(maps, n, ip);

	return i && ip < maps[i - 1].end ? &maps[i - 1] : NULL;
}

/* Lookups */

/* The loaded file that process pid maps at ip, and ip as that file's ELF virtual address; NULL
 * when there is none (no mapping even after a re-read, anonymous memory, a file that cannot
 * be loaded). */
static struct objfile *user_file(struct symbolizer *s, __u32 pid, __u64 ip, __u64 now, __u64 *vaddr,
				 struct mapping **map)
{
	struct proc *p = proc_get(s, pid);
	struct mapping *m;
	struct objfile *f;

	if (!p)
		return NULL;
	p->used = s->st.frames;
	m = maps_find(p->maps, p->n_maps, ip);
	if (!m && (m = maps_find(p->mods, p->n_mods, ip)))
		s->st.module_frames++; /* what the process reported: no re-read of its maps */
	if (!m) {
		if (p->read_ns && now - p->read_ns < MAPS_REREAD_NS) {
			s->st.maps_throttled++;
			return NULL;
		}
		proc_read_maps(s, p, now);
		m = maps_find(p->maps, p->n_maps, ip);
		if (!m)
			return NULL;
	}
	f = m->file;
	if (!f || (f->state != OBJFILE_LOADED && objfile_load(s, f, p->pid, m, now)))
		return NULL;
	if (!objfile_vaddr(f, ip - m->start + m->pgoff, vaddr))
		return NULL;
	*map = m;
	return f;
}

/*
 * A frame inside a file that has no symbol for it (a static function of a stripped program:
 * Debian's python3.11 keeps only .dynsym) is named after the file, "[python3.11]", as perf
 * does: where the time went, to the module, rather than "[unknown]", which stays for
 * addresses no file is mapped at.
 */
static const char *module_name(struct symbolizer *s, struct objfile *f)
{
	char buf[SYMBOLIZER_NAME_MAX];
	const char *base = strrchr(f->path, '/');
	int id;

	s->st.module_named++;
	if (f->module_name)
		return s->names.text[f->module_name - 1];
	base = base ? base + 1 : f->path;
	snprintf(buf, sizeof(buf), "[%s]", base);
	id = names_intern(&s->names, buf);
	if (id < 0)
		return unknown(s);
	f->module_name = (__u32)id + 1;
	return s->names.text[id];
}

static const char *user_name(struct symbolizer *s, __u32 pid, __u64 ip, __u64 now)
{
	struct mapping *m;
	struct objfile *f;
	struct sym *sym;
	__u64 vaddr;

	f = user_file(s, pid, ip, now, &vaddr, &m);
	if (!f)
		return unknown(s);
	sym = syms_find(f->syms, f->n_syms, vaddr);
	if (!sym)
		return module_name(s, f);
	return sym_name(s, sym, f->strs);
}

/* Read the text symbols of /proc/kallsyms ("address type name\t[module]"). A module's
 * symbols keep their bare name, as perf's folded output shows them. */
static void kernel_load(struct symbolizer *s)
{
	struct kernel *k = &s->kernel;
	struct tmp_table t = { 0 };
	bool any_address = false;
	char line[1024], *p, *e;
	unsigned long long addr;
	__u8 bind;
	FILE *f;

	k->loaded = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		addr = strtoull(line, &p, 16);
		if (p == line || p[0] != ' ' || !p[1] || p[2] != ' ')
			continue;
		switch (p[1]) {
		case 'T':
			bind = STB_GLOBAL;
			break;
		case 't':
			bind = STB_LOCAL;
			break;
		case 'W':
		case 'w':
			bind = STB_WEAK;
			break;
		default:
			continue;
		}
		p += 3;
		e = p + strcspn(p, "\t \n");
		if (e == p)
			continue;
		any_address |= addr != 0;
		if (tmp_add(&t, addr, 0, bind, p, (size_t)(e - p)))
			goto free_tmp;
	}
	fclose(f);
	if (!any_address) {
		k->hidden = true;
		free(t.v);
		free(t.strs);
		return;
	}
	tmp_finish(&t, &k->syms, &k->n_syms, &k->strs, &k->strs_len);
	return;
free_tmp:
	fclose(f);
	free(t.v);
	free(t.strs);
}

static const char *kernel_name(struct symbolizer *s, __u64 ip)
{
	struct sym *sym;

	s->st.kernel_frames++;
	if (!s->kernel.loaded)
		kernel_load(s);
	sym = syms_find(s->kernel.syms, s->kernel.n_syms, ip);
	if (!sym)
		return unknown(s);
	return sym_name(s, sym, s->kernel.strs);
}

/* API */

struct symbolizer *symbolizer__new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		goto fail;
	s->proc_mask = 255;
	s->procs = calloc((size_t)s->proc_mask + 1, sizeof(*s->procs));
	if (!s->procs)
		goto free_s;
	s->cfi_bytes_max = SYMBOLIZER_CFI_BYTES_MAX;
	s->file_mask = 255;
	s->files = calloc((size_t)s->file_mask + 1, sizeof(*s->files));
	if (!s->files)
		goto free_procs;
	if (names_intern(&s->names, SYMBOLIZER_UNKNOWN) != 0)
		goto free_names;
	return s;
free_names:
	names_free(&s->names);
	free(s->files);
free_procs:
	free(s->procs);
free_s:
	free(s);
fail:
	errno = ENOMEM;
	return NULL;
}

void symbolizer__free(struct symbolizer *s)
{
	struct objfile *f, *next;
	__u32 i;

	if (!s)
		return;
	for (i = 0; i <= s->proc_mask; i++)
		while (s->procs[i])
			proc_remove(s, s->procs[i]);
	/* Every file is unused now. */
	for (f = s->unused_head; f; f = next) {
		next = f->lru_next;
		objfile_free(s, f);
	}
	free(s->procs);
	free(s->files);
	free(s->kernel.syms);
	free(s->kernel.strs);
	names_free(&s->names);
	free(s->buf);
	free(s->rules);
	free(s);
}

const char *symbolizer__name(struct symbolizer *s, __u32 pid, __u64 ip, bool kernel)
{
	__u64 t0 = now_ns();
	const char *name;

	s->st.frames++;
	name = kernel ? kernel_name(s, ip) : user_name(s, pid, ip, t0);
	s->st.resolve_ns += now_ns() - t0;
	return name;
}

void symbolizer__stack(struct symbolizer *s, __u32 pid, const __u64 *ips, __u32 n_kernel,
		       __u32 n_user, const char **names)
{
	__u64 t0 = now_ns();
	__u32 i;

	for (i = 0; i < n_kernel + n_user; i++) {
		s->st.frames++;
		names[i] = i < n_kernel ? kernel_name(s, ips[i]) : user_name(s, pid, ips[i], t0);
	}
	s->st.resolve_ns += now_ns() - t0;
}

/* Whether f can still be read through its path once the process is gone. */
static bool path_reachable(const struct objfile *f)
{
	struct stat st;

	if (f->vdso)
		return true;
	if (stat(f->path, &st))
		return false;
	return !f->ino || (st.st_dev == f->dev && st.st_ino == f->ino);
}

int symbolizer__capture(struct symbolizer *s, __u32 pid)
{
	__u64 now = now_ns();
	struct proc *p = proc_get(s, pid);
	struct objfile *f;
	__u32 i;
	int err;

	if (!p)
		return -ENOMEM;
	p->used = s->st.frames;
	err = proc_read_maps(s, p, now);
	if (err)
		return err;
	for (i = 0; i < p->n_maps; i++) {
		f = p->maps[i].file;
		if (f && f->state == OBJFILE_NEW && !path_reachable(f))
			objfile_load(s, f, pid, &p->maps[i], now); /* failures are counted */
	}
	return 0;
}

void symbolizer__exec(struct symbolizer *s, __u32 pid, __u64 ts_ns)
{
	struct proc *p = proc_find(s, pid);

	if (!p)
		return;
	proc_drop_maps(s, p);
	p->read_ns = 0;
	/* An exec reported after the modules (another source's ring may deliver it late)
	 * replaced the image they describe; one from before them did not. */
	if (ts_ns >= p->mods_ts)
		proc_drop_mods(s, p);
}

/*
 * A file reported mapped at [start, end) where the maps read before the mapping show another
 * file, or nothing to name: they are stale there (dlclose, then a dlopen at the same address), and
 * would answer first (user_file). Those entries go, so that the report answers for the range;
 * what an entry had outside it goes too, and a frame there reads the maps again (at most
 * every 100 ms).
 */
static void maps_supersede(struct symbolizer *s, struct proc *p, __u64 start, __u64 end, __u64 dev,
			   __u64 ino)
{
	__u32 i, k = 0;

	for (i = 0; i < p->n_maps; i++) {
		struct mapping *m = &p->maps[i];

		if (m->start < end && start < m->end &&
		    !(m->file && m->file->dev == dev && m->file->ino == ino)) {
			objfile_put(s, m->file);
			s->st.maps_superseded++;
			continue;
		}
		p->maps[k++] = *m;
	}
	p->n_maps = k;
}

int symbolizer__module(struct symbolizer *s, __u32 pid, __u64 ts_ns, __u64 start, __u64 end,
		       __u64 pgoff, __u64 dev, __u64 ino, const char *path)
{
	struct proc *p = proc_get(s, pid);
	struct mapping *m, *grown;
	struct objfile *f;
	__u32 i;
	int err = -EINVAL;

	if (!p)
		return -ENOMEM;
	if (start >= end || !xpu_module__path_ok(path, (__u32)strnlen(path, XPU_PATH_MAX + 1)))
		return -EINVAL;
	if (ts_ns > p->mods_ts)
		p->mods_ts = ts_ns;
	i = maps_upper(p->mods, p->n_mods, start);
	/* Reported again (the loader's set changed, a thread raced): the same mapping */
	if (i && p->mods[i - 1].start == start && p->mods[i - 1].end == end &&
	    p->mods[i - 1].pgoff == pgoff && p->mods[i - 1].file &&
	    p->mods[i - 1].file->ino == ino && p->mods[i - 1].file->dev == dev) {
		s->st.modules_known++;
		return 0;
	}
	if (p->n_mods >= SYMBOLIZER_MODULES_MAX) {
		s->st.modules_dropped++;
		return -ENOSPC;
	}
	f = objfile_get(s, dev, ino, path, &err);
	if (!f)
		return err;
	/* An overlapping older mapping was unmapped since (dlclose, then dlopen there) */
	while (i && p->mods[i - 1].end > start) {
		objfile_put(s, p->mods[i - 1].file);
		memmove(&p->mods[i - 1], &p->mods[i], (p->n_mods - i) * sizeof(*m));
		p->n_mods--;
		i--;
	}
	while (i < p->n_mods && p->mods[i].start < end) {
		objfile_put(s, p->mods[i].file);
		memmove(&p->mods[i], &p->mods[i + 1], (p->n_mods - i - 1) * sizeof(*m));
		p->n_mods--;
	}
	grown = realloc(p->mods, (p->n_mods + 1) * sizeof(*m));
	if (!grown) {
		objfile_put(s, f);
		return -ENOMEM;
	}
	p->mods = grown;
	memmove(&p->mods[i + 1], &p->mods[i], (p->n_mods - i) * sizeof(*m));
	p->mods[i] = (struct mapping){ .start = start, .end = end, .pgoff = pgoff, .file = f };
	p->n_mods++;
	s->st.modules++;
	if (ts_ns >= p->read_ns) /* else the maps were read after the mmap: they know better */
		maps_supersede(s, p, start, end, dev, ino);
	return 0;
}

void symbolizer__forget(struct symbolizer *s, __u32 pid)
{
	struct proc *p = proc_find(s, pid);

	if (p)
		proc_remove(s, p);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *out)
{
	const struct objfile *f;
	const struct proc *p;
	size_t bytes;
	__u32 i;

	*out = s->st;
	out->pids = s->n_procs;
	out->files = s->n_loaded;
	out->kernel_symbols = s->kernel.n_syms;
	out->kernel_hidden = s->kernel.hidden;
	out->names = s->names.n;
	bytes = sizeof(*s) + s->buf_cap + s->names.bytes +
		(size_t)s->names.cap * (sizeof(*s->names.text) + sizeof(*s->names.hash)) +
		((size_t)s->names.mask + 1) * sizeof(*s->names.slots) +
		(size_t)s->kernel.n_syms * sizeof(struct sym) + s->kernel.strs_len +
		((size_t)s->proc_mask + 1) * sizeof(*s->procs) +
		((size_t)s->file_mask + 1) * sizeof(*s->files);
	for (i = 0; i <= s->proc_mask; i++)
		for (p = s->procs[i]; p; p = p->next)
			bytes += sizeof(*p) + (size_t)p->n_maps * sizeof(*p->maps);
	for (i = 0; i <= s->file_mask; i++)
		for (f = s->files[i]; f; f = f->next)
			bytes += sizeof(*f) + strlen(f->path) + 1 +
				 (size_t)f->n_segs * sizeof(*f->segs) +
				 (size_t)f->n_syms * sizeof(*f->syms) + f->strs_len;
	out->cfi_bytes = s->cfi_bytes;
	out->bytes = bytes + (s->rules ? RULE_CACHE_SLOTS * sizeof(*s->rules) : 0);
}

/* Load f's CFI (it is loaded: its segments are known) and put it last on the CFI list; drop
 * the least recently used files' CFI while the total is past its bound. 0 or -errno. */
static int cfi_load(struct symbolizer *s, struct objfile *f, __u32 pid, const struct mapping *m,
		    __u64 now)
{
	int fd;

	if (f->cfi_failed_ns && now - f->cfi_failed_ns < FILE_RETRY_NS)
		return -EAGAIN;
	fd = objfile_open(f, pid, m);
	if (fd >= 0) {
		f->cfi = cfi_file__open(fd);
		close(fd);
	}
	if (fd < 0 || !f->cfi) {
		f->cfi_failed_ns = now ? now : 1;
		s->st.cfi_failed++;
		return fd < 0 ? fd : -errno;
	}
	f->cfi_failed_ns = 0;
	s->st.cfi_files++;
	s->st.cfi_loaded++;
	s->cfi_bytes += cfi_file__bytes(f->cfi);
	f->cfi_prev = s->cfi_tail;
	if (s->cfi_tail)
		s->cfi_tail->cfi_next = f;
	else
		s->cfi_head = f;
	s->cfi_tail = f;
	while (s->cfi_bytes > s->cfi_bytes_max && s->cfi_head != f) {
		s->st.cfi_evicted++;
		cfi_drop(s, s->cfi_head);
	}
	return 0;
}

/* f was used: last on the CFI list. */
static void cfi_touch(struct symbolizer *s, struct objfile *f)
{
	if (f == s->cfi_tail)
		return;
	if (f->cfi_prev)
		f->cfi_prev->cfi_next = f->cfi_next;
	else
		s->cfi_head = f->cfi_next;
	f->cfi_next->cfi_prev = f->cfi_prev; /* not the tail: it has a next */
	f->cfi_prev = s->cfi_tail;
	f->cfi_next = NULL;
	s->cfi_tail->cfi_next = f;
	s->cfi_tail = f;
}

static __u32 rule_slot_of(__u64 serial, __u64 vaddr)
{
	__u64 h = (vaddr ^ serial * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;

	return (__u32)(h >> 40) & (RULE_CACHE_SLOTS - 1);
}

int symbolizer__rule(struct symbolizer *s, __u32 pid, __u64 addr, struct cfi_rule *out)
{
	__u64 now = now_ns(), vaddr, bias;
	struct rule_slot *slot;
	struct mapping *m;
	struct objfile *f;
	int err;

	f = user_file(s, pid, addr, now, &vaddr, &m);
	if (!f)
		return -ENOENT;
	if (!s->rules) {
		s->rules = calloc(RULE_CACHE_SLOTS, sizeof(*s->rules));
		if (!s->rules)
			return -ENOMEM;
	}
	bias = addr - vaddr;
	slot = &s->rules[rule_slot_of(f->serial, vaddr)];
	if (slot->serial == f->serial && slot->vaddr == vaddr) {
		s->st.rule_hits++;
		err = slot->err;
	} else {
		if (!f->cfi) {
			err = cfi_load(s, f, pid, m, now);
			if (err)
				return -ENOENT; /* no CFI to be had: the frame pointer may do */
		} else {
			cfi_touch(s, f);
		}
		err = cfi_file__find(f->cfi, vaddr, &slot->rule);
		slot->serial = f->serial;
		slot->vaddr = vaddr;
		slot->err = err;
		s->st.rule_misses++;
	}
	if (err)
		return err;
	*out = slot->rule;
	out->start += bias;
	out->end += bias;
	return 0;
}

void symbolizer__set_cfi_max(struct symbolizer *s, __u64 bytes)
{
	s->cfi_bytes_max = bytes;
}
