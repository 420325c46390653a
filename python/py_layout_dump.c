/* SPDX-License-Identifier: MIT */
/*
 * py_layout_dump: what python/ makes of an interpreter, for its tests and for a person
 * wondering why a process gets native frames only.
 *
 *   py_layout_dump PID          detects the interpreter pid runs and prints its layout
 *   py_layout_dump --table 3.N  prints the table of version 3.N (tables_test.sh compares it
 *                               with offsetof() over that version's headers)
 *
 * Exits 0, 100 (usage), 111 (no interpreter that can be read; the reason on stderr).
 */
#include "python/python.h"
#include "python/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char why[PY_WHY_MAX], vstr[32];
	struct py_layout *l;
	unsigned minor;
	int err;

	if (argc == 3 && !strcmp(argv[1], "--table")) {
		const struct py_layout *t;

		if (sscanf(argv[2], "3.%u", &minor) != 1 || minor > 255) {
			fprintf(stderr, "xpusup: unable to dump: %s is not 3.N\n", argv[2]);
			return 100;
		}
		t = py_table__find(0x03000000u | minor << 16);
		if (!t) {
			fprintf(stderr, "xpusup: unable to dump: no table for %s\n", argv[2]);
			return 111;
		}
		py_layout__print(t, stdout);
		return 0;
	}
	if (argc != 2 || !strtoul(argv[1], NULL, 10)) {
		fprintf(stderr, "usage: py_layout_dump PID | --table 3.N\n");
		return 100;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return 111;
	err = py_layout__detect((__u32)strtoul(argv[1], NULL, 10), l, why, sizeof(why));
	if (err) {
		fprintf(stderr, "xpusup: unable to detect CPython: %s (%s)\n", why, strerror(-err));
		free(l);
		return 111;
	}
	printf("version %s\nsource %s\npath %s\nruntime 0x%llx\neval 0x%llx-0x%llx\n"
	       "code_type 0x%llx\n",
	       py_version__str(l->version, vstr, sizeof(vstr)),
	       l->source == PY_LAYOUT_DEBUG_OFFSETS ? "debug_offsets" : "table", l->path,
	       (unsigned long long)l->runtime, (unsigned long long)l->eval_start,
	       (unsigned long long)l->eval_end, (unsigned long long)l->code_type);
	py_layout__print(l, stdout);
	free(l);
	return 0;
}
