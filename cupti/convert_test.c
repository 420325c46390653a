/* SPDX-License-Identifier: MIT */
/*
 * cupti/convert.c fed real CUPTI activity structs, as the CUDA 13 headers define them, one
 * of every kind it converts: the ring records it produces must match the golden file byte
 * for byte (testdata/convert.golden, one record per line in hex), and the fields that matter
 * are checked by name as well, so a wrong golden file cannot hide a wrong conversion.
 *
 *	cupti_convert_test GOLDEN		compare
 *	cupti_convert_test --update GOLDEN	rewrite GOLDEN (review the diff!)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "cupti/convert.h"
#include "xpusup/event.h"
#include "actors/sink/cuda_api_names.h"

static int failures;

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                              \
		}                                                                                \
	} while (0)

#define OUT_MAX (1u << 20)
static unsigned char out[OUT_MAX];
static size_t out_len;
static int refuse; /* the next put fails with -ENOBUFS */

static int put(void *ctx, const void *rec, __u32 size)
{
	if (refuse) {
		refuse = 0;
		return -ENOBUFS;
	}
	if (out_len + size > OUT_MAX || size % 8 || xpu_rec__validate(rec, size))
		abort();
	memcpy(out + out_len, rec, size);
	out_len += size;
	return 0;
}

/* The i-th record of the output, or NULL. */
static const struct xpu_rec *nth(unsigned int i)
{
	size_t off = 0;

	while (off < out_len) {
		const struct xpu_rec *r = (const void *)(out + off);

		if (!i--)
			return r;
		off += r->size;
	}
	return NULL;
}

static unsigned int count_type(__u16 type)
{
	unsigned int i, n = 0;
	const struct xpu_rec *r;

	for (i = 0; (r = nth(i)); i++)
		n += r->type == type;
	return n;
}

static const struct xpu_string *string_of(__u64 id)
{
	const struct xpu_rec *r;
	unsigned int i;

	for (i = 0; (r = nth(i)); i++)
		if (r->type == XPU_REC_STRING && ((const struct xpu_string *)r)->id == id)
			return (const struct xpu_string *)r;
	return NULL;
}

static CUpti_ActivityKernel10 kernel(__u32 corr, const char *name, __u64 start)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.registersPerThread = 32;
	k.start = start;
	k.end = start + 2500;
	k.completed = start + 2600;
	k.deviceId = 0;
	k.contextId = 1;
	k.streamId = 7;
	k.gridX = 1024;
	k.gridY = 1;
	k.gridZ = 1;
	k.blockX = 256;
	k.blockY = 1;
	k.blockZ = 1;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 4096;
	k.correlationId = corr;
	k.gridId = 5;
	k.name = name;
	return k;
}

