/* SPDX-License-Identifier: MIT */
/*
 * The fmt_env of a format's unit test: its options from a table of key and value pairs that
 * ends with a NULL key, given as the env's ctx; "path" (and any option the table has) is
 * also a file name option, taken as it is.
 */
#ifndef XPUSUP_ACTORS_SINK_FMT_TEST_ENV_H
#define XPUSUP_ACTORS_SINK_FMT_TEST_ENV_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "actors/sink/fmt.h"

struct fmt_test_opt {
	const char *key, *value;
};

static inline const char *fmt_test_get(void *ctx, const char *key)
{
	const struct fmt_test_opt *o;

	for (o = ctx; o && o->key; o++)
		if (!strcmp(o->key, key))
			return o->value;
	return NULL;
}

static inline int fmt_test_path(void *ctx, const char *key, char *buf, size_t size)
{
	const char *v = fmt_test_get(ctx, key);
	int n;

	if (!v)
		return -ENOENT;
	n = snprintf(buf, size, "%s", v);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The env of the options opts. */
static inline struct fmt_env fmt_test_env(const struct fmt_test_opt *opts)
{
	return (struct fmt_env){ .ctx = (void *)opts, .get = fmt_test_get, .path = fmt_test_path };
}

#endif /* XPUSUP_ACTORS_SINK_FMT_TEST_ENV_H */
