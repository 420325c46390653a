/* SPDX-License-Identifier: MIT */
/*
 * xpusup event model: the records that travel through the shared-memory rings.
 *
 * Every record is a fixed-width little-endian layout that starts with struct xpu_rec.
 * Records are 8-byte aligned and their size (header included) is a multiple of 8.
 * No pointers and no size_t: a record written by one process (or by a BPF program, or
 * read back from a replay file) means the same thing to every reader on the host.
 *
 * Variable-length kinds (stacks, names, paths) carry their counts in the payload; the
 * record size must then equal the size computed from those counts, rounded up to 8.
 * xpu_rec__validate() checks exactly that, so a reader that has validated a record may
 * index its arrays with the counts it holds.
 *
 * Long names (kernel names, range names, counter names) travel once as XPU_REC_STRING
 * records; other records refer to them by a 64-bit id that is unique per (pid, producer).
 */
#ifndef XPUSUP_EVENT_H
#define XPUSUP_EVENT_H

/* BPF programs include vmlinux.h first, which already defines the __u* types. */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#if !defined(__bpf__)
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "xpusup records are little-endian; a big-endian port needs byte swapping here"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a layout below changes incompatibly; rings and replay files carry it.
 * 2: GPU_MEMCPY and GPU_MEMSET carry their CUDA graph and node (88 bytes, were 72). */
#define XPU_EVENT_ABI 2

#define XPU_REC_ALIGN 8u

enum xpu_rec_type {
	XPU_REC_INVALID = 0, /* zeroed memory is never a record */
	XPU_REC_PAD = 1, /* ring-internal: fills the tail of the buffer before a wrap */
	XPU_REC_CPU_SAMPLE = 2,
	XPU_REC_LAUNCH = 3,
	XPU_REC_CUDA_API = 4,
	XPU_REC_GPU_KERNEL = 5,
	XPU_REC_GPU_MEMCPY = 6,
	XPU_REC_GPU_MEMSET = 7,
	XPU_REC_GPU_SYNC = 8,
	XPU_REC_GPU_MEMORY = 9,
	XPU_REC_PMU_COUNTER = 10,
	XPU_REC_RANGE = 11,
	XPU_REC_PROC_EXEC = 12,
	XPU_REC_PROC_EXIT = 13,
	XPU_REC_CLOCK_SYNC = 14,
	XPU_REC_STRING = 15,
	XPU_REC_LOSS = 16,
	XPU_REC_MODULE = 17,
	XPU_REC_TYPE_MAX, /* one past the last kind */
};

/* Kinds from CPU_SAMPLE up to, not including, this one can be events (the wire carries
 * them); MODULE and later ones are for the correlator alone. */
#define XPU_REC_EVENT_END XPU_REC_MODULE

/* The header of every record. ts_ns is CLOCK_MONOTONIC unless a kind says otherwise. */
struct xpu_rec {
	__u16 type; /* enum xpu_rec_type */
	__u16 flags; /* kind-specific XPU_*_F_* bits */
	__u32 size; /* whole record, header included, multiple of 8 */
	__u64 ts_ns;
	__u32 pid; /* thread group id */
	__u32 tid;
};

/* Ring padding: only type and size are meaningful; may be as small as 8 bytes. */
struct xpu_pad {
	__u16 type;
	__u16 flags;
	__u32 size;
};

#define XPU_COMM_LEN 16
#define XPU_MAX_FRAMES 127 /* the kernel's PERF_MAX_STACK_DEPTH default */

/* CPU_SAMPLE: a stack sample. ips[] holds n_kernel kernel frames, then n_user user frames,
 * innermost first. weight is the sample's period in ns (or 1 for plain counts). */
struct xpu_cpu_sample {
	struct xpu_rec hdr;
	__u32 cpu;
	__u32 weight;
	__u16 n_kernel;
	__u16 n_user;
	__u32 reserved;
	char comm[XPU_COMM_LEN];
	__u64 ips[];
};

