// SPDX-License-Identifier: MIT
#include "cli/usage.h"

#include <stdarg.h>
#include <stdio.h>

#include "supervisor/supervisor.h"

int cli__usage_error(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "xpusup: unable to %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see `xpusup %s --help`)\n", verb);
	return XPUSUP_EXIT_USAGE;
}
