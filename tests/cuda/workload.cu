/* SPDX-License-Identifier: MIT */
/*
 * A CUDA program whose GPU work is known in advance, for checking what `xpusup record` makes
 * of a real CUDA run (tests/cuda/check_trace.py, scripts/gpu-check, docs/gpu.md).
 *
 *	cuda_workload            runs it (needs an NVIDIA GPU and driver)
 *	cuda_workload --expect   prints, as one JSON object, every count, name and size the run
 *	                         makes, without touching CUDA (runs anywhere)
 *
 * Both come from the tables below (kernels, transfers, ranges, and the constants next to
 * them): the run walks the tables, --expect prints them, so the two cannot disagree. Every
 * kernel, copy and memset is issued from its own extern "C" noinline host function (its
 * `launcher`), so a launch stack can be checked for that frame.
 *
 * Exit status: 0 done; 77 no usable GPU (no driver, a driver older than the runtime, no
 * device), with one line on stderr saying which; 100 usage; 111 a CUDA call failed or the
 * results are wrong.
 *
 * Build (tests/cuda/meson.build): nvcc -lineinfo, host code with frame pointers and without
 * sibling calls, cudart linked statically (nvcc's default) so the binary runs wherever a new
 * enough driver is, whatever CUDA runtime that machine has.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_NO_GPU 77
#define EXIT_USAGE 100
#define EXIT_FAILURE_CUDA 111

/* ---- the device code ---- */

#define N_ELEMS (1 << 20) /* floats per buffer: 4 MiB */
#define BLOCK 256
#define GRID ((N_ELEMS + BLOCK - 1) / BLOCK)

namespace xpusup_test
{
template <typename T, int TILE> struct tile_params {
	T alpha;
	int n;
};

/* A templated kernel in a namespace: a long mangled name with template arguments. */
template <typename T, int TILE>
__global__ void saxpy_tiled(T *__restrict__ y, const T *__restrict__ x, tile_params<T, TILE> p)
{
	int base = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;

#pragma unroll
	for (int i = 0; i < TILE; i++)
		if (base + i < p.n)
			y[base + i] += p.alpha * x[base + i];
}
} // namespace xpusup_test

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void scale(float *x, float factor, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= factor;
}

__global__ void graph_fill(float *x, float value, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = value;
}

__global__ void graph_square(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] * x[i];
}

__global__ void graph_accumulate(float *acc, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		acc[i] += x[i];
}

/* ---- the host side: buffers and one launcher per kind of work ---- */

struct buffers {
	cudaStream_t stream;
	float *d_a, *d_b, *d_c, *d_g, *d_acc;
	float *h_a, *h_b, *h_c; /* pinned: one DMA, one CUPTI record per copy */
	float *h_params, *d_params;
	float *h_probe;
	cudaGraphExec_t graph;
};

static const char *failed_call;
static cudaError_t failed_err = cudaSuccess;

/* Remembers the first failure; the launchers go on, run() checks once per phase. */
static void check(cudaError_t err, const char *call)
{
	if (err != cudaSuccess && failed_err == cudaSuccess) {
		failed_err = err;
		failed_call = call;
	}
}

#define LAUNCHER extern "C" __attribute__((noinline, used))

LAUNCHER void launch_vec_add(struct buffers *b)
{
	vec_add<<<GRID, BLOCK, 0, b->stream>>>(b->d_a, b->d_b, b->d_c, N_ELEMS);
	check(cudaGetLastError(), "vec_add<<<>>>");
}

LAUNCHER void launch_scale(struct buffers *b)
{
	scale<<<GRID, BLOCK, 0, b->stream>>>(b->d_c, 0.5f, N_ELEMS);
	check(cudaGetLastError(), "scale<<<>>>");
}

LAUNCHER void launch_saxpy_tiled(struct buffers *b)
{
	xpusup_test::tile_params<float, 4> p = { 0.25f, N_ELEMS };

	xpusup_test::saxpy_tiled<float, 4><<<GRID / 4, BLOCK, 0, b->stream>>>(b->d_c, b->d_a, p);
	check(cudaGetLastError(), "saxpy_tiled<<<>>>");
}

/* The graph's kernels: launched only while the stream is captured (capture_graph), so they
 * run only as nodes of the graph, when launch_graph launches it. */