static void feed(struct conv *c)
{
	static char long_name[XPU_STRING_MAX + 100];
	CUpti_ActivityKernel10 k;
	CUpti_ActivityMemcpy6 m;
	CUpti_ActivityMemcpyPtoP4 p;
	CUpti_ActivityMemset4 s;
	CUpti_ActivitySynchronization2 y;
	CUpti_ActivityAPI a;
	CUpti_ActivityMemory4 mem;
	CUpti_ActivityOverhead3 o;
	CUpti_ActivityExternalCorrelation x;
	CUpti_Activity ctx_kind = { .kind = CUPTI_ACTIVITY_KIND_CONTEXT };

	/* Two kernels of one name (one STRING), one of another. */
	k = kernel(42, "_Z6vecAddPKfS0_Pfi", 1000000);
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == 2);
	k = kernel(43, "_Z6vecAddPKfS0_Pfi", 1010000);
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == 1);
	k = kernel(44, "_Z5scalePff", 1020000);
	k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == 2);
	/* A graph kernel of instantiated node 900, a clone of clone 800 of node 77. */
	CHECK(conv__node_cloned(c, 800, 77) == 0);
	CHECK(conv__node_cloned(c, 900, 800) == 0);
	k = kernel(45, "_Z5scalePff", 1030000);
	k.graphId = 3;
	k.graphNodeId = 900;
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == 1);
	/* A name longer than a STRING can carry is cut, not lost. */
	memset(long_name, 'x', sizeof(long_name) - 1);
	k = kernel(46, long_name, 1040000);
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == 2);

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
	m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
	m.bytes = 1 << 20;
	m.start = 2000000;
	m.end = 2090000;
	m.deviceId = 0;
	m.contextId = 1;
	m.streamId = 7;
	m.correlationId = 50;
	CHECK(conv__activity(c, (CUpti_Activity *)&m) == 1);

	memset(&p, 0, sizeof(p));
	p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
	p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
	p.bytes = 65536;
	p.start = 2100000;
	p.end = 2110000;
	p.deviceId = 1;
	p.contextId = 2;
	p.streamId = 9;
	p.srcDeviceId = 0;
	p.dstDeviceId = 1;
	p.correlationId = 51;
	p.graphId = 4; /* a copy node of a graph: clone 800 of node 77 */
	p.graphNodeId = 800;
	CHECK(conv__activity(c, (CUpti_Activity *)&p) == 1);

	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s.value = 0xab;
	s.bytes = 4096;
	s.start = 2200000;
	s.end = 2201000;
	s.contextId = 1;
	s.streamId = 7;
	s.correlationId = 52;
	s.graphId = 4; /* a memset node whose origin the library never heard of: its own id */
	s.graphNodeId = 905;
	CHECK(conv__activity(c, (CUpti_Activity *)&s) == 1);
	/* and one outside any graph: no graph flag, no node (the same copy_graph() as copies) */
	s.correlationId = 58;
	s.value = 0xcd;
	s.start = 2202000;
	s.end = 2203000;
	s.graphId = 0;
	s.graphNodeId = 0;
	CHECK(conv__activity(c, (CUpti_Activity *)&s) == 1);

	/* Context 1 was seen on device 0 (the kernels); context 5 on device 3 by callback. */
	conv__context(c, 5, 3);
	memset(&y, 0, sizeof(y));
	y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	y.start = 2300000;
	y.end = 2400000;
	y.correlationId = 53;
	y.contextId = 5;
	y.streamId = 7;
	CHECK(conv__activity(c, (CUpti_Activity *)&y) == 1);

	/* Launch APIs, and copies and memsets, are marked when the library calls the marker;
	 * other calls never. */
	conv__set_launch_marked(c, true);
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	a.start = 990000;
	a.end = 995000;
	a.processId = 4242;
	a.threadId = 4243;
	a.correlationId = 42;
	CHECK(conv__activity(c, (CUpti_Activity *)&a) == 1);
	a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	a.start = 991000;
	a.end = 994000;
	a.returnValue = 1;
	CHECK(conv__activity(c, (CUpti_Activity *)&a) == 1);
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
	a.start = 996000;
	a.end = 999000;
	a.returnValue = 0;
	a.correlationId = 55;
	CHECK(conv__activity(c, (CUpti_Activity *)&a) == 1);
	a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
	a.start = 999500;
	a.end = 999900;
	a.correlationId = 56;
	CHECK(conv__activity(c, (CUpti_Activity *)&a) == 1);
	conv__set_launch_marked(c, false);

	memset(&mem, 0, sizeof(mem));
	mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
	mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	mem.correlationId = 54;
	mem.address = 0x7f0000000000ull;
	mem.bytes = 1 << 24;
	mem.timestamp = 900000;
	mem.processId = 4242;
	mem.contextId = 1;
	CHECK(conv__activity(c, (CUpti_Activity *)&mem) == 1);
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	mem.timestamp = 3000000;
	CHECK(conv__activity(c, (CUpti_Activity *)&mem) == 1);
	mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
	CHECK(conv__activity(c, (CUpti_Activity *)&mem) == 0);

	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o.objectId.pt.processId = 4242;
	o.objectId.pt.threadId = 4250;
	o.start = 2500000;
	o.end = 2520000;
	CHECK(conv__activity(c, (CUpti_Activity *)&o) == 3); /* domain STRING, start, end */
	o.start = 2600000;
	o.end = 2610000;
	CHECK(conv__activity(c, (CUpti_Activity *)&o) == 2);
	/* buffer traffic under 10 us: counted, not sent; anything else of that length is sent */
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
	o.start = 2700000;
	o.end = 2709999;
	CHECK(conv__activity(c, (CUpti_Activity *)&o) == 0);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
	o.end = 2701000;
	CHECK(conv__activity(c, (CUpti_Activity *)&o) == 0);
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER;
	CHECK(conv__activity(c, (CUpti_Activity *)&o) == 2);

	memset(&x, 0, sizeof(x));
	x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
	x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	x.externalId = 77777;
	x.correlationId = 42;
	CHECK(conv__activity(c, (CUpti_Activity *)&x) == 0);
	CHECK(conv__activity(c, &ctx_kind) == 0);

	/* NVTX: a domain, nested pushes, a start/end pair, a mark. */
	CHECK(conv__domain(c, 0x5555aaaa0000ull, "training", 2700000) == 0x5555aaaa0000ull);
	CHECK(conv__range(c, 2700100, 4243, XPU_RANGE_PUSH, 0, 0, "epoch") == 0);
	CHECK(conv__range(c, 2700200, 4243, XPU_RANGE_PUSH, 0, 0x5555aaaa0000ull, "forward") == 0);
	CHECK(conv__range(c, 2700300, 4243, XPU_RANGE_POP, 0, 0x5555aaaa0000ull, NULL) == 0);
	CHECK(conv__range(c, 2700400, 4243, XPU_RANGE_POP, 0, 0, NULL) == 0);
	CHECK(conv__range(c, 2700500, 4243, XPU_RANGE_START, 9, 0, "load batch") == 0);
	CHECK(conv__range(c, 2700600, 4244, XPU_RANGE_END, 9, 0, NULL) == 0);
	CHECK(conv__range(c, 2700700, 4243, XPU_RANGE_MARK, 0, 0, "checkpoint") == 0);

	CHECK(conv__loss(c, 2800000, XPU_LOSS_CUPTI, 17, 0) == 0);
	CHECK(conv__clock_sync(c, 2900000, 2900010, 2900020) == 0);

	/* A refused put is counted and conversion goes on. */
	refuse = 1;
	k = kernel(47, "_Z6vecAddPKfS0_Pfi", 3100000);
	CHECK(conv__activity(c, (CUpti_Activity *)&k) == -ENOBUFS);
}

