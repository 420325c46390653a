// SPDX-License-Identifier: MIT
/* out.c: content survives the double buffering byte for byte, the file appears only at
 * commit, abort and failures leave the previous file alone, and errors are sticky. */
#include "actors/sink/out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/ring_util.h"
#include "tests/tap.h"

static char dir[64];

static int read_file(const char *path, unsigned char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long n;

	if (!f)
		return -errno;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*data = malloc((size_t)n + 1);
	*len = fread(*data, 1, (size_t)n, f);
	fclose(f);
	return 0;
}

int main(void)
{
	char path[128], partial[160], why[256];
	unsigned char *data, *back = NULL;
	size_t len = (5u << 20) + 1234, got = 0, i, off;
	struct stat st;
	struct out *o;
	int dirfd = tr_make_dir(dir);

	if (dirfd < 0)
		tap_bail("cannot make a temporary directory");
	snprintf(path, sizeof(path), "%s/sub/dir/f.out", dir);
	snprintf(partial, sizeof(partial), "%s.partial", path);
	data = malloc(len);
	for (i = 0; i < len; i++)
		data[i] = (unsigned char)(xpu_mix64(i) >> 17);

	tap_ok(out__open(&o, path, why, sizeof(why)) == 0, "open makes the missing folders");
	/* odd-sized pieces, so buffer boundaries fall inside writes */
	for (off = 0; off < len; off += 777777)
		out__write(o, data + off, len - off < 777777 ? len - off : 777777);
	tap_ok(stat(path, &st) != 0 && stat(partial, &st) == 0,
	       "while writing, only the .partial file exists");
	tap_eq_u64(out__bytes(o), len, "every byte counted");
	tap_ok(out__commit(o, why, sizeof(why)) == 0, "commit");
	tap_ok(stat(partial, &st) != 0 && read_file(path, &back, &got) == 0 && got == len &&
		       !memcmp(back, data, len),
	       "after commit the file is exactly what was written (5 MiB and 1234 bytes through "
	       "1 MiB buffers: direct where the folder's file system takes it, the last "
	       "part buffered)");
	free(back);

	tap_ok(out__open(&o, path, why, sizeof(why)) == 0, "a second version");
	out__printf(o, "short %d\n", 42);
	out__abort(o);
	tap_ok(stat(partial, &st) != 0 && stat(path, &st) == 0 && (size_t)st.st_size == len,
	       "abort removes the partial file and leaves the previous version");

	snprintf(path, sizeof(path), "%s/sub/dir/f.out/x", dir); /* a file as a folder */
	tap_ok(out__open(&o, path, why, sizeof(why)) == -ENOTDIR && !o &&
		       strstr(why, "Not a directory") && strstr(why, "f.out/x.partial"),
	       "an impossible path fails at open, saying which file and why");

	snprintf(path, sizeof(path), "%s/sub/dir/f.out", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub/dir", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	tr_remove_dir(dir, dirfd);
	free(data);
	return tap_done();
}
