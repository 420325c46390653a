/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_STATUS_CMD_H
#define XPUSUP_CLI_STATUS_CMD_H

#include <stdbool.h>

/*
 * status_cmd - print the status of session name once, or every interval_ms until SIGINT
 * or the session ends (watch). Returns the exit code: 0, 100 (bad name), 111 (no session).
 */
int status_cmd(const char *name, bool json, bool watch, unsigned int interval_ms);

#endif /* XPUSUP_CLI_STATUS_CMD_H */
