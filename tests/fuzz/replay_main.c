// SPDX-License-Identifier: MIT
/*
 * Runs committed fuzz inputs through LLVMFuzzerTestOneInput without libFuzzer, so every build
 * (gcc, sanitizers) replays the corpus as an ordinary test.
 *
 *	wire_fuzz_replay DIR|FILE...
 *
 * A directory's files run in name order (dot files skipped). Each input is copied into an
 * allocation of exactly its size, so ASan reports a read past its end. One TAP line per
 * input; a violated property aborts inside the target, which fails the test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"
#include "tests/tap.h"

#define INPUT_MAX (16u << 20) /* corpus files are small; a larger one is a mistake */

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	struct stat st;
	size_t n;

	if (!f || fstat(fileno(f), &st))
		tap_bail("unable to read %s: %s", path, strerror(errno));
	if (st.st_size > INPUT_MAX)
		tap_bail("%s is over %u bytes: not a corpus file", path, INPUT_MAX);
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		tap_bail("unable to allocate %lld bytes", (long long)st.st_size);
	n = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	if (n != (size_t)st.st_size)
		tap_bail("short read of %s", path);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	tap_ok(1, "%s (%zu bytes)", path, n);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		tap_bail("unable to open %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				tap_bail("out of memory");
		}
		names[n] = strdup(de->d_name);
		if (!names[n++])
			tap_bail("out of memory");
	}
	closedir(d);
	if (!n)
		tap_bail("no inputs in %s", dir);
	qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		run_file(path);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	struct stat st;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 100;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st))
			tap_bail("unable to stat %s: %s", argv[i], strerror(errno));
		if (S_ISDIR(st.st_mode))
			run_dir(argv[i]);
		else
			run_file(argv[i]);
	}
	return tap_done();
}
