/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's own Python frames (self.h, docs/cupti.md "Python launch stacks").
 *
 * The interpreter. Once per process, at the first call: py_layout__detect on our own pid
 * gives the interpreter's version, eval function and offsets (python.h). A fork keeps all of
 * it: the child runs the same interpreter at the same addresses.
 *
 * The thread. PyGILState_GetThisThreadState, the public C API (3.11 to 3.13), found with
 * dlsym: the thread state bound to this thread, from a thread-specific key, callable without
 * the GIL; NULL on a thread that never ran Python (autograd's C++ threads). Never the
 * interpreter's list of thread states: another thread's state may be freed while we read it.
 *
 * The walk is profile.bpf.c's py_walk_step, with plain loads: the current frame from
 * tstate->cframe->current_frame (3.11, 3.12) or tstate->current_frame (3.13), then each
 * frame's previous; a frame owned by the C stack (3.12+) is the eval function's shim: it is
 * skipped and the frame emitted before it marked ENTRY; 3.11 marks ENTRY in the frame itself
 * (is_entry). lasti is (instr - (code + co_code_adaptive)) / 2, XPU_PY_LASTI_NONE below it.
 *
 * Why plain loads are safe. The thread is inside a C call (the launch API), so its own
 * frame chain is not changing: every frame on it belongs to an activation of the eval
 * function that is still on this thread's native stack, and no other thread writes another
 * thread's frames. It is the structure the interpreter itself walks for a traceback, and
 * faulthandler walks it the same way from a signal handler, with plain loads and a NULL check
 * (CPython's Python/traceback.c, dump_traceback). What could make a load fault is a layout
 * that is wrong for this interpreter (an offset that reads another field as a pointer). So:
 *   - walks read with py_mem__read (process_vm_readv on ourselves: a bad address is
 *     -EFAULT, not a fault) until one proves the layout (judge): two frames read, each with
 *     a code object of type PyCode_Type, the second found through the first's previous (or
 *     one frame that ends the chain); plain loads from then on. A first frame that cannot
 *     be read turns Python frames off for good (said once); tests/python/launch_inproc.py
 *     checks all three with offsets made wrong;
 *   - every pointer followed is non-NULL, 8-byte aligned and in the user half of the
 *     address space; each frame's code object must have PyCode_Type as its type (one load
 *     from an object that is being executed, so in cache); a frame that fails either ends
 *     the walk with XPU_PY_F_BAD_FRAME;
 *   - at most 2 * XPU_PY_MAX_FRAMES steps (shims take steps too), and a loop in the chain
 *     (a frame seen before, Floyd's check against the step half as far) ends it the same way.
 * Not done per launch: asking the kernel whether each frame's page is mapped. The frames
 * live in the thread's data stack chunks (heap mappings that come and go as the stack
 * grows), in generators and, for shims, on the C stack: no cheap bound covers them, and one
 * syscall per page (mincore, process_vm_readv) costs more than the whole walk (about 0.1 us
 * for 40 frames, bench/launch_python.py), tens of thousands of times a second; reading
 * /proc/self/maps costs far more.
 */
#include "python/self.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "python/internal.h"
#include "python/python.h"

#define WALK_STEPS (2 * XPU_PY_MAX_FRAMES)
#define USER_TOP 0x800000000000ull /* x86-64's user half: 47 bits */
#define LOW_PAGES 0x10000ull /* below vm.mmap_min_addr's default: never mapped */
/* The reads are inlined into a walk per way of reading (walk_plain, walk_checked): a plain
 * load is then one mov, not a call (a frame costs a quarter of what it did out of line). */
#define INLINE inline __attribute__((always_inline))

/* How frames are read: not yet known to read right (the kernel reads them), known, or
 * not at all. */
