// SPDX-License-Identifier: MIT
/* kind = replay: a file of ring records (docs/events.md, "Replay files"); its keys and where
 * each lands in struct replay_options. */
#include "actors/replay/replay_options.h"

static const char *const replay_speed_names[] = { "full", "original", NULL };

static const struct conf_key replay_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct replay_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SOURCE,
	  .required = true,
	  .doc = "the replay file (required; relative to the config file's folder)" },
	{ .key = "speed",
	  CONF_MEMBER(struct replay_options, speed),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SOURCE,
	  .names = replay_speed_names,
	  .def = "full",
	  .doc = "full: as fast as the rings take it; original: at the records' own pace" },
	{ .key = NULL },
};

const struct conf_kind replay_conf_kind = {
	.name = "replay",
	.roles = CONF_SOURCE,
	.available = true,
	.keys = replay_keys,
	.doc = "records replayed from a file",
	.needs_correlator = true,
	.options_size = sizeof(struct replay_options),
};
