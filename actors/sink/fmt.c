// SPDX-License-Identifier: MIT
/* The formats by name, for `xpusup subscribe --format` (and anything else that picks a format
 * from a word rather than from the program it runs as). */
#include "actors/sink/fmt.h"

#include <string.h>

static const struct {
	const char *name;
	const struct fmt_ops *ops;
} formats[] = {
	{ "folded", &fmt_folded },
	{ "publish", &fmt_publish },
	{ "stats", &fmt_stats },
	{ "timeline", &fmt_timeline },
	/* what `xpusup subscribe --format` calls it */
	{ "trace", &fmt_timeline },
	{ "metrics", &fmt_metrics },
	{ "pprof", &fmt_pprof },
};

const struct fmt_ops *fmt__find(const char *kind)
{
	unsigned int i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(formats[i].name, kind))
			return formats[i].ops;
	return NULL;
}
