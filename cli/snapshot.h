/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_SNAPSHOT_H
#define XPUSUP_CLI_SNAPSHOT_H

extern const char snapshot_usage[];

/*
 * snapshot_cmd - `xpusup snapshot`: ask the flight-recorder timeline sinks (mode = ring) of
 * a running session to write what they keep, and wait until they have. Returns the exit
 * code: 0, 100 (usage; no such sink), 111 (no session, the snapshot failed or timed out).
 */
int snapshot_cmd(int argc, char **argv);

#endif /* XPUSUP_CLI_SNAPSHOT_H */
