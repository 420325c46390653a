/* SPDX-License-Identifier: MIT */
/*
 * Finding the CPython interpreter a process runs, and its layout (docs/python.md, "Finding
 * the interpreter", "Versions and offsets").
 *
 * The interpreter is the file, among the process's executable and the libpython* it maps,
 * that defines _PyRuntime: Debian's python3.11 is a non-PIE executable with the interpreter
 * inside, pyenv's are PIE executables that link libpython3.X.so. Its symbols (.dynsym, else
 * .symtab) give the addresses of _PyRuntime, the eval function and PyCode_Type in the file;
 * the mapping and the file's PT_LOAD segments give the load bias. Py_Version, read from the
 * process, gives the version (the file's name is only used to say which version it is not).
 * The offsets come from _Py_DebugOffsets at the start of _PyRuntime (3.13), checked against
 * the table, or from the table (3.11, 3.12). Anything else is -ENOTSUP with a reason: a
 * wrong offset would make the BPF walk read garbage and name it.
 *
 * Parsing an interpreter's ELF costs a few milliseconds; a process tree of workers maps the
 * same file, so the result is kept per (device, inode, mtime) in a small static cache.
 */
#include "python/python.h"
#include "python/internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LOADS 16
#define MAX_CANDIDATES 8

enum interp_sym {
	SYM_RUNTIME,
	SYM_EVAL,
	SYM_CODE_TYPE,
	SYM_VERSION,
	SYM_NEGATIVE_REFCOUNT,
	SYM_FORGET_REFERENCE,
	SYM_COUNT,
};

/*
 * A debug build changes the object header or internal structures the tables describe.
 * _Py_NegativeRefcount is defined and exported (PyAPI_FUNC) only under Py_REF_DEBUG, which
 * Py_DEBUG implies, in every version from 3.8 to 3.13; _Py_ForgetReference only under
 * Py_TRACE_REFS (in 3.11 and 3.12 the header with _ob_next/_ob_prev), which does not
 * imply Py_REF_DEBUG. Data symbols such as _Py_RefTotal moved into the runtime state in
 * 3.12, so they are no sign.
 */
static const char *const sym_names[SYM_COUNT] = {
	[SYM_RUNTIME] = "_PyRuntime",
	[SYM_EVAL] = "_PyEval_EvalFrameDefault",
	[SYM_CODE_TYPE] = "PyCode_Type",
	[SYM_VERSION] = "Py_Version",
	[SYM_NEGATIVE_REFCOUNT] = "_Py_NegativeRefcount",
	[SYM_FORGET_REFERENCE] = "_Py_ForgetReference",
};

struct elf_load {
	__u64 offset, vaddr, filesz;
};

/* What detection needs of one interpreter file, cached per (dev, ino, mtime). */
struct elf_info {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	bool valid;
	__u64 sym_value[SYM_COUNT];
	__u64 sym_size[SYM_COUNT];
	bool sym_found[SYM_COUNT];
	struct elf_load loads[MAX_LOADS];
	unsigned n_loads;
};

#define ELF_CACHE_SIZE 8
static struct elf_info elf_cache[ELF_CACHE_SIZE];
static unsigned elf_cache_next;
static pthread_mutex_t elf_cache_lock = PTHREAD_MUTEX_INITIALIZER;

struct candidate {
	char path[4096]; /* as /proc/PID/maps names it, " (deleted)" cut off */
	bool deleted;
	__u64 start, end, offset; /* its lowest mapping */
};

static void say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

const char *py_version__str(__u32 version, char *buf, size_t len)
{
	unsigned major = version >> 24, minor = (version >> 16) & 0xff;
	unsigned micro = (version >> 8) & 0xff, level = (version >> 4) & 0xf;
	unsigned serial = version & 0xf;
	const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : "";

	if (level == 0xf || !*tag)
		snprintf(buf, len, "%u.%u.%u", major, minor, micro);
	else
		snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, tag, serial);
	return buf;
}