LAUNCHER void launch_graph_fill(struct buffers *b)
{
	graph_fill<<<GRID, BLOCK, 0, b->stream>>>(b->d_g, 3.0f, N_ELEMS);
	check(cudaGetLastError(), "graph_fill<<<>>>");
}

LAUNCHER void launch_graph_square(struct buffers *b)
{
	graph_square<<<GRID, BLOCK, 0, b->stream>>>(b->d_g, N_ELEMS);
	check(cudaGetLastError(), "graph_square<<<>>>");
}

LAUNCHER void launch_graph_accumulate(struct buffers *b)
{
	graph_accumulate<<<GRID, BLOCK, 0, b->stream>>>(b->d_acc, b->d_g, N_ELEMS);
	check(cudaGetLastError(), "graph_accumulate<<<>>>");
}

LAUNCHER void launch_graph(struct buffers *b)
{
	check(cudaGraphLaunch(b->graph, b->stream), "cudaGraphLaunch");
}

LAUNCHER void copy_input_a(struct buffers *b)
{
	check(cudaMemcpy(b->d_a, b->h_a, N_ELEMS * sizeof(float), cudaMemcpyHostToDevice),
	      "cudaMemcpy a");
}

LAUNCHER void copy_input_b(struct buffers *b)
{
	check(cudaMemcpy(b->d_b, b->h_b, N_ELEMS * sizeof(float), cudaMemcpyHostToDevice),
	      "cudaMemcpy b");
}

#define PARAMS_BYTES 256
#define PROBE_BYTES 4096

LAUNCHER void upload_params(struct buffers *b)
{
	check(cudaMemcpy(b->d_params, b->h_params, PARAMS_BYTES, cudaMemcpyHostToDevice),
	      "cudaMemcpy params");
}

/* The head of the graph's accumulator. */
LAUNCHER void download_probe(struct buffers *b)
{
	check(cudaMemcpy(b->h_probe, b->d_acc, PROBE_BYTES, cudaMemcpyDeviceToHost),
	      "cudaMemcpy probe");
}

LAUNCHER void download_result(struct buffers *b)
{
	check(cudaMemcpy(b->h_c, b->d_c, N_ELEMS * sizeof(float), cudaMemcpyDeviceToHost),
	      "cudaMemcpy c");
}

LAUNCHER void clear_accumulator(struct buffers *b)
{
	check(cudaMemset(b->d_acc, 0, N_ELEMS * sizeof(float)), "cudaMemset");
}

/* ---- the tables: what runs, and what --expect prints ---- */

#define ITERATIONS 10 /* compute iterations */
#define GRAPH_LAUNCHES 10 /* launches of the captured graph */

enum phase {
	PHASE_SETUP, /* once, before the iterations */
	PHASE_ITERATION, /* once per iteration */
	PHASE_GRAPH, /* captured into the graph: runs once per graph launch */
	PHASE_TEARDOWN, /* once, after the graph */
};

static const char *const phase_names[] = { "setup", "iteration", "graph", "teardown" };

static int times_run(enum phase p)
{
	return p == PHASE_ITERATION ? ITERATIONS : p == PHASE_GRAPH ? GRAPH_LAUNCHES : 1;
}

struct kernel_spec {
	const char *name; /* as in the source */
	const char *mangled; /* as nvcc names it: CUPTI's name (checked against the PTX in CI) */
	const char *demangled; /* c++filt of mangled (checked in CI) */
	const char *launcher; /* the host function on the launch stack (for a graph kernel: the
				* one that launched it while capturing, which made its node) */
	enum phase phase;
	int per_phase; /* launches each time its phase runs */
	void (*launch)(struct buffers *);
};

