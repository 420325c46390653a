/* SPDX-License-Identifier: MIT */
/*
 * cupti_nvtx_smoke: a program that uses NVTX (header-only nvtx3) and nothing else of CUDA.
 * Run with NVTX_INJECTION64_PATH naming libxpusup_cupti.so, as `record` does: NVTX loads the
 * library, whose InitializeInjectionNvtx2 hands NVTX to CUPTI; the program's NVTX calls must
 * go on working whether or not CUPTI can deliver them (no GPU here).
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(void)
{
	nvtxDomainHandle_t domain = nvtxDomainCreateA("smoke");
	nvtxEventAttributes_t attr = { 0 };
	int i;

	attr.version = NVTX_VERSION;
	attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
	attr.message.ascii = "inner";
	for (i = 0; i < 1000; i++) {
		nvtxRangePushA("outer");
		nvtxDomainRangePushEx(domain, &attr);
		nvtxMarkA("mark");
		nvtxDomainRangePop(domain);
		nvtxRangeEnd(nvtxRangeStartA("start-end"));
		nvtxRangePop();
	}
	nvtxDomainDestroy(domain);
	printf("nvtx ok\n");
	return 0;
}
