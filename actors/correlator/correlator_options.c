// SPDX-License-Identifier: MIT
/* kind = correlator: the join engine's bounds (docs/correlator.md), and where each lands in
 * struct correlator_options. */
#include "actors/correlator/correlator_options.h"

#include <errno.h>
#include <string.h>

int correlator_strategies__parse(const char *s, struct correlator_strategies *out)
{
	unsigned long long w = 0;
	int ex = 0, n = 0, r;
	char item[64];
	size_t len;

	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		len = strlen(item);
		if (!strcmp(item, "correlation_id")) {
			if (ex || w)
				return -EINVAL; /* twice, or after timestamp */
			ex = 1;
		} else if (!strncmp(item, "timestamp(", 10) && item[len - 1] == ')') {
			item[len - 1] = 0;
			if (w || conf_parse_duration(item + 10, 1, 1000, &w))
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		n++;
	}
	if (r < 0 || !n)
		return -EINVAL;
	out->exact = ex;
	out->window_ms = w;
	return 0;
}

static int strategies_parse(const char *s, void *member)
{
	return correlator_strategies__parse(s, member);
}

static const struct conf_key correlator_keys[] = {
	{ .key = "ttl_ms",
	  CONF_MEMBER(struct correlator_options, ttl_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .min = 1,
	  .max = 3600000,
	  .def = "10000",
	  .doc = "lifetime of unmatched pending state" },
	{ .key = "linger_ms",
	  CONF_MEMBER(struct correlator_options, linger_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .max = 3600000,
	  .def = "200",
	  .doc = "matched state kept for graph launches" },
	{ .key = "exit_grace_ms",
	  CONF_MEMBER(struct correlator_options, exit_grace_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .max = 3600000,
	  .def = "1000",
	  .doc = "state kept after a process exits" },
	{ .key = "max_pending",
	  CONF_MEMBER(struct correlator_options, max_pending),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .min = 16,
	  .max = 16777216,
	  .def = "1000000",
	  .doc = "pending keys at most" },
	{ .key = "strategies",
	  CONF_MEMBER(struct correlator_options, strategies),
	  .type = CONF_T_CUSTOM,
	  .parse = strategies_parse,
	  .expected = "a list of correlation_id and timestamp(DURATION), DURATION 1ms..1000ms, "
		      "e.g. correlation_id, timestamp(2ms)",
	  .roles = CONF_CORRELATOR,
	  .def = "correlation_id",
	  .doc = "how GPU records find their launch, in order: correlation_id, timestamp(2ms)" },
	{ .key = "max_waiting",
	  CONF_MEMBER(struct correlator_options, max_waiting),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .min = 16,
	  .max = 16777216,
	  .def = "65536",
	  .doc = "GPU records waiting for their launch at most" },
	{ .key = "max_streams",
	  CONF_MEMBER(struct correlator_options, max_streams),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .min = 16,
	  .max = 16777216,
	  .def = "16384",
	  .doc = "(pid, device, stream) states held at most" },
	{ .key = "stream_idle_ms",
	  CONF_MEMBER(struct correlator_options, stream_idle_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .min = 1,
	  .max = 86400000,
	  .def = "60000",
	  .doc = "a stream without activity this long is forgotten" },
	{ .key = "launch_slack_ms",
	  CONF_MEMBER(struct correlator_options, launch_slack_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .max = 60000,
	  .def = "100",
	  .doc = "launch_stacks = marker: how long past the cpu source's drain_ms GPU work "
		 "waits for its stack" },
	{ .key = "range_wait_ms",
	  CONF_MEMBER(struct correlator_options, range_wait_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_CORRELATOR,
	  .max = 10000,
	  .def = "200",
	  .doc = "how long a CPU sample of a process with annotate ranges waits for its thread's "
		 "range records (0: not at all)" },
	{ .key = NULL },
};

const struct conf_kind correlator_conf_kind = {
	.name = "correlator",
	.roles = CONF_CORRELATOR,
	.available = true,
	.keys = correlator_keys,
	.doc = "joins CPU and GPU records",
	.options_size = sizeof(struct correlator_options),
};
