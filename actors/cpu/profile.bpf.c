// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * The CPU source's kernel side (actors/cpu/ loads it through profile.skel.h):
 *
 *   profile_sample   perf_event (cpu-clock or cycles) at frequency_hz on every CPU:
 *                    kernel and user stacks -> CPU_SAMPLE
 *   launch_marker    uprobe on xpusup_launch_marker(correlation_id, api_id), the marker the
 *                    CUPTI injection library calls on every launch API: user stack -> LAUNCH
 *   proc_exec/fork/exit  sched tracepoints -> PROC_EXEC (exec, or fork with XPU_PROC_F_FORK)
 *                    and PROC_EXIT; in tree mode fork adds the child to the targets
 *   exec_map_enter/exit  the mmap syscall's tracepoints: a file mapped executable ->
 *                    PROFILE_REC_MAP, which the actor names and sends on as MODULE
 *                    (optional: not attached where the kernel has no syscall tracepoints)
 *
 * User stacks come in one of two ways (stack_copy_bytes): a frame-pointer walk in the kernel
 * (bpf_get_stack), or, for code built without frame pointers, a copy of the user stack and
 * registers at the end of the record (XPU_STACK_F_COPY) that the correlator unwinds with the
 * CFI of the files the process maps.
 *
 * Python frames (python_frames): for a process the actor found a CPython interpreter in
 * (py_procs), the frames of the sampled or launching thread are read from its thread state
 * and written after the native frames (XPU_STACK_F_PY); the correlator names them and merges
 * them into the native stack (docs/python.md).
 *
 * Records are written complete and exactly sized in the layouts of include/xpusup/event.h,
 * built in a scratch buffer of the CPU and copied into the BPF ring buffer with
 * bpf_ringbuf_output (a reservation must have a constant size; ours vary with the stack).
 * Wake-ups are batched: the consumer is woken only when wakeup_bytes are waiting, and
 * otherwise finds the data on its next timed poll.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "xpusup/event.h"
#include "profile.h"

/* Set by the actor before load. */
const volatile __u32 target_mode = PROFILE_TARGET_ALL;
const volatile __u32 sample_weight = 0; /* ns one sample stands for */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;
const volatile __u64 wakeup_bytes = 256 * 1024;
/* dwarf mode: bytes of user stack copied into each sample and launch (a multiple of 8, at
 * most XPU_STACK_COPY_MAX); 0: fp mode, user stacks are walked with frame pointers */
const volatile __u32 stack_copy_bytes = 0;
/* read the Python frames of processes in py_procs */
const volatile bool python_frames = false;

#define PAGE_BYTES 4096u
#define PROT_EXEC_FLAG 0x4 /* the uapi's PROT_EXEC and MAP_ANONYMOUS (vmlinux.h has no */
#define MAP_ANON_FLAG 0x20 /* macros): the same on every architecture this builds for */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the actor (ringbuf_kb) */
} events SEC(".maps");

/* tgid -> 1: the processes recorded in pid and tree modes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFILE_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* Room for a stack copy after the frames: its header, XPU_STACK_COPY_MAX bytes and one page
 * more, so that the verifier sees every page read in bounds whatever the length so far (it
 * knows the offset is below XPU_STACK_COPY_MAX and the read at most a page, not their sum). */
#define COPY_ROOM (sizeof(struct xpu_stack_copy) + XPU_STACK_COPY_MAX + PAGE_BYTES)

/* Room for a sample: header, then up to XPU_MAX_FRAMES kernel and XPU_MAX_FRAMES user frames,
 * then a stack copy. One more frame slot than needed, so the verifier sees the user stack's
 * bound at any n_kernel. */
/* Room for a Python stack: its header and every frame. */
#define PY_ROOM (sizeof(struct xpu_py_stack) + sizeof(struct xpu_py_frame) * XPU_PY_MAX_FRAMES)

struct sample_buf {
	__u8 bytes[sizeof(struct xpu_cpu_sample) + 8 * (2 * XPU_MAX_FRAMES + 2) + PY_ROOM +
		   COPY_ROOM];
};

struct launch_buf {
	__u8 bytes[sizeof(struct xpu_launch) + 8 * (XPU_MAX_FRAMES + 1) + PY_ROOM + COPY_ROOM];
};

