/* SPDX-License-Identifier: MIT */
/*
 * In-process launch stacks (launch_stack.h, docs/cupti.md "Launch stacks").
 *
 * The entry. launch_stack__record and launch_stack__capture are not inlined, and GCC and
 * Clang give a function that takes __builtin_frame_address(0) a frame pointer whatever
 * -fomit-frame-pointer says, so each entry's own frame is the classic pair: the word at
 * the frame address is its caller's rbp, as the prologue pushed it, the next word is the
 * return address into the caller, and the caller's rsp is just above that (a compiler that
 * did otherwise is caught: the return address would not be where it belongs). Those three
 * registers are where the walk starts; the caller's rbp need not be a frame pointer (CUDA's
 * code keeps data in it), the CFI says whether it is. No register is read any other way,
 * so the entry cannot see a register the compiler has already reused.
 *
 * The reads. The walk reads 8-byte words only in [the caller's rsp, top of this thread's
 * stack): the part of the stack in use, which is mapped by definition. The top comes from
 * pthread_getattr_np once per thread (for the main thread too, where glibc reads it from
 * /proc/self/maps). Anything outside, whatever a corrupt rule or a stale word points at,
 * is -EFAULT and ends the walk. A stack pointer outside the thread's stack (an alternate
 * signal stack, a coroutine's heap stack) fails the capture instead of guessing.
 *
 * The rules. An address's loaded object comes from _dl_find_object (glibc 2.35, lock-free:
 * no loader lock on the launch path); its PT_GNU_EH_FRAME segment is .eh_frame_hdr in
 * memory, whose eh_frame_ptr says where .eh_frame starts. Both are bounded by the end of
 * the loaded segment that holds them, found in the image's program headers (its first page
 * is its ELF header), else by the image's end. cfi__find reads only inside those bounds.
 * An object without PT_GNU_EH_FRAME (JIT code, some stripped files) has no rule (-ENOENT):
 * the walk tries the frame pointer there.
 *
 * The cache. Each thread keeps CACHE_SETS x CACHE_WAYS rules (256 KiB, made at its first
 * capture, freed when it exits), four-way set-associative by the look-up address, with the
 * rule's range made absolute, so the next capture from the same call sites finds each
 * frame's rule in one set (a launch loop's stacks repeat exactly). Four ways, not one slot
 * per address: a training loop's launches come from hundreds of call sites, and in a
 * direct-mapped cache two that share a slot evict each other at every launch
 * (bench/cupti_marker_bench's 512 call sites). The ways' tags are one cache line; a full
 * set loses the way a per-thread counter picks, as good as random here. An error answer is kept too. A slot is valid for one
 * epoch: the loader's count of objects added plus objects
 * removed (dl_iterate_phdr's dlpi_adds + dlpi_subs, read once per capture). A dlclose, or a
 * dlopen that could map new code where a cached miss was, changes it, and every slot goes
 * stale at once. Comparing the object's map start instead would need _dl_find_object on
 * every hit and would not see a library unloaded and another loaded at the same address.
 * Whatever the cache holds, the reads stay bounded: a stale rule can only give a wrong
 * stack.
 *
 * The modules. Before the first LAUNCH of an epoch the process's executable mappings go out
 * as MODULE records (event.h), through the same put: the correlator names the frames of a
 * process that exited before it could read /proc/PID/maps from them. One thread sends per
 * epoch (a compare-and-swap claims it); the list is gathered under dl_iterate_phdr's lock
 * and put after it, so the loader lock is never held while the producer lock is taken.
 *
 * The Python frames. When the launching thread runs Python, python/self.c reads the frames
 * it is executing from its thread state (plain loads, after one checked walk per process)
 * and they follow the native frames as the XPU_STACK_F_PY block the launch marker's uprobe
 * writes (event.h), so the correlator merges them into the native frames the same way. The
 * record's buffer has room for the block (PY_SELF_MAX) beyond the native frames'.
 */
#include "cupti/launch_stack.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "python/self.h"
#include "unwind/cfi.h"
#include "xpusup/event.h"

#if !defined(__x86_64__)
#error "launch_stack.c reads x86-64 frames (rip, rsp, rbp)"
#endif