/*
 * LAUNCH: user stack captured at a CUDA launch, copy or memset API call (the CUPTI library's
 * in-process walk, or the launch-marker uprobe).
 *
 * api_id is the CUPTI callback id of that API, with XPU_LAUNCH_API_DRIVER set for a driver
 * API (cuLaunchKernel, cuMemcpyAsync...) and clear for a runtime one (cudaLaunchKernel...).
 *
 * CUDA graphs: every kernel of one graph launch shares the launch's correlation id, and the
 * stack that matters is the one that built the node. The CUPTI library calls the marker when
 * a graph node is created too (directly, or by stream capture), with correlation_id =
 * XPU_LAUNCH_GRAPH_NODE | node id and api_id = XPU_LAUNCH_API_GRAPH_NODE. A GPU_KERNEL with
 * XPU_KERNEL_F_GRAPH carries in graph_node_id the id of the node as created (the library
 * maps an instantiated graph's cloned nodes back to their originals), so the correlator can
 * attribute it to that creation stack; without one, the graph launch's stack is the best
 * available and the join says it is approximate. A GPU_MEMCPY or GPU_MEMSET of a graph's
 * copy or memset node is the same with XPU_COPY_F_GRAPH.
 */
#define XPU_LAUNCH_GRAPH_NODE (1ull << 63)
#define XPU_LAUNCH_API_DRIVER (1u << 16)
#define XPU_LAUNCH_API_GRAPH_NODE (1u << 17)

struct xpu_launch {
	struct xpu_rec hdr;
	__u64 correlation_id;
	__u32 api_id; /* CUPTI callback id of the launch, copy or memset API */
	__u16 n_user;
	__u16 reserved;
	__u64 ips[];
};

/*
 * A copy of the user stack, for unwinding without frame pointers (docs/unwind.md).
 *
 * A CPU_SAMPLE or LAUNCH with XPU_STACK_F_COPY in hdr.flags ends, after its ips[], with a
 * struct xpu_stack_copy and then len bytes of the thread's user stack from sp upward, padded
 * to a multiple of 8. ip, sp and fp are the user registers where the stack was taken (x86-64:
 * rip, rsp, rbp). The record's n_user frames, if any, come from a frame-pointer walk and are
 * what a reader that does not unwind shows; the correlator unwinds the copy with the CFI of
 * the files the process maps, replaces the user frames with the result and clears the flag,
 * so nothing downstream of it ever sees a copy.
 *
 * The copy is untrusted data like the rest of the record: an unwinder reads only inside
 * [sp, sp + len) and treats every word there as a guess.
 */
#define XPU_STACK_F_COPY (1u << 8)
#define XPU_STACK_COPY_MAX 32768u /* bytes of stack at most */

struct xpu_stack_copy {
	__u64 ip;
	__u64 sp;
	__u64 fp;
	__u32 len; /* bytes of stack that follow, at most XPU_STACK_COPY_MAX */
	__u32 reserved;
	/* __u8 bytes[len], then padding to 8 */
};

/*
 * Python frames (docs/python.md): the interpreter frames a CPython thread was executing,
 * read by the CPU source's BPF program at the sample or the launch-marker hit.
 *
 * A CPU_SAMPLE or LAUNCH with XPU_STACK_F_PY in hdr.flags has, right after its ips[] (and
 * before a stack copy, when it has one too), a struct xpu_py_stack and its n frames. The
 * correlator merges them into the user frames (each native activation of the interpreter's
 * eval function, ips in [eval_start, eval_end), is replaced by the Python frames it ran),
 * writes them as Python frame addresses (common/pyframe.h) and clears the flag, so nothing
 * downstream of it ever sees this block.
 *
 * Like a stack copy it is untrusted: code addresses are looked up in the process's memory
 * and checked there before anything is named after them.
 */
#define XPU_STACK_F_PY (1u << 9)
#define XPU_PY_MAX_FRAMES 128u /* Python frames per record at most */

struct xpu_py_stack {
	__u64 eval_start; /* the interpreter's _PyEval_EvalFrameDefault, [start, end) */
	__u64 eval_end;
	__u32 version; /* the interpreter's PY_VERSION_HEX (0x030b02f0: 3.11.2 final) */
	__u16 n; /* frames that follow, innermost first, at most XPU_PY_MAX_FRAMES */
	__u16 flags; /* XPU_PY_F_* */
};

#define XPU_PY_F_TRUNCATED (1u << 0) /* the chain went on past n frames */
#define XPU_PY_F_BAD_FRAME (1u << 1) /* the chain ended at a frame that could not be read */

struct xpu_py_frame {
	__u64 code; /* the code object's address in the process */
	__u32 lasti; /* the instruction it was at, in code units; XPU_PY_LASTI_NONE: unknown */
	__u32 flags; /* XPU_PY_FRAME_F_* */
};

#define XPU_PY_LASTI_NONE 0xffffffffu
/* The outermost Python frame of one activation of the eval function: the next frame out (if
 * any) runs in another activation, further out on the native stack. */
#define XPU_PY_FRAME_F_ENTRY (1u << 0)

