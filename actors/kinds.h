/* SPDX-License-Identifier: MIT */
/*
 * Every actor kind this build knows (actors/kinds.c), and the configuration loader bound to
 * them: what a program that reads a pipeline.conf calls. Linked through xpusup_kinds_dep.
 */
#ifndef XPUSUP_ACTORS_KINDS_H
#define XPUSUP_ACTORS_KINDS_H

#include <stdio.h>

#include "common/config.h"

/* Every kind, NULL-terminated, in the order messages list them. */
extern const struct conf_kind *const conf_kinds[];

/* conf_kind__find - the kind named name among conf_kinds, or NULL. */
const struct conf_kind *conf_kind__find(const char *name);

/*
 * conf__load - parse and validate path against every kind (conf__load_file with conf_kinds).
 *
 * On success returns 0 and *out (owned by the caller: conf__free). On a configuration error
 * prints one "PATH:LINE: message" line per error to err (at most 20) and returns -EINVAL;
 * when the file cannot be read, prints "PATH: reason" and returns -errno.
 */
int conf__load(const char *path, struct conf **out, FILE *err);

/* conf__load_string - as conf__load, from text in memory; name is used in messages. */
int conf__load_string(const char *name, const char *text, struct conf **out, FILE *err);

#endif /* XPUSUP_ACTORS_KINDS_H */