#define CACHE_SET_BITS 10
#define CACHE_SETS (1u << CACHE_SET_BITS)
#define CACHE_WAYS 4
#define ELF_PAGE 4096u /* the least page size: the ELF header's page is mapped this far */
#define DW_EH_PE_PCREL_SDATA4 0x1b /* what every x86-64 linker writes for eh_frame_ptr */
#define DW_EH_PE_PCREL_SDATA8 0x1c

struct rule_answer {
	struct cfi_rule rule; /* start and end are absolute addresses */
	int err; /* the look-up's answer: 0, -ENOENT, -EBADMSG, -ENOTSUP */
};

/* One set: the tags of its ways in the first cache line, their answers after. */
struct rule_set {
	__u64 addr[CACHE_WAYS]; /* the look-up address; 0: empty */
	__u64 epoch[CACHE_WAYS]; /* the loader's epoch when it was filled */
	struct rule_answer way[CACHE_WAYS];
} __attribute__((aligned(64)));

struct launch_thread {
	__u64 stack_lo, stack_hi; /* [lo, hi): 0, 0 when pthread_getattr_np failed */
	__u32 pid, tid;
	__u32 victim; /* counts the ways full sets lost: picks the next one */
	struct rule_set cache[CACHE_SETS];
};

/* One walk's context for the read and rule callbacks. */
struct walk_ctx {
	struct launch_thread *t;
	__u64 lo, hi; /* the words the walk may read: [lo, hi) */
	__u64 epoch; /* 0: unknown, the cache is not used */
	__u32 hits, misses;
};

static __thread struct launch_thread *self;
static pthread_key_t self_key; /* frees a thread's state when it exits */
static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static bool self_key_ok;

static __u64 n_captured, n_truncated, n_failed, n_frames, n_hits, n_misses, n_modules,
	n_modules_lost, n_py_stacks, n_py_frames, n_py_truncated, n_py_bad;
static __u64 modules_epoch; /* the loader's epoch whose images went out last; 0: none yet */

static void self_free(void *t)
{
	self = NULL;
	free(t);
}

/* The forked child's one thread is the one that forked: it has a pid and a tid of its own. */
static void self_at_fork_child(void)
{
	if (self) {
		self->pid = (__u32)getpid();
		self->tid = (__u32)gettid();
	}
	/* a new process: its own pid's modules have not gone out */
	__atomic_store_n(&modules_epoch, 0, __ATOMIC_RELAXED);
}

static void self_init_once(void)
{
	/* Without the key a thread's state outlives it (a leak, not a fault). The library is
	 * never unloaded by CUDA, so the destructor's code stays mapped. */
	self_key_ok = !pthread_key_create(&self_key, self_free);
	pthread_atfork(NULL, NULL, self_at_fork_child);
}

static void stack_bounds(struct launch_thread *t)
{
	pthread_attr_t attr;
	size_t size;
	void *lo;

	if (pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &lo, &size) && size >= 8) {
		t->stack_lo = (__u64)(uintptr_t)lo;
		t->stack_hi = t->stack_lo + size;
	}
	pthread_attr_destroy(&attr);
}

/* The calling thread's state, made on its first capture; NULL when out of memory. */
static struct launch_thread *thread_state(void)
{
	struct launch_thread *t = self;
	void *mem;

	if (t)
		return t;
	pthread_once(&self_once, self_init_once);
	/* aligned as its sets ask: calloc gives 16 bytes, and a set's tags must be one line */
	if (posix_memalign(&mem, _Alignof(struct launch_thread), sizeof(*t)))
		return NULL;
	t = memset(mem, 0, sizeof(*t));
	stack_bounds(t);
	t->pid = (__u32)getpid();
	t->tid = (__u32)gettid();
	if (self_key_ok)
		pthread_setspecific(self_key, t);
	self = t;
	return t;
}

static int epoch_of(struct dl_phdr_info *info, size_t size, void *data)
{
	__u64 *epoch = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*epoch = info->dlpi_adds + info->dlpi_subs;
	return 1; /* every entry carries the same counts: the first will do */
}

/* Objects loaded plus objects unloaded so far; 0 when the loader does not say (never with
 * glibc, whose count includes the program itself). */