/* The fields that matter, read back from the records. */
static void check_fields(const struct conv *c)
{
	const struct xpu_gpu_kernel *k[5];
	const struct xpu_string *s;
	const struct xpu_rec *r;
	unsigned int i, nk = 0;
	struct conv_stats st;

	for (i = 0; (r = nth(i)); i++)
		if (r->type == XPU_REC_GPU_KERNEL && nk < 5)
			k[nk++] = (const void *)r;
	CHECK(nk == 5);
	if (nk < 5)
		return;
	CHECK(k[0]->correlation_id == 42 && k[0]->start_ns == 1000000 && k[0]->end_ns == 1002500);
	CHECK(k[0]->hdr.pid == 4242 && k[0]->hdr.ts_ns == k[0]->start_ns);
	CHECK(k[0]->grid[0] == 1024 && k[0]->block[0] == 256 && k[0]->registers == 32);
	CHECK(k[0]->static_smem == 1024 && k[0]->dynamic_smem == 4096 && k[0]->stream_id == 7);
	CHECK(k[0]->name_id && k[0]->name_id == k[1]->name_id && k[2]->name_id != k[0]->name_id);
	s = string_of(k[0]->name_id);
	CHECK(s && s->kind == XPU_STR_KERNEL && s->len == 18 &&
	      !memcmp(s->text, "_Z6vecAddPKfS0_Pfi", 18));
	CHECK(!(k[0]->hdr.flags & XPU_KERNEL_F_COOPERATIVE) &&
	      (k[2]->hdr.flags & XPU_KERNEL_F_COOPERATIVE));
	CHECK((k[3]->hdr.flags & XPU_KERNEL_F_GRAPH) && k[3]->graph_node_id == 77 &&
	      k[3]->graph_id == 3);
	CHECK(!(k[0]->hdr.flags & XPU_KERNEL_F_GRAPH) && !k[0]->graph_node_id);
	s = string_of(k[4]->name_id);
	CHECK(s && s->len == XPU_STRING_MAX);

	CHECK(count_type(XPU_REC_GPU_MEMCPY) == 2 && count_type(XPU_REC_GPU_MEMSET) == 2);
	CHECK(count_type(XPU_REC_GPU_SYNC) == 1 && count_type(XPU_REC_CUDA_API) == 4);
	CHECK(count_type(XPU_REC_GPU_MEMORY) == 2 && count_type(XPU_REC_LOSS) == 1);
	CHECK(count_type(XPU_REC_CLOCK_SYNC) == 1);
	for (i = 0; (r = nth(i)); i++) {
		if (r->type == XPU_REC_GPU_MEMCPY) {
			const struct xpu_gpu_memcpy *m = (const void *)r;

			CHECK(m->copy_kind ==
			      (m->correlation_id == 50 ? XPU_COPY_HTOD : XPU_COPY_PTOP));
			CHECK(m->correlation_id != 50 ||
			      (m->bytes == 1 << 20 && (m->hdr.flags & XPU_COPY_F_ASYNC)));
			/* a graph's copy node carries its node as created, as a kernel does */
			CHECK(m->correlation_id == 50 ?
				      !(m->hdr.flags & XPU_COPY_F_GRAPH) && !m->graph_node_id &&
					      !m->graph_id :
				      (m->hdr.flags & XPU_COPY_F_GRAPH) && m->graph_node_id == 77 &&
					      m->graph_id == 4);
		} else if (r->type == XPU_REC_GPU_MEMSET) {
			const struct xpu_gpu_memset *m = (const void *)r;

			CHECK(m->correlation_id == 58 ?
				      !(m->hdr.flags & XPU_COPY_F_GRAPH) && !m->graph_node_id &&
					      !m->graph_id && m->value == 0xcd :
				      (m->hdr.flags & XPU_COPY_F_GRAPH) &&
					      m->graph_node_id == 905 && m->graph_id == 4 &&
					      m->value == 0xab);
		} else if (r->type == XPU_REC_GPU_SYNC) {
			const struct xpu_gpu_sync *y = (const void *)r;

			CHECK(y->device_id == 3 && y->sync_kind == XPU_SYNC_STREAM &&
			      y->end_ns == 2400000);
		} else if (r->type == XPU_REC_CUDA_API) {
			const struct xpu_cuda_api *a = (const void *)r;

			CHECK(a->hdr.tid == 4243);
			if (a->correlation_id == 55) { /* cudaMalloc */
				CHECK(a->api_id == 20 && !(a->hdr.flags & XPU_API_F_LAUNCH_MARKED));
				continue;
			}
			if (a->correlation_id == 56) { /* cudaMemcpyAsync */
				CHECK(a->api_id == 41 && (a->hdr.flags & XPU_API_F_LAUNCH_MARKED));
				continue;
			}
			CHECK(a->correlation_id == 42 && (a->hdr.flags & XPU_API_F_LAUNCH_MARKED));
			CHECK(a->domain == XPU_API_RUNTIME ? a->api_id == 211 && !a->result :
							     a->api_id == 307 && a->result == 1);
		} else if (r->type == XPU_REC_GPU_MEMORY) {
			const struct xpu_gpu_memory *m = (const void *)r;

			CHECK(m->op == (m->hdr.ts_ns == 900000 ? XPU_MEM_ALLOC : XPU_MEM_FREE));
			CHECK(m->bytes == 1 << 24 && m->address == 0x7f0000000000ull);
		} else if (r->type == XPU_REC_RANGE) {
			const struct xpu_range *g = (const void *)r;

			if (g->domain_id >> 62 == 1) /* overhead */
				CHECK(!(g->hdr.flags & XPU_RANGE_F_NVTX) && g->hdr.tid == 4250);
			else
				CHECK(g->hdr.flags & XPU_RANGE_F_NVTX);
		}
	}
	conv__stats(c, &st);
	CHECK(st.kernels == 6 && st.copies == 2 && st.memsets == 2 && st.syncs == 1);
	CHECK(st.api_calls == 4 && st.memory == 2 && st.overheads == 3 && st.ranges == 7);
	CHECK(st.overheads_short == 2);
	CHECK(st.external == 1 && st.other == 1 && st.names_cut == 1 && st.put_failed == 1);
	CHECK(st.strings == 5); /* three kernel names, the overhead domain, "training" */
	CHECK(st.clones == 2);
}