enum xpu_api_domain {
	XPU_API_RUNTIME = 1,
	XPU_API_DRIVER = 2,
};

/* CUDA_API flags: the CUPTI library called the launch marker for this call, so a LAUNCH
 * record with the caller's stack is on its way (from the cpu source, later than this record
 * as a rule): the correlator may hold the call's GPU work a while for it. */
#define XPU_API_F_LAUNCH_MARKED (1u << 0)

/* CUDA_API: one runtime or driver API call; hdr.ts_ns is the enter time. */
struct xpu_cuda_api {
	struct xpu_rec hdr;
	__u64 end_ns;
	__u64 correlation_id;
	__u32 api_id;
	__u16 domain; /* enum xpu_api_domain */
	__u16 reserved;
	__u32 result; /* CUresult / cudaError_t */
	__u32 reserved2;
};

#define XPU_KERNEL_F_GRAPH (1u << 0) /* launched as part of a CUDA graph */
#define XPU_KERNEL_F_COOPERATIVE (1u << 1)

/* GPU_KERNEL: one kernel execution; hdr.ts_ns == start_ns. */
struct xpu_gpu_kernel {
	struct xpu_rec hdr;
	__u64 start_ns;
	__u64 end_ns;
	__u64 correlation_id;
	__u64 graph_node_id;
	__u64 name_id; /* STRING id of the (mangled) kernel name */
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u32 graph_id;
	__s32 grid[3];
	__s32 block[3];
	__u32 static_smem;
	__u32 dynamic_smem;
	__u16 registers;
	__u16 reserved;
	__u32 reserved2;
};

enum xpu_copy_kind {
	XPU_COPY_UNKNOWN = 0,
	XPU_COPY_HTOD = 1,
	XPU_COPY_DTOH = 2,
	XPU_COPY_HTOA = 3,
	XPU_COPY_ATOH = 4,
	XPU_COPY_ATOA = 5,
	XPU_COPY_ATOD = 6,
	XPU_COPY_DTOA = 7,
	XPU_COPY_DTOD = 8,
	XPU_COPY_HTOH = 9,
	XPU_COPY_PTOP = 10,
};

/* GPU_MEMCPY and GPU_MEMSET flags */
#define XPU_COPY_F_ASYNC (1u << 0)
#define XPU_COPY_F_GRAPH (1u << 1) /* a node of a CUDA graph: graph_id, graph_node_id */

/* GPU_MEMCPY: one copy; hdr.ts_ns == start_ns. */
struct xpu_gpu_memcpy {
	struct xpu_rec hdr;
	__u64 start_ns;
	__u64 end_ns;
	__u64 correlation_id;
	__u64 bytes;
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u8 copy_kind; /* enum xpu_copy_kind */
	__u8 src_kind; /* CUpti_ActivityMemoryKind */
	__u8 dst_kind;
	__u8 reserved;
	__u64 graph_node_id; /* XPU_COPY_F_GRAPH: the node as created (as GPU_KERNEL's) */
	__u32 graph_id;
	__u32 reserved2;
};

/* GPU_MEMSET: one memset; hdr.ts_ns == start_ns. */
struct xpu_gpu_memset {
	struct xpu_rec hdr;
	__u64 start_ns;
	__u64 end_ns;
	__u64 correlation_id;
	__u64 bytes;
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u32 value;
	__u64 graph_node_id; /* XPU_COPY_F_GRAPH: the node as created (as GPU_KERNEL's) */
	__u32 graph_id;
	__u32 reserved;
};

enum xpu_sync_kind {
	XPU_SYNC_UNKNOWN = 0,
	XPU_SYNC_EVENT = 1,
	XPU_SYNC_STREAM_WAIT_EVENT = 2,
	XPU_SYNC_STREAM = 3,
	XPU_SYNC_CONTEXT = 4,
};

/* GPU_SYNC: a synchronisation the CPU waited on; hdr.ts_ns == start_ns. */
struct xpu_gpu_sync {
	struct xpu_rec hdr;
	__u64 start_ns;
	__u64 end_ns;
	__u64 correlation_id;
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u32 sync_kind; /* enum xpu_sync_kind */
};

enum xpu_memory_op {
	XPU_MEM_ALLOC = 1,
	XPU_MEM_FREE = 2,
};

/* GPU_MEMORY: a device allocation or release at hdr.ts_ns. */
struct xpu_gpu_memory {
	struct xpu_rec hdr;
	__u64 address;
	__u64 bytes;
	__u64 correlation_id;
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u8 op; /* enum xpu_memory_op */
	__u8 memory_kind;
	__u16 reserved;
};