static const struct kernel_spec kernels[] = {
	{ "vec_add", "_Z7vec_addPKfS0_Pfi", "vec_add(float const*, float const*, float*, int)",
	  "launch_vec_add", PHASE_ITERATION, 10, launch_vec_add },
	{ "scale", "_Z5scalePffi", "scale(float*, float, int)", "launch_scale", PHASE_ITERATION, 5,
	  launch_scale },
	{ "xpusup_test::saxpy_tiled<float, 4>",
	  "_ZN11xpusup_test11saxpy_tiledIfLi4EEEvPT_PKS1_NS_11tile_paramsIS1_XT0_EEE",
	  "void xpusup_test::saxpy_tiled<float, 4>(float*, float const*, "
	  "xpusup_test::tile_params<float, 4>)",
	  "launch_saxpy_tiled", PHASE_ITERATION, 2, launch_saxpy_tiled },
	/* the graph's nodes, in capture order: launched by launch_graph, made by their own
	 * launchers while the stream was captured (a graph kernel's stack is the stack that
	 * created its node: docs/cupti.md) */
	{ "graph_fill", "_Z10graph_fillPffi", "graph_fill(float*, float, int)", "launch_graph_fill",
	  PHASE_GRAPH, 1, launch_graph_fill },
	{ "graph_square", "_Z12graph_squarePfi", "graph_square(float*, int)", "launch_graph_square",
	  PHASE_GRAPH, 1, launch_graph_square },
	{ "graph_accumulate", "_Z16graph_accumulatePfPKfi",
	  "graph_accumulate(float*, float const*, int)", "launch_graph_accumulate", PHASE_GRAPH, 1,
	  launch_graph_accumulate },
};
#define N_KERNELS (int)(sizeof(kernels) / sizeof(kernels[0]))

enum transfer_kind { HTOD, DTOH, MEMSET };
static const char *const transfer_kind_names[] = { "HtoD", "DtoH", "memset" };

struct transfer_spec {
	enum transfer_kind kind;
	unsigned long bytes;
	const char *launcher;
	enum phase phase; /* never PHASE_GRAPH */
	int per_phase;
	void (*run)(struct buffers *);
};

/* In the order they run within their phase. */
static const struct transfer_spec transfers[] = {
	{ HTOD, N_ELEMS * sizeof(float), "copy_input_a", PHASE_SETUP, 1, copy_input_a },
	{ HTOD, N_ELEMS * sizeof(float), "copy_input_b", PHASE_SETUP, 1, copy_input_b },
	{ MEMSET, N_ELEMS * sizeof(float), "clear_accumulator", PHASE_SETUP, 1, clear_accumulator },
	{ HTOD, PARAMS_BYTES, "upload_params", PHASE_ITERATION, 1, upload_params },
	{ DTOH, PROBE_BYTES, "download_probe", PHASE_ITERATION, 1, download_probe },
	{ DTOH, N_ELEMS * sizeof(float), "download_result", PHASE_TEARDOWN, 1, download_result },
	{ DTOH, PROBE_BYTES, "download_probe", PHASE_TEARDOWN, 1, download_probe },
};
#define N_TRANSFERS (int)(sizeof(transfers) / sizeof(transfers[0]))

/* NVTX ranges (push/pop, default domain), parents before children. */
enum range_id {
	R_WORKLOAD,
	R_SETUP,
	R_COMPUTE,
	R_ITERATION,
	R_GRAPH,
	R_CAPTURE,
	R_REPLAY,
	R_TEARDOWN,
	N_RANGES
};

struct range_spec {
	const char *name;
	int parent; /* a range_id, -1 for none */
	int count; /* times pushed */
};

static const struct range_spec ranges[N_RANGES] = {
	[R_WORKLOAD] = { "workload", -1, 1 },
	[R_SETUP] = { "setup", R_WORKLOAD, 1 },
	[R_COMPUTE] = { "compute", R_WORKLOAD, 1 },
	[R_ITERATION] = { "iteration", R_COMPUTE, ITERATIONS },
	[R_GRAPH] = { "graph", R_WORKLOAD, 1 },
	[R_CAPTURE] = { "capture", R_GRAPH, 1 },
	[R_REPLAY] = { "replay", R_GRAPH, 1 },
	[R_TEARDOWN] = { "teardown", R_WORKLOAD, 1 },
};

/* The runtime calls made by the launchers, for the cuda_api slices. */
#define DEVICE_SYNCHRONIZE_CALLS 1

static int kernel_runs(const struct kernel_spec *k)
{
	return k->per_phase * times_run(k->phase);
}

static int graph_nodes(void)
{
	int i, n = 0;

	for (i = 0; i < N_KERNELS; i++)
		n += kernels[i].phase == PHASE_GRAPH ? kernels[i].per_phase : 0;
	return n;
}