struct proc_buf {
	__u8 bytes[sizeof(struct xpu_proc_exec) + XPU_PATH_MAX + 8];
};

/*
 * One scratch map per program type: a cpu-clock sample can interrupt a tracepoint or uprobe
 * program on the same CPU, and must not write over the record that one is building.
 *
 * With room for a stack copy, a sample or launch buffer is over the 32 KiB a per-CPU map
 * value may have: these two are plain arrays with one buffer per CPU, indexed by
 * bpf_get_smp_processor_id(), and the actor sets max_entries to the possible CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the possible CPUs, set by the actor */
	__type(key, __u32);
	__type(value, struct sample_buf);
} sample_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the possible CPUs, set by the actor */
	__type(key, __u32);
	__type(value, struct launch_buf);
} launch_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct proc_buf);
} proc_scratch SEC(".maps");

/* The processes whose exit was reported, by (tgid, first thread's start time): two threads that
 * exit together may both see signal->live at 0 (proc_exit), and only the first to add the
 * process here reports it. 300 processes of 32 threads ending by exit_group gave 5 doubled
 * exit records before. The start time keeps a reused pid apart without a second update, so
 * the add (NOEXIST, decided under the bucket's lock) is the only step. LRU: an entry is only
 * needed for the moments the threads take to exit. */
struct exit_key {
	__u32 tgid;
	__u32 pad;
	__u64 start_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct exit_key);
	__type(value, __u8);
} exits_sent SEC(".maps");

/* tgid -> where its interpreter's structures are (the actor fills it, forks inherit it). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFILE_MAX_PY_PROCS);
	__type(key, __u32);
	__type(value, struct profile_py_proc);
} py_procs SEC(".maps");

/* tid -> its thread state: found once by looking through the interpreter's threads, then
 * checked at each use (the thread state's native_thread_id is still the tid). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct profile_py_thread);
} py_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_PY_COUNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} py_counts SEC(".maps");

/* A Python stack being read, before it is copied into its record, and the frame being read.
 * Two per CPU, as the scratch buffers: a sample may interrupt the launch uprobe's program. */
struct py_buf {
	struct xpu_py_stack hdr;
	struct xpu_py_frame f[XPU_PY_MAX_FRAMES];
	__u8 frame[PROFILE_PY_FRAME_READ];
};

enum { PY_SLOT_SAMPLE = 0, PY_SLOT_LAUNCH = 1 };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct py_buf);
} py_scratch SEC(".maps");

/* A thread with no thread state is looked for again after this long: a thread started by C
 * code may take one later (PyGILState_Ensure). */
#define PY_RECHECK_NS 1000000000ull

static __always_inline void count_drop(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &why);

	if (n)
		*n += 1; /* per-CPU value: no other writer */
}

/* In current's context: is this process one we record? */
static __always_inline bool wanted(__u32 tgid)
{
	switch (target_mode) {
	case PROFILE_TARGET_PIDS:
	case PROFILE_TARGET_TREE:
		return bpf_map_lookup_elem(&targets, &tgid) != NULL;
	case PROFILE_TARGET_CGROUP:
		return bpf_current_task_under_cgroup(&cgroup_map, 0) == 1;
	default:
		return tgid != 0; /* the idle task is not a process */
	}
}

static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP :
									       BPF_RB_NO_WAKEUP;
}

static __always_inline void output(void *rec, __u64 size, __u32 why)
{
	if (bpf_ringbuf_output(&events, rec, size, wakeup_flag()))
		count_drop(why);
}

/* Process events wake the actor at once: the correlator reads a new process's memory map
 * when it learns of it, and a short-lived process may be gone a drain_ms later. */
static __always_inline void output_now(void *rec, __u64 size)
{
	if (bpf_ringbuf_output(&events, rec, size, BPF_RB_FORCE_WAKEUP))
		count_drop(PROFILE_DROP_PROC);
}

/* Frames in the bytes bpf_get_stack returned (negative: an error, no frames). */
static __always_inline __u32 frames(long bytes)
{
	__u64 n = bytes > 0 ? (__u64)bytes / 8 : 0;

	return n < XPU_MAX_FRAMES ? n : XPU_MAX_FRAMES;
}

