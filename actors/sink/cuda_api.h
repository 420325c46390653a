/* SPDX-License-Identifier: MIT */
/*
 * The CUDA API's names by CUPTI callback id (cuda_api_names.h, generated from the CUPTI
 * headers), one look-up for the CUPTI library's converter and the timeline sink.
 */
#ifndef XPUSUP_ACTORS_SINK_CUDA_API_H
#define XPUSUP_ACTORS_SINK_CUDA_API_H

#include <linux/types.h>
#include <stddef.h>

#include "xpusup/event.h"
#include "actors/sink/cuda_api_names.h"

/* The binary search needs the table's order: (domain, id), runtime first */
_Static_assert(XPU_API_RUNTIME < XPU_API_DRIVER, "cuda_api_names.h's order");

/* cuda_api__name - the name of API id of domain (XPU_API_RUNTIME or XPU_API_DRIVER), or NULL
 * for one the headers do not name (a later CUDA's, or another domain). */
static inline const char *cuda_api__name(__u32 domain, __u32 id)
{
	size_t lo = 0, hi = sizeof(cuda_api_names) / sizeof(cuda_api_names[0]);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cuda_api_name *a = &cuda_api_names[mid];

		if (a->domain < domain || (a->domain == domain && a->id < id))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sizeof(cuda_api_names) / sizeof(cuda_api_names[0]) &&
	    cuda_api_names[lo].domain == domain && cuda_api_names[lo].id == id)
		return cuda_api_names[lo].name;
	return NULL;
}

#endif /* XPUSUP_ACTORS_SINK_CUDA_API_H */
