/* SPDX-License-Identifier: MIT */
/*
 * Layout of the session status block: the file `status` in the session directory, mapped
 * by the supervisor (writes actor state), by each actor (writes its heartbeat and counters)
 * and read-only by `xpusup status`. Fixed-width little-endian fields, no pointers.
 *
 * Writers per field are disjoint: the supervisor owns everything in a slot except
 * heartbeat_ns, n_counters and counters[], which only the actor running in the slot writes.
 * Every field is read and written with relaxed atomics: each value is exact, a set of values
 * is not one instant, which is all a status display needs.
 */
#ifndef XPUSUP_COMMON_STATUS_TYPES_H
#define XPUSUP_COMMON_STATUS_TYPES_H

#include <linux/types.h>

#define XPU_STATUS_MAGIC 0x3154415453555058ull /* "XPUSTAT1" */
#define XPU_STATUS_ABI 4 /* 4: 64 counters a slot (3: 32) */
#define XPU_STATUS_MAX_ACTORS 64
#define XPU_STATUS_MAX_COUNTERS 64
#define XPU_STATUS_NAME_LEN 32
#define XPU_STATUS_KIND_LEN 16
#define XPU_STATUS_COUNTER_NAME_LEN 24
#define XPU_STATUS_PROBLEM_LEN 120

enum xpu_actor_state {
	XPU_ACTOR_STOPPED = 0, /* not started yet, or stopped by `xpusup stop` */
	XPU_ACTOR_STARTING = 1, /* forked, waiting for its readiness line */
	XPU_ACTOR_RUNNING = 2, /* ready */
	XPU_ACTOR_STOPPING = 3, /* SIGTERM sent, waiting for it to exit */
	XPU_ACTOR_BACKOFF = 4, /* exited, waiting to be restarted */
	XPU_ACTOR_FAILED = 5, /* exited and will not be restarted (exit 100, temporary) */
	XPU_ACTOR_EXITED = 6, /* exited normally and will not be restarted (transient) */
};

enum xpu_session_state {
	XPU_SESSION_STARTING = 1,
	XPU_SESSION_RUNNING = 2,
	XPU_SESSION_STOPPING = 3,
};

struct xpu_status_counter {
	char name[XPU_STATUS_COUNTER_NAME_LEN]; /* written once, before n_counters covers it */
	__u64 value;
};

struct xpu_actor_slot {
	/* written by the supervisor */
	char name[XPU_STATUS_NAME_LEN];
	char kind[XPU_STATUS_KIND_LEN];
	__u32 role; /* enum conf_role */
	__u32 state; /* enum xpu_actor_state */
	__u32 pid; /* 0 when not running */
	__u32 restarts;
	__s32 last_exit_code; /* -1 when it has not exited, or was killed by a signal */
	__u32 last_signal; /* 0, or the signal that killed it */
	__u64 started_ns; /* CLOCK_MONOTONIC of the last fork */
	__u64 ready_ns; /* of the last readiness line; 0 while starting */
	__u64 last_exit_ns;
	__u32 shard;
	__u32 reserved0;
	/* written by the actor */
	__u64 heartbeat_ns; /* CLOCK_MONOTONIC, bumped every heartbeat_ms */
	__u32 n_counters;
	/* The actor's current problem, in words ("unable to write flame.folded: No space left
	 * on device"), empty when it has none. A seqlock: the writer makes problem_seq odd,
	 * writes the text, makes it even (release); a reader retries while it is odd or has
	 * changed under it. */
	__u32 problem_seq;
	__u64 problem_ns; /* CLOCK_MONOTONIC of the last change */
	char problem[XPU_STATUS_PROBLEM_LEN];
	struct xpu_status_counter counters[XPU_STATUS_MAX_COUNTERS];
};

struct xpu_status_hdr {
	__u64 magic;
	__u32 abi;
	__u32 n_actors;
	__u32 supervisor_pid;
	__u32 state; /* enum xpu_session_state */
	__u64 started_ns; /* CLOCK_MONOTONIC */
	__u64 started_realtime_ns; /* for display */
	__u32 shards;
	__u32 heartbeat_ms;
	char session[64];
	char config_path[256];
	__u8 reserved[16];
};

struct xpu_status_block {
	struct xpu_status_hdr hdr;
	struct xpu_actor_slot slots[XPU_STATUS_MAX_ACTORS];
};

_Static_assert(sizeof(struct xpu_status_counter) == 32, "status counter layout");
_Static_assert(sizeof(struct xpu_actor_slot) ==
		       104 + 16 + 8 + XPU_STATUS_PROBLEM_LEN + 32 * XPU_STATUS_MAX_COUNTERS,
	       "actor slot layout");
_Static_assert(sizeof(struct xpu_actor_slot) == 2296, "actor slot size (ABI 4)");
_Static_assert(sizeof(struct xpu_status_hdr) == 384, "status header layout");

#endif /* XPUSUP_COMMON_STATUS_TYPES_H */
