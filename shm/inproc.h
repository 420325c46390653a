/* SPDX-License-Identifier: MIT */
/*
 * The in-process hand-off (docs/inproc.md): how a library loaded into a profiled program (the
 * annotate library, the CUPTI injection library) gets a ring into the session.
 *
 *	client (profiled process)		actor (kind = inproc)
 *	connect($XPUSUP_SESSION_DIR/inproc.sock)  accept
 *	send struct xpu_inproc_hello		creates a memfd ring, formats it, seals its size
 *	recv struct xpu_inproc_reply + fd	sends the reply, the fd in SCM_RIGHTS
 *	ring__open_fd(fd, RING_PRODUCER)	drains the ring into the shard rings
 *	... records ...
 *	exit: the socket closes			EOF: drains what is left, frees the ring
 *
 * One connection and one ring per (process, library): the ring has exactly one producer, so
 * a library serialises its own threads (the annotate library batches per thread and writes
 * the batch under a lock). The connection stays open for the process's life; its EOF is how
 * the actor learns that the producer is gone.
 *
 * Messages are fixed-width little-endian structs, one per SOCK_SEQPACKET datagram.
 */
#ifndef XPUSUP_SHM_INPROC_H
#define XPUSUP_SHM_INPROC_H

#include <linux/types.h>
#include <stddef.h>

struct ring;

#define XPU_INPROC_ENV "XPUSUP_SESSION_DIR" /* absolute path of the session directory */
#define XPU_INPROC_SOCK "inproc.sock" /* in that directory, mode 0600 */
#define XPU_INPROC_MAGIC 0x3143525050555058ull /* "XPUPPRC1" in little-endian byte order */
#define XPU_INPROC_VERSION 1u
#define XPU_INPROC_TIMEOUT_MS 200 /* connect + handshake, in total, on the client side */

enum xpu_inproc_kind {
	XPU_INPROC_ANNOTATE = 1, /* libxpusup_annotate */
	XPU_INPROC_CUPTI = 2, /* libxpusup_cupti.so, the CUPTI injection library (docs/cupti.md) */
	XPU_INPROC_KIND_MAX,
};

/* Client -> actor, first and only message. pid is the client's getpid(); the actor trusts
 * the kernel's SO_PEERCRED instead and refuses a hello whose pid disagrees. */
struct xpu_inproc_hello {
	__u64 magic; /* XPU_INPROC_MAGIC */
	__u32 version; /* XPU_INPROC_VERSION */
	__u32 pid;
	__u32 kind; /* enum xpu_inproc_kind */
	__u32 reserved; /* 0 */
	char comm[16]; /* the process's name, NUL-padded */
};

/* Actor -> client. status 0 comes with the ring's memfd in SCM_RIGHTS; any other status (a
 * positive errno: EPROTO bad hello, EPERM pid mismatch, EMFILE max_processes reached, ENOMEM
 * no ring) comes without an fd, and the actor closes the connection. */
struct xpu_inproc_reply {
	__u64 magic;
	__u32 version;
	__u32 status;
	__u64 capacity; /* ring bytes, a power of two */
	__u32 max_record;
	__u32 options; /* XPU_INPROC_OPT_SET | kind-specific bits; 0: the library's defaults */
};

/* reply.options. OPT_SET says the actor chose them; without it (0, an older actor) the
 * library uses its own defaults. For XPU_INPROC_CUPTI the low bits are the activities to
 * enable (XPU_CUPTI_ACT_*), and the launch bits how to record each launch's stack
 * (launch_stacks): OPT_LAUNCH_INPROC walks it in the library, OPT_LAUNCH_STACKS calls the
 * launch marker for the cpu source's uprobe (the name is older than the choice); neither:
 * no launch stacks. A library that knows only OPT_LAUNCH_STACKS records none when told
 * OPT_LAUNCH_INPROC. */
#define XPU_INPROC_OPT_SET (1u << 31)
#define XPU_CUPTI_ACT_KERNEL (1u << 0) /* concurrent kernel */
#define XPU_CUPTI_ACT_MEMCPY (1u << 1) /* memcpy and peer-to-peer memcpy */
#define XPU_CUPTI_ACT_MEMSET (1u << 2)
#define XPU_CUPTI_ACT_SYNC (1u << 3) /* synchronization */
#define XPU_CUPTI_ACT_RUNTIME (1u << 4) /* runtime API records */
#define XPU_CUPTI_ACT_DRIVER (1u << 5) /* driver API records */
#define XPU_CUPTI_ACT_MEMORY (1u << 6) /* device memory allocation and release */
#define XPU_CUPTI_ACT_OVERHEAD (1u << 7) /* CUPTI's and the driver's own overhead */
#define XPU_CUPTI_ACT_EXTERNAL (1u << 8) /* external correlation (framework op ids) */
#define XPU_CUPTI_ACT_NVTX (1u << 9) /* NVTX ranges through CUPTI's callbacks */
#define XPU_CUPTI_ACT_ALL ((1u << 10) - 1)
#define XPU_CUPTI_OPT_LAUNCH_STACKS (1u << 16) /* launch_stacks = marker */
#define XPU_CUPTI_OPT_LAUNCH_INPROC (1u << 17) /* launch_stacks = inproc (wins over the marker) */
#define XPU_CUPTI_OPT_API_QUERIES (1u << 18) /* api_queries = yes: record state queries too */
#define XPU_CUPTI_OPT_DEFAULTS (XPU_CUPTI_ACT_ALL | XPU_CUPTI_OPT_LAUNCH_INPROC)