enum xpu_pmu_scope {
	XPU_PMU_SCOPE_CPU = 1, /* system-wide counter of one CPU: cpu is set, hdr.pid is 0 */
	XPU_PMU_SCOPE_PROCESS = 2, /* counter of hdr.pid's process tree (inherit) */
	XPU_PMU_SCOPE_THREAD = 3, /* counter of hdr.tid */
};

#define XPU_PMU_NO_CPU 0xffffffffu

/* PMU_COUNTER: one periodic reading; time_* come from PERF_FORMAT_TOTAL_TIME_*. */
struct xpu_pmu_counter {
	struct xpu_rec hdr;
	__u64 counter_id; /* STRING id of the event name */
	__u64 value; /* running total, unscaled */
	__u64 delta; /* since the previous reading, unscaled */
	__u64 time_enabled;
	__u64 time_running;
	__u32 cpu; /* or XPU_PMU_NO_CPU */
	__u32 scope; /* enum xpu_pmu_scope */
};

enum xpu_range_phase {
	XPU_RANGE_PUSH = 1, /* thread-nested begin */
	XPU_RANGE_POP = 2, /* thread-nested end */
	XPU_RANGE_START = 3, /* start/end range (may cross threads), matched by range_id */
	XPU_RANGE_END = 4,
	XPU_RANGE_MARK = 5, /* instantaneous */
};

#define XPU_RANGE_F_NVTX (1u << 0) /* came from NVTX through CUPTI, not the annotate API */

#define XPU_RANGE_NAME_MAX 1024

/* RANGE: user or NVTX range event. The name is inline (name_len bytes, no NUL) or, when
 * name_len is 0, the STRING record name_id. */
struct xpu_range {
	struct xpu_rec hdr;
	__u64 range_id;
	__u64 name_id;
	__u64 domain_id;
	__u32 phase; /* enum xpu_range_phase */
	__u32 name_len;
	char name[];
};

#define XPU_PROC_F_FORK (1u << 0) /* PROC_EXEC: a fork, not an exec; path is empty */
#define XPU_PATH_MAX 1024

/* PROC_EXEC: a process started (exec, or fork with XPU_PROC_F_FORK). path is not NUL-terminated. */
struct xpu_proc_exec {
	struct xpu_rec hdr;
	__u32 ppid;
	__u32 path_len;
	char comm[XPU_COMM_LEN];
	char path[];
};

/*
 * MODULE: a file mapped executable in process hdr.pid, as the process itself reports it (the
 * CUPTI library's loaded images, sent before the first launch stack that may return into
 * them and again when the loader's set of images changes) or as the CPU source saw it mapped
 * (docs/cpu.md, "Libraries loaded later"). The correlator adds it to what it knows of the
 * process's maps, so the frames of a process that exited before /proc/PID/maps could be
 * read, or of a library mapped since the last read, still get names (docs/symbolize.md).
 * The vDSO has no file: its path is "[vdso]" (as /proc/PID/maps names it), dev and ino 0.
 * Never an event: the correlator consumes it. path is not NUL-terminated.
 */
struct xpu_module {
	struct xpu_rec hdr;
	__u64 start, end; /* [start, end): the mapping in the process, page-aligned */
	__u64 pgoff; /* the file offset mapped at start */
	__u64 dev; /* the file's st_dev (Linux's encoding, as stat gives it); 0: unknown */
	__u64 ino; /* its st_ino; 0: unknown */
	__u32 path_len; /* 1..XPU_PATH_MAX bytes of an absolute path, or "[vdso]" */
	__u32 reserved;
	char path[];
};

/* PROC_EXIT: a process (hdr.pid) or, with tid != pid, a thread ended. */
struct xpu_proc_exit {
	struct xpu_rec hdr;
	__s32 exit_code; /* wait status as the kernel reports it */
	__u32 reserved;
	char comm[XPU_COMM_LEN]; /* a process's: its first thread's, not the last one's */
};

enum xpu_clock_id {
	XPU_CLOCK_MONOTONIC = 1,
	XPU_CLOCK_CUPTI = 2, /* CUPTI's own timestamp when no callback is registered */
	XPU_CLOCK_REALTIME = 3,
	XPU_CLOCK_REMOTE = 4,
};

/* CLOCK_SYNC: a bracketed paired reading: ref_before <= (other read) <= ref_after on the
 * reference clock. The tighter the bracket, the better the calibration sample. */
struct xpu_clock_sync {
	struct xpu_rec hdr;
	__u32 ref_clock; /* enum xpu_clock_id, usually MONOTONIC */
	__u32 other_clock;
	__u64 ref_before_ns;
	__u64 other_ns;
	__u64 ref_after_ns;
};

