/* SPDX-License-Identifier: MIT */
#include "cupti/convert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "common/hash.h"
#include "xpusup/event.h"
#include "actors/sink/cuda_api.h"

#define NAMES_INITIAL 1024u /* slots; doubles while it is more than half full */
#define NAMES_MAX (1u << 20) /* slots at most: beyond, names are sent every time */
#define CLONES_INITIAL 1024u
#define CLONES_MAX (1u << 22)
#define CONTEXTS 64u /* context -> device, direct-mapped by context id */
#define OVERHEAD_RANGE_BIT (1ull << 62) /* overhead range ids never meet NVTX ones */

/* The largest record this file builds: a STRING of XPU_STRING_MAX (a kernel name). */
#define CONV_REC_MAX XPU_ROUND_UP8(sizeof(struct xpu_string) + XPU_STRING_MAX)
_Static_assert(CONV_REC_MAX >= XPU_ROUND_UP8(sizeof(struct xpu_range) + XPU_RANGE_NAME_MAX) &&
		       CONV_REC_MAX >= sizeof(struct xpu_gpu_kernel) &&
		       CONV_REC_MAX >= sizeof(struct xpu_gpu_memcpy) &&
		       CONV_REC_MAX >= sizeof(struct xpu_gpu_memset) &&
		       CONV_REC_MAX >= sizeof(struct xpu_gpu_sync) &&
		       CONV_REC_MAX >= sizeof(struct xpu_gpu_memory) &&
		       CONV_REC_MAX >= sizeof(struct xpu_cuda_api) &&
		       CONV_REC_MAX >= sizeof(struct xpu_clock_sync) &&
		       CONV_REC_MAX >= sizeof(struct xpu_loss),
	       "conv's buffer holds every record convert.c builds");

/* A name this process has sent: its text, its hash and its STRING id. */
struct name_slot {
	char *text; /* NULL: free */
	__u64 hash;
	__u64 id;
};

struct clone_slot {
	__u64 clone; /* 0: free (CUPTI node ids start at 1) */
	__u64 orig;
};

struct conv {
	__u32 pid;
	conv_put_fn put;
	void *ctx;
	struct name_slot *names;
	__u32 names_cap, names_used;
	__u64 next_name_id;
	struct clone_slot *clones;
	__u32 clones_cap, clones_used;
	__u32 ctx_id[CONTEXTS], ctx_dev[CONTEXTS];
	__u64 overhead_domain; /* STRING id of "cupti overhead", once sent */
	__u64 next_overhead;
	struct conv_api_set marked; /* APIs the library calls the launch marker on */
	struct conv_stats st;
	/* One record at a time is built here. Not XPU_REC_MAX_SIZE: that is a CPU_SAMPLE with
	 * a stack copy, 34 KiB this code never writes. */
	_Alignas(8) unsigned char buf[CONV_REC_MAX];
};

const char *conv__api_name(bool driver, __u32 cbid)
{
	return cuda_api__name(driver ? XPU_API_DRIVER : XPU_API_RUNTIME, cbid);
}

static bool transfer_name(bool driver, const char *name)
{
	const char *const api = driver ? "cuMem" : "cudaMem";
	size_t n = strlen(api);

	return name && !strncmp(name, api, n) &&
	       (!strncmp(name + n, "cpy", 3) || !strncmp(name + n, "set", 3));
}

bool conv__is_transfer(bool driver, __u32 cbid)
{
	return transfer_name(driver, conv__api_name(driver, cbid));
}

size_t conv__transfers(bool driver, __u32 *ids, size_t max)
{
	__u16 domain = driver ? XPU_API_DRIVER : XPU_API_RUNTIME;
	size_t i, n = 0;

	for (i = 0; i < sizeof(cuda_api_names) / sizeof(cuda_api_names[0]); i++) {
		if (cuda_api_names[i].domain != domain ||
		    !transfer_name(driver, cuda_api_names[i].name))
			continue;
		if (n < max)
			ids[n] = cuda_api_names[i].id;
		n++;
	}
	return n;
}

