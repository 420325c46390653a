/* SPDX-License-Identifier: MIT */
/*
 * cupti_standin: what the CUPTI injection library does over the hand-off, without CUDA, for
 * tests/run_test.sh (docs/inproc.md). It connects as a CUPTI client (hello.kind =
 * XPU_INPROC_CUPTI), checks that the options in the reply are the ones the test configured,
 * writes a kernel name (STRING), KERNELS pairs of CUDA_API and GPU_KERNEL records and one
 * LOSS of cause CUPTI counting CUPTI_LOST records, and exits: its socket's EOF is how the
 * actor learns it is gone.
 *
 *	cupti_standin OPTIONS KERNELS CUPTI_LOST
 *
 * OPTIONS is the reply.options expected (0x... or decimal). Exit 0; 1 when the options
 * differ or a record could not be written; 2 when it could not attach (the reason on
 * stderr); 100 for bad arguments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/inproc.h"
#include "common/status.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define NAME_ID 1 /* the STRING id of the one kernel name */
#define API_CUDA_LAUNCH_KERNEL 211 /* CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 */

static const char kernel_name[] = "standin_kernel";

static int parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

/* One launch as CUPTI reports it: the runtime call, then the kernel it queued. */
static int write_launch(struct ring *ring, __u32 pid, __u64 correlation_id)
{
	struct xpu_cuda_api api;
	struct xpu_gpu_kernel k;
	__u64 t = xpu_now_ns();

	xpu_rec__init(&api, XPU_REC_CUDA_API, sizeof(api), t, pid, pid);
	api.end_ns = t + 2000;
	api.correlation_id = correlation_id;
	api.api_id = API_CUDA_LAUNCH_KERNEL;
	api.domain = XPU_API_RUNTIME;
	xpu_rec__init(&k, XPU_REC_GPU_KERNEL, sizeof(k), t + 5000, pid, pid);
	k.start_ns = t + 5000;
	k.end_ns = t + 25000;
	k.correlation_id = correlation_id;
	k.name_id = NAME_ID;
	k.stream_id = 7;
	k.grid[0] = k.grid[1] = k.grid[2] = 1;
	k.block[0] = 128;
	k.block[1] = k.block[2] = 1;
	if (ring__write(ring, &api, sizeof(api)) || ring__write(ring, &k, sizeof(k)))
		return -ENOSPC;
	return 0;
}

int main(int argc, char **argv)
{
	_Alignas(
		8) unsigned char rec[XPU_ROUND_UP8(sizeof(struct xpu_string) + sizeof(kernel_name))];
	unsigned long long want, kernels, cupti_lost, i;
	__u32 options = 0, pid = (__u32)getpid();
	struct ring *ring = NULL;
	int sock = -1, n, err;
	char why[256];

	if (argc != 4 || parse_u64(argv[1], &want) || parse_u64(argv[2], &kernels) ||
	    parse_u64(argv[3], &cupti_lost)) {
		fprintf(stderr, "usage: cupti_standin OPTIONS KERNELS CUPTI_LOST\n");
		return 100;
	}
	err = inproc__connect(XPU_INPROC_CUPTI, XPU_INPROC_TIMEOUT_MS, &sock, &ring, &options, why,
			      sizeof(why));
	if (err) {
		fprintf(stderr, "cupti_standin: not attached: %s\n", why);
		return 2;
	}
	printf("attached options=0x%x\n", options);
	if (options != want) {
		fprintf(stderr, "cupti_standin: options 0x%x, expected 0x%llx\n", options, want);
		goto fail;
	}
	n = xpu_string__build(rec, sizeof(rec), xpu_now_ns(), pid, pid, NAME_ID, XPU_STR_KERNEL,
			      kernel_name, strlen(kernel_name));
	if (n < 0 || ring__write(ring, rec, (__u32)n))
		goto fail_write;
	for (i = 1; i <= kernels; i++)
		if (write_launch(ring, pid, i))
			goto fail_write;
	/* CUPTI's own drops: the library reports what cuptiActivityGetNumDroppedRecords says */
	if (cupti_lost) {
		n = xpu_loss__build(rec, sizeof(rec), xpu_now_ns(), pid, XPU_LOSS_CUPTI, cupti_lost,
				    xpu_now_ns());
		if (n < 0 || ring__write(ring, rec, (__u32)n))
			goto fail_write;
	}
	ring__flush(ring);
	printf("wrote kernels=%llu cupti_lost=%llu\n", kernels, cupti_lost);
	ring__close(ring);
	close(sock);
	return 0;

fail_write:
	fprintf(stderr, "cupti_standin: a record did not fit in the ring\n");
fail:
	ring__close(ring);
	close(sock);
	return 1;
}