static __u64 loader_epoch(void)
{
	__u64 epoch = 0;

	dl_iterate_phdr(epoch_of, &epoch);
	return epoch;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* MODULE records gathered under dl_iterate_phdr, put after it. */
struct module_list {
	unsigned char *buf;
	size_t len, cap;
	__u64 ts_ns, page;
	__u64 vdso; /* where the vDSO's ELF header is mapped (AT_SYSINFO_EHDR); 0: none */
	__u32 pid, tid;
	bool failed; /* out of memory: what was gathered still goes */
	char exe[XPU_PATH_MAX + 1]; /* /proc/self/exe: the program's entry has no name */
};

static void module_add(struct module_list *l, __u64 start, __u64 end, __u64 pgoff,
		       const struct stat *st, const char *path, size_t path_len)
{
	__u32 size = xpu_module__size((__u32)path_len);
	unsigned char *grown;
	size_t cap;

	if (l->cap - l->len < size) {
		cap = l->cap ? 2 * l->cap : 4096;
		while (cap - l->len < size)
			cap *= 2;
		grown = realloc(l->buf, cap);
		if (!grown) {
			l->failed = true;
			return;
		}
		l->buf = grown;
		l->cap = cap;
	}
	if (xpu_module__build(l->buf + l->len, l->cap - l->len, l->ts_ns, l->pid, l->tid, start,
			      end, pgoff, st ? (__u64)st->st_dev : 0, st ? (__u64)st->st_ino : 0,
			      path, path_len) > 0)
		l->len += size;
}

/* dl_iterate_phdr: each executable PT_LOAD of each image with a file behind it, and of the
 * vDSO as "[vdso]", as /proc/PID/maps would show them (page-aligned, with the file offset).
 * The vDSO sits at an address of this process's own (ASLR): a process gone before its maps
 * are read would otherwise have "[unknown]" where it read the clock. */
static int module_each(struct dl_phdr_info *info, size_t size, void *data)
{
	struct module_list *l = data;
	const char *path = info->dlpi_name;
	struct stat st;
	size_t path_len;
	bool have_st;
	__u64 start, end;
	int i;

	(void)size;
	if (l->vdso && (uintptr_t)info->dlpi_phdr - l->vdso < l->page)
		path = "[vdso]"; /* its program headers follow its ELF header */
	else if (!path || !path[0])
		path = l->exe; /* the program itself */
	path_len = strlen(path);
	if (path_len > XPU_PATH_MAX || !xpu_module__path_ok(path, (__u32)path_len))
		return 0; /* a name that is no path ("linux-vdso.so.1" where auxv had none) */
	have_st = path[0] == '/' && !stat(path, &st);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		start = (info->dlpi_addr + ph->p_vaddr) & ~(l->page - 1);
		end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + l->page - 1) & ~(l->page - 1);
		module_add(l, start, end, ph->p_offset & ~(l->page - 1), have_st ? &st : NULL, path,
			   path_len);
	}
	return 0;
}

