/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: starts the actors of a session in order (sinks, correlators, sources),
 * watches them (exit through pidfds, readiness lines, heartbeats), restarts them with OTP
 * semantics (strategy, restart type, intensity, backoff) and stops them in reverse order.
 * One event loop (epoll) over pidfds, the readiness pipes, a signalfd and a timerfd.
 */
#ifndef XPUSUP_SUPERVISOR_SUPERVISOR_H
#define XPUSUP_SUPERVISOR_SUPERVISOR_H

#include "common/config.h"
#include "supervisor/session.h"

#define XPUSUP_EXIT_OK 0
#define XPUSUP_EXIT_USAGE 100
#define XPUSUP_EXIT_SYSTEM 111

/*
 * supervisor_find_programs - resolve the program of every actor kind in conf, printing
 * "xpusup: unable to start: ..." for each missing one. progs[i] is for conf->actors[i] and
 * is owned by the caller (free each). Returns 0 or -ENOENT.
 */
int supervisor_find_programs(const struct conf *conf, char **progs);

/*
 * supervisor_find_program - the program xpusup-KIND, searched for as the actors' programs
 * are, printing nothing: a malloc'd path (the caller frees it), or NULL with errno ENOENT
 * (or ENOMEM).
 */
char *supervisor_find_program(const char *kind);

/*
 * supervisor_run - supervise the session until it is told to stop (SIGTERM, SIGINT,
 * `xpusup stop`) or fails (restart intensity exceeded, an actor that cannot start).
 *
 * ready_fd (or -1) receives one line once: "OK\n" when every actor is ready, or
 * "ERR <exit code> <message>\n" when the session could not start. Log lines go to stderr.
 * Returns the process exit code: 0 after a requested stop, 100 when an actor reported a
 * configuration error during start, 111 otherwise.
 */
int supervisor_run(struct session *s, const struct conf *conf, char **progs, int ready_fd);

#endif /* XPUSUP_SUPERVISOR_SUPERVISOR_H */
