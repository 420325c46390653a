/* SPDX-License-Identifier: MIT */
/*
 * The sink actors (kinds folded, timeline, stats, publish): one program per kind, each the
 * sink driver (below) around its format (fmt.h). A sink listens with nng PULL on its ipc
 * endpoint in the session directory (XPU_SINK_URL_FMT), where every correlator shard pushes
 * its wire batches; decodes each batch, counts the sequence gaps per producer (in events:
 * docs/wire.md) and hands the events to the format. A format that cannot write (a missing
 * folder, a full disk) does not stop the sink: the problem shows in `xpusup status` while the
 * sink keeps receiving and counting, and it tries again. xpusup-subscribe (subscribe.c) runs
 * the same driver on a SUB socket.
 */
#ifndef XPUSUP_ACTORS_SINK_SINK_H
#define XPUSUP_ACTORS_SINK_SINK_H

#include <stdbool.h>

#include <linux/types.h>

#include <nng/nng.h>

#include "actors/actor.h"
#include "actors/sink/fmt.h"
#include "common/topology.h"

/*
 * sink__listen - the socket every sink receives on: PULL listening on its ipc endpoint in
 * the session (XPU_SINK_URL_FMT), with room for SINK_RECVBUF batches, messages up to the
 * wire decoder's limit and receives that wait at most recv_ms (the loop beats between).
 * Also for the test actor's sink role. 0, or -EIO after saying why on stderr.
 */
int sink__listen(nng_socket *pull, const struct actor *a, int recv_ms);

/*
 * How a sink waits for its next message: in poll(2) on the socket's receive descriptor, for
 * up to the socket's receive timeout, rather than in a receive with that timeout. nng 1.5 runs
 * every receive timeout through its two "aio expire" threads: an idle sink waking them 50
 * times a second cost about 4 % of a CPU, the test sink's 5 ms timeout 16 % under a trickle
 * of batches (docs/performance.md); the poll's kernel timer costs next to nothing.
 */
struct sink_wait {
	int fd; /* the socket's NNG_OPT_RECVFD; -1: none (yet) */
	int ms; /* its NNG_OPT_RECVTIMEO */
	bool known; /* fd and ms were asked for */
};

#define SINK_WAIT_INIT ((struct sink_wait){ .fd = -1 })

/*
 * sink_wait__readable - wait up to the socket's receive timeout for a message on sock. true:
 * receive without blocking (a message may be there, or the time passed); false: the socket
 * has no descriptor (or its poll failed once): receive blocking, with the timeout, as before.
 */
bool sink_wait__readable(struct sink_wait *w, nng_socket sock);

/* sink__main - the whole life of a sink actor of format fmt. Returns the exit code. */
int sink__main(int argc, char **argv, const struct fmt_ops *fmt);

/*
 * The sink driver: the one receive, decode, sequence and tick loop around a format, for the
 * sink actors (sink__main: PULL from the correlators, counters in the status block, a state
 * file) and the remote sink `xpusup subscribe` (SUB from a publish sink, words on stderr).
 * What differs is the socket, made and owned by the caller, and these hooks.
 */
struct sink_driver_ops {
	/* optional: after each batch was decoded, counted and given to the format (the actor
	 * counts it over its restarts and commits its state file) */
	void (*batch)(void *ctx, const struct xpu_wire_batch *b);
	/* what a tick of the format returned: FMT_IDLE, FMT_WROTE, FMT_COMPLETE or -errno
	 * with why (never empty for an error) */
	void (*outcome)(void *ctx, int err, const char *why);
	/* optional: after each tick, whether or not the format has one (the actor publishes its
	 * counters) */
	void (*ticked)(void *ctx);
	/* true: the loop ends (a stop asked for) */
	bool (*stopping)(void *ctx);
	/* optional: once a turn of the loop (the actor's heartbeat) */
	void (*beat)(void *ctx);
	/* optional: a receive failed otherwise than by finding nothing in time; true ends the
	 * loop. Without it the loop goes on. */
	bool (*recv_error)(void *ctx, int nng_err);
};

struct sink_driver {
	/* set by the caller before sink_driver__init */
	const struct fmt_ops *fmt;
	void *st; /* the format's state, opened and freed by the caller */
	nng_socket sock; /* receives wait at most its NNG_OPT_RECVTIMEO */
	const struct sink_driver_ops *ops;
	void *ctx;
	__u64 max_batches; /* the loop ends after this many batches; 0: no limit */
	__u64 deadline_ns; /* ... or at this xpu_now_ns(); 0: none */
	bool tick_at_once; /* the first tick at the first turn, not a tick period later */
	/* what the driver counts (seq may be set before the loop: a restarted actor's) */
	struct xpu_wire_seq seq;
	__u64 batches, events_in, bad;
	/* receive and decode on a thread of the driver's own (struct sink_decoder, sink.c), the
	 * format on the caller's: two CPUs for a sink that has more work an event than one
	 * keeps up with. Set before the first step; not with max_batches (the thread reads
	 * ahead). false: one thread, as `xpusup subscribe` runs it. */
	bool decode_thread;
	/* the driver's own */
	struct sink_decoder *dec; /* NULL: decoding on the caller's thread */
	struct xpu_cevent *events;
	struct xpu_wire_pool pool;
	__u64 last_tick;
	struct sink_wait wait;
};

/* sink_driver__init - the decode buffers (the fields above them set). 0 or -ENOMEM. */
int sink_driver__init(struct sink_driver *d);

/*
 * sink_driver__step - take what is there, up to SINK_STEP_BATCHES messages: each given raw to
 * the format when it wants them, decoded (a message that does not decode counts in bad),
 * sequence-checked, given to the format, then to ops->batch. wait: the first receive waits up
 * to the socket's timeout. Returns 0, or the nng error of a receive that failed otherwise than
 * by finding nothing.
 */
int sink_driver__step(struct sink_driver *d, bool wait);

/*
 * sink_driver__run - steps, ticks (the format's tick about every 100 ms, then ops->ticked)
 * and beats until ops->stopping, max_batches or deadline_ns, or a receive error that
 * ops->recv_error says ends it. Returns 0, or that nng error.
 */
int sink_driver__run(struct sink_driver *d);

/* sink_driver__fini - stop the decode thread (before the socket is closed: it receives on
 * it) and free the buffers; a zeroed driver is fine. */
void sink_driver__fini(struct sink_driver *d);

#endif /* XPUSUP_ACTORS_SINK_SINK_H */