static int write_golden(const char *path)
{
	const struct xpu_rec *r;
	unsigned int i, j;
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	for (i = 0; (r = nth(i)); i++) {
		fprintf(f, "%s %u", xpu_rec_type__name(r->type), r->size);
		for (j = 0; j < r->size; j++)
			fprintf(f, "%s%02x", j % 8 ? "" : " ", ((const unsigned char *)r)[j]);
		fputc('\n', f);
	}
	return fclose(f) ? -errno : 0;
}

static int compare_golden(const char *path)
{
	char tmp[] = "/tmp/cupti_convert_XXXXXX", a[1 << 16], b[1 << 16];
	int fd = mkstemp(tmp), line = 0, bad = 0;
	FILE *want, *got;

	if (fd < 0)
		return -errno;
	close(fd);
	if (write_golden(tmp))
		return -EIO;
	want = fopen(path, "r");
	got = fopen(tmp, "r");
	if (!want || !got) {
		fprintf(stderr, "cannot open %s\n", path);
		return -ENOENT;
	}
	for (;;) {
		char *x = fgets(a, sizeof(a), want), *y = fgets(b, sizeof(b), got);

		line++;
		if (!x && !y)
			break;
		if (!x || !y || strcmp(x, y)) {
			fprintf(stderr, "%s:%d: differs\n  want %.120s\n  got  %.120s\n", path,
				line, x ? x : "(end)", y ? y : "(end)");
			if (++bad > 5)
				break;
		}
	}
	fclose(want);
	fclose(got);
	unlink(tmp);
	return bad ? -EINVAL : 0;
}