/*
 * dwarf mode: fills c with the user registers ip, sp, fp and the user stack from sp upward,
 * at most stack_copy_bytes. The stack is read a page at a time (first up to the next page
 * boundary): a read fails as a whole when any of its bytes is unmapped or not present, so the
 * first failing page is the top of the stack (or a page never touched), and what was read up
 * to there is kept. Returns the bytes the copy adds to the record, or 0 when nothing could be
 * read (the record then goes without it).
 */
static __always_inline __u32 stack_copy(struct xpu_stack_copy *c, __u64 ip, __u64 sp, __u64 fp)
{
	/* 64-bit, all of them: a 32-bit value is bounds-checked in one register and passed to
	 * the helper in another, whose bounds the verifier does not know */
	__u64 want = stack_copy_bytes, len = 0, chunk, off;
	__u8 *bytes = (__u8 *)(c + 1);
	__u32 i;

	if (want > XPU_STACK_COPY_MAX)
		want = XPU_STACK_COPY_MAX;
	chunk = PAGE_BYTES - (sp & (PAGE_BYTES - 1));
	for (i = 0; i <= XPU_STACK_COPY_MAX / PAGE_BYTES; i++) {
		if (len >= want)
			break;
		if (chunk > want - len)
			chunk = want - len;
		/* Both bounds hold already (len < want, chunk <= a page); they are what the
		 * verifier needs to see the read inside the buffer. barrier_var keeps clang from
		 * folding the test into the min above, where the verifier would lose it. */
		off = len & (XPU_STACK_COPY_MAX - 1);
		barrier_var(chunk);
		if (chunk > PAGE_BYTES)
			break;
		if (bpf_probe_read_user(bytes + off, chunk, (const void *)(sp + len)))
			break;
		len += chunk;
		chunk = PAGE_BYTES;
	}
	/* Whole words only: a misaligned sp leaves a partial word at the top, which no unwinder
	 * reads, and the record then needs no padding (no stale scratch bytes leave). */
	len &= ~7ull;
	if (!len)
		return 0;
	c->ip = ip;
	c->sp = sp;
	c->fp = fp;
	c->len = (__u32)len;
	c->reserved = 0;
	return sizeof(*c) + (__u32)len;
}

/* dwarf mode is x86-64 only (the actor never sets stack_copy_bytes elsewhere): the
 * correlator's unwinder knows its registers, and some arches have no PT_REGS_FP. */
#if defined(__TARGET_ARCH_x86)
/* stack_copy() at the user registers regs. */
static __always_inline __u32 regs_stack_copy(struct xpu_stack_copy *c, struct pt_regs *regs)
{
	return stack_copy(c, PT_REGS_IP(regs), PT_REGS_SP(regs), PT_REGS_FP(regs));
}

/* In a sample: the user registers of current wherever the sample hit it (in user or kernel
 * mode, they are the ones saved at its last entry into the kernel). Kernel threads have none;
 * nor do a process's kernel-side workers (io_uring), whose saved registers are not user
 * mode. Returns as stack_copy(). */
static __always_inline __u32 sample_stack_copy(struct xpu_stack_copy *c)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if (!task->mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || !(regs->cs & 3))
		return 0;
	return regs_stack_copy(c, regs);
}
#else
static __always_inline __u32 regs_stack_copy(struct xpu_stack_copy *c, struct pt_regs *regs)
{
	return 0;
}

static __always_inline __u32 sample_stack_copy(struct xpu_stack_copy *c)
{
	return 0;
}
#endif

static __always_inline void py_count(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_counts, &which);

	if (v)
		*v += n; /* per-CPU value: no other writer */
}

static __always_inline __u64 read_user_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* Looking through an interpreter's threads for the one of a tid (bpf_loop's context). */
struct py_find {
	__u64 ts; /* the thread state to look at next; 0: the list ended */
	__u64 found;
	__u64 tid;
	__u64 off_next, off_tid;
	__u32 failed; /* a read failed: the list was not seen to its end */
};

