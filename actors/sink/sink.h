/* SPDX-License-Identifier: MIT */
/*
 * The sink actors (kinds folded, timeline, stats): one program per kind, each this loop
 * around its format (fmt.h). A sink listens with nng PULL on its ipc endpoint in the session
 * directory (XPU_SINK_URL_FMT), where every correlator shard pushes its wire batches;
 * decodes each batch, counts the sequence gaps per producer (in events: docs/wire.md) and
 * hands the events to the format. A format that cannot write (a missing folder, a full disk)
 * does not stop the sink: the problem shows in `xpusup status` while the sink keeps
 * receiving and counting, and it tries again.
 */
#ifndef XPUSUP_ACTORS_SINK_SINK_H
#define XPUSUP_ACTORS_SINK_SINK_H

#include <stdbool.h>

#include <nng/nng.h>

#include "actors/actor.h"
#include "actors/sink/fmt.h"

/*
 * sink__listen - the socket every sink receives on: PULL listening on its ipc endpoint in
 * the session (XPU_SINK_URL_FMT), with room for SINK_RECVBUF batches, messages up to the
 * wire decoder's limit and receives that wait at most recv_ms (the loop beats between).
 * Also for the test actor's sink role. 0, or -EIO after saying why on stderr.
 */
int sink__listen(nng_socket *pull, const struct actor *a, int recv_ms);

/* sink__main - the whole life of a sink actor of format fmt. Returns the exit code. */
int sink__main(int argc, char **argv, const struct fmt_ops *fmt);

#endif /* XPUSUP_ACTORS_SINK_SINK_H */