static const char *api_name(__u16 domain, __u32 id)
{
	return conv__api_name(domain == XPU_API_DRIVER, id);
}

/* Whether the API's name says it only asks: a getter, a peek, an occupancy estimate. */
static int only_asks(const char *name)
{
	return name && (strstr(name, "Get") || strstr(name, "Peek") || strstr(name, "Occupancy"));
}

/* The calls left out unless api_queries = yes (convert.h): every one a known API whose name
 * says it only asks, none a launch; the four that made 80 % of PyTorch's API records on an
 * H200 among them. */
static void check_queries(void)
{
	const char *name;
	int seen = 0;
	size_t i;

	for (i = 0; i < conv_n_runtime_queries; i++) {
		name = api_name(XPU_API_RUNTIME, conv_runtime_queries[i]);
		CHECK(only_asks(name));
		CHECK(!conv__is_launch(false, conv_runtime_queries[i]));
		seen += name &&
			(!strcmp(name, "cudaGetDevice") || !strcmp(name, "cudaGetLastError"));
	}
	for (i = 0; i < conv_n_driver_queries; i++) {
		name = api_name(XPU_API_DRIVER, conv_driver_queries[i]);
		CHECK(only_asks(name));
		CHECK(!conv__is_launch(true, conv_driver_queries[i]));
		seen += name && (!strcmp(name, "cuDevicePrimaryCtxGetState") ||
				 !strcmp(name, "cuCtxGetCurrent"));
	}
	CHECK(seen == 4);
}

/* The copies and memsets whose stacks the library records (conv__is_transfer): by name, every
 * variant of both APIs, and nothing else: no allocation, launch or query among them. */
