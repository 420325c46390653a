/* SPDX-License-Identifier: MIT */
/* `xpusup record [-c PIPELINE.conf] [-o DIR] -- CMD`: cli/record.c, docs/record.md. */
#ifndef XPUSUP_CLI_RECORD_H
#define XPUSUP_CLI_RECORD_H

#include <limits.h>
#include <stdbool.h>

/* record_cmd - the command; argv[0] is "record". Returns the exit status of the command
 * it ran, or 100 / 111 when it could not record. */
int record_cmd(int argc, char **argv);

#endif /* XPUSUP_CLI_RECORD_H */