/* Kernel launch calls (cudaLaunchKernel): the direct ones and those made while capturing. */
static int kernel_launch_calls(void)
{
	int i, n = 0;

	for (i = 0; i < N_KERNELS; i++)
		n += kernels[i].phase == PHASE_GRAPH ? kernels[i].per_phase :
						       kernel_runs(&kernels[i]);
	return n;
}

/* ---- --expect ---- */

static void put_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

static void put_transfer_kind(enum transfer_kind kind)
{
	unsigned long bytes = 0, sizes[N_TRANSFERS];
	int i, j, count = 0, counts[N_TRANSFERS], n_sizes = 0;

	for (i = 0; i < N_TRANSFERS; i++) {
		const struct transfer_spec *t = &transfers[i];
		int n = t->per_phase * times_run(t->phase);

		if (t->kind != kind)
			continue;
		count += n;
		bytes += (unsigned long)n * t->bytes;
		for (j = 0; j < n_sizes && sizes[j] != t->bytes; j++)
			;
		if (j == n_sizes) {
			sizes[n_sizes] = t->bytes;
			counts[n_sizes++] = 0;
		}
		counts[j] += n;
	}
	printf("{\"count\": %d, \"bytes\": %lu, \"sizes\": {", count, bytes);
	for (j = 0; j < n_sizes; j++)
		printf("%s\"%lu\": %d", j ? ", " : "", sizes[j], counts[j]);
	printf("}}");
}

static int print_expect(void)
{
	int i, total = 0;

	for (i = 0; i < N_KERNELS; i++)
		total += kernel_runs(&kernels[i]);
	printf("{\n\"xpusup_cuda_workload\": 1,\n\"exit_no_gpu\": %d,\n\"iterations\": %d,\n",
	       EXIT_NO_GPU, ITERATIONS);
	printf("\"kernels\": [\n");
	for (i = 0; i < N_KERNELS; i++) {
		const struct kernel_spec *k = &kernels[i];

		printf("  {\"name\": ");
		put_str(k->name);
		printf(", \"mangled\": ");
		put_str(k->mangled);
		printf(", \"demangled\": ");
		put_str(k->demangled);
		printf(", \"launcher\": ");
		put_str(k->launcher);
		printf(", \"phase\": \"%s\", \"graph\": %s, \"count\": %d}%s\n",
		       phase_names[k->phase], k->phase == PHASE_GRAPH ? "true" : "false",
		       kernel_runs(k), i + 1 < N_KERNELS ? "," : "");
	}
	printf("],\n\"kernel_count\": %d,\n\"kernel_launch_calls\": %d,\n", total,
	       kernel_launch_calls());
	printf("\"graph\": {\"launches\": %d, \"kernels_per_launch\": %d, \"kernel_count\": %d, "
	       "\"launcher\": \"launch_graph\", \"captured_launch_calls\": %d},\n",
	       GRAPH_LAUNCHES, graph_nodes(), GRAPH_LAUNCHES * graph_nodes(), graph_nodes());
	printf("\"memcpy\": {\"HtoD\": ");
	put_transfer_kind(HTOD);
	printf(", \"DtoH\": ");
	put_transfer_kind(DTOH);
	printf("},\n\"memset\": ");
	put_transfer_kind(MEMSET);
	printf(",\n\"transfers\": [\n");
	for (i = 0; i < N_TRANSFERS; i++) {
		const struct transfer_spec *t = &transfers[i];

		printf("  {\"kind\": \"%s\", \"bytes\": %lu, \"launcher\": ",
		       transfer_kind_names[t->kind], t->bytes);
		put_str(t->launcher);
		printf(", \"phase\": \"%s\", \"count\": %d}%s\n", phase_names[t->phase],
		       t->per_phase * times_run(t->phase), i + 1 < N_TRANSFERS ? "," : "");
	}
	printf("],\n\"ranges\": [\n");
	for (i = 0; i < N_RANGES; i++) {
		printf("  {\"name\": ");
		put_str(ranges[i].name);
		printf(", \"parent\": ");
		if (ranges[i].parent < 0)
			printf("null");
		else
			put_str(ranges[ranges[i].parent].name);
		printf(", \"count\": %d}%s\n", ranges[i].count, i + 1 < N_RANGES ? "," : "");
	}
	printf("],\n\"device_synchronize_calls\": %d\n}\n", DEVICE_SYNCHRONIZE_CALLS);
	return ferror(stdout) ? EXIT_FAILURE_CUDA : 0;
}