static long py_find_step(__u64 i, void *ctx)
{
	struct py_find *f = ctx;
	__u64 tid, next;

	if (!f->ts)
		return 1;
	if (bpf_probe_read_user(&tid, sizeof(tid), (const void *)(f->ts + f->off_tid))) {
		f->failed = 1;
		return 1;
	}
	if (tid == f->tid) {
		f->found = f->ts;
		return 1;
	}
	if (bpf_probe_read_user(&next, sizeof(next), (const void *)(f->ts + f->off_next))) {
		f->failed = 1;
		return 1;
	}
	f->ts = next;
	return 0;
}

/* The thread state of tid in the interpreter p, or 0 when it has none (a thread that never
 * ran Python, or one of another interpreter than the main one) or when the thread list could
 * not be read (*unread). "None" is remembered for PY_RECHECK_NS only when the walk saw the
 * whole list: a read that failed (a page not resident, which a probe cannot fault in) says
 * nothing, and remembering it took a second of Python frames from a thread that had them
 * (the launch check of tests/python_test.sh under load). */
static __always_inline __u64 py_thread_state(const struct profile_py_proc *p, __u32 tid,
					     bool *unread)
{
	struct profile_py_thread *t = bpf_map_lookup_elem(&py_threads, &tid), v;
	__u64 now = bpf_ktime_get_ns(), interp;
	struct py_find f = { .tid = tid,
			     .off_next = p->tstate_next,
			     .off_tid = p->tstate_native_thread_id };

	if (t && !t->tstate && now - t->checked_ns < PY_RECHECK_NS)
		return 0;
	if (t && t->tstate && read_user_u64(t->tstate + p->tstate_native_thread_id) == tid)
		return t->tstate;
	*unread = true;
	if (bpf_probe_read_user(&interp, sizeof(interp),
				(const void *)(p->runtime + p->runtime_interpreters_head)))
		return 0;
	if (interp && bpf_probe_read_user(&f.ts, sizeof(f.ts),
					  (const void *)(interp + p->interp_threads_head)))
		return 0;
	bpf_loop(PROFILE_PY_MAX_THREADS, py_find_step, &f, 0);
	if (f.failed && !f.found)
		return 0;
	*unread = false;
	v.tstate = f.found;
	v.checked_ns = now;
	bpf_map_update_elem(&py_threads, &tid, &v, BPF_ANY);
	return f.found;
}

/* Walking a thread's frames, innermost first (bpf_loop's context): scalars only. */
struct py_walk {
	__u64 frame; /* the next frame to read; 0: the chain ended */
	__u32 slot; /* py_scratch's buffer */
	__u32 n;
	__u32 flags; /* XPU_PY_F_* */
	__u32 owner_cstack;
	__u64 off_code, off_prev, off_instr, off_owner, off_entry, code_adaptive;
};

static long py_walk_step(__u64 i, void *ctx)
{
	struct py_walk *w = ctx;
	struct py_buf *b = bpf_map_lookup_elem(&py_scratch, &w->slot);
	__u64 code, prev, instr, base, oc = w->off_code, op = w->off_prev, oi = w->off_instr;
	__u64 oo = w->off_owner, oe = w->off_entry;
	struct xpu_py_frame *f;
	__u32 n = w->n;

	if (!b || !w->frame)
		return 1;
	if (bpf_probe_read_user(b->frame, sizeof(b->frame), (const void *)w->frame)) {
		w->flags |= XPU_PY_F_BAD_FRAME;
		return 1;
	}
	/* the actor checked that every offset is inside what was read; the verifier needs it
	 * said here */
	if (oc > PROFILE_PY_FRAME_READ - 8 || op > PROFILE_PY_FRAME_READ - 8 ||
	    oi > PROFILE_PY_FRAME_READ - 8 || oo > PROFILE_PY_FRAME_READ - 1)
		return 1;
	code = *(__u64 *)(b->frame + oc);
	prev = *(__u64 *)(b->frame + op);
	instr = *(__u64 *)(b->frame + oi);
	w->frame = prev;
	/* 3.12+: the eval function's own shim frame, on the C stack; the frame read just
	 * before it was the first one that activation ran */
	if (b->frame[oo] == w->owner_cstack) {
		if (n > 0 && n <= XPU_PY_MAX_FRAMES)
			b->f[(n - 1) & (XPU_PY_MAX_FRAMES - 1)].flags |= XPU_PY_FRAME_F_ENTRY;
		return 0;
	}
	if (n >= XPU_PY_MAX_FRAMES) {
		w->flags |= XPU_PY_F_TRUNCATED;
		return 1;
	}
	f = &b->f[n & (XPU_PY_MAX_FRAMES - 1)];
	f->code = code;
	base = code + w->code_adaptive;
	f->lasti = instr >= base && (instr - base) / 2 < XPU_PY_LASTI_NONE ?
			   (__u32)((instr - base) / 2) :
			   XPU_PY_LASTI_NONE;
	f->flags = oe < PROFILE_PY_FRAME_READ && b->frame[oe] ? XPU_PY_FRAME_F_ENTRY : 0;
	w->n = n + 1;
	return 0;
}