enum {
	READ_CHECKED = 0,
	READ_PLAIN = 1,
	READ_OFF = 2,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct py_layout layout;
static void *(*this_thread_state)(void); /* NULL: no Python frames in this process */
static int read_mode = READ_CHECKED;
static bool layout_given; /* py_self__use_layout: no detection */

static bool offsets_usable(const struct py_layout *l)
{
	if (l->frame_code == PY_OFF_NONE || l->frame_previous == PY_OFF_NONE ||
	    l->frame_instr == PY_OFF_NONE || l->frame_owner == PY_OFF_NONE ||
	    l->code_adaptive == PY_OFF_NONE || l->object_type == PY_OFF_NONE)
		return false;
	if (l->tstate_current_frame != PY_OFF_NONE)
		return true;
	return l->tstate_cframe != PY_OFF_NONE && l->cframe_current_frame != PY_OFF_NONE;
}

static void self_init(void)
{
	char why[PY_WHY_MAX] = "";
	void *sym, *lib;
	int err;

	err = layout_given ? 0 : py_layout__detect((__u32)getpid(), &layout, why, sizeof(why));
	if (err) {
		/* said only for a CPython this does not read; not Python (-ENOENT), or files
		 * and memory that could not be read: no Python frames either way */
		if (err == -ENOTSUP)
			fprintf(stderr, "xpusup: no Python launch stacks: %s\n", why);
		return;
	}
	if (!offsets_usable(&layout)) {
		fprintf(stderr, "xpusup: no Python launch stacks: %s has no frame layout\n",
			layout.path);
		return;
	}
	/* The program (python3 exports its API) or a libpython loaded globally; else the one
	 * the layout was found in, loaded locally by an embedding program. The handle stays
	 * open: the interpreter must stay mapped while its frames are read. */
	sym = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	if (!sym) {
		lib = dlopen(layout.path, RTLD_LAZY | RTLD_NOLOAD);
		sym = lib ? dlsym(lib, "PyGILState_GetThisThreadState") : NULL;
	}
	if (!sym) {
		fprintf(stderr,
			"xpusup: no Python launch stacks: no PyGILState_GetThisThreadState in %s\n",
			layout.path);
		return;
	}
	memcpy(&this_thread_state, &sym, sizeof(sym)); /* dlsym gives code as data */
}

static bool plausible(__u64 p)
{
	return p >= LOW_PAGES && p < USER_TOP && !(p & 7);
}

/* len bytes at ptr + off, ptr a pointer read from the interpreter's structures. */
static INLINE int load(bool plain, __u64 ptr, __u32 off, void *dst, size_t len)
{
	if (!plausible(ptr))
		return -EFAULT;
	if (plain) {
		memcpy(dst, (const void *)(uintptr_t)(ptr + off), len);
		return 0;
	}
	return py_mem__read((__u32)getpid(), ptr + off, dst, len);
}

static __u64 current_frame(bool plain, __u64 tstate)
{
	const struct py_layout *l = &layout;
	__u64 frame = 0, cframe = 0;

	if (l->tstate_current_frame != PY_OFF_NONE) {
		if (load(plain, tstate, l->tstate_current_frame, &frame, sizeof(frame)))
			return 0;
		return frame;
	}
	if (load(plain, tstate, l->tstate_cframe, &cframe, sizeof(cframe)) || !cframe ||
	    load(plain, cframe, l->cframe_current_frame, &frame, sizeof(frame)))
		return 0;
	return frame;
}

/* A frame's owner and the next frame out: 0, or -EFAULT. */
static INLINE int frame_link(bool plain, __u64 frame, __u8 *owner, __u64 *prev)
{
	if (load(plain, frame, layout.frame_owner, owner, 1) ||
	    load(plain, frame, layout.frame_previous, prev, sizeof(*prev)))
		return -EFAULT;
	return 0;
}

/* A frame that is not a shim, into *f: 0, or -EFAULT when it cannot be read or its code is
 * not a code object. */
static INLINE int frame_fill(bool plain, __u64 frame, struct xpu_py_frame *f)
{
	const struct py_layout *l = &layout;
	__u64 code, instr, type, base;
	__u8 entry = 0;

	if (load(plain, frame, l->frame_code, &code, sizeof(code)) ||
	    load(plain, frame, l->frame_instr, &instr, sizeof(instr)) ||
	    load(plain, code, l->object_type, &type, sizeof(type)) || type != l->code_type)
		return -EFAULT;
	if (l->frame_is_entry != PY_OFF_NONE &&
	    load(plain, frame, l->frame_is_entry, &entry, sizeof(entry)))
		return -EFAULT;
	base = code + l->code_adaptive;
	f->code = code;
	f->lasti = instr >= base && (instr - base) / 2 < XPU_PY_LASTI_NONE ?
			   (__u32)((instr - base) / 2) :
			   XPU_PY_LASTI_NONE;
	f->flags = entry ? XPU_PY_FRAME_F_ENTRY : 0;
	return 0;
}

/* The chain from frame, into out and its frames; returns n. */
static INLINE __u32 walk(bool plain, __u64 frame, struct xpu_py_stack *out)
{
	struct xpu_py_frame *f = (struct xpu_py_frame *)(out + 1);
	__u64 seen[WALK_STEPS / 2], prev;
	__u32 n = 0, i;
	__u16 flags = 0;
	__u8 owner;

	for (i = 0; frame; i++, frame = prev) {
		if (i == WALK_STEPS) {
			flags |= XPU_PY_F_TRUNCATED;
			break;
		}
		/* Floyd: a loop of length L entered after M steps has frame == seen[i / 2] at
		 * i = 2 * L * ceil(M / L), if the step bound has not ended the walk first */
		if (i && !(i & 1) && frame == seen[i / 2]) {
			flags |= XPU_PY_F_BAD_FRAME;
			break;
		}
		if (i < WALK_STEPS / 2)
			seen[i] = frame;
		if (frame_link(plain, frame, &owner, &prev)) {
			flags |= XPU_PY_F_BAD_FRAME;
			break;
		}
		/* 3.12+: the eval function's shim, on the C stack; the frame read just before it
		 * was the first one that activation ran */
		if (owner == layout.owner_cstack) {
			if (n)
				f[n - 1].flags |= XPU_PY_FRAME_F_ENTRY;
			continue;
		}
		if (n == XPU_PY_MAX_FRAMES) {
			flags |= XPU_PY_F_TRUNCATED;
			break;
		}
		if (frame_fill(plain, frame, &f[n])) {
			flags |= XPU_PY_F_BAD_FRAME;
			break;
		}
		n++;
	}
	out->eval_start = layout.eval_start;
	out->eval_end = layout.eval_end;
	out->version = layout.version;
	out->n = (__u16)n;
	out->flags = flags;
	return n;
}

/* The walk twice over, each with its reads inlined. */
static __u32 walk_plain(__u64 frame, struct xpu_py_stack *out)
{
	return walk(true, frame, out);
}

static __u32 walk_checked(__u64 frame, struct xpu_py_stack *out)
{
	return walk(false, frame, out);
}

/*
 * After a walk with checked reads: frames that read as the layout says (a frame whose code
 * is a code object, and the next frame out read through its previous) make plain loads
 * safe; a first frame that cannot be read means the layout is wrong, and frames are off.
 * Anything else (one frame, then one not read) decides nothing: the next walk checks again.
 * Only the first decision counts, whichever thread makes it.
 */
static void judge(__u32 n, __u16 flags)
{
	int checked = READ_CHECKED;
	char v[16];

	if (n >= 2 || (n == 1 && !(flags & XPU_PY_F_BAD_FRAME))) {
		__atomic_compare_exchange_n(&read_mode, &checked, READ_PLAIN, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	} else if (!n && flags & XPU_PY_F_BAD_FRAME &&
		   __atomic_compare_exchange_n(&read_mode, &checked, READ_OFF, false,
					       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		fprintf(stderr,
			"xpusup: no Python launch stacks: the frames of CPython %s in %s do not "
			"read as its layout says\n",
			py_version__str(layout.version, v, sizeof(v)), layout.path);
	}
}

int py_self__stack(void *dst, size_t cap)
{
	struct xpu_py_stack *out = dst;
	int mode;
	__u64 frame;
	void *ts;
	__u32 n;

	if (cap < PY_SELF_MAX)
		return -ENOSPC;
	pthread_once(&once, self_init);
	if (!this_thread_state)
		return 0;
	mode = __atomic_load_n(&read_mode, __ATOMIC_RELAXED);
	if (mode == READ_OFF)
		return 0;
	ts = this_thread_state();
	if (!ts)
		return 0;
	frame = current_frame(mode == READ_PLAIN, (__u64)(uintptr_t)ts);
	if (!frame)
		return 0; /* not in Python now */
	n = mode == READ_PLAIN ? walk_plain(frame, out) : walk_checked(frame, out);
	if (mode == READ_CHECKED)
		judge(n, out->flags);
	if (!n)
		return 0;
	return (int)xpu_py_stack__size(n);
}

void py_self__use_layout(const struct py_layout *l)
{
	layout = *l;
	layout_given = true;
}
