/* SPDX-License-Identifier: MIT */
/*
 * A small TAP producer for xpusup's tests (header-only; each test is one program).
 *
 *	int main(void) {
 *		tap_ok(1 + 1 == 2, "arithmetic");
 *		tap_eq_u64(got, want, "records consumed");
 *		return tap_done();
 *	}
 *
 * Output is TAP 13 on stdout; diagnostics go to stderr. tap_done() prints the plan and
 * returns the exit status: 0 when every check passed, 1 otherwise. tap_skip_all() prints
 * the reason and exits 77, which meson reports as a skip.
 */
#ifndef XPUSUP_TESTS_TAP_H
#define XPUSUP_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned int tap_count_;
static unsigned int tap_failed_;

__attribute__((format(printf, 2, 0))) static int tap_vok(int cond, const char *fmt, va_list ap)
{
	if (!tap_count_++)
		printf("TAP version 13\n");
	printf("%sok %u - ", cond ? "" : "not ", tap_count_);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed_++;
	return cond;
}

__attribute__((format(printf, 2, 3), unused)) static int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = tap_vok(cond, fmt, ap);
	va_end(ap);
	return ret;
}

__attribute__((format(printf, 5, 6), unused)) static int
tap_eq_u64_(uint64_t got, uint64_t want, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int ret;

	if (got != want)
		fprintf(stderr, "#   %s:%d: got %" PRIu64 ", want %" PRIu64 "\n", file, line, got,
			want);
	va_start(ap, fmt);
	ret = tap_vok(got == want, fmt, ap);
	va_end(ap);
	return ret;
}

/* tap_eq_u64(got, want, fmt, ...): a check that prints both values when they differ. */
#define tap_eq_u64(got, want, ...) \
	tap_eq_u64_((uint64_t)(got), (uint64_t)(want), __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 1, 2), unused)) static void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "# ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

__attribute__((format(printf, 1, 2), noreturn, unused)) static void tap_skip_all(const char *fmt,
										 ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	fprintf(stderr, "skipped: needs what the line above names\n");
	exit(77);
}

/* A check that cannot go on: report it, print the plan so far, and fail the program. */
__attribute__((format(printf, 1, 2), noreturn, unused)) static void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

/* The whole file NUL-terminated (free it), or NULL: for checking what a test wrote. */
static inline char *tap_slurp(const char *name)
{
	FILE *f = fopen(name, "r");
	char *text = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (text = (char *)calloc(1, (size_t)n + 1)) &&
	    fread(text, 1, (size_t)n, f) != (size_t)n) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count_);
	if (tap_failed_)
		fprintf(stderr, "# %u of %u checks failed\n", tap_failed_, tap_count_);
	fflush(stdout);
	return tap_failed_ ? 1 : 0;
}

#endif /* XPUSUP_TESTS_TAP_H */
