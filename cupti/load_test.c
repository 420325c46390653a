/* SPDX-License-Identifier: MIT */
/*
 * cupti_load_test LIB: the injection library loads with dlopen, exports what the CUDA driver,
 * NVTX and the uprobe look for, and InitializeInjection returns 1 (the program goes on)
 * whatever it finds: no session, a stale session, a session but no GPU. What it said is on
 * stderr, once; tests/cupti_test.sh checks the words.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	void (*marker)(uint64_t, uint32_t);
	int (*init)(void);
	void *lib, *sym;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIB\n", argv[0]);
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	sym = dlsym(lib, "InitializeInjection");
	memcpy(&init, &sym, sizeof(init));
	sym = dlsym(lib, "xpusup_launch_marker");
	memcpy(&marker, &sym, sizeof(marker));
	if (!init || !marker || !dlsym(lib, "InitializeInjectionNvtx2")) {
		fprintf(stderr, "missing export: %s\n", dlerror());
		return 1;
	}
	/* Internal symbols stay hidden. */
	if (dlsym(lib, "conv__activity") || dlsym(lib, "ring__write") ||
	    dlsym(lib, "inproc__connect")) {
		fprintf(stderr, "internal symbols are exported\n");
		return 1;
	}
	for (i = 0; i < 3; i++)
		if (init() != 1) {
			fprintf(stderr, "InitializeInjection did not return 1\n");
			return 1;
		}
	for (i = 0; i < 1000; i++)
		marker((uint64_t)i, 211);
	printf("loaded\n");
	return 0;
}