/*
 * Client -> actor, after the hand-off, as often as the library likes (the CUPTI library: at
 * each flush, every 100 ms, and at exit): the library's own counters, each a running total
 * since it started, so a message that is lost (a full socket buffer: it is sent without
 * waiting) costs nothing but freshness. The actor shows them in `xpusup status` as its
 * counters lib_*, the sum over the processes, those gone included. A value below the one
 * before it is a bad message: counted (bad_messages), not taken.
 */
#define XPU_INPROC_MSG_STATS 1u
#define XPU_INPROC_STATS_N 12

/* values[] of a CUPTI library (docs/inproc.md, "Protocol", item 7) */
enum xpu_cupti_stat {
	XPU_CUPTI_STAT_BUFFERS_ASKED, /* activity buffers CUPTI asked for */
	XPU_CUPTI_STAT_BUFFERS_MADE, /* ... that the pool had to make (not reused) */
	XPU_CUPTI_STAT_BUFFERS_TWICE, /* buffers given back twice, or not the pool's */
	XPU_CUPTI_STAT_STACKS, /* launch stacks captured in process (LAUNCH records) */
	XPU_CUPTI_STAT_STACKS_TRUNCATED, /* ... whose walk ended before the outermost frame */
	XPU_CUPTI_STAT_STACKS_FAILED, /* captures that produced no record */
	XPU_CUPTI_STAT_RULE_MISSES, /* unwind-rule look-ups the thread's cache did not answer */
	XPU_CUPTI_STAT_PY_STACKS, /* launch stacks with Python frames */
	XPU_CUPTI_STAT_CALLBACKS_REFUSED, /* launch and copy API callbacks CUPTI refused */
	XPU_CUPTI_STAT_BUFFERS_DIRTY, /* kept buffers written after they came back */
	XPU_CUPTI_STAT_BUFFERS_REFUSED, /* buffer requests refused (too many out) */
	XPU_CUPTI_STAT_N,
};

struct xpu_inproc_stats {
	__u64 magic; /* XPU_INPROC_MAGIC */
	__u32 version; /* XPU_INPROC_VERSION */
	__u32 type; /* XPU_INPROC_MSG_STATS */
	__u64 values[XPU_INPROC_STATS_N]; /* by the client's kind (enum xpu_cupti_stat); rest 0 */
};

_Static_assert(XPU_CUPTI_STAT_N <= XPU_INPROC_STATS_N, "the CUPTI counters fit the message");
_Static_assert(sizeof(struct xpu_inproc_stats) == 16 + 8 * XPU_INPROC_STATS_N,
	       "xpu_inproc_stats size");
_Static_assert(sizeof(struct xpu_inproc_hello) == 40, "xpu_inproc_hello size");
_Static_assert(sizeof(struct xpu_inproc_reply) == 32, "xpu_inproc_reply size");

/*
 * inproc__connect - the client side: find the session, say hello, map the ring it is given.
 *
 * Never takes longer than timeout_ms in all (non-blocking socket and poll). On success *sock
 * is the connected socket (keep it open for the life of the process: closing it tells the
 * actor the producer is gone) and *ring the producer handle; both are the caller's; and
 * *options (when options is not NULL) is the reply's options (XPU_INPROC_OPT_*).
 *
 * Returns 0, or -errno with a one-line reason in why (why_len bytes): -ENOENT when the
 * environment names no session or it has no socket, -ETIMEDOUT when the actor does not
 * answer in time, -ECONNREFUSED, the actor's refusal, or another -errno. Nothing is left
 * open on failure.
 */
int inproc__connect(__u32 kind, int timeout_ms, int *sock, struct ring **ring, __u32 *options,
		    char *why, size_t why_len);

/*
 * inproc__send_stats - the client side: send n (at most XPU_INPROC_STATS_N) running totals
 * on sock, without waiting (a full socket buffer drops this one; the next carries the
 * totals). Returns 0 or -errno.
 */
int inproc__send_stats(int sock, const __u64 *values, unsigned int n);

/*
 * inproc__send_reply - the actor side: send reply on sock, with fd in SCM_RIGHTS when fd >= 0.
 * Non-blocking (MSG_DONTWAIT): a client that does not read is not waited for.
 * Returns 0 or -errno; fd stays the caller's either way.
 */
int inproc__send_reply(int sock, const struct xpu_inproc_reply *reply, int fd);

/*
 * inproc__create_ring - the actor side: a sealed memfd of XPU_RING_HDR_SIZE + capacity bytes
 * holding a formatted ring. The seals forbid shrinking and growing, so a client can never
 * truncate the mapping under the actor (which would SIGBUS it).
 * Returns the fd (the caller's), or -errno (-EINVAL for a bad capacity).
 */
int inproc__create_ring(__u64 capacity, __u32 max_record);

#endif /* XPUSUP_SHM_INPROC_H */
