/* SPDX-License-Identifier: MIT */
/*
 * Layout of the session status block: the file `status` in the session directory, created
 * and mapped by the supervisor, mapped by each actor, and read-only by `xpusup status` (and
 * bench/pipeline_bench). Fixed-width little-endian fields, no pointers.
 *
 * Who writes what, per slot:
 *   - the supervisor writes every field above "written by the actor", at any time;
 *   - the supervisor also resets heartbeat_ns and n_counters, but only before it forks the
 *     slot's next incarnation (supervisor.c spawn()), when no actor of the slot is running:
 *     each incarnation starts with no counters and a fresh heartbeat. It writes heartbeat_ns
 *     again when the readiness line arrives (the actor may be beating by then: both are
 *     "now", so either value is right);
 *   - the running actor writes heartbeat_ns, n_counters, counters[] and the problem text.
 *
 * Memory order: scalar fields are relaxed atomics (status_load/status_store): each value is
 * exact, a set of values is not one instant, which is all a status display needs. Two places
 * publish data that is not one scalar, and pair a release with an acquire:
 *   - counters: actor__counter (actors/actor.c) writes a counter's name and zeroes its value,
 *     then stores n_counters + 1 with release; the readers (cli/status_cmd.c, and the stats
 *     sink, which reports every actor's counters: actors/sink/stats_json.c) load n_counters
 *     with acquire and read only names below it. The names are plain bytes: a
 *     restarted actor rewrites them from slot 0 while a reader may still hold the previous
 *     incarnation's count, so a display taken across a restart can show a torn name once;
 *   - the problem text: a seqlock (status__set_problem / status__get_problem in status.c).
 */
#ifndef XPUSUP_COMMON_STATUS_TYPES_H
#define XPUSUP_COMMON_STATUS_TYPES_H

#include <linux/types.h>

#define XPU_STATUS_MAGIC 0x3154415453555058ull /* "XPUSTAT1" */
#define XPU_STATUS_ABI 5 /* 5: 80 counters a slot (4: 64, 3: 32) */
#define XPU_STATUS_MAX_ACTORS 64
#define XPU_STATUS_MAX_COUNTERS 80
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
	char name[XPU_STATUS_COUNTER_NAME_LEN]; /* by each incarnation, before n_counters covers it */
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
	/* written by the actor (heartbeat_ns and n_counters reset by the supervisor before a
	 * fork: see the top of this file) */
	__u64 heartbeat_ns; /* CLOCK_MONOTONIC, bumped every heartbeat_ms */
	__u32 n_counters; /* release by the actor, acquire by readers (counters[] below it) */
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
_Static_assert(sizeof(struct xpu_actor_slot) == 2808, "actor slot size (ABI 5)");
_Static_assert(sizeof(struct xpu_status_hdr) == 384, "status header layout");

#endif /* XPUSUP_COMMON_STATUS_TYPES_H */
