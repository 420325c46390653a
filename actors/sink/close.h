/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_ACTORS_SINK_CLOSE_H
#define XPUSUP_ACTORS_SINK_CLOSE_H

#include <nng/nng.h>

/*
 * socket__close_within - nng_close(sock) at the end of a process, waiting at most ms for it.
 * libnng 1.5.2 (Debian 12's) can block in nng_close for good: its reaper waits on a pipe task
 * that was prepared but never ran (nanomsg/nng#1543, fixed after 1.5.2). The test sink,
 * stopped behind a flat-out source, was killed at the supervisor's patience twice in about 300
 * runs with only its close left to do (not caught in the act). The close runs in a thread of
 * its own; past ms the caller goes on to exit without it. 0, or -ETIMEDOUT after saying so on
 * stderr as prog.
 */
int socket__close_within(nng_socket sock, unsigned int ms, const char *prog);
/* sockets__close_within - the same for n sockets closed at once: ms bounds them together. */
int sockets__close_within(const nng_socket *socks, unsigned int n, unsigned int ms,
			  const char *prog);

#endif /* XPUSUP_ACTORS_SINK_CLOSE_H */
