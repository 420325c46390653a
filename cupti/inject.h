/* SPDX-License-Identifier: MIT */
/* What libxpusup_cupti.so exports (docs/cupti.md): nothing else is visible. */
#ifndef XPUSUP_CUPTI_INJECT_H
#define XPUSUP_CUPTI_INJECT_H

#include <stdint.h>

/* The launch marker: does nothing; the cpu source's uprobe on it captures the caller's stack.
 * api_id as in struct xpu_launch (include/xpusup/event.h). */
void xpusup_launch_marker(uint64_t correlation_id, uint32_t api_id);

/* Called by the CUDA driver at cuInit (CUDA_INJECTION64_PATH). Always returns 1. */
int InitializeInjection(void);

/* Called by NVTX (NVTX_INJECTION64_PATH): forwarded to CUPTI's NVTX implementation. */
int InitializeInjectionNvtx2(const void *get_export_table);

#endif /* XPUSUP_CUPTI_INJECT_H */
