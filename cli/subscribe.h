/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_SUBSCRIBE_H
#define XPUSUP_CLI_SUBSCRIBE_H

/* The text of `xpusup subscribe --help`. */
extern const char subscribe_usage[];

/*
 * subscribe_cmd - `xpusup subscribe URL ...`: a remote sink. argv[0] is the command's name;
 * options as in subscribe_usage. Runs until SIGINT/SIGTERM, --count or --seconds, then
 * finishes the format's output and prints a summary to stderr. Returns the exit code: 0, 100
 * (usage: a bad option, an unknown format, a format option the format rejects), 111 (system:
 * never connected, the output could not be written).
 */
int subscribe_cmd(int argc, char **argv);

#endif /* XPUSUP_CLI_SUBSCRIBE_H */