enum xpu_string_kind {
	XPU_STR_KERNEL = 1,
	XPU_STR_RANGE = 2,
	XPU_STR_DOMAIN = 3,
	XPU_STR_COUNTER = 4,
	XPU_STR_OTHER = 5,
};

#define XPU_STRING_MAX 16384 /* long C++ template kernel names fit */

/* STRING: id -> text, sent once per producer before the first record that uses id. */
struct xpu_string {
	struct xpu_rec hdr;
	__u64 id;
	__u32 kind; /* enum xpu_string_kind */
	__u32 len; /* bytes of text, no NUL */
	char text[];
};

enum xpu_loss_cause {
	XPU_LOSS_RING_FULL = 1, /* the ring had no room */
	XPU_LOSS_TOO_BIG = 2, /* larger than the ring's max_record */
	XPU_LOSS_BPF_RESERVE = 3, /* bpf_ringbuf_reserve failed in the kernel */
	XPU_LOSS_CUPTI = 4, /* CUPTI dropped activity records */
	XPU_LOSS_EVICTED = 5, /* correlator evicted pending state (max_pending) */
	XPU_LOSS_CORRUPT = 6, /* a consumer skipped corrupt input */
	XPU_LOSS_CAUSE_MAX,
};

/* LOSS: count records were dropped for cause between first_ns and hdr.ts_ns. */
struct xpu_loss {
	struct xpu_rec hdr;
	__u32 cause; /* enum xpu_loss_cause */
	__u32 reserved;
	__u64 count;
	__u64 first_ns;
};

#define XPU_ROUND_UP8(n) (((n) + 7u) & ~7u)

/*
 * Replay files (kind = replay): a 16-byte header, then records back to back exactly as they
 * travel in a ring (each 8-byte aligned, its size in its header). docs/events.md.
 */
#define XPU_REPLAY_MAGIC 0x314c504552555058ull /* "XPUREPL1" in little-endian byte order */

struct xpu_replay_hdr {
	__u64 magic;
	__u32 event_abi; /* XPU_EVENT_ABI of the records */
	__u32 reserved;
};

#if !defined(__bpf__)

#define XPU_STATIC_LAYOUT(type, size_) _Static_assert(sizeof(type) == (size_), #type " size")
#define XPU_STATIC_OFFSET(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #type "." #field " offset")

XPU_STATIC_LAYOUT(struct xpu_rec, 24);
XPU_STATIC_OFFSET(struct xpu_rec, size, 4);
XPU_STATIC_OFFSET(struct xpu_rec, ts_ns, 8);
XPU_STATIC_OFFSET(struct xpu_rec, pid, 16);
XPU_STATIC_OFFSET(struct xpu_rec, tid, 20);
XPU_STATIC_LAYOUT(struct xpu_pad, 8);
XPU_STATIC_LAYOUT(struct xpu_cpu_sample, 56);
XPU_STATIC_OFFSET(struct xpu_cpu_sample, n_kernel, 32);
XPU_STATIC_OFFSET(struct xpu_cpu_sample, comm, 40);
XPU_STATIC_OFFSET(struct xpu_cpu_sample, ips, 56);
XPU_STATIC_LAYOUT(struct xpu_launch, 40);
XPU_STATIC_LAYOUT(struct xpu_stack_copy, 32);
XPU_STATIC_LAYOUT(struct xpu_py_stack, 24);
XPU_STATIC_LAYOUT(struct xpu_py_frame, 16);
XPU_STATIC_OFFSET(struct xpu_launch, api_id, 32);
XPU_STATIC_OFFSET(struct xpu_launch, ips, 40);
XPU_STATIC_LAYOUT(struct xpu_cuda_api, 56);
XPU_STATIC_OFFSET(struct xpu_cuda_api, api_id, 40);
XPU_STATIC_LAYOUT(struct xpu_gpu_kernel, 120);
XPU_STATIC_OFFSET(struct xpu_gpu_kernel, name_id, 56);
XPU_STATIC_OFFSET(struct xpu_gpu_kernel, device_id, 64);
XPU_STATIC_OFFSET(struct xpu_gpu_kernel, grid, 80);
XPU_STATIC_OFFSET(struct xpu_gpu_kernel, block, 92);
XPU_STATIC_OFFSET(struct xpu_gpu_kernel, registers, 112);
XPU_STATIC_LAYOUT(struct xpu_gpu_memcpy, 88);
XPU_STATIC_OFFSET(struct xpu_gpu_memcpy, copy_kind, 68);
XPU_STATIC_OFFSET(struct xpu_gpu_memcpy, graph_node_id, 72);
XPU_STATIC_OFFSET(struct xpu_gpu_memcpy, graph_id, 80);
XPU_STATIC_LAYOUT(struct xpu_gpu_memset, 88);
XPU_STATIC_OFFSET(struct xpu_gpu_memset, graph_node_id, 72);
XPU_STATIC_OFFSET(struct xpu_gpu_memset, graph_id, 80);
XPU_STATIC_LAYOUT(struct xpu_gpu_sync, 64);
XPU_STATIC_LAYOUT(struct xpu_gpu_memory, 64);
XPU_STATIC_OFFSET(struct xpu_gpu_memory, op, 60);
XPU_STATIC_LAYOUT(struct xpu_pmu_counter, 72);
XPU_STATIC_OFFSET(struct xpu_pmu_counter, cpu, 64);
XPU_STATIC_LAYOUT(struct xpu_range, 56);
XPU_STATIC_OFFSET(struct xpu_range, name, 56);
XPU_STATIC_LAYOUT(struct xpu_proc_exec, 48);
XPU_STATIC_OFFSET(struct xpu_proc_exec, path, 48);
XPU_STATIC_LAYOUT(struct xpu_proc_exit, 48);
XPU_STATIC_LAYOUT(struct xpu_clock_sync, 56);
XPU_STATIC_LAYOUT(struct xpu_string, 40);
XPU_STATIC_OFFSET(struct xpu_string, text, 40);
XPU_STATIC_LAYOUT(struct xpu_loss, 48);
XPU_STATIC_LAYOUT(struct xpu_module, 72);
XPU_STATIC_OFFSET(struct xpu_module, path, 72);
XPU_STATIC_LAYOUT(struct xpu_replay_hdr, 16);