/* The process's executable mappings as MODULE records, once per loader epoch. */
static void modules_send(const struct launch_thread *t, __u64 epoch, launch_stack_put_fn put,
			 void *ctx)
{
	__u64 old = __atomic_load_n(&modules_epoch, __ATOMIC_RELAXED);
	struct module_list l = { .pid = t->pid, .tid = t->tid };
	ssize_t n;
	size_t off;
	__u32 size;

	if (old == epoch || !__atomic_compare_exchange_n(&modules_epoch, &old, epoch, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return; /* sent, or another thread is sending */
	l.ts_ns = now_ns();
	l.page = (__u64)sysconf(_SC_PAGESIZE);
	if (!l.page || l.page & (l.page - 1))
		l.page = ELF_PAGE;
	n = readlink("/proc/self/exe", l.exe, sizeof(l.exe) - 1);
	l.exe[n > 0 ? n : 0] = '\0';
	if (n > 10 && !strcmp(l.exe + n - 10, " (deleted)"))
		l.exe[n - 10] = '\0';
	l.vdso = getauxval(AT_SYSINFO_EHDR);
	dl_iterate_phdr(module_each, &l);
	for (off = 0; off < l.len; off += size) {
		size = ((const struct xpu_rec *)(l.buf + off))->size;
		if (put(ctx, l.buf + off, size))
			__atomic_fetch_add(&n_modules_lost, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&n_modules, 1, __ATOMIC_RELAXED);
	}
	if (l.failed)
		__atomic_fetch_add(&n_modules_lost, 1, __ATOMIC_RELAXED);
	free(l.buf);
}

/* A loaded image: [start, end) mapped, bias added to its ELF virtual addresses, and its
 * program headers when its first page is its ELF header (phdr NULL otherwise). */
struct image {
	__u64 start, end, bias;
	const Elf64_Phdr *phdr;
	unsigned int phnum;
};

static void image_phdrs(struct image *im)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)(uintptr_t)im->start;

	/* Every read stays in the image's first page, mapped from the file's offset 0 for
	 * any image a linker made (the ELF header, then the program headers). */
	if (im->end - im->start < ELF_PAGE || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > ELF_PAGE || eh->e_phnum > (ELF_PAGE - eh->e_phoff) / sizeof(Elf64_Phdr))
		return;
	im->phdr = (const Elf64_Phdr *)(uintptr_t)(im->start + eh->e_phoff);
	im->phnum = eh->e_phnum;
}

/* Bytes from p (absolute) to the end of what may be read there: the file bytes of the
 * loaded segment that holds p, else the image's end. 0 when p is not in the image. */
static __u64 readable_from(const struct image *im, __u64 p)
{
	__u64 vaddr = p - im->bias;
	unsigned int i;

	if (p < im->start || p >= im->end)
		return 0;
	if (!im->phdr)
		return im->end - p;
	for (i = 0; i < im->phnum; i++) {
		const Elf64_Phdr *ph = &im->phdr[i];

		if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr &&
		    vaddr - ph->p_vaddr < ph->p_filesz)
			return ph->p_filesz - (vaddr - ph->p_vaddr);
	}
	return 0;
}

/* The CFI sections of the image whose .eh_frame_hdr is at hdr. 0, or -ENOENT. */
static int image_sections(const struct image *im, const __u8 *hdr, struct cfi_sections *sec)
{
	__u64 h = (__u64)(uintptr_t)hdr, eh, hdr_len;
	unsigned int i;
	__s64 off64;
	__s32 off32;

	hdr_len = readable_from(im, h);
	for (i = 0; im->phdr && i < im->phnum; i++)
		if (im->phdr[i].p_type == PT_GNU_EH_FRAME && im->phdr[i].p_vaddr == h - im->bias &&
		    im->phdr[i].p_memsz < hdr_len)
			hdr_len = im->phdr[i].p_memsz;
	/* version 1, then the encodings of eh_frame_ptr, fde_count and the table */
	if (hdr_len < 12 || hdr[0] != 1)
		return -ENOENT;
	switch (hdr[1]) {
	case DW_EH_PE_PCREL_SDATA4:
		memcpy(&off32, hdr + 4, sizeof(off32));
		eh = h + 4 + (__u64)(__s64)off32;
		break;
	case DW_EH_PE_PCREL_SDATA8:
		memcpy(&off64, hdr + 4, sizeof(off64));
		eh = h + 4 + (__u64)off64;
		break;
	default: /* no linker writes another: not worth a decoder here */
		return -ENOENT;
	}
	memset(sec, 0, sizeof(*sec));
	sec->eh_frame_hdr = hdr;
	sec->eh_frame_hdr_len = hdr_len;
	sec->eh_frame_hdr_vaddr = h - im->bias;
	sec->eh_frame = (const __u8 *)(uintptr_t)eh;
	sec->eh_frame_len = readable_from(im, eh);
	sec->eh_frame_vaddr = eh - im->bias;
	return sec->eh_frame_len ? 0 : -ENOENT;
}

