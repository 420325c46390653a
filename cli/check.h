/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_CHECK_H
#define XPUSUP_CLI_CHECK_H

/* The text of `xpusup check --help`. */
extern const char check_usage[];

/*
 * check_cmd - `xpusup check TRACE.json...`: read each Chrome trace (what the timeline sink
 * writes, docs/timeline.md) and check the invariants of a merged timeline (docs/check.md).
 * argv[0] is the command's name; options as in check_usage. Prints each violation and a summary per file
 * to stdout. Returns the exit code: 0 every file clean, 1 violations, 100 usage, 111 a file
 * unreadable or not a JSON trace (the byte offset where it stops being one is printed).
 */
int check_cmd(int argc, char **argv);

#endif /* XPUSUP_CLI_CHECK_H */