/* Sizes of the variable-length kinds; all are multiples of 8. */
static inline __u32 xpu_cpu_sample__size(__u32 n_kernel, __u32 n_user)
{
	return (__u32)sizeof(struct xpu_cpu_sample) + 8u * (n_kernel + n_user);
}

static inline __u32 xpu_launch__size(__u32 n_user)
{
	return (__u32)sizeof(struct xpu_launch) + 8u * n_user;
}

/* Bytes a stack copy of len bytes adds to a CPU_SAMPLE or LAUNCH (XPU_STACK_F_COPY). */
static inline __u32 xpu_stack_copy__size(__u32 len)
{
	return (__u32)sizeof(struct xpu_stack_copy) + XPU_ROUND_UP8(len);
}

/* Bytes a Python stack of n frames adds to a CPU_SAMPLE or LAUNCH (XPU_STACK_F_PY). */
static inline __u32 xpu_py_stack__size(__u32 n)
{
	return (__u32)sizeof(struct xpu_py_stack) + (__u32)sizeof(struct xpu_py_frame) * n;
}

/* Where a CPU_SAMPLE's or LAUNCH's frames end (and its Python stack, then its copy, start);
 * 0 for another kind. */
static inline __u32 xpu_stack__ips_end(const struct xpu_rec *h)
{
	if (h->type == XPU_REC_CPU_SAMPLE) {
		const struct xpu_cpu_sample *s = (const struct xpu_cpu_sample *)h;

		return xpu_cpu_sample__size(s->n_kernel, s->n_user);
	}
	if (h->type == XPU_REC_LAUNCH)
		return xpu_launch__size(((const struct xpu_launch *)h)->n_user);
	return 0;
}

/* The Python stack of a record whose size was validated with its flags, or NULL. */
static inline const struct xpu_py_stack *xpu_py_stack__of(const struct xpu_rec *h)
{
	__u32 base = xpu_stack__ips_end(h);

	if (!(h->flags & XPU_STACK_F_PY) || !base)
		return (const struct xpu_py_stack *)0;
	return (const struct xpu_py_stack *)((const __u8 *)h + base);
}

/* The copy of a record whose size was validated with its flags, or NULL without one. */
static inline const struct xpu_stack_copy *xpu_stack_copy__of(const struct xpu_rec *h)
{
	const struct xpu_py_stack *py = xpu_py_stack__of(h);
	__u32 base = xpu_stack__ips_end(h);

	if (!(h->flags & XPU_STACK_F_COPY) || !base)
		return (const struct xpu_stack_copy *)0;
	if (py)
		base += xpu_py_stack__size(py->n);
	return (const struct xpu_stack_copy *)((const __u8 *)h + base);
}