/* ---- the run ---- */

static void range_push(enum range_id r)
{
	nvtxRangePushA(ranges[r].name);
}

static void range_pop(void)
{
	nvtxRangePop();
}

/* Every kernel and transfer of one phase, in table order (kernels first). */
static void run_phase(struct buffers *b, enum phase p)
{
	int i, j;

	for (i = 0; i < N_KERNELS; i++)
		for (j = 0; kernels[i].phase == p && j < kernels[i].per_phase; j++)
			kernels[i].launch(b);
	for (i = 0; i < N_TRANSFERS; i++)
		for (j = 0; transfers[i].phase == p && j < transfers[i].per_phase; j++)
			transfers[i].run(b);
}

static int fail(const char *what, cudaError_t err)
{
	fprintf(stderr, "cuda_workload: unable to %s: %s (%s)\n", what, cudaGetErrorString(err),
		cudaGetErrorName(err));
	return EXIT_FAILURE_CUDA;
}

/* 77 and one line when there is no GPU to run on; 0 when there is. */
static int gpu_present(void)
{
	int driver = 0, devices = 0;
	cudaError_t err;

	cudaDriverGetVersion(&driver);
	if (driver == 0) {
		fprintf(stderr, "cuda_workload: no GPU: no CUDA driver on this machine "
				"(libcuda.so.1 not found)\n");
		return EXIT_NO_GPU;
	}
	if (driver < CUDART_VERSION) {
		fprintf(stderr,
			"cuda_workload: no GPU: the CUDA driver supports CUDA %d.%d, this program "
			"was built for %d.%d (rebuild it with this machine's nvcc)\n",
			driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000,
			CUDART_VERSION % 1000 / 10);
		return EXIT_NO_GPU;
	}
	err = cudaGetDeviceCount(&devices);
	if (err != cudaSuccess || devices == 0) {
		fprintf(stderr, "cuda_workload: no GPU: %s\n",
			err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device");
		return EXIT_NO_GPU;
	}
	return 0;
}

static int setup(struct buffers *b)
{
	size_t size = N_ELEMS * sizeof(float);
	int i;

	check(cudaStreamCreate(&b->stream), "cudaStreamCreate");
	check(cudaMalloc(&b->d_a, size), "cudaMalloc");
	check(cudaMalloc(&b->d_b, size), "cudaMalloc");
	check(cudaMalloc(&b->d_c, size), "cudaMalloc");
	check(cudaMalloc(&b->d_g, size), "cudaMalloc");
	check(cudaMalloc(&b->d_acc, size), "cudaMalloc");
	check(cudaMalloc(&b->d_params, PARAMS_BYTES), "cudaMalloc");
	check(cudaMallocHost(&b->h_a, size), "cudaMallocHost");
	check(cudaMallocHost(&b->h_b, size), "cudaMallocHost");
	check(cudaMallocHost(&b->h_c, size), "cudaMallocHost");
	check(cudaMallocHost(&b->h_params, PARAMS_BYTES), "cudaMallocHost");
	check(cudaMallocHost(&b->h_probe, PROBE_BYTES), "cudaMallocHost");
	if (failed_err != cudaSuccess)
		return fail("allocate", failed_err);
	for (i = 0; i < N_ELEMS; i++) {
		b->h_a[i] = 1.0f;
		b->h_b[i] = 2.0f;
	}
	memset(b->h_params, 0, PARAMS_BYTES);
	return 0;
}

static void teardown(struct buffers *b)
{
	cudaGraphExecDestroy(b->graph);
	cudaFree(b->d_a);
	cudaFree(b->d_b);
	cudaFree(b->d_c);
	cudaFree(b->d_g);
	cudaFree(b->d_acc);
	cudaFree(b->d_params);
	cudaFreeHost(b->h_a);
	cudaFreeHost(b->h_b);
	cudaFreeHost(b->h_c);
	cudaFreeHost(b->h_params);
	cudaFreeHost(b->h_probe);
	cudaStreamDestroy(b->stream);
}

/* Captures the PHASE_GRAPH kernels of the table into one graph. */
static int capture_graph(struct buffers *b)
{
	cudaGraph_t graph = NULL;
	size_t nodes = 0;
	cudaError_t err;

	/* Thread-local: a profiler's threads (CUPTI's buffer flushes) may call into CUDA while
	 * this one captures; in global mode their calls could invalidate the capture. */
	err = cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal);
	if (err != cudaSuccess)
		return fail("begin a stream capture", err);
	run_phase(b, PHASE_GRAPH);
	err = cudaStreamEndCapture(b->stream, &graph);
	if (err != cudaSuccess || failed_err != cudaSuccess)
		return fail("capture the graph", err != cudaSuccess ? err : failed_err);
	cudaGraphGetNodes(graph, NULL, &nodes);
	if ((int)nodes != graph_nodes()) {
		fprintf(stderr, "cuda_workload: the graph has %zu nodes, not %d\n", nodes,
			graph_nodes());
		return EXIT_FAILURE_CUDA;
	}
	err = cudaGraphInstantiate(&b->graph, graph, 0);
	cudaGraphDestroy(graph);
	return err != cudaSuccess ? fail("instantiate the graph", err) : 0;
}

