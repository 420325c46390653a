/* SPDX-License-Identifier: MIT */
/* The test actor's configuration schema: the actor used by the supervisor's own tests. */
#ifndef XPUSUP_ACTORS_TEST_OPTIONS_H
#define XPUSUP_ACTORS_TEST_OPTIONS_H

#include <stdbool.h>

#include "common/config.h"

/* kind = test: one member per key of test_keys (test_options.c). A key without a default
 * that is not written reads 0; conf_actor__get() says whether it was written. */
struct test_options {
	unsigned long long ready_delay_ms;
	bool never_ready;
	unsigned long long crash_after_ms;
	unsigned long long crash_times;
	unsigned long long exit_after_ms;
	unsigned long long exit_code;
	bool ignore_sigterm;
	unsigned long long hang_after_ms;
	unsigned long long produce_per_s;
	unsigned long long take_every_ms;
	const char *dump; /* NULL: no dump */
};

extern const struct conf_kind test_conf_kind;

#endif /* XPUSUP_ACTORS_TEST_OPTIONS_H */
