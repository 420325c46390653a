// SPDX-License-Identifier: MIT
/*
 * Every actor kind this build knows: the one list the configuration is checked against. Each
 * kind's keys live beside its code (actors/KIND/KIND_options.c); this file only names them, in
 * the order "known: ..." messages list them, and binds conf__load to them, so that common/
 * names no kind and every program that loads a pipeline.conf (the actors, and `xpusup`,
 * which checks every section) links this list.
 *
 * Adding a kind: its KIND_options.c (table and struct conf_kind) and a line here.
 */
#include "actors/kinds.h"

#include <string.h>

#include "actors/correlator/correlator_options.h"
#include "actors/cpu/cpu_options.h"
#include "actors/inproc/inproc_options.h"
#include "actors/pmu/pmu_options.h"
#include "actors/replay/replay_options.h"
#include "actors/sink/sink_options.h"
#include "actors/synthetic/synthetic_options.h"
#include "actors/test/test_options.h"

const struct conf_kind *const conf_kinds[] = {
	&test_conf_kind,
	&cupti_conf_kind,
	&cpu_conf_kind,
	&pmu_conf_kind,
	&synthetic_conf_kind,
	&replay_conf_kind,
	&inproc_conf_kind,
	&correlator_conf_kind,
	&folded_conf_kind,
	&timeline_conf_kind,
	&stats_conf_kind,
	&publish_conf_kind,
	&metrics_conf_kind, /* Prometheus */
	&pprof_conf_kind, /* a comment keeps clang-format from packing the list */
	&group_conf_kind, /* runs [format] sections: after the kinds they name */
	NULL,
};

int conf__load_string(const char *name, const char *text, struct conf **out, FILE *err)
{
	return conf__load_kinds(name, text, strlen(text), conf_kinds, out, err);
}

const struct conf_kind *conf_kind__find(const char *name)
{
	const struct conf_kind *const *k;

	for (k = conf_kinds; *k; k++)
		if (!strcmp((*k)->name, name))
			return *k;
	return NULL;
}

int conf__load(const char *path, struct conf **out, FILE *err)
{
	return conf__load_file(path, conf_kinds, out, err);
}
