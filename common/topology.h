/* SPDX-License-Identifier: MIT */
/*
 * The topology of a session: where its rings and endpoints are, and which correlator shard a
 * process's records go to. Every source, the correlators, the sinks, the supervisor and
 * `xpusup status` must agree on these, so they are defined once, here.
 */
#ifndef XPUSUP_COMMON_TOPOLOGY_H
#define XPUSUP_COMMON_TOPOLOGY_H

#include <linux/types.h>

/* The ring from source NAME to correlator shard N: session-dir/ring.NAME.N. */
#define XPU_RING_NAME_FMT "ring.%s.%u"

/* The endpoint where sink NAME receives the correlators' wire batches (nng PULL; every
 * correlator shard pushes every batch to every sink). */
#define XPU_SINK_URL_FMT "ipc://%s/sink.%s.ipc"

/* A snapshot asked of sink NAME (`xpusup snapshot`, docs/timeline.md): the asker writes its
 * request file in the session directory (renamed into place), named by an id of its own, and
 * sends the sink SIGUSR1; the sink takes every request file there is (one snapshot at a time:
 * the others are refused) and answers each in its reply file, rewritten as the snapshot goes.
 *	snapshot.NAME.req.ID:    "PATH\n"          (PATH empty: the sink's own name)
 *	snapshot.NAME.reply.ID:  "STATE\nPATH\nWORDS\n"  STATE started, done or error */
#define XPU_SNAPSHOT_REQ_FMT "snapshot.%s.req."
#define XPU_SNAPSHOT_REPLY_FMT "snapshot.%s.reply.%s"
/* The asker's SIGUSR1 is sent with sigqueue() and this value: the sink tells it from a plain
 * `kill -USR1`, which asks for a snapshot under the sink's own name. Signals merge while one
 * is pending, so a request's signal may come after its file was taken with another's: it
 * asks for nothing then. */
#define XPU_SNAPSHOT_SIGVAL 0x58535053 /* "XSPS" */

/* The correlator shard that owns pid: every source routes a process's records there, so one
 * shard holds all of a process's join state. */
static inline __u32 xpu_shard_of(__u32 pid, __u32 shards)
{
	__u32 h = pid * 0x9e3779b1u; /* Fibonacci hashing: consecutive pids spread evenly */

	return shards ? (__u32)(((__u64)(h ^ (h >> 15)) * shards) >> 32) : 0;
}

#endif /* XPUSUP_COMMON_TOPOLOGY_H */
