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
 *
 * Records are written complete and exactly sized in the layouts of include/xpusup/event.h,
 * built in per-CPU scratch buffers and copied into the BPF ring buffer with
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

/* Room for a sample: header, then up to XPU_MAX_FRAMES kernel and XPU_MAX_FRAMES user frames.
 * One more slot than needed, so the verifier sees the user stack's bound at any n_kernel. */
struct sample_buf {
	__u8 bytes[sizeof(struct xpu_cpu_sample) + 8 * (2 * XPU_MAX_FRAMES + 2)];
};

struct launch_buf {
	__u8 bytes[sizeof(struct xpu_launch) + 8 * (XPU_MAX_FRAMES + 1)];
};

struct proc_buf {
	__u8 bytes[sizeof(struct xpu_proc_exec) + XPU_PATH_MAX + 8];
};

/* One scratch map per program type: a cpu-clock sample can interrupt a tracepoint or uprobe
 * program on the same CPU, and must not write over the record that one is building. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_buf);
} sample_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct launch_buf);
} launch_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct proc_buf);
} proc_scratch SEC(".maps");

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
	__u32 tgid = id >> 32, zero = 0;
	struct xpu_cpu_sample *s;
	__u32 nk = 0, nu = 0;
	__u64 size;

	if (!wanted(tgid))
		return 0;
	s = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!s)
		return 0;
	/* frames() bounds nk, which the verifier needs before ips + nk is a destination */
	if (kernel_stacks)
		nk = frames(bpf_get_stack(ctx, s->ips, XPU_MAX_FRAMES * 8, 0));
	if (user_stacks)
		nu = frames(bpf_get_stack(ctx, &s->ips[nk], XPU_MAX_FRAMES * 8, BPF_F_USER_STACK));
	size = sizeof(*s) + 8 * (nk + nu);
	header(&s->hdr, XPU_REC_CPU_SAMPLE, 0, size, tgid, (__u32)id);
	s->cpu = bpf_get_smp_processor_id();
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
	__u32 tgid = id >> 32, zero = 0;
	struct xpu_launch *l;
	__u32 n;
	__u64 size;

	if (!wanted(tgid))
		return 0;
	l = bpf_map_lookup_elem(&launch_scratch, &zero);
	if (!l)
		return 0;
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
	size = sizeof(*l) + 8 * n;
	header(&l->hdr, XPU_REC_LAUNCH, 0, size, tgid, (__u32)id);
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
	struct xpu_proc_exec *e;
	__u8 one = 1;

	if (tgid == ptgid)
		return 0; /* a new thread, not a new process */
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
 * counted it out of signal->live, so live == 0 means the whole process is gone. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct xpu_proc_exit *x;

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (!wanted(tgid))
		return 0;
	x = (struct xpu_proc_exit *)proc_buf();
	if (!x)
		return 0;
	/* tid = pid: the process ended, whichever of its threads was the last */
	header(&x->hdr, XPU_REC_PROC_EXIT, 0, sizeof(*x), tgid, tgid);
	x->exit_code = BPF_CORE_READ(p, exit_code);
	x->reserved = 0;
	bpf_get_current_comm(x->comm, sizeof(x->comm));
	output_now(x, sizeof(*x));
	if (target_mode == PROFILE_TARGET_TREE)
		bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
