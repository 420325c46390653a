/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_USAGE_H
#define XPUSUP_CLI_USAGE_H

/*
 * cli__usage_error - a command line the command VERB cannot take: "xpusup: unable to VERB:
 * WHAT (see `xpusup VERB --help`)" on stderr; returns XPUSUP_EXIT_USAGE for main to return.
 * Every command says it so, so that scripts and people find the same shape everywhere.
 */
int cli__usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* XPUSUP_CLI_USAGE_H */
