/* SPDX-License-Identifier: MIT */
/*
 * Session control for the command line (cli/session_ctl.c): `start` and `record` start a
 * background session the same way, `stop` and `record` stop one the same way.
 */
#ifndef XPUSUP_CLI_SESSION_CTL_H
#define XPUSUP_CLI_SESSION_CTL_H

#include "common/config.h"
#include "supervisor/session.h"

/*
 * session_ctl__start - start a supervisor for conf (validated; progs from
 * supervisor_find_programs) in the background as session name (s from session__paths) and
 * wait until every actor is ready. Prints progress (not when quiet), the optional sources
 * left out, and on failure what the actors said. Returns 0 or an exit code (100, 111).
 */
int session_ctl__start(const struct conf *conf, char **progs, struct session *s, const char *name,
		       bool quiet);

/*
 * session_ctl__stop - SIGTERM the session's supervisor and wait up to timeout_s for it to
 * stop its actors and clean up. Returns 0 or an exit code.
 */
int session_ctl__stop(const char *name, unsigned long long timeout_s);

#endif /* XPUSUP_CLI_SESSION_CTL_H */