/* The rule for addr from the CFI of the object loaded there, its range made absolute. */
static int image_rule(__u64 addr, struct cfi_rule *out)
{
	struct dl_find_object obj;
	struct cfi_sections sec;
	struct image im = { 0 };
	int err;

	if (_dl_find_object((void *)(uintptr_t)addr, &obj) || !obj.dlfo_eh_frame ||
	    !obj.dlfo_link_map)
		return -ENOENT;
	im.start = (__u64)(uintptr_t)obj.dlfo_map_start;
	im.end = (__u64)(uintptr_t)obj.dlfo_map_end;
	im.bias = obj.dlfo_link_map->l_addr;
	image_phdrs(&im);
	err = image_sections(&im, obj.dlfo_eh_frame, &sec);
	if (!err)
		err = cfi__find(&sec, NULL, addr - im.bias, out);
	if (err)
		return err;
	out->start += im.bias;
	out->end += im.bias;
	return 0;
}

static __u32 set_of(__u64 addr)
{
	return (__u32)((addr * 0x9e3779b97f4a7c15ull) >> (64 - CACHE_SET_BITS));
}

/* unwind_ops.rule: the thread's cache, else the image's CFI (and the answer is cached). */
static int stack_rule(void *ctx, __u64 addr, struct cfi_rule *out)
{
	struct walk_ctx *w = ctx;
	struct rule_set *s;
	unsigned int i, way = CACHE_WAYS;
	int err;

	if (!w->epoch) {
		w->misses++;
		return image_rule(addr, out);
	}
	s = &w->t->cache[set_of(addr)];
	for (i = 0; i < CACHE_WAYS; i++) {
		if (s->epoch[i] != w->epoch) {
			way = i; /* empty, or stale: where the answer goes if none matches */
			continue;
		}
		if (s->addr[i] == addr) {
			w->hits++;
			*out = s->way[i].rule;
			return s->way[i].err;
		}
	}
	w->misses++;
	err = image_rule(addr, out);
	if (way == CACHE_WAYS)
		way = w->t->victim++ % CACHE_WAYS;
	s->addr[way] = addr;
	s->epoch[way] = w->epoch;
	s->way[way].err = err;
	if (err)
		memset(&s->way[way].rule, 0, sizeof(s->way[way].rule));
	else
		s->way[way].rule = *out;
	return err;
}

/* unwind_ops.read: a word of the stack in use, nothing else. */
static int stack_read(void *ctx, __u64 addr, __u64 *val)
{
	const struct walk_ctx *w = ctx;

	if (addr < w->lo || addr >= w->hi || w->hi - addr < sizeof(*val))
		return -EFAULT;
	memcpy(val, (const void *)(uintptr_t)addr, sizeof(*val));
	return 0;
}

/*
 * The caller's registers, from the frame of an entry (see the file comment): frame is the
 * entry's __builtin_frame_address(0), ret its __builtin_return_address(0).
 */
static int walk_start(struct walk_ctx *w, const __u64 *frame, const void *ret,
		      struct unwind_regs *regs)
{
	struct launch_thread *t = thread_state();

	if (!t)
		return -ENOMEM;
	/* Both words are this entry's own frame: a mismatch means it was built without a
	 * frame pointer, and the frame address is not where the saved rbp is. */
	if (frame[1] != (__u64)(uintptr_t)ret)
		return -ENOTSUP;
	regs->ip = frame[1];
	regs->fp = frame[0];
	regs->sp = (__u64)(uintptr_t)(frame + 2);
	if (regs->sp < t->stack_lo || regs->sp >= t->stack_hi)
		return -EFAULT;
	*w = (struct walk_ctx){ .t = t, .lo = regs->sp, .hi = t->stack_hi };
	w->epoch = loader_epoch();
	return 0;
}

static void count_lookups(const struct walk_ctx *w)
{
	if (w->hits)
		__atomic_fetch_add(&n_hits, w->hits, __ATOMIC_RELAXED);
	if (w->misses)
		__atomic_fetch_add(&n_misses, w->misses, __ATOMIC_RELAXED);
}

/* The calling thread's Python frames after the native ones in the LAUNCH at rec (size
 * bytes, room for PY_SELF_MAX more); returns the record's new size. */