/* The symbols of one symbol table (sh: SHT_DYNSYM or SHT_SYMTAB) into info. */
static void elf_scan_symbols(const unsigned char *img, size_t size, const Elf64_Shdr *shdrs,
			     unsigned shnum, const Elf64_Shdr *sh, struct elf_info *info)
{
	const Elf64_Shdr *strsh;
	const char *strtab;
	__u64 n, i;
	int k;

	if (sh->sh_link >= shnum || sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_offset > size ||
	    sh->sh_size > size - sh->sh_offset)
		return;
	strsh = &shdrs[sh->sh_link];
	if (strsh->sh_offset > size || strsh->sh_size > size - strsh->sh_offset || !strsh->sh_size)
		return;
	strtab = (const char *)img + strsh->sh_offset;
	n = sh->sh_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		Elf64_Sym sym;
		const char *name;
		size_t left;

		memcpy(&sym, img + sh->sh_offset + i * sizeof(sym), sizeof(sym));
		if (!sym.st_name || sym.st_name >= strsh->sh_size || sym.st_shndx == SHN_UNDEF)
			continue;
		name = strtab + sym.st_name;
		left = strsh->sh_size - sym.st_name;
		for (k = 0; k < SYM_COUNT; k++) {
			size_t len = strlen(sym_names[k]);

			if (info->sym_found[k] || left <= len || memcmp(name, sym_names[k], len) ||
			    name[len])
				continue;
			info->sym_found[k] = true;
			info->sym_value[k] = sym.st_value;
			info->sym_size[k] = sym.st_size;
		}
	}
}

