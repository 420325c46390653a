/* SPDX-License-Identifier: MIT */
/* The replay source's configuration schema (docs/events.md, "Replay files"). */
#ifndef XPUSUP_ACTORS_REPLAY_OPTIONS_H
#define XPUSUP_ACTORS_REPLAY_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* `speed`: in the order of the schema's names. */
enum replay_speed { REPLAY_FULL, REPLAY_ORIGINAL };

/* kind = replay: one member per key of replay_keys (replay_options.c). */
struct replay_options {
	const char *path; /* as written (conf_actor__path resolves a relative one) */
	int speed; /* enum replay_speed */
};

extern const struct conf_kind replay_conf_kind;

#endif /* XPUSUP_ACTORS_REPLAY_OPTIONS_H */
