/* SPDX-License-Identifier: MIT */
/*
 * The CPU source's side of Python frames (docs/python.md): finds the CPython interpreter of
 * the processes it samples (python/python.h) and tells the BPF programs where its
 * structures are (the py_procs map). A process is looked at when the source starts and after
 * each exec: at once, and again a few times over the next seconds, because an interpreter in
 * a shared libpython is mapped by the dynamic loader only after the exec. A fork's child
 * inherits its parent's entry in the kernel.
 */
#ifndef XPUSUP_ACTORS_CPU_PYTHON_H
#define XPUSUP_ACTORS_CPU_PYTHON_H

#include <linux/types.h>
#include <stdbool.h>

struct bpf_map;
struct xpu_actor_slot;

#define CPU_PYTHON_PENDING_MAX 4096 /* processes waiting for a (next) look */

struct cpu_python_pending {
	__u32 pid;
	__u32 tries; /* looks so far */
	__u64 at_ns; /* the next one */
};

struct cpu_python_stats {
	__u64 processes; /* interpreters found and handed to the kernel side */
	__u64 unsupported; /* interpreters this cannot read (one line each on stderr) */
	__u64 pending_full; /* execs not looked at: too many waiting */
};

struct cpu_python {
	struct bpf_map *procs; /* py_procs */
	struct xpu_actor_slot *slot; /* where an unsupported interpreter is said (status) */
	struct cpu_python_pending pending[CPU_PYTHON_PENDING_MAX];
	__u32 n_pending;
	struct cpu_python_stats st;
};

void cpu_python__init(struct cpu_python *p, struct bpf_map *procs, struct xpu_actor_slot *slot);

/* pid exec'd (or exists at start): look at it now and, while nothing is found, later. */
void cpu_python__watch(struct cpu_python *p, __u32 pid, __u64 now_ns);

/* Every process in /proc, at start. */
void cpu_python__watch_all(struct cpu_python *p, __u64 now_ns);

/* The looks that are due. */
void cpu_python__tick(struct cpu_python *p, __u64 now_ns);

#endif /* XPUSUP_ACTORS_CPU_PYTHON_H */
