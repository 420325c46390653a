// SPDX-License-Identifier: MIT
/* kind = inproc and kind = cupti: the in-process hand-off's keys (docs/inproc.md), and where
 * each lands in struct inproc_options. */
#include "actors/inproc/inproc_options.h"

#include <errno.h>
#include <string.h>

#include "shm/inproc.h"

/* The bit of each name is the one the CUPTI library reads in reply.options (shm/inproc.h). */
static const struct {
	const char *name;
	unsigned int bit;
} activity_names[] = {
	{ "kernel", XPU_CUPTI_ACT_KERNEL },	{ "memcpy", XPU_CUPTI_ACT_MEMCPY },
	{ "memset", XPU_CUPTI_ACT_MEMSET },	{ "sync", XPU_CUPTI_ACT_SYNC },
	{ "runtime", XPU_CUPTI_ACT_RUNTIME },	{ "driver", XPU_CUPTI_ACT_DRIVER },
	{ "memory", XPU_CUPTI_ACT_MEMORY },	{ "overhead", XPU_CUPTI_ACT_OVERHEAD },
	{ "external", XPU_CUPTI_ACT_EXTERNAL }, { "nvtx", XPU_CUPTI_ACT_NVTX },
};

int cupti_activities__parse(const char *s, unsigned int *bits)
{
	const size_t n_names = sizeof(activity_names) / sizeof(activity_names[0]);
	unsigned int got = 0;
	int r, n = 0, all = 0, none = 0;
	char item[32];
	size_t i;

	if (!s)
		return -EINVAL;
	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		n++;
		if (!strcmp(item, "all")) {
			all = 1;
			continue;
		}
		if (!strcmp(item, "none")) {
			none = 1;
			continue;
		}
		for (i = 0; i < n_names; i++)
			if (!strcmp(item, activity_names[i].name))
				break;
		if (i == n_names)
			return -EINVAL;
		got |= activity_names[i].bit;
	}
	/* "all" and "none" stand alone: "none, kernel" would mean nothing clear */
	if (r < 0 || !n || ((all || none) && n > 1))
		return -EINVAL;
	*bits = all ? XPU_CUPTI_ACT_ALL : got;
	return 0;
}

/* enum launch_stacks, then the alias launch_stacks__parse maps to inproc. */
static const char *const launch_stacks_names[] = { "inproc", "marker", "no", "yes", NULL };

int launch_stacks__parse(const char *s, int *mode)
{
	int i;

	for (i = 0; s && launch_stacks_names[i]; i++) {
		if (!strcmp(s, launch_stacks_names[i])) {
			*mode = i == 3 ? LAUNCH_STACKS_INPROC : i;
			return 0;
		}
	}
	return -EINVAL;
}

static int activities_parse(const char *s, void *member)
{
	return cupti_activities__parse(s, member);
}

static int launch_stacks_parse(const char *s, void *member)
{
	return launch_stacks__parse(s, member);
}

/* The keys of both kinds: one ring per attached process. */
#define INPROC_RING_KEYS(ring_def)                                                                \
	{ .key = "ring_kib",                                                                      \
	  CONF_MEMBER(struct inproc_options, ring_kib),                                           \
	  .type = CONF_T_POW2,                                                                    \
	  .roles = CONF_SOURCE,                                                                   \
	  .min = 4,                                                                               \
	  .max = 1048576,                                                                         \
	  .def = ring_def,                                                                        \
	  .doc = "size of each process's ring, in KiB (a power of two)" },                        \
	{                                                                                         \
		.key = "max_processes", CONF_MEMBER(struct inproc_options, max_processes),        \
		.type = CONF_T_UINT, .roles = CONF_SOURCE, .min = 1, .max = 65536, .def = "1024", \
		.doc = "processes attached at once; more are refused (and run unrecorded)"        \
	}

/* kind = inproc: the in-process hand-off for the annotate library (docs/inproc.md). */
static const struct conf_key inproc_keys[] = {
	INPROC_RING_KEYS("1024"),
	{ .key = NULL },
};

/* kind = cupti: the same in-process hand-off, which also tells each CUPTI injection library
 * what to record (docs/inproc.md, "Options"); annotate clients are served as by inproc. */
static const struct conf_key cupti_keys[] = {
	/* A process's GPU activity arrives in CUPTI's buffer-completed bursts, flushed at
	 * once: 8 MiB holds about 45,000 launches (kernel and API records, 176 bytes) between
	 * two drains. */
	INPROC_RING_KEYS("8192"),
	{ .key = "activities",
	  CONF_MEMBER(struct inproc_options, activities),
	  .type = CONF_T_CUSTOM,
	  .parse = activities_parse,
	  .expected = "all, none, or a list of kernel, memcpy, memset, sync, runtime, driver, "
		      "memory, overhead, external, nvtx",
	  .roles = CONF_SOURCE,
	  /* every kind but memory: with it, PyTorch 2.11's CUPTI (2025.3.1, CUDA 13) corrupted
	   * the heap of the profiled process (docs/cupti.md, "Device memory records") */
	  .def = "kernel, memcpy, memset, sync, runtime, driver, overhead, external, nvtx",
	  .doc = "what CUPTI records: kernel, memcpy, memset, sync, runtime, driver, memory, "
		 "overhead, external, nvtx; all; or none (default: all but memory)" },
	{ .key = "launch_stacks",
	  CONF_MEMBER(struct inproc_options, launch_stacks),
	  .type = CONF_T_CUSTOM,
	  .parse = launch_stacks_parse,
	  .expected = "one of inproc, marker, no, yes",
	  .roles = CONF_SOURCE,
	  .def = "inproc",
	  .doc = "how each launch's stack is recorded: inproc (the library walks it with the "
		 "loaded images' CFI), marker (the cpu source's uprobe on the launch marker), no; "
		 "yes is inproc" },
	{ .key = "api_queries",
	  CONF_MEMBER(struct inproc_options, api_queries),
	  .type = CONF_T_BOOL,
	  .roles = CONF_SOURCE,
	  .def = "no",
	  .doc = "with runtime or driver: also record the calls that only ask for state "
		 "(cudaGetDevice, cudaGetLastError, cuCtxGetCurrent, ...; docs/cupti.md)" },
	{ .key = NULL },
};

const struct conf_kind inproc_conf_kind = {
	.name = "inproc",
	.roles = CONF_SOURCE,
	.available = true,
	.keys = inproc_keys,
	.doc = "annotated ranges from profiled processes",
	.needs_correlator = true,
	.in_process_socket = XPU_INPROC_SOCK,
	.options_size = sizeof(struct inproc_options),
};

const struct conf_kind cupti_conf_kind = {
	.name = "cupti",
	.roles = CONF_SOURCE,
	.available = true,
	.keys = cupti_keys,
	.doc = "CUDA activity and API records, annotated ranges",
	.needs_correlator = true,
	.in_process_socket = XPU_INPROC_SOCK,
	.options_size = sizeof(struct inproc_options),
};