static int add_python(unsigned char *rec, int size)
{
	struct xpu_rec *h = (struct xpu_rec *)rec;
	const struct xpu_py_stack *py = (const struct xpu_py_stack *)(rec + size);
	int len = py_self__stack(rec + size, PY_SELF_MAX);

	if (len <= 0)
		return size;
	h->flags |= XPU_STACK_F_PY;
	h->size += (__u32)len;
	__atomic_fetch_add(&n_py_stacks, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_py_frames, py->n, __ATOMIC_RELAXED);
	if (py->flags & XPU_PY_F_TRUNCATED)
		__atomic_fetch_add(&n_py_truncated, 1, __ATOMIC_RELAXED);
	if (py->flags & XPU_PY_F_BAD_FRAME)
		__atomic_fetch_add(&n_py_bad, 1, __ATOMIC_RELAXED);
	return size + len;
}

__attribute__((noinline)) int launch_stack__record(__u64 correlation_id, __u32 api_id,
						   launch_stack_put_fn put, void *ctx)
{
	_Alignas(8) unsigned char rec[sizeof(struct xpu_launch) + 8 * XPU_MAX_FRAMES + PY_SELF_MAX];
	__u64 ips[XPU_MAX_FRAMES];
	struct unwind_result res;
	struct unwind_regs regs;
	struct unwind_ops ops;
	struct walk_ctx w;
	int err, size;

	err = walk_start(&w, __builtin_frame_address(0), __builtin_return_address(0), &regs);
	if (err)
		goto failed;
	if (w.epoch && w.epoch != __atomic_load_n(&modules_epoch, __ATOMIC_RELAXED))
		modules_send(w.t, w.epoch, put, ctx);
	ops = (struct unwind_ops){ .read = stack_read, .rule = stack_rule, .ctx = &w };
	unwind__walk(&ops, regs, 0, ips, XPU_MAX_FRAMES, &res);
	count_lookups(&w);
	size = xpu_launch__build(rec, sizeof(rec) - PY_SELF_MAX, now_ns(), w.t->pid, w.t->tid,
				 correlation_id, api_id, ips, res.n);
	if (size < 0) {
		err = size;
		goto failed;
	}
	size = add_python(rec, size);
	__atomic_fetch_add(&n_captured, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_frames, res.n, __ATOMIC_RELAXED);
	if (res.end != UNWIND_END_OUTERMOST)
		__atomic_fetch_add(&n_truncated, 1, __ATOMIC_RELAXED);
	return put(ctx, rec, (__u32)size);

failed:
	__atomic_fetch_add(&n_failed, 1, __ATOMIC_RELAXED);
	return err;
}

__attribute__((noinline)) int launch_stack__capture(__u64 *ips, __u32 max, __u32 flags,
						    struct unwind_result *res)
{
	struct unwind_regs regs;
	struct unwind_ops ops;
	struct walk_ctx w;
	int err;

	err = walk_start(&w, __builtin_frame_address(0), __builtin_return_address(0), &regs);
	if (err)
		return err;
	ops = (struct unwind_ops){ .read = stack_read, .rule = stack_rule, .ctx = &w };
	err = (int)unwind__walk(&ops, regs, flags, ips, max, res);
	count_lookups(&w);
	return err;
}

void launch_stack__stats(struct launch_stack_stats *st)
{
	st->captured = __atomic_load_n(&n_captured, __ATOMIC_RELAXED);
	st->truncated = __atomic_load_n(&n_truncated, __ATOMIC_RELAXED);
	st->failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
	st->frames = __atomic_load_n(&n_frames, __ATOMIC_RELAXED);
	st->cache_hits = __atomic_load_n(&n_hits, __ATOMIC_RELAXED);
	st->cache_misses = __atomic_load_n(&n_misses, __ATOMIC_RELAXED);
	st->modules = __atomic_load_n(&n_modules, __ATOMIC_RELAXED);
	st->modules_lost = __atomic_load_n(&n_modules_lost, __ATOMIC_RELAXED);
	st->py_stacks = __atomic_load_n(&n_py_stacks, __ATOMIC_RELAXED);
	st->py_frames = __atomic_load_n(&n_py_frames, __ATOMIC_RELAXED);
	st->py_truncated = __atomic_load_n(&n_py_truncated, __ATOMIC_RELAXED);
	st->py_bad = __atomic_load_n(&n_py_bad, __ATOMIC_RELAXED);
}

void launch_stack__forget(void)
{
	if (self)
		memset(self->cache, 0, sizeof(self->cache));
}