/* Parse fd's ELF (a 64-bit little-endian x86-64 file) into info: 0 or -errno. */
static int elf_parse(int fd, size_t size, struct elf_info *info, char *why, size_t why_len,
		     const char *path)
{
	const unsigned char *img;
	Elf64_Ehdr eh;
	const Elf64_Shdr *shdrs;
	unsigned i;
	int pass, err = 0;

	if (size < sizeof(eh)) {
		say(why, why_len, "%s: not an ELF file", path);
		return -ENOEXEC;
	}
	img = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (img == MAP_FAILED) {
		err = -errno;
		say(why, why_len, "unable to map %s: %s", path, strerror(errno));
		return err;
	}
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64) {
		say(why, why_len, "%s: not an x86-64 ELF file", path);
		err = -ENOEXEC;
		goto unmap;
	}
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    (__u64)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff) {
		say(why, why_len, "%s: program headers out of the file", path);
		err = -ENOEXEC;
		goto unmap;
	}
	info->n_loads = 0;
	for (i = 0; i < eh.e_phnum && info->n_loads < MAX_LOADS; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		info->loads[info->n_loads++] =
			(struct elf_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	memset(info->sym_found, 0, sizeof(info->sym_found));
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size ||
	    (__u64)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff || eh.e_shoff % 8)
		goto unmap; /* no sections: no symbols, so not an interpreter */
	shdrs = (const Elf64_Shdr *)(img + eh.e_shoff);
	/* .dynsym first: what the dynamic linker resolves; .symtab adds what a static build
	 * or an unstripped file keeps local. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < eh.e_shnum; i++)
			if (shdrs[i].sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				elf_scan_symbols(img, size, shdrs, eh.e_shnum, &shdrs[i], info);
unmap:
	munmap((void *)img, size);
	return err;
}

/* The ELF information of the open file fd, from the cache or parsed into it. */
static int elf_info__get(int fd, const char *path, struct elf_info *out, char *why, size_t why_len)
{
	struct elf_info fresh = { 0 };
	struct stat st;
	unsigned i;
	int err;

	if (fstat(fd, &st)) {
		err = -errno;
		say(why, why_len, "unable to stat %s: %s", path, strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		say(why, why_len, "%s: not a regular file", path);
		return -ENOEXEC;
	}
	pthread_mutex_lock(&elf_cache_lock);
	for (i = 0; i < ELF_CACHE_SIZE; i++) {
		const struct elf_info *e = &elf_cache[i];

		if (e->valid && e->dev == st.st_dev && e->ino == st.st_ino &&
		    e->mtime.tv_sec == st.st_mtim.tv_sec &&
		    e->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			*out = *e;
			pthread_mutex_unlock(&elf_cache_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&elf_cache_lock);

	err = elf_parse(fd, (size_t)st.st_size, &fresh, why, why_len, path);
	if (err)
		return err;
	fresh.dev = st.st_dev;
	fresh.ino = st.st_ino;
	fresh.mtime = st.st_mtim;
	fresh.valid = true;
	pthread_mutex_lock(&elf_cache_lock);
	elf_cache[elf_cache_next++ % ELF_CACHE_SIZE] = fresh;
	pthread_mutex_unlock(&elf_cache_lock);
	*out = fresh;
	return 0;
}

/* libpython3.X.so, or an interpreter that is not the executable (run by ld.so itself). */
static bool is_python_file(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libpython", 9) || !strncmp(base, "python", 6);
}

/* The process is gone (or a zombie) rather than a kernel thread or a process with no map. */
static bool process_gone(__u32 pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* The executable and the libpython* (and python*) files pid maps, each with its lowest
 * mapping. */
static int read_candidates(__u32 pid, struct candidate *cands, unsigned *n_out, char *why,
			   size_t why_len)
{
	char path[64], exe[4096], line[4096 + 256];
	ssize_t exe_len;
	unsigned n = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	exe_len = readlink(path, exe, sizeof(exe) - 1);
	exe[exe_len > 0 ? exe_len : 0] = '\0';
	if (exe_len > 10 && !strcmp(exe + exe_len - 10, " (deleted)"))
		exe[exe_len - 10] = '\0'; /* maps names it without the suffix once cut */
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		int err = errno == ENOENT ? -ESRCH : -errno;

		if (err == -ESRCH)
			say(why, why_len, "process %u is gone", pid);
		else
			say(why, why_len, "unable to read %s: %s", path, strerror(errno));
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, offset;
		char *name, *nl;
		bool deleted = false;
		int pos = 0;
		size_t len;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &offset, &pos) <
			    3 ||
		    !pos)
			continue;
		name = line + pos;
		nl = strchr(name, '\n');
		if (nl)
			*nl = '\0';
		if (name[0] != '/')
			continue;
		len = strlen(name);
		if (len > 10 && !strcmp(name + len - 10, " (deleted)")) {
			name[len - 10] = '\0';
			deleted = true;
		}
		if (strcmp(name, exe) && !is_python_file(name))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(cands[i].path, name))
				break;
		if (i < n) {
			if (start < cands[i].start) {
				cands[i].start = start;
				cands[i].end = end;
				cands[i].offset = offset;
			}
			continue;
		}
		if (n == MAX_CANDIDATES)
			continue;
		snprintf(cands[n].path, sizeof(cands[n].path), "%s", name);
		cands[n].deleted = deleted;
		cands[n].start = start;
		cands[n].end = end;
		cands[n].offset = offset;
		n++;
	}
	fclose(f);
	if (!n && !exe[0] && process_gone(pid)) {
		say(why, why_len, "process %u is gone", pid);
		return -ESRCH;
	}
	*n_out = n;
	return 0;
}

/* Open the file a candidate names as the process sees it: through its root (its mount
 * namespace), else through map_files (which also reaches a file replaced since). */
static int candidate__open(__u32 pid, const struct candidate *c, char *why, size_t why_len)
{
	char path[4096 + 64];
	int fd = -1;

	if (!c->deleted) {
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, c->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long)c->start, (unsigned long long)c->end);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		int err = -errno;

		if (c->deleted)
			say(why, why_len, "%s was deleted since the process mapped it: %s", c->path,
			    strerror(errno));
		else
			say(why, why_len, "unable to open %s of process %u: %s", c->path, pid,
			    strerror(errno));
		return err;
	}
	return fd;
}