static void check_transfers(void)
{
	__u32 ids[256];
	size_t i, j, n;
	int driver;

	CHECK(conv__is_transfer(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
	CHECK(conv__is_transfer(false, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020));
	CHECK(conv__is_transfer(true, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2));
	CHECK(conv__is_transfer(true, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2));
	CHECK(!conv__is_transfer(false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
	CHECK(!conv__is_transfer(true, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2));
	CHECK(!conv__is_transfer(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
	CHECK(!conv__is_transfer(true, 0xffff)); /* an id no header names */
	/* conv__is_transfer searches the names by (domain, id): they must be in that order */
	for (i = 1; i < sizeof(cuda_api_names) / sizeof(cuda_api_names[0]); i++)
		CHECK(cuda_api_names[i - 1].domain < cuda_api_names[i].domain ||
		      (cuda_api_names[i - 1].domain == cuda_api_names[i].domain &&
		       cuda_api_names[i - 1].id < cuda_api_names[i].id));
	for (driver = 0; driver < 2; driver++) {
		n = conv__transfers(driver, ids, 256);
		CHECK(n >= 40 && n <= 256);
		for (i = 0; i < n && i < 256; i++) {
			const char *name =
				api_name(driver ? XPU_API_DRIVER : XPU_API_RUNTIME, ids[i]);

			CHECK(conv__is_transfer(driver, ids[i]) &&
			      !conv__is_launch(driver, ids[i]));
			CHECK(name && strstr(name, driver ? "cuMem" : "cudaMem") == name);
			for (j = 0; j < (driver ? conv_n_driver_queries : conv_n_runtime_queries);
			     j++)
				CHECK(ids[i] !=
				      (driver ? conv_driver_queries : conv_runtime_queries)[j]);
		}
		CHECK(conv__transfers(driver, ids, 3) == n); /* the count, whatever fits */
	}
}

/* The stacked APIs are the launches and transfers, nothing else; a call is marked only when its
 * id is in the set given (inject.c gives the ids whose callbacks CUPTI accepted). */
static void check_marked(void)
{
	static const __u32 runtime[] = { CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
					 CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 };
	struct conv_api_set s, some;
	CUpti_ActivityAPI a;
	const struct xpu_rec *r;
	unsigned int i, marked = 0, plain = 0;
	struct conv *c;
	__u32 id, n = 0;
	int driver;

	conv__stack_apis(&s);
	CHECK(conv_api_set__has(&s, false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
	CHECK(conv_api_set__has(&s, false, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
	CHECK(conv_api_set__has(&s, true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	CHECK(conv_api_set__has(&s, false, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
	CHECK(conv_api_set__has(&s, true, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2));
	CHECK(!conv_api_set__has(&s, false, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
	CHECK(!conv_api_set__has(&s, false, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
	for (driver = 0; driver < 2; driver++)
		for (id = 0; id < CONV_API_IDS; id++)
			if (conv_api_set__has(&s, driver, id)) {
				CHECK(conv__is_launch(driver, id) || conv__is_transfer(driver, id));
				n++;
			}
	CHECK(n == conv_n_runtime_launches + conv_n_driver_launches +
			   conv__transfers(false, &id, 0) + conv__transfers(true, &id, 0));
	CHECK(conv_api_set__add(&s, false, CONV_API_IDS) == -ERANGE &&
	      !conv_api_set__has(&s, false, CONV_API_IDS));

	/* CUPTI accepted the copy's callback, not the launch's: only the copy is waited for */
	memset(&some, 0, sizeof(some));
	CHECK(!conv_api_set__add(&some, false, runtime[1]));
	c = conv__new(4242, put, NULL);
	if (!c) {
		failures++;
		return;
	}
	out_len = 0;
	conv__set_marked(c, &some);
	memset(&a, 0, sizeof(a));
	a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	for (i = 0; i < 2; i++) {
		a.cbid = runtime[i];
		a.start = 1000 + i * 100;
		a.end = a.start + 50;
		a.correlationId = 70 + i;
		CHECK(conv__activity(c, (CUpti_Activity *)&a) == 1);
	}
	for (i = 0; (r = nth(i)); i++) {
		const struct xpu_cuda_api *api = (const void *)r;

		if (r->type != XPU_REC_CUDA_API)
			continue;
		if (api->hdr.flags & XPU_API_F_LAUNCH_MARKED)
			marked += api->correlation_id == 71;
		else
			plain += api->correlation_id == 70;
	}
	CHECK(marked == 1 && plain == 1);
	conv__free(c);
}

int main(int argc, char **argv)
{
	int update = argc == 3 && !strcmp(argv[1], "--update");
	const char *golden = argv[argc - 1];
	struct conv *c;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: %s [--update] GOLDEN\n", argv[0]);
		return 2;
	}
	c = conv__new(4242, put, NULL);
	if (!c)
		return 1;
	feed(c);
	check_fields(c);
	err = update ? write_golden(golden) : compare_golden(golden);
	if (err) {
		fprintf(stderr, "golden %s: %s\n", golden, strerror(-err));
		failures++;
	}
	conv__free(c);

	/* What a forced flush gives for a kernel still running: no times. Counted, not sent. */
	c = conv__new(4242, put, NULL);
	if (!c)
		return 1;
	{
		CUpti_ActivityKernel10 k = kernel(77, "running", 0);
		struct conv_stats st;

		k.end = 0;
		CHECK(conv__activity(c, (const CUpti_Activity *)&k) == 0);
		k = kernel(78, "backwards", 5000);
		k.end = 4000;
		CHECK(conv__activity(c, (const CUpti_Activity *)&k) == 0);
		conv__stats(c, &st);
		CHECK(st.incomplete == 2 && st.kernels == 0);
	}
	conv__free(c);
	check_queries();
	check_transfers();
	check_marked();
	printf("%s: %d failures\n", argv[0], failures);
	return failures ? 1 : 0;
}
