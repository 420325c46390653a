/* SPDX-License-Identifier: MIT */
/*
 * Types shared by profile.bpf.c and the cpu actor (cpu.c): fixed-width, no libc.
 * The records the BPF programs emit are the ring records of include/xpusup/event.h
 * (CPU_SAMPLE, LAUNCH, PROC_EXEC, PROC_EXIT), complete and exactly sized, so the actor
 * validates and copies them into the shard rings without converting anything.
 */
#ifndef XPUSUP_BPF_PROFILE_H
#define XPUSUP_BPF_PROFILE_H

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
	PROFILE_DROP_PROC = 2, /* PROC_EXEC / PROC_EXIT */
	PROFILE_DROP_TARGETS = 3, /* the targets map was full: a forked child is not followed */
	PROFILE_DROP_MAX,
};

/* The largest number of pids the targets map follows at once. */
#define PROFILE_MAX_TARGETS 65536

#endif /* XPUSUP_BPF_PROFILE_H */
