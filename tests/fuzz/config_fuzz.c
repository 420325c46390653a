// SPDX-License-Identifier: MIT
/*
 * Fuzz target for the pipeline.conf parser (common/config.c). Properties beyond "no crash":
 *   - the result is 0 or a documented error (-EINVAL, -ENOMEM, -EFBIG);
 *   - on success the configuration is well formed: 1..64 actors in start order (sinks,
 *     correlators, sources), names and kinds non-empty and NUL-terminated, every key of an
 *     actor readable back through conf_actor__get;
 *   - on a configuration error every message line reads "fuzz.conf:LINE: ..." with LINE
 *     within the input's line count, and there are at most 20 of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/kinds.h"
#include "common/config.h"
#include "tests/fuzz/fuzz.h"

static void check_ok(const struct conf *conf)
{
	unsigned int i, k;

	if (!conf || conf->n_actors < 1 || conf->n_actors > CONF_MAX_ACTORS)
		abort();
	for (i = 0; i < conf->n_actors; i++) {
		const struct conf_actor *a = &conf->actors[i];

		if (!a->name[0] || !a->kind[0] || memchr(a->name, 0, sizeof(a->name)) == NULL ||
		    memchr(a->kind, 0, sizeof(a->kind)) == NULL)
			abort();
		if (i && a->role < conf->actors[i - 1].role)
			abort(); /* start order */
		if (conf__find(conf, a->name) != a)
			abort();
		for (k = 0; k < a->n_keys; k++)
			if (!conf_actor__get(a, a->keys[k].key))
				abort();
	}
}

static void check_messages(const char *msgs, size_t len, unsigned long lines)
{
	const char *p = msgs, *end = msgs + len;
	unsigned int n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		unsigned long line;
		char *after;

		if (!nl || strncmp(p, "fuzz.conf:", 10))
			abort();
		line = strtoul(p + 10, &after, 10);
		if (after == p + 10 || *after != ':' || line < 1 || line > lines + 1)
			abort();
		n++;
		p = nl + 1;
	}
	if (n > 20)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf *conf = NULL;
	unsigned long lines = 1;
	char *text, *msgs = NULL;
	size_t msgs_len = 0, i;
	FILE *err;
	int ret;

	if (size > (1u << 16))
		return 0;
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	for (i = 0; i < size; i++)
		lines += text[i] == '\n';
	err = open_memstream(&msgs, &msgs_len);
	if (!err) {
		free(text);
		return 0;
	}
	ret = conf__load_string("fuzz.conf", text, &conf, err);
	fclose(err);
	if (ret == 0)
		check_ok(conf);
	else if (ret == -EINVAL)
		check_messages(msgs, msgs_len, lines);
	else if (ret != -ENOMEM && ret != -EFBIG)
		abort();
	conf__free(conf);
	free(msgs);
	free(text);
	return 0;
}
