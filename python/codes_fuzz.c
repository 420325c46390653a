/* SPDX-License-Identifier: MIT */
/*
 * py_codes on a code object made of the input, in this process's memory: what the code
 * reader does with a freed or forged object in another process.
 *
 * Byte 0 picks the layout (3.11, 3.12, 3.13), byte 1 whether the type check passes, bytes
 * 2..9 four instruction offsets (16 bits each); the rest is a memory image with the code
 * object at its start, whose qualname, filename and linetable pointers are taken modulo the
 * image's size as offsets into it (so the strings and the table are made of the input too).
 * Properties: nothing is read outside what py_codes bounds, every name is valid UTF-8
 * with no NUL before its end, "QUALNAME (FILE:LINE)" within the caps of codes.c, and the
 * same (code, line) gives the same pointer.
 */
#include "python/python.h"
#include "python/internal.h"

#include "common/utf8.h"
#include "tests/fuzz/fuzz.h"
#include "xpusup/event.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __u64 fake_code_type[52];

static void check_utf8(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t n = strlen(name), i = 0;

	while (i < n) {
		size_t k = s[i] < 0x80 ? 1 : xpu_utf8_len(s + i, n - i);

		if (!k)
			abort();
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const __u32 versions[] = { 0x030b02f0, 0x030c01f0, 0x030d00f0 };
	struct py_layout *l;
	struct py_codes *c;
	unsigned char *img;
	size_t img_size, i;
	__u64 base;

	if (size < 10 + 256)
		return 0;
	l = calloc(1, sizeof(*l));
	*l = *py_table__find(versions[data[0] % 3]);
	l->code_type = (__u64)(uintptr_t)fake_code_type;
	img_size = size - 10;
	img = malloc(img_size);
	memcpy(img, data + 10, img_size);
	base = (__u64)(uintptr_t)img;
	if (data[1] & 1)
		memcpy(img + l->object_type, &l->code_type, 8);
	{
		const unsigned fields[3] = { l->code_qualname, l->code_filename,
					     l->code_linetable };

		for (i = 0; i < 3; i++) {
			__u64 v;

			memcpy(&v, img + fields[i], 8);
			v = base + v % img_size;
			memcpy(img + fields[i], &v, 8);
		}
	}
	c = py_codes__new(4);
	for (i = 0; i < 4; i++) {
		__u32 lasti = (__u32)data[2 + 2 * i] | (__u32)data[3 + 2 * i] << 8, line = 0;
		const char *name, *again;

		if (lasti == 0xffff)
			lasti = XPU_PY_LASTI_NONE;
		if (py_codes__line(c, (__u32)getpid(), l, base, lasti, &line))
			continue;
		name = py_codes__name(c, (__u32)getpid(), base, line);
		if (!name)
			abort();
		check_utf8(name);
		/* QUALNAME (256 bytes at most) " (" FILE (1024) ":" LINE ")" */
		if (strlen(name) > 256 + 2 + 1024 + 1 + 10 + 1 || name[strlen(name) - 1] != ')')
			abort();
		again = py_codes__name(c, (__u32)getpid(), base, line);
		if (again != name)
			abort();
	}
	py_codes__drop_pid(c, (__u32)getpid());
	py_codes__collect(c);
	py_codes__free(c);
	free(img);
	free(l);
	return 0;
}
