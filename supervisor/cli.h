/* SPDX-License-Identifier: MIT */
/*
 * Pieces of the command line that more than one command uses (supervisor/main.c):
 * `start` and `record` start a background session the same way, `stop` and `record` stop
 * one the same way.
 */
#ifndef XPUSUP_SUPERVISOR_CLI_H
#define XPUSUP_SUPERVISOR_CLI_H

#include "common/config.h"
#include "supervisor/session.h"

/*
 * cli_start_session - start a supervisor for conf (validated; progs from
 * supervisor_find_programs) in the background as session name (s from session__paths) and
 * wait until every actor is ready. Prints progress (not when quiet), the optional sources
 * left out, and on failure what the actors said. Returns 0 or an exit code (100, 111).
 */
int cli_start_session(const struct conf *conf, char **progs, struct session *s, const char *name,
		      bool quiet);

/*
 * cli_stop_session - SIGTERM the session's supervisor and wait up to timeout_s for it to
 * stop its actors and clean up. Returns 0 or an exit code.
 */
int cli_stop_session(const char *name, unsigned long long timeout_s);

#endif /* XPUSUP_SUPERVISOR_CLI_H */