static int load_bias(const struct elf_info *info, const struct candidate *c, __u64 *bias)
{
	unsigned i;

	for (i = 0; i < info->n_loads; i++) {
		const struct elf_load *l = &info->loads[i];

		if (c->offset >= (l->offset & ~0xfffull) && c->offset < l->offset + l->filesz) {
			*bias = c->start - l->vaddr - c->offset + l->offset;
			return 0;
		}
	}
	return -ENOEXEC;
}

/* The minor version a file's name says ("python3.10", "libpython3.10.so.1.0"), or 0. */
static unsigned name_minor(const char *path)
{
	const char *base = strrchr(path, '/'), *p;
	unsigned minor = 0;

	base = base ? base + 1 : path;
	p = strstr(base, "python3.");
	if (!p)
		return 0;
	for (p += 8; *p >= '0' && *p <= '9' && minor < 1000; p++)
		minor = minor * 10 + (unsigned)(*p - '0');
	return minor;
}

/*
 * The layout from the process's own _Py_DebugOffsets (l holds the table's on entry), each field that the table has too
 * checked against it. The two heads (_PyRuntimeState.interpreters.head,
 * PyInterpreterState.threads.head) are taken as published: they sit behind large structures
 * that a bugfix release may grow, which is what _Py_DebugOffsets is there for. The fields of
 * the thread state, frame, code object and str are what the BPF walk and the code reader
 * depend on byte for byte; a difference there means this is not the 3.13 this was written
 * for, and it is refused.
 */