/*
 * In current's context: the Python frames of thread tid of process tgid, written as a
 * struct xpu_py_stack at dst (room for PY_ROOM bytes). Returns the bytes written, 0 when
 * there are none (not a Python process, a thread not running Python, python_frames off).
 */
static __always_inline __u32 py_stack(__u32 tgid, __u32 tid, __u32 slot, void *dst)
{
	struct profile_py_proc *p;
	struct py_walk w = { .slot = slot };
	struct py_buf *b;
	__u64 ts, cframe;
	bool unread = false;
	__u32 n, size;

	if (!python_frames)
		return 0;
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!p)
		return 0;
	b = bpf_map_lookup_elem(&py_scratch, &slot);
	if (!b)
		return 0;
	ts = py_thread_state(p, tid, &unread);
	if (!ts) {
		py_count(unread ? PROFILE_PY_THREAD_UNREAD : PROFILE_PY_NO_THREAD, 1);
		return 0;
	}
	if (p->tstate_current_frame != PROFILE_PY_NONE) {
		w.frame = read_user_u64(ts + p->tstate_current_frame);
	} else {
		cframe = read_user_u64(ts + p->tstate_cframe);
		w.frame = cframe ? read_user_u64(cframe + p->cframe_current_frame) : 0;
	}
	if (!w.frame)
		return 0; /* not in Python now */
	w.owner_cstack = p->owner_cstack;
	w.off_code = p->frame_code;
	w.off_prev = p->frame_previous;
	w.off_instr = p->frame_instr;
	w.off_owner = p->frame_owner;
	w.off_entry = p->frame_is_entry;
	w.code_adaptive = p->code_adaptive;
	/* shim frames take turns too: one per activation, fewer than the frames */
	bpf_loop(2 * XPU_PY_MAX_FRAMES, py_walk_step, &w, 0);
	n = w.n;
	if (!n || n > XPU_PY_MAX_FRAMES)
		return 0;
	b->hdr.eval_start = p->eval_start;
	b->hdr.eval_end = p->eval_end;
	b->hdr.version = p->version;
	b->hdr.n = (__u16)n;
	b->hdr.flags = (__u16)w.flags;
	size = sizeof(struct xpu_py_stack) + sizeof(struct xpu_py_frame) * n;
	if (size > PY_ROOM || bpf_probe_read_kernel(dst, size, b))
		return 0;
	py_count(PROFILE_PY_STACKS, 1);
	py_count(PROFILE_PY_FRAMES, n);
	if (w.flags & XPU_PY_F_TRUNCATED)
		py_count(PROFILE_PY_TRUNCATED, 1);
	if (w.flags & XPU_PY_F_BAD_FRAME)
		py_count(PROFILE_PY_BAD_FRAMES, 1);
	return size;
}

