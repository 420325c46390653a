/* SPDX-License-Identifier: MIT */
/*
 * The actor side of the actor contract (docs/supervisor.md). Every actor program:
 *
 *	struct actor a;
 *	if (actor__init(&a, argc, argv))	parses the supervisor's arguments, maps its slot
 *		return 100;
 *	... open rings, sockets, files ...
 *	actor__ready(&a);			no data is routed to it before this
 *	while (!actor__stopping(&a)) {		SIGTERM: stop taking input
 *		... a bounded amount of work ...
 *		actor__beat(&a);		at least every heartbeat_ms, or it is "frozen"
 *	}
 *	... flush ...
 *	actor__fini(&a);
 *	return 0;				100: permanent failure, 111: restart me
 *
 * Arguments (given by the supervisor): --session DIR --actor NAME --slot N. The readiness fd
 * number is in XPUSUP_NOTIFY_FD. The actor's configuration is read from DIR/pipeline.conf,
 * the snapshot the supervisor validated.
 */
#ifndef XPUSUP_ACTORS_ACTOR_H
#define XPUSUP_ACTORS_ACTOR_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>

#include "common/config.h"
#include "common/status.h"

#define ACTOR_EXIT_PERMANENT 100
#define ACTOR_EXIT_RESTART 111

struct actor {
	const char *prog;
	char dir[4096];
	int dirfd;
	unsigned int slot_index;
	struct conf *conf;
	const struct conf_actor *self;
	struct xpu_status_block *status;
	struct xpu_actor_slot *slot;
	int notify_fd;
	__u64 beat_interval_ns;
	__u64 last_beat_ns;
};

/*
 * actor__init - parse argv, load the config snapshot, map the status slot, install the
 * SIGTERM handler. Prints "PROG: unable to <verb>: <reason>" and returns -errno on failure
 * (the caller exits 100: nothing a restart would fix).
 */
int actor__init(struct actor *a, int argc, char **argv, const char *prog);

/* actor__ready - tell the supervisor this actor is ready (once). Returns 0 or -errno. */
int actor__ready(struct actor *a);

/* actor__beat - publish a heartbeat if heartbeat_ms has passed since the last one. Cheap. */
void actor__beat(struct actor *a);

/* actor__stopping - SIGTERM has arrived. */
bool actor__stopping(const struct actor *a);

/* actor__ignore_sigterm - for the test actor: behave like an actor that never stops. */
void actor__ignore_sigterm(struct actor *a);

/*
 * actor__counter - register a named counter shown by `xpusup status`; returns its index or
 * -ENOSPC. actor__count stores its value (relaxed, no syscall).
 */
int actor__counter(struct actor *a, const char *name);
void actor__count(struct actor *a, int index, __u64 value);

/* actor__sleep_ms - sleep up to ms, returning early on SIGTERM, beating meanwhile. */
void actor__sleep_ms(struct actor *a, unsigned int ms);

/*
 * actor__wait_room - one step of a producer's wait for room in a full ring (a source that
 * waits rather than drops: synthetic flat out, replay): beat, then sleep 50 us, doubling each
 * step of the same wait up to 1 ms. *step counts the steps; the caller zeroes it when room
 * comes. It sleeps rather than yields: on a machine with fewer CPUs than busy actors a
 * producer that spins takes the CPU its consumers need to make the room.
 */
void actor__wait_room(struct actor *a, unsigned int *step);

/*
 * actor__problem - show what is wrong now in `xpusup status` (and say it once on stderr
 * when it changes), for an actor that goes on despite it: a sink whose disk is full keeps
 * receiving and counting. NULL clears it. A new incarnation starts without one.
 */
void actor__problem(struct actor *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * actor__fail - for an actor that cannot go on: the whole text on stderr (the session log),
 * what fits of it in `xpusup status`, and ACTOR_EXIT_PERMANENT to return from main (the
 * supervisor does not restart it: the same start would fail the same way).
 */
int actor__fail(struct actor *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct ring;

/*
 * actor__open_rings - a source's producer ends of its rings, one per correlator shard
 * (a->conf->shards), into rings[0..shards). Says which ring and why on stderr and returns
 * -errno when one cannot be opened; those opened stay in rings[] for the caller to close.
 * A pipeline without a [correlator] is said on stderr too: -ENOTCONN.
 */
int actor__open_rings(struct actor *a, struct ring **rings);

/* The exit status for actor__open_rings' error: no correlator is a configuration error (do
 * not restart), a ring that will not open a system failure (restart). */
static inline int actor__rings_exit(int err)
{
	return err == -ENOTCONN ? ACTOR_EXIT_PERMANENT : ACTOR_EXIT_RESTART;
}

void actor__fini(struct actor *a);

#endif /* XPUSUP_ACTORS_ACTOR_H */