int py_layout__from_debug_offsets(__u32 pid, struct py_layout *l, char *why, size_t why_len)
{
	const struct py_layout *t = py_table__find(l->version);
	struct py_debug_offsets_313 d;
	char vstr[32];
	int err;

	if (!t || l->version < 0x030d0000 || l->version >= 0x030e0000) {
		say(why, why_len, "_Py_DebugOffsets of this layout are known for 3.13 only");
		return -ENOTSUP;
	}
	py_version__str(l->version, vstr, sizeof(vstr));
	err = py_mem__read(pid, l->runtime, &d, sizeof(d));
	if (err) {
		say(why, why_len, "unable to read _Py_DebugOffsets of CPython %s in %s: %s", vstr,
		    l->path, strerror(-err));
		return err;
	}
	if (memcmp(d.cookie, "xdebugpy", 8)) {
		say(why, why_len, "CPython %s in %s: no _Py_DebugOffsets at _PyRuntime", vstr,
		    l->path);
		return -ENOTSUP;
	}
	if (d.version != l->version) {
		say(why, why_len,
		    "CPython %s in %s: _Py_DebugOffsets says version 0x%" PRIx64
		    ", Py_Version 0x%x",
		    vstr, l->path, (uint64_t)d.version, l->version);
		return -ENOTSUP;
	}
	if (d.free_threaded) {
		say(why, why_len, "CPython %s in %s: free-threaded builds are not supported", vstr,
		    l->path);
		return -ENOTSUP;
	}
#define SET(field, value)                                                                     \
	do {                                                                                  \
		if ((value) >= PY_OFF_NONE) {                                                 \
			say(why, why_len, "CPython %s: _Py_DebugOffsets gives %s = %" PRIu64, \
			    vstr, #field, (uint64_t)(value));                                 \
			return -ENOTSUP;                                                      \
		}                                                                             \
		l->field = (__u16)(value);                                                    \
	} while (0)
	SET(runtime_interpreters_head, d.runtime_state.interpreters_head);
	SET(interp_threads_head, d.interpreter_state.threads_head);
	SET(tstate_next, d.thread_state.next);
	SET(tstate_native_thread_id, d.thread_state.native_thread_id);
	SET(tstate_current_frame, d.thread_state.current_frame);
	SET(frame_code, d.interpreter_frame.executable);
	SET(frame_previous, d.interpreter_frame.previous);
	SET(frame_instr, d.interpreter_frame.instr_ptr);
	SET(frame_owner, d.interpreter_frame.owner);
	SET(code_adaptive, d.code_object.co_code_adaptive);
	SET(object_type, d.pyobject.ob_type);
	SET(code_filename, d.code_object.filename);
	SET(code_qualname, d.code_object.qualname);
	SET(code_firstlineno, d.code_object.firstlineno);
	SET(code_linetable, d.code_object.linetable);
	SET(unicode_length, d.unicode_object.length);
	SET(unicode_state, d.unicode_object.state);
	SET(unicode_ascii_data, d.unicode_object.asciiobject_size);
	SET(bytes_size, d.bytes_object.ob_size);
	SET(bytes_data, d.bytes_object.ob_sval);
#undef SET
	l->tstate_cframe = PY_OFF_NONE;
	l->cframe_current_frame = PY_OFF_NONE;
	l->frame_is_entry = PY_OFF_NONE;
	/* Not published: the compact str's data follows the ASCII header's utf8_length and
	 * utf8 pointer, and the owner is an enum constant. Both from the table. */
	l->unicode_compact_data = t->unicode_compact_data;
	l->owner_cstack = t->owner_cstack;
#define CHECK(field)                                                                               \
	do {                                                                                       \
		if (l->field != t->field) {                                                        \
			say(why, why_len,                                                          \
			    "CPython %s in %s: _Py_DebugOffsets gives %s = %u, expected %u", vstr, \
			    l->path, #field, l->field, t->field);                                  \
			return -ENOTSUP;                                                           \
		}                                                                                  \
	} while (0)
	CHECK(tstate_next);
	CHECK(tstate_native_thread_id);
	CHECK(tstate_current_frame);
	CHECK(frame_code);
	CHECK(frame_previous);
	CHECK(frame_instr);
	CHECK(frame_owner);
	CHECK(code_adaptive);
	CHECK(object_type);
	CHECK(code_filename);
	CHECK(code_qualname);
	CHECK(code_firstlineno);
	CHECK(code_linetable);
	CHECK(unicode_length);
	CHECK(unicode_state);
	CHECK(unicode_ascii_data);
	CHECK(bytes_size);
	CHECK(bytes_data);
#undef CHECK
	l->source = PY_LAYOUT_DEBUG_OFFSETS;
	return 0;
}

/* The layout of the interpreter in one file of pid: 0, -ENOENT (not an interpreter), or
 * another -errno with why set. */
static int detect_in(__u32 pid, const struct candidate *c, struct py_layout *out, char *why,
		     size_t why_len)
{
	struct elf_info info = { 0 };
	const struct py_layout *t;
	char vstr[32];
	__u64 bias, version = 0;
	int fd, err;

	fd = candidate__open(pid, c, why, why_len);
	if (fd < 0)
		return fd;
	err = elf_info__get(fd, c->path, &info, why, why_len);
	close(fd);
	if (err)
		return err;
	if (!info.sym_found[SYM_RUNTIME])
		return -ENOENT;
	if (!info.sym_found[SYM_VERSION]) {
		unsigned minor = name_minor(c->path);

		if (minor)
			say(why, why_len,
			    "CPython 3.%u in %s: versions before 3.11 are not supported", minor,
			    c->path);
		else
			say(why, why_len,
			    "CPython in %s has no Py_Version: versions before 3.11 are not supported",
			    c->path);
		return -ENOTSUP;
	}
	if (load_bias(&info, c, &bias)) {
		say(why, why_len, "%s: its mapping at %llx is in no PT_LOAD segment", c->path,
		    (unsigned long long)c->start);
		return -EINVAL;
	}
	if (!info.sym_found[SYM_EVAL] || !info.sym_found[SYM_CODE_TYPE] ||
	    !info.sym_size[SYM_EVAL]) {
		say(why, why_len, "%s: no %s symbol", c->path,
		    info.sym_found[SYM_CODE_TYPE] ? "_PyEval_EvalFrameDefault" : "PyCode_Type");
		return -ENOTSUP;
	}
	err = py_mem__read(pid, info.sym_value[SYM_VERSION] + bias, &version,
			   info.sym_size[SYM_VERSION] == 4 ? 4 : 8);
	if (err) {
		say(why, why_len, "unable to read Py_Version of %s in process %u: %s", c->path, pid,
		    strerror(-err));
		return err;
	}
	py_version__str((__u32)version, vstr, sizeof(vstr));
	if (version >> 24 != 3 || version > UINT32_MAX) {
		say(why, why_len, "%s: Py_Version 0x%llx is not a CPython 3 version", c->path,
		    (unsigned long long)version);
		return -ENOTSUP;
	}
	if (version < 0x030b0000) {
		say(why, why_len, "CPython %s in %s: versions before 3.11 are not supported", vstr,
		    c->path);
		return -ENOTSUP;
	}
	t = py_table__find((__u32)version);
	if (!t) {
		say(why, why_len,
		    "CPython %s in %s: versions from 3.14 on are not supported (their layout is not known here)",
		    vstr, c->path);
		return -ENOTSUP;
	}
	if (info.sym_found[SYM_NEGATIVE_REFCOUNT] || info.sym_found[SYM_FORGET_REFERENCE]) {
		say(why, why_len,
		    "CPython %s in %s: a debug build (Py_REF_DEBUG or Py_TRACE_REFS) is not supported",
		    vstr, c->path);
		return -ENOTSUP;
	}

	*out = *t;
	out->version = (__u32)version;
	out->source = PY_LAYOUT_TABLE;
	out->runtime = info.sym_value[SYM_RUNTIME] + bias;
	out->eval_start = info.sym_value[SYM_EVAL] + bias;
	out->eval_end = out->eval_start + info.sym_size[SYM_EVAL];
	out->code_type = info.sym_value[SYM_CODE_TYPE] + bias;
	snprintf(out->path, sizeof(out->path), "%s", c->path);
	if (version >= 0x030d0000) {
		err = py_layout__from_debug_offsets(pid, out, why, why_len);
		if (err)
			return err;
	}
	return 0;
}

int py_layout__detect(__u32 pid, struct py_layout *out, char *why, size_t why_len)
{
	struct candidate *cands;
	unsigned n = 0, i;
	int err;

	say(why, why_len,
	    "process %u runs no CPython (no _PyRuntime in its executable or a libpython)", pid);
	cands = calloc(MAX_CANDIDATES, sizeof(*cands));
	if (!cands) {
		say(why, why_len, "out of memory");
		return -ENOMEM;
	}
	err = read_candidates(pid, cands, &n, why, why_len);
	if (err)
		goto free_cands;
	err = -ENOENT;
	/* The first file that defines _PyRuntime is the interpreter; a file that cannot be
	 * read is reported only if no other one is it. */
	for (i = 0; i < n; i++) {
		char reason[PY_WHY_MAX];
		int e = detect_in(pid, &cands[i], out, reason, sizeof(reason));

		if (e == -ENOENT || e == -ENOEXEC)
			continue; /* not an interpreter, or not one for x86-64 */
		if (!e || err == -ENOENT || e == -ENOTSUP || e == -ESRCH) {
			err = e;
			if (e)
				say(why, why_len, "%s", reason);
		}
		if (!e || e == -ENOTSUP || e == -ESRCH)
			break;
	}
free_cands:
	free(cands);
	return err;
}