/* Fills the common header; the buffer is per-CPU scratch, so every field is written. */
static __always_inline void header(struct xpu_rec *h, __u16 type, __u16 flags, __u32 size,
				   __u32 pid, __u32 tid)
{
	h->type = type;
	h->flags = flags;
	h->size = size;
	h->ts_ns = bpf_ktime_get_ns(); /* CLOCK_MONOTONIC */
	h->pid = pid;
	h->tid = tid;
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, cpu = bpf_get_smp_processor_id();
	struct xpu_cpu_sample *s;
	__u32 nk = 0, nu = 0, py = 0, copy = 0;
	__u64 size;

	if (!wanted(tgid))
		return 0;
	s = bpf_map_lookup_elem(&sample_scratch, &cpu);
	if (!s)
		return 0;
	/* frames() bounds nk, which the verifier needs before ips + nk is a destination */
	if (kernel_stacks)
		nk = frames(bpf_get_stack(ctx, s->ips, XPU_MAX_FRAMES * 8, 0));
	if (user_stacks && !stack_copy_bytes)
		nu = frames(bpf_get_stack(ctx, &s->ips[nk], XPU_MAX_FRAMES * 8, BPF_F_USER_STACK));
	if (user_stacks)
		py = py_stack(tgid, (__u32)id, PY_SLOT_SAMPLE, &s->ips[nk + nu]);
	if (user_stacks && stack_copy_bytes)
		copy = sample_stack_copy((struct xpu_stack_copy *)((__u8 *)&s->ips[nk] + py));
	size = sizeof(*s) + 8 * (nk + nu) + py + copy;
	header(&s->hdr, XPU_REC_CPU_SAMPLE,
	       (copy ? XPU_STACK_F_COPY : 0) | (py ? XPU_STACK_F_PY : 0), size, tgid, (__u32)id);
	s->cpu = cpu;
	s->weight = sample_weight;
	s->n_kernel = nk;
	s->n_user = nu;
	s->reserved = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	if (size <= sizeof(struct sample_buf))
		output(s, size, PROFILE_DROP_SAMPLE);
	return 0;
}

/*
 * xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id): the uprobe fires on the
 * marker's first instruction, before it has made a frame. The frame-pointer walk starts at
 * the caller's saved frame and so yields the caller's caller next; the caller itself is only
 * the return address at the top of the stack. That address replaces the marker's own entry
 * address as the innermost frame, so a LAUNCH stack starts at the code that launched.
 */
SEC("uprobe") /* BPF_KPROBE reads the arguments of uprobes too */
int BPF_KPROBE(launch_marker, __u64 correlation_id, __u32 api_id)
{
	__u64 id = bpf_get_current_pid_tgid(), ret = 0;
	__u32 tgid = id >> 32, cpu = bpf_get_smp_processor_id();
	struct xpu_launch *l;
	__u32 n = 0, py = 0, copy = 0;
	__u64 size;

	if (!wanted(tgid))
		return 0;
	l = bpf_map_lookup_elem(&launch_scratch, &cpu);
	if (!l)
		return 0;
	/* dwarf mode: the marker's entry, with sp at the return address into the caller; the
	 * correlator's unwind drops the marker's own frame, as the walk below does */
	if (stack_copy_bytes) {
		py = py_stack(tgid, (__u32)id, PY_SLOT_LAUNCH, l->ips);
		copy = regs_stack_copy((struct xpu_stack_copy *)((__u8 *)l->ips + py), ctx);
		goto send;
	}
	n = frames(bpf_get_stack(ctx, l->ips, XPU_MAX_FRAMES * 8, BPF_F_USER_STACK));
#if defined(__TARGET_ARCH_x86)
	/* x86-64: call pushed the return address; it is the word at the stack pointer */
	if (n > 0 && !bpf_probe_read_user(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx)))
		l->ips[0] = ret;
#else
	/* arm64, riscv, powerpc, s390: the return address is in the link register */
	ret = PT_REGS_RET(ctx);
	if (n > 0 && ret)
		l->ips[0] = ret;
#endif
	py = py_stack(tgid, (__u32)id, PY_SLOT_LAUNCH, &l->ips[n]);
send:
	size = sizeof(*l) + 8 * n + py + copy;
	header(&l->hdr, XPU_REC_LAUNCH, (copy ? XPU_STACK_F_COPY : 0) | (py ? XPU_STACK_F_PY : 0),
	       size, tgid, (__u32)id);
	l->correlation_id = correlation_id;
	l->api_id = api_id;
	l->n_user = n;
	l->reserved = 0;
	if (size <= sizeof(struct launch_buf))
		output(l, size, PROFILE_DROP_LAUNCH);
	return 0;
}