static inline __u32 xpu_range__size(__u32 name_len)
{
	return XPU_ROUND_UP8((__u32)sizeof(struct xpu_range) + name_len);
}

static inline __u32 xpu_proc_exec__size(__u32 path_len)
{
	return XPU_ROUND_UP8((__u32)sizeof(struct xpu_proc_exec) + path_len);
}

static inline __u32 xpu_module__size(__u32 path_len)
{
	return XPU_ROUND_UP8((__u32)sizeof(struct xpu_module) + path_len);
}

/* A MODULE's path: absolute, or the vDSO's "[vdso]" (len bytes, checked by the caller). */
static inline int xpu_module__path_ok(const char *path, __u32 len)
{
	static const char vdso[] = "[vdso]";
	__u32 i;

	if (len && path[0] == '/')
		return 1;
	if (len != sizeof(vdso) - 1)
		return 0;
	for (i = 0; i < len; i++)
		if (path[i] != vdso[i])
			return 0;
	return 1;
}

static inline __u32 xpu_string__size(__u32 len)
{
	return XPU_ROUND_UP8((__u32)sizeof(struct xpu_string) + len);
}

/* The largest valid record of any kind: a CPU_SAMPLE with every frame and the largest stack
 * copy (common/event.c asserts that it is the largest). */
#define XPU_REC_MAX_SIZE \
	(56u + 8u * 2u * XPU_MAX_FRAMES + 24u + 16u * XPU_PY_MAX_FRAMES + 32u + XPU_STACK_COPY_MAX)

/*
 * xpu_rec__init - fill in the common header of a record of size bytes at rec.
 * Zeroes the payload so reserved fields and padding never leak stale bytes.
 */
void xpu_rec__init(void *rec, __u16 type, __u32 size, __u64 ts_ns, __u32 pid, __u32 tid);

/*
 * Builders for the variable-length kinds. Each writes a complete record into buf (cap
 * bytes, 8-byte aligned) and returns its size, or -ENOSPC when cap is too small, or
 * -EINVAL when a count or length is over its kind's limit. Text is copied without a NUL.
 */
int xpu_string__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u64 id,
		      __u32 kind, const char *text, size_t len);
int xpu_range__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 phase,
		     __u64 range_id, __u64 name_id, __u64 domain_id, const char *name, size_t len);
int xpu_proc_exec__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 ppid,
			 const char *comm, const char *path, size_t path_len, __u16 flags);
int xpu_cpu_sample__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 cpu,
			  __u32 weight, const char *comm, const __u64 *kernel_ips, __u32 n_kernel,
			  const __u64 *user_ips, __u32 n_user);
int xpu_launch__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid,
		      __u64 correlation_id, __u32 api_id, const __u64 *user_ips, __u32 n_user);
int xpu_loss__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 cause, __u64 count,
		    __u64 first_ns);
int xpu_module__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u64 start,
		      __u64 end, __u64 pgoff, __u64 dev, __u64 ino, const char *path,
		      size_t path_len);

/* Size bounds per kind, indexed by type (defined in common/event.c). Fixed kinds have
 * min_size == max_size; unknown kinds are all zero. */
struct xpu_rec_bounds {
	__u32 min_size;
	__u32 max_size;
};

extern const struct xpu_rec_bounds xpu_rec_bounds[XPU_REC_TYPE_MAX];

/*
 * xpu_rec__validate - check that len bytes at buf are one well-formed record.
 *
 * Checks, in order: len covers a header, hdr.size == len, size is a multiple of 8, the type
 * is known and not PAD, size is within the kind's bounds, and every count or length inside
 * the payload agrees exactly with size. A record that passes may be read with the counts it
 * holds without further bounds checks. buf must be 8-byte aligned and stable (a private
 * copy, never memory another process is still writing).
 *
 * Returns 0, or -EBADMSG for a malformed record (which a caller counts and skips).
 * xpu_rec__check is the same check, inline, for the hot paths (the ring consumer).
 */
int xpu_rec__validate(const void *buf, size_t len);

/* The size a record must have when its stack copy starts at base; 0 (never a size) when the
 * copy's header does not fit or its len is out of bounds. */
static inline __u64 xpu_rec__copy_size(const void *buf, __u32 size, __u64 base)
{
	const struct xpu_stack_copy *c = (const struct xpu_stack_copy *)((const __u8 *)buf + base);

	if (base + sizeof(*c) > size || c->len > XPU_STACK_COPY_MAX)
		return 0;
	return base + xpu_stack_copy__size(c->len);
}