/* c = a + b, scaled by 0.5 five times, plus 2 x 0.25 a per iteration (the last iteration's
 * values survive: each iteration starts again from vec_add); acc = 9 per graph launch, read
 * back by the teardown's download_probe. */
static int verify(const struct buffers *b)
{
	float c = 3.0f;
	int i;

	for (i = 0; i < 5; i++)
		c *= 0.5f;
	c += 2 * 0.25f * 1.0f;
	if (b->h_c[0] != c || b->h_c[N_ELEMS - 1] != c) {
		fprintf(stderr, "cuda_workload: wrong result: c[0] = %g, expected %g\n",
			(double)b->h_c[0], (double)c);
		return EXIT_FAILURE_CUDA;
	}
	if (b->h_probe[0] != 9.0f * GRAPH_LAUNCHES) {
		fprintf(stderr, "cuda_workload: wrong graph result: acc[0] = %g, expected %g\n",
			(double)b->h_probe[0], 9.0 * GRAPH_LAUNCHES);
		return EXIT_FAILURE_CUDA;
	}
	return 0;
}

static int run(void)
{
	struct buffers b;
	int i, rc;

	memset(&b, 0, sizeof(b));
	rc = gpu_present();
	if (rc)
		return rc;
	range_push(R_WORKLOAD);

	range_push(R_SETUP);
	rc = setup(&b);
	if (rc)
		return rc;
	run_phase(&b, PHASE_SETUP);
	range_pop();
	if (failed_err != cudaSuccess)
		return fail(failed_call, failed_err);

	range_push(R_COMPUTE);
	for (i = 0; i < ITERATIONS; i++) {
		range_push(R_ITERATION);
		run_phase(&b, PHASE_ITERATION);
		range_pop();
	}
	range_pop();
	if (failed_err != cudaSuccess)
		return fail(failed_call, failed_err);

	range_push(R_GRAPH);
	range_push(R_CAPTURE);
	rc = capture_graph(&b);
	range_pop();
	if (rc)
		return rc;
	range_push(R_REPLAY);
	for (i = 0; i < GRAPH_LAUNCHES; i++)
		launch_graph(&b);
	range_pop();
	range_pop();
	if (failed_err != cudaSuccess)
		return fail(failed_call, failed_err);

	range_push(R_TEARDOWN);
	run_phase(&b, PHASE_TEARDOWN);
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	range_pop();
	range_pop();
	if (failed_err != cudaSuccess)
		return fail(failed_call, failed_err);
	rc = verify(&b);
	teardown(&b);
	if (!rc)
		printf("cuda_workload: done: %d iterations, %d graph launches\n", ITERATIONS,
		       GRAPH_LAUNCHES);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--expect"))
		return print_expect();
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cuda_workload [--expect]\n"
		       "  runs known CUDA work (needs a GPU; exit 77 without one);\n"
		       "  --expect prints what it runs as JSON, without touching CUDA\n");
		return 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: cuda_workload [--expect]\n");
		return EXIT_USAGE;
	}
	return run();
}