static __always_inline struct xpu_proc_exec *proc_buf(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&proc_scratch, &zero);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), pid = BPF_CORE_READ(p, pid);
	struct xpu_proc_exec *e;
	const char *filename;
	long len;
	__u64 size;

	/* a new image: the actor looks for an interpreter in it again */
	bpf_map_delete_elem(&py_procs, &tgid);
	if (!wanted(tgid))
		return 0;
	e = proc_buf();
	if (!e)
		return 0;
	filename = BPF_CORE_READ(bprm, filename);
	/* The path's tail up to the next multiple of 8 is sent too: no stale bytes leave. */
	__builtin_memset(e->path, 0, XPU_PATH_MAX);
	len = bpf_probe_read_kernel_str(e->path, XPU_PATH_MAX, filename);
	len = len > 0 ? len - 1 : 0; /* without the NUL */
	len &= XPU_PATH_MAX - 1; /* already below it; says so to the verifier */
	size = (sizeof(*e) + len + 7) & ~7ull;
	header(&e->hdr, XPU_REC_PROC_EXEC, 0, size, tgid, pid);
	e->ppid = BPF_CORE_READ(p, real_parent, tgid);
	e->path_len = len;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (size <= sizeof(struct proc_buf))
		output_now(e, size);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), tgid = BPF_CORE_READ(child, tgid);
	struct profile_py_proc *py;
	struct xpu_proc_exec *e;
	__u8 one = 1;

	if (tgid == ptgid)
		return 0; /* a new thread, not a new process */
	/* the child runs the parent's image until it execs: the same interpreter, at the same
	 * addresses (a DataLoader worker, a multiprocessing fork) */
	py = bpf_map_lookup_elem(&py_procs, &ptgid);
	if (py)
		bpf_map_update_elem(&py_procs, &tgid, py, BPF_ANY);
	if (target_mode == PROFILE_TARGET_TREE && bpf_map_lookup_elem(&targets, &ptgid) &&
	    bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY))
		count_drop(PROFILE_DROP_TARGETS);
	/* current is the parent, so the cgroup test holds for the child too; in tree mode the
	 * child is a target now when its parent is; in pid mode only the listed pids are */
	if (!wanted(tgid))
		return 0;
	e = proc_buf();
	if (!e)
		return 0;
	header(&e->hdr, XPU_REC_PROC_EXEC, XPU_PROC_F_FORK, sizeof(*e), tgid,
	       BPF_CORE_READ(child, pid));
	e->ppid = ptgid;
	e->path_len = 0;
	BPF_CORE_READ_STR_INTO(&e->comm, child, comm);
	output_now(e, sizeof(*e));
	return 0;
}

/* Runs in the exiting task. Only the last thread of a process reports: by then do_exit has
 * counted it out of signal->live, so live == 0 means the whole process is gone. Threads that
 * exit together may all see 0 by the time they get here: exits_sent keeps one of them. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct xpu_proc_exit *x;
	struct exit_key key;
	__u8 one = 1;

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&py_procs, &tgid);
	if (!wanted(tgid))
		return 0;
	key.tgid = tgid;
	key.pad = 0;
	key.start_ns = BPF_CORE_READ(p, group_leader, start_time);
	/* of two threads, one adds, the other finds it there: another thread reported it */
	if (bpf_map_update_elem(&exits_sent, &key, &one, BPF_NOEXIST))
		return 0;
	x = (struct xpu_proc_exit *)proc_buf();
	if (!x)
		return 0;
	/* tid = pid: the process ended, whichever of its threads was the last */
	header(&x->hdr, XPU_REC_PROC_EXIT, 0, sizeof(*x), tgid, tgid);
	x->exit_code = BPF_CORE_READ(p, exit_code);
	x->reserved = 0;
	/* The process's name, its first thread's: not the name of the thread that happens to
	 * end it (a CUDA program's last is often CUDA's "cuda-EvtHandlr", which the sinks then
	 * gave to the main thread). The leader is a zombie by now at worst: its comm is there. */
	BPF_CORE_READ_STR_INTO(&x->comm, p, group_leader, comm);
	output_now(x, sizeof(*x));
	if (target_mode == PROFILE_TARGET_TREE)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