const __u32 conv_runtime_launches[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};

const __u32 conv_driver_launches[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

/* The arrays above are the one list of launch APIs (callbacks_enable, conv__stack_apis) */
bool conv__is_launch(bool driver, __u32 cbid)
{
	const __u32 *ids = driver ? conv_driver_launches : conv_runtime_launches;
	size_t i, n = driver ? sizeof(conv_driver_launches) / sizeof(conv_driver_launches[0]) :
			       sizeof(conv_runtime_launches) / sizeof(conv_runtime_launches[0]);

	for (i = 0; i < n; i++)
		if (ids[i] == cbid)
			return true;
	return false;
}

const __u32 conv_runtime_queries[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
};

const __u32 conv_driver_queries[] = {
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit,
	CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid_v2,
	CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
	CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
	CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
	CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
	CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
	CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
	CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
	CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
	CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
	CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes,
	CUPTI_DRIVER_TRACE_CBID_cuGetErrorString,
	CUPTI_DRIVER_TRACE_CBID_cuGetErrorName,
};

const size_t conv_n_runtime_queries =
	sizeof(conv_runtime_queries) / sizeof(conv_runtime_queries[0]);
const size_t conv_n_driver_queries = sizeof(conv_driver_queries) / sizeof(conv_driver_queries[0]);

const size_t conv_n_runtime_launches =
	sizeof(conv_runtime_launches) / sizeof(conv_runtime_launches[0]);
const size_t conv_n_driver_launches =
	sizeof(conv_driver_launches) / sizeof(conv_driver_launches[0]);

struct conv *conv__new(__u32 pid, conv_put_fn put, void *ctx)
{
	struct conv *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->names = calloc(NAMES_INITIAL, sizeof(*c->names));
	c->clones = calloc(CLONES_INITIAL, sizeof(*c->clones));
	if (!c->names || !c->clones) {
		free(c->names);
		free(c->clones);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->names_cap = NAMES_INITIAL;
	c->clones_cap = CLONES_INITIAL;
	c->pid = pid;
	c->put = put;
	c->ctx = ctx;
	c->next_name_id = 1;
	return c;
}

void conv__free(struct conv *c)
{
	__u32 i;

	if (!c)
		return;
	for (i = 0; i < c->names_cap; i++)
		free(c->names[i].text);
	free(c->names);
	free(c->clones);
	free(c);
}

static int emit(struct conv *c, __u32 size)
{
	int err = c->put(c->ctx, c->buf, size);

	c->st.records++;
	if (err)
		c->st.put_failed++;
	return err;
}

static int send_string(struct conv *c, __u64 id, __u32 kind, const char *text, size_t len,
		       __u64 ts_ns)
{
	int size = xpu_string__build(c->buf, sizeof(c->buf), ts_ns, c->pid, 0, id, kind, text, len);

	if (size < 0)
		return size;
	c->st.strings++;
	return emit(c, (__u32)size);
}

static int names_grow(struct conv *c)
{
	struct name_slot *old = c->names, *fresh;
	__u32 i, cap = c->names_cap * 2, j;

	if (cap > NAMES_MAX)
		return -ENOSPC;
	fresh = calloc(cap, sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	for (i = 0; i < c->names_cap; i++) {
		if (!old[i].text)
			continue;
		for (j = (__u32)old[i].hash & (cap - 1); fresh[j].text; j = (j + 1) & (cap - 1))
			;
		fresh[j] = old[i];
	}
	free(old);
	c->names = fresh;
	c->names_cap = cap;
	return 0;
}

/*
 * The STRING id of name, sending the STRING first when this process has not sent it yet.
 * Returns 0 for no name; a name the table has no room for gets a fresh id and is sent again
 * (correct, only wasteful: a consumer keeps the latest text of each id).
 */
static __u64 name_id(struct conv *c, const char *name, __u32 kind, __u64 ts_ns)
{
	size_t len;
	__u64 h, id;
	__u32 i;

	if (!name || !*name)
		return 0;
	len = strnlen(name, XPU_STRING_MAX + 1);
	if (len > XPU_STRING_MAX) {
		len = XPU_STRING_MAX;
		c->st.names_cut++;
	}
	h = xpu_hash_bytes(name, len);
	for (i = (__u32)h & (c->names_cap - 1); c->names[i].text; i = (i + 1) & (c->names_cap - 1))
		if (c->names[i].hash == h && !strncmp(c->names[i].text, name, len) &&
		    !c->names[i].text[len])
			return c->names[i].id;
	id = c->next_name_id++;
	if (send_string(c, id, kind, name, len, ts_ns))
		return id; /* the put failed: the record using it goes anyway, unnamed */
	if ((c->names_used + 1) * 2 > c->names_cap && names_grow(c)) {
		c->st.names_uncached++;
		return id;
	}
	for (i = (__u32)h & (c->names_cap - 1); c->names[i].text; i = (i + 1) & (c->names_cap - 1))
		;
	c->names[i].text = strndup(name, len);
	if (!c->names[i].text) {
		c->st.names_uncached++;
		return id;
	}
	c->names[i].hash = h;
	c->names[i].id = id;
	c->names_used++;
	return id;
}

static __u32 clone_hash(__u64 id, __u32 cap)
{
	return (__u32)((id * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static struct clone_slot *clone_find(const struct conv *c, __u64 clone)
{
	__u32 i;

	for (i = clone_hash(clone, c->clones_cap); c->clones[i].clone;
	     i = (i + 1) & (c->clones_cap - 1))
		if (c->clones[i].clone == clone)
			return &c->clones[i];
	return NULL;
}

static int clones_grow(struct conv *c)
{
	struct clone_slot *old = c->clones, *fresh;
	__u32 i, j, cap = c->clones_cap * 2;

	if (cap > CLONES_MAX)
		return -ENOMEM;
	fresh = calloc(cap, sizeof(*fresh));
	if (!fresh)
		return -ENOMEM;
	for (i = 0; i < c->clones_cap; i++) {
		if (!old[i].clone)
			continue;
		for (j = clone_hash(old[i].clone, cap); fresh[j].clone; j = (j + 1) & (cap - 1))
			;
		fresh[j] = old[i];
	}
	free(old);
	c->clones = fresh;
	c->clones_cap = cap;
	return 0;
}

__u64 conv__node_origin(const struct conv *c, __u64 node_id)
{
	const struct clone_slot *s = node_id ? clone_find(c, node_id) : NULL;

	return s ? s->orig : node_id;
}

int conv__node_cloned(struct conv *c, __u64 clone_id, __u64 orig_id)
{
	struct clone_slot *s;
	__u32 i;

	if (!clone_id || clone_id == orig_id)
		return 0;
	/* A clone of a clone reports the first original: chains stay one lookup long. */
	orig_id = conv__node_origin(c, orig_id);
	s = clone_find(c, clone_id);
	if (s) {
		s->orig = orig_id; /* node ids are not reused in a process, but be safe */
		return 0;
	}
	if ((c->clones_used + 1) * 2 > c->clones_cap && clones_grow(c))
		return -ENOMEM;
	for (i = clone_hash(clone_id, c->clones_cap); c->clones[i].clone;
	     i = (i + 1) & (c->clones_cap - 1))
		;
	c->clones[i] = (struct clone_slot){ clone_id, orig_id };
	c->clones_used++;
	c->st.clones++;
	return 0;
}

void conv__stack_apis(struct conv_api_set *s)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < conv_n_runtime_launches; i++)
		conv_api_set__add(s, false, conv_runtime_launches[i]);
	for (i = 0; i < conv_n_driver_launches; i++)
		conv_api_set__add(s, true, conv_driver_launches[i]);
	for (i = 0; i < sizeof(cuda_api_names) / sizeof(cuda_api_names[0]); i++) {
		bool driver = cuda_api_names[i].domain == XPU_API_DRIVER;

		if (transfer_name(driver, cuda_api_names[i].name))
			conv_api_set__add(s, driver, cuda_api_names[i].id);
	}
}

void conv__set_launch_marked(struct conv *c, bool on)
{
	struct conv_api_set all;

	if (on)
		conv__stack_apis(&all);
	conv__set_marked(c, on ? &all : NULL);
}

void conv__set_marked(struct conv *c, const struct conv_api_set *ids)
{
	if (ids)
		c->marked = *ids;
	else
		memset(&c->marked, 0, sizeof(c->marked));
}

void conv__context(struct conv *c, __u32 context_id, __u32 device_id)
{
	c->ctx_id[context_id % CONTEXTS] = context_id;
	c->ctx_dev[context_id % CONTEXTS] = device_id;
}

static __u32 context_device(const struct conv *c, __u32 context_id)
{
	__u32 slot = context_id % CONTEXTS;

	return c->ctx_id[slot] == context_id ? c->ctx_dev[slot] : 0;
}

/* A GPU record without its times: what a forced flush gives for work not finished (CUPTI
 * sets them to 0). Counted, not sent: a slice at time 0 would be a lie in every output. */
static bool incomplete(struct conv *c, __u64 start, __u64 end)
{
	if (start && end >= start)
		return false;
	c->st.incomplete++;
	return true;
}

static int kernel(struct conv *c, const CUpti_ActivityKernel10 *k)
{
	struct xpu_gpu_kernel *r = (struct xpu_gpu_kernel *)c->buf;
	__u64 name;

	if (incomplete(c, k->start, k->end))
		return 0;
	name = name_id(c, k->name, XPU_STR_KERNEL, k->start);

	xpu_rec__init(r, XPU_REC_GPU_KERNEL, sizeof(*r), k->start, c->pid, 0);
	r->start_ns = k->start;
	r->end_ns = k->end;
	r->correlation_id = k->correlationId;
	r->name_id = name;
	r->device_id = k->deviceId;
	r->context_id = k->contextId;
	r->stream_id = k->streamId;
	if (k->graphId || k->graphNodeId) {
		r->hdr.flags |= XPU_KERNEL_F_GRAPH;
		r->graph_id = k->graphId;
		r->graph_node_id = conv__node_origin(c, k->graphNodeId);
	}
	if (k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE ||
	    k->launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE)
		r->hdr.flags |= XPU_KERNEL_F_COOPERATIVE;
	r->grid[0] = k->gridX;
	r->grid[1] = k->gridY;
	r->grid[2] = k->gridZ;
	r->block[0] = k->blockX;
	r->block[1] = k->blockY;
	r->block[2] = k->blockZ;
	r->static_smem = (__u32)k->staticSharedMemory;
	r->dynamic_smem = (__u32)k->dynamicSharedMemory;
	r->registers = k->registersPerThread;
	conv__context(c, k->contextId, k->deviceId);
	c->st.kernels++;
	return emit(c, sizeof(*r));
}

static __u8 copy_kind(__u8 cupti_kind)
{
	/* CUpti_ActivityMemcpyKind 0..10 and enum xpu_copy_kind are the same list. */
	return cupti_kind <= CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? cupti_kind : XPU_COPY_UNKNOWN;
}

/* The fields every copy record has, whatever its CUPTI struct. */
struct copy_fields {
	__u64 start, end, bytes;
	__u32 corr, device, context, stream;
	__u8 kind, src, dst, flags;
	__u32 graph;
	__u64 node;
};

/* A copy or memset node of a CUDA graph: its node as created, as a kernel's (above). */
static void copy_graph(const struct conv *c, __u16 *flags, __u32 *graph_id, __u64 *node_id,
		       __u32 graph, __u64 node)
{
	if (!graph && !node)
		return;
	*flags |= XPU_COPY_F_GRAPH;
	*graph_id = graph;
	*node_id = conv__node_origin(c, node);
}

static int copy(struct conv *c, const struct copy_fields *f)
{
	struct xpu_gpu_memcpy *r = (struct xpu_gpu_memcpy *)c->buf;

	if (incomplete(c, f->start, f->end))
		return 0;
	xpu_rec__init(r, XPU_REC_GPU_MEMCPY, sizeof(*r), f->start, c->pid, 0);
	if (f->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
		r->hdr.flags |= XPU_COPY_F_ASYNC;
	r->start_ns = f->start;
	r->end_ns = f->end;
	r->correlation_id = f->corr;
	r->bytes = f->bytes;
	r->device_id = f->device;
	r->context_id = f->context;
	r->stream_id = f->stream;
	r->copy_kind = f->kind;
	r->src_kind = f->src;
	r->dst_kind = f->dst;
	copy_graph(c, &r->hdr.flags, &r->graph_id, &r->graph_node_id, f->graph, f->node);
	c->st.copies++;
	return emit(c, sizeof(*r));
}

static int memcpy1(struct conv *c, const CUpti_ActivityMemcpy6 *m)
{
	conv__context(c, m->contextId, m->deviceId);
	return copy(c, &(struct copy_fields){ m->start, m->end, m->bytes, m->correlationId,
					      m->deviceId, m->contextId, m->streamId,
					      copy_kind(m->copyKind), m->srcKind, m->dstKind,
					      m->flags, m->graphId, m->graphNodeId });
}

/* Peer to peer: deviceId is the device the copy runs on; the source and destination devices
 * (srcDeviceId, dstDeviceId) have no place in the record yet. */
static int memcpy2(struct conv *c, const CUpti_ActivityMemcpyPtoP4 *m)
{
	return copy(c, &(struct copy_fields){ m->start, m->end, m->bytes, m->correlationId,
					      m->deviceId, m->contextId, m->streamId, XPU_COPY_PTOP,
					      m->srcKind, m->dstKind, m->flags, m->graphId,
					      m->graphNodeId });
}

static int memset1(struct conv *c, const CUpti_ActivityMemset4 *m)
{
	struct xpu_gpu_memset *r = (struct xpu_gpu_memset *)c->buf;

	if (incomplete(c, m->start, m->end))
		return 0;
	xpu_rec__init(r, XPU_REC_GPU_MEMSET, sizeof(*r), m->start, c->pid, 0);
	if (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC)
		r->hdr.flags |= XPU_COPY_F_ASYNC;
	r->start_ns = m->start;
	r->end_ns = m->end;
	r->correlation_id = m->correlationId;
	r->bytes = m->bytes;
	r->device_id = m->deviceId;
	r->context_id = m->contextId;
	r->stream_id = m->streamId;
	r->value = m->value;
	copy_graph(c, &r->hdr.flags, &r->graph_id, &r->graph_node_id, m->graphId, m->graphNodeId);
	c->st.memsets++;
	return emit(c, sizeof(*r));
}

static int sync1(struct conv *c, const CUpti_ActivitySynchronization2 *s)
{
	struct xpu_gpu_sync *r = (struct xpu_gpu_sync *)c->buf;

	xpu_rec__init(r, XPU_REC_GPU_SYNC, sizeof(*r), s->start, c->pid, 0);
	r->start_ns = s->start;
	r->end_ns = s->end;
	r->correlation_id = s->correlationId;
	r->device_id = context_device(c, s->contextId);
	r->context_id = s->contextId;
	/* CUPTI_SYNCHRONIZATION_INVALID_VALUE (all ones) when the sync has no stream */
	r->stream_id = s->streamId;
	/* CUpti_ActivitySynchronizationType 0..4 is enum xpu_sync_kind; later types (event and
	 * stream queries) are "unknown" here. */
	r->sync_kind = s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ?
			       (__u32)s->type :
			       XPU_SYNC_UNKNOWN;
	c->st.syncs++;
	return emit(c, sizeof(*r));
}

static int api(struct conv *c, const CUpti_ActivityAPI *a, __u16 domain)
{
	struct xpu_cuda_api *r = (struct xpu_cuda_api *)c->buf;

	/* processId is CUPTI's getpid(): ours, unless a record of a forked parent lingers */
	xpu_rec__init(r, XPU_REC_CUDA_API, sizeof(*r), a->start,
		      a->processId ? a->processId : c->pid, a->threadId);
	r->end_ns = a->end;
	r->correlation_id = a->correlationId;
	r->api_id = a->cbid;
	r->domain = domain;
	if (conv_api_set__has(&c->marked, domain == XPU_API_DRIVER, a->cbid))
		r->hdr.flags |= XPU_API_F_LAUNCH_MARKED;
	r->result = a->returnValue;
	c->st.api_calls++;
	return emit(c, sizeof(*r));
}

static int memory(struct conv *c, const CUpti_ActivityMemory4 *m)
{
	struct xpu_gpu_memory *r = (struct xpu_gpu_memory *)c->buf;
	__u8 op;

	if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
		op = XPU_MEM_ALLOC;
	else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		op = XPU_MEM_FREE;
	else
		return 0;
	xpu_rec__init(r, XPU_REC_GPU_MEMORY, sizeof(*r), m->timestamp, c->pid, 0);
	r->address = m->address;
	r->bytes = m->bytes;
	r->correlation_id = m->correlationId;
	r->device_id = m->deviceId;
	r->context_id = m->contextId;
	r->stream_id = m->streamId;
	r->op = op;
	r->memory_kind = (__u8)m->memoryKind;
	c->st.memory++;
	return emit(c, sizeof(*r));
}

static const char *overhead_name(CUpti_ActivityOverheadKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
		return "driver compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
		return "CUPTI buffer flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
		return "CUPTI instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
		return "CUPTI resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
		return "module loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
		return "lazy function loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
		return "command buffer full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
		return "activity buffer request";
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
		return "UVM activity init";
	default:
		return "overhead";
	}
}

/*
 * CUPTI's own buffer traffic, the activity records' hand-over: one request and one flush or
 * more per kernel under CUDA 13 (docs/cupti.md, "Activity buffers"), each a range on the
 * application's thread. Those that take a microsecond or two are the cost of recording at
 * all and would bury the thread's track; those of this long or longer are worth seeing (39 us
 * ones were how the buffers' cost was found).
 */
#define OVERHEAD_BUFFER_MIN_NS 10000

/* An overhead interval: a start/end range pair in its own domain, on the thread it names. */
static int overhead(struct conv *c, const CUpti_ActivityOverhead3 *o)
{
	const char *name = overhead_name(o->overheadKind);
	__u32 tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
	__u64 id;
	int size, err;

	if ((o->overheadKind == CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST ||
	     o->overheadKind == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH) &&
	    o->end >= o->start && o->end - o->start < OVERHEAD_BUFFER_MIN_NS) {
		c->st.overheads_short++;
		return 0;
	}
	id = OVERHEAD_RANGE_BIT | ++c->next_overhead;
	if (!c->overhead_domain) {
		static const char domain[] = "cupti overhead";

		if (send_string(c, OVERHEAD_RANGE_BIT, XPU_STR_DOMAIN, domain, sizeof(domain) - 1,
				o->start))
			return -EAGAIN;
		c->overhead_domain = OVERHEAD_RANGE_BIT;
	}
	c->st.overheads++;
	size = xpu_range__build(c->buf, sizeof(c->buf), o->start, c->pid, tid, XPU_RANGE_START, id,
				0, c->overhead_domain, name, strlen(name));
	err = emit(c, (__u32)size);
	if (err)
		return err;
	size = xpu_range__build(c->buf, sizeof(c->buf), o->end, c->pid, tid, XPU_RANGE_END, id, 0,
				c->overhead_domain, NULL, 0);
	return emit(c, (__u32)size);
}

int conv__activity(struct conv *c, const CUpti_Activity *a)
{
	__u64 before = c->st.records;
	int err;

	c->st.activities++;
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		err = kernel(c, (const CUpti_ActivityKernel10 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		err = memcpy1(c, (const CUpti_ActivityMemcpy6 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		err = memcpy2(c, (const CUpti_ActivityMemcpyPtoP4 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		err = memset1(c, (const CUpti_ActivityMemset4 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		err = sync1(c, (const CUpti_ActivitySynchronization2 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		err = api(c, (const CUpti_ActivityAPI *)a, XPU_API_RUNTIME);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		err = api(c, (const CUpti_ActivityAPI *)a, XPU_API_DRIVER);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		err = memory(c, (const CUpti_ActivityMemory4 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		err = overhead(c, (const CUpti_ActivityOverhead3 *)a);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		c->st.external++;
		return 0;
	default:
		c->st.other++;
		return 0;
	}
	return err ? err : (int)(c->st.records - before);
}

int conv__range(struct conv *c, __u64 ts_ns, __u32 tid, __u32 phase, __u64 range_id,
		__u64 domain_id, const char *name)
{
	size_t len = name ? strnlen(name, XPU_RANGE_NAME_MAX + 1) : 0;
	int size;

	if (len > XPU_RANGE_NAME_MAX)
		len = XPU_RANGE_NAME_MAX; /* NVTX names are free text: keep the first KiB */
	size = xpu_range__build(c->buf, sizeof(c->buf), ts_ns, c->pid, tid, phase, range_id, 0,
				domain_id, name, len);
	if (size < 0)
		return size;
	((struct xpu_rec *)c->buf)->flags |= XPU_RANGE_F_NVTX;
	c->st.ranges++;
	return emit(c, (__u32)size);
}

__u64 conv__domain(struct conv *c, __u64 handle, const char *name, __u64 ts_ns)
{
	size_t len = name ? strnlen(name, XPU_STRING_MAX) : 0;

	/* Domain ids are the handle's value with the top bits clear of the STRING ids above:
	 * they only need to be unique among this process's domains. */
	handle &= ~(OVERHEAD_RANGE_BIT | (1ull << 63));
	if (!handle || send_string(c, handle, XPU_STR_DOMAIN, name ? name : "", len, ts_ns))
		return 0;
	return handle;
}

int conv__loss(struct conv *c, __u64 ts_ns, __u32 cause, __u64 count, __u64 first_ns)
{
	int size = xpu_loss__build(c->buf, sizeof(c->buf), ts_ns, c->pid, cause, count, first_ns);

	return size < 0 ? size : emit(c, (__u32)size);
}

int conv__clock_sync(struct conv *c, __u64 before_ns, __u64 cupti_ns, __u64 after_ns)
{
	struct xpu_clock_sync *r = (struct xpu_clock_sync *)c->buf;

	xpu_rec__init(r, XPU_REC_CLOCK_SYNC, sizeof(*r), before_ns, c->pid, 0);
	r->ref_clock = XPU_CLOCK_MONOTONIC;
	r->other_clock = XPU_CLOCK_CUPTI;
	r->ref_before_ns = before_ns;
	r->other_ns = cupti_ns;
	r->ref_after_ns = after_ns;
	return emit(c, sizeof(*r));
}

void conv__stats(const struct conv *c, struct conv_stats *st)
{
	*st = c->st;
}
