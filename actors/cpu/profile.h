/* SPDX-License-Identifier: MIT */
/*
 * Types shared by profile.bpf.c and the cpu actor (cpu.c): fixed-width, no libc.
 * The records the BPF programs emit are the ring records of include/xpusup/event.h
 * (CPU_SAMPLE, LAUNCH, PROC_EXEC, PROC_EXIT), complete and exactly sized, so the actor
 * validates and copies them into the shard rings without converting anything; the one
 * exception, PROFILE_REC_MAP below, the actor turns into a MODULE record.
 */
#ifndef XPUSUP_BPF_PROFILE_H
#define XPUSUP_BPF_PROFILE_H

#include "xpusup/event.h"

/* Which processes the programs record; set in .rodata before load. */
enum profile_target {
	PROFILE_TARGET_ALL = 0, /* every process but the idle task */
	PROFILE_TARGET_PIDS = 1, /* the pids in the targets map, not their children */
	PROFILE_TARGET_TREE = 2, /* the pids in targets and every process they fork, transitively */
	PROFILE_TARGET_CGROUP = 3, /* tasks in the cgroup of cgroup_map[0] or below it */
};

/* Indices of the per-CPU drop counters: why a record did not reach the BPF ring buffer. */
enum profile_drop {
	PROFILE_DROP_SAMPLE = 0, /* bpf_ringbuf_output failed for a CPU_SAMPLE */
	PROFILE_DROP_LAUNCH = 1,
	PROFILE_DROP_PROC = 2, /* PROC_EXEC / PROC_EXIT / PROFILE_REC_MAP */
	PROFILE_DROP_TARGETS = 3, /* the targets map was full: a forked child is not followed */
	PROFILE_DROP_MAX,
};

/*
 * PROFILE_REC_MAP: a target mapped a file executable (a dlopen, or ld.so at start), for the
 * actor only. A BPF program cannot name the file (bpf_d_path is not allowed on syscall
 * tracepoints), so the actor reads the name from /proc/PID/map_files/START-END and writes a
 * MODULE record (docs/cpu.md, "Libraries loaded later"). hdr.type is outside the ring kinds,
 * hdr.size is sizeof(struct profile_map).
 */
#define PROFILE_REC_MAP 0x7f01u

struct profile_map {
	struct xpu_rec hdr;
	__u64 start; /* where mmap put it */
	__u64 len; /* as mmap was asked: the actor rounds it up to whole pages */
	__u64 pgoff; /* the file offset mapped at start, in bytes */
};

/* The largest number of pids the targets map follows at once. */
#define PROFILE_MAX_TARGETS 65536

/*
 * Python frames (docs/python.md). The actor finds the CPython interpreter of a process
 * (python/python.h) and puts where its structures are into py_procs; the programs then read
 * the frames of the sampled (or launching) thread into a struct xpu_py_stack. A fork's child
 * gets its parent's entry in the kernel; an exec or exit removes it.
 */
#define PROFILE_MAX_PY_PROCS 16384
#define PROFILE_PY_MAX_THREADS 256 /* threads of an interpreter looked through for a tid */
#define PROFILE_PY_FRAME_READ 80 /* bytes of a frame read at once: every field is below */

struct profile_py_proc {
	__u64 runtime; /* _PyRuntime */
	__u64 eval_start, eval_end; /* _PyEval_EvalFrameDefault */
	__u32 version; /* PY_VERSION_HEX */
	__u16 runtime_interpreters_head; /* offsets, as struct py_layout has them */
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_native_thread_id;
	__u16 tstate_cframe; /* PROFILE_PY_NONE in 3.13 */
	__u16 cframe_current_frame;
	__u16 tstate_current_frame; /* PROFILE_PY_NONE before 3.13 */
	__u16 frame_code; /* the frame fields: below PROFILE_PY_FRAME_READ - 8 */
	__u16 frame_previous;
	__u16 frame_instr;
	__u16 frame_owner;
	__u16 frame_is_entry; /* PROFILE_PY_NONE after 3.11 */
	__u16 code_adaptive;
	__u8 owner_cstack; /* 0xff: none (3.11) */
	__u8 reserved[5];
};

#define PROFILE_PY_NONE 0xffffu

/* tid -> the thread state found for it (0: none when last looked, at checked_ns). */
struct profile_py_thread {
	__u64 tstate;
	__u64 checked_ns;
};

/* Indices of the per-CPU Python counters. */
enum profile_py_count {
	PROFILE_PY_STACKS = 0, /* records that got Python frames */
	PROFILE_PY_FRAMES = 1, /* frames read */
	PROFILE_PY_TRUNCATED = 2, /* stacks cut at XPU_PY_MAX_FRAMES */
	PROFILE_PY_BAD_FRAMES = 3, /* chains that ended at a frame that could not be read */
	PROFILE_PY_NO_THREAD = 4, /* threads of a Python process with no thread state */
	PROFILE_PY_THREAD_UNREAD = 5, /* thread lookups whose read of the thread list failed */
	PROFILE_PY_COUNT_MAX,
};

#endif /* XPUSUP_BPF_PROFILE_H */