/*
 * A library mapped after the correlator read the process's maps would have its frames
 * [unknown] until the next read, which a miss may only do every 100 ms: the first launches
 * through a library that ctypes, or CUDA's lazy loading, has just opened. ld.so maps a
 * library's code with its own mmap(PROT_EXEC, MAP_FIXED, fd): the entry keeps the length and
 * offset, the exit (with the address) sends PROFILE_REC_MAP. Batched like samples: it only
 * has to come before the samples taken in the mapping, which the ring's order guarantees.
 * Syscall tracepoints, because this kernel kind has neither kprobes nor fentry; raw ones
 * (below) where tracefs is not mounted.
 */
struct {
	/* LRU: an entry can be left behind (a call whose entry was seen before exec_map_exit
	 * was attached, then the actor stopped), and must not fill the map for good */
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* pid_tgid */
	__type(value, struct profile_map);
} map_calls SEC(".maps");

/* mmap(addr, len, prot, flags, fd, off) of a file, executable: the calls followed. */
static __always_inline bool exec_file_map(__u64 prot, __u64 flags, __u64 fd)
{
	return prot & PROT_EXEC_FLAG && !(flags & MAP_ANON_FLAG) && (int)fd >= 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int exec_map_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profile_map m;

	if (!exec_file_map(ctx->args[2], ctx->args[3], ctx->args[4]) || !wanted(id >> 32))
		return 0;
	header(&m.hdr, PROFILE_REC_MAP, 0, sizeof(m), id >> 32, (__u32)id);
	m.start = 0;
	m.len = ctx->args[1];
	m.pgoff = ctx->args[5];
	bpf_map_update_elem(&map_calls, &id, &m, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int exec_map_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profile_map *m = bpf_map_lookup_elem(&map_calls, &id);

	if (!m)
		return 0;
	/* an error is -4095..-1 */
	if ((unsigned long)ctx->ret < (unsigned long)-4095) {
		m->start = (__u64)ctx->ret;
		output(m, sizeof(*m), PROFILE_DROP_PROC);
	}
	bpf_map_delete_elem(&map_calls, &id);
	return 0;
}

/*
 * The same through the raw syscall tracepoint, for a system where tracefs is not mounted
 * (libbpf finds a syscall's own tracepoint by its id in tracefs, a raw one by name, in BTF).
 * It runs at the end of every system call of every process, so the syscall number is the
 * first thing looked at; one program at the exit only, since the registers saved at the entry
 * still hold the call's arguments then (on arm64 all but the first, which mmap's check does
 * not need): half the cost of an entry and an exit program (docs/performance.md).
 */
#if defined(__TARGET_ARCH_x86)
#define MMAP_NR 9
#define SYSCALL_NR(r) ((r)->orig_ax)
#define SYSCALL_ARGS(r, a) \
	(a[1] = (r)->si, a[2] = (r)->dx, a[3] = (r)->r10, a[4] = (r)->r8, a[5] = (r)->r9)
#elif defined(__TARGET_ARCH_arm64)
#define MMAP_NR 222
#define SYSCALL_NR(r) ((r)->syscallno)
#define SYSCALL_ARGS(r, a)                                                                   \
	(a[1] = (r)->regs[1], a[2] = (r)->regs[2], a[3] = (r)->regs[3], a[4] = (r)->regs[4], \
	 a[5] = (r)->regs[5])
#endif

SEC("tp_btf/sys_exit")
int BPF_PROG(exec_map_raw, struct pt_regs *regs, long ret)
{
#ifdef MMAP_NR
	struct profile_map m;
	__u64 id, a[6];

	if (SYSCALL_NR(regs) != MMAP_NR || (unsigned long)ret >= (unsigned long)-4095)
		return 0;
	SYSCALL_ARGS(regs, a);
	id = bpf_get_current_pid_tgid();
	if (!exec_file_map(a[2], a[3], a[4]) || !wanted(id >> 32))
		return 0;
	header(&m.hdr, PROFILE_REC_MAP, 0, sizeof(m), id >> 32, (__u32)id);
	m.start = (__u64)ret;
	m.len = a[1];
	m.pgoff = a[5];
	output(&m, sizeof(m), PROFILE_DROP_PROC);
#endif
	return 0; /* other architectures: never attached (cpu.c) */
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