/* The size of a CPU_SAMPLE or LAUNCH whose frames end at base, with what its flags say
 * follows (a Python stack, a copy); 0 (never a size) when a part does not fit or is out of
 * bounds. */
static inline __u64 xpu_rec__stack_size(const void *buf, __u32 size, __u16 flags, __u64 base)
{
	if (flags & XPU_STACK_F_PY) {
		const struct xpu_py_stack *p =
			(const struct xpu_py_stack *)((const __u8 *)buf + base);

		if (base + sizeof(*p) > size || p->n > XPU_PY_MAX_FRAMES)
			return 0;
		base += xpu_py_stack__size(p->n);
	}
	if (flags & XPU_STACK_F_COPY)
		return xpu_rec__copy_size(buf, size, base);
	return base;
}

static inline int xpu_rec__check(const void *buf, size_t len)
{
	const struct xpu_rec *hdr = (const struct xpu_rec *)buf;
	__u32 size, type;
	__u64 want;

	if (len < sizeof(*hdr) || len > 0xffffffffu)
		return -EBADMSG;
	size = hdr->size;
	type = hdr->type;
	if (size != len || size % XPU_REC_ALIGN || type == XPU_REC_PAD ||
	    type >= XPU_REC_TYPE_MAX || size < xpu_rec_bounds[type].min_size ||
	    size > xpu_rec_bounds[type].max_size)
		return -EBADMSG;
	switch (type) {
	case XPU_REC_CPU_SAMPLE: {
		const struct xpu_cpu_sample *s = (const struct xpu_cpu_sample *)buf;

		if (s->n_kernel > XPU_MAX_FRAMES || s->n_user > XPU_MAX_FRAMES)
			return -EBADMSG;
		want = xpu_rec__stack_size(buf, size, hdr->flags,
					   xpu_cpu_sample__size(s->n_kernel, s->n_user));
		break;
	}
	case XPU_REC_LAUNCH: {
		const struct xpu_launch *l = (const struct xpu_launch *)buf;

		if (l->n_user > XPU_MAX_FRAMES)
			return -EBADMSG;
		want = xpu_rec__stack_size(buf, size, hdr->flags, xpu_launch__size(l->n_user));
		break;
	}
	case XPU_REC_RANGE: {
		const struct xpu_range *r = (const struct xpu_range *)buf;

		if (r->name_len > XPU_RANGE_NAME_MAX || r->phase < XPU_RANGE_PUSH ||
		    r->phase > XPU_RANGE_MARK)
			return -EBADMSG;
		want = xpu_range__size(r->name_len);
		break;
	}
	case XPU_REC_PROC_EXEC: {
		const struct xpu_proc_exec *e = (const struct xpu_proc_exec *)buf;

		if (e->path_len > XPU_PATH_MAX)
			return -EBADMSG;
		want = xpu_proc_exec__size(e->path_len);
		break;
	}
	case XPU_REC_STRING: {
		const struct xpu_string *s = (const struct xpu_string *)buf;

		if (s->len > XPU_STRING_MAX)
			return -EBADMSG;
		want = xpu_string__size(s->len);
		break;
	}
	case XPU_REC_LOSS: {
		const struct xpu_loss *l = (const struct xpu_loss *)buf;

		if (l->cause == 0 || l->cause >= XPU_LOSS_CAUSE_MAX)
			return -EBADMSG;
		want = size;
		break;
	}
	case XPU_REC_MODULE: {
		const struct xpu_module *m = (const struct xpu_module *)buf;

		if (!m->path_len || m->path_len > XPU_PATH_MAX || m->start >= m->end)
			return -EBADMSG;
		want = xpu_module__size(m->path_len);
		if (want == size && !xpu_module__path_ok(m->path, m->path_len))
			return -EBADMSG;
		break;
	}
	default:
		want = size; /* fixed kinds: the bounds check already pinned the size */
		break;
	}
	return want == size ? 0 : -EBADMSG;
}

/* Smallest and largest valid size of a kind; 0 for an unknown kind. */
__u32 xpu_rec_type__min_size(__u32 type);
__u32 xpu_rec_type__max_size(__u32 type);

/* Stable lowercase name of a kind ("gpu_kernel"), or "unknown". */
const char *xpu_rec_type__name(__u32 type);

/* Stable lowercase name of a loss cause ("ring_full"), or "unknown". */
const char *xpu_loss_cause__name(__u32 cause);

#endif /* !__bpf__ */

#ifdef __cplusplus
}
#endif

#endif /* XPUSUP_EVENT_H */
