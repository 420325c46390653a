/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_SUBSCRIBE_H
#define XPUSUP_CLI_SUBSCRIBE_H

/*
 * subscribe_cmd - `xpusup subscribe URL ...`: a remote sink. argv[0] is the command's name,
 * argv[argc] NULL. Execs xpusup-subscribe with argv (actors/sink/subscribe.c: its options, its
 * --help, its exit codes: 0, 100 usage, 111 system). Returns only when it cannot: 111, after
 * saying why.
 */
int subscribe_cmd(int argc, char **argv);

#endif /* XPUSUP_CLI_SUBSCRIBE_H */
