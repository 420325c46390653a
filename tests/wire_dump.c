// SPDX-License-Identifier: MIT
/*
 * wire_dump: the C half of the independent-reader test (tests/wire_python_test.py).
 *
 *	wire_dump encode BATCHES JSON	encode a fixed set of batches into BATCHES, each as a
 *					u32 little-endian length then the message, and write
 *					what they hold to JSON, straight from the structs
 *	wire_dump decode MESSAGE	decode one message (a whole file) and print its JSON
 *
 * The JSON is in wire terms so that Python compares it with what python3-msgpack reads: a
 * list of batches {"v", "producer", "seq", "events": [...]}, each event an object with the
 * wire keys the encoder must write (zero fields absent), integers as numbers, "name" as hex
 * of its bytes, "conf" as hex of its big-endian float32 bits, "scale" and "ipc" of their
 * float64 bits, "counters" as [hex of the name, hex of the delta's float64 bits] pairs,
 * "frames" (only when a frame has a name) as the names themselves, hex of their bytes or
 * null, not as the wire's indices into the batch's "symbols": which index a name gets is the
 * encoder's choice, what the names are is not.
 * A decode error prints {"error": -errno, "reason": ..., "offset": ...} and exits 0; usage
 * errors exit 100, system failures 111.
 */
#include "common/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_hex(FILE *f, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++)
		fprintf(f, "%02x", b[i]);
	fputc('"', f);
}

/* __u64 is unsigned long long on every Linux target (asm-generic/int-ll64.h): %llu fits.
 * "k", "id" and "ts" come first, so every other key follows a comma */
static void json_u64(FILE *f, const char *key, __u64 v)
{
	if (v)
		fprintf(f, ", \"%s\": %llu", key, v);
}

/* a double as hex of its big-endian bits: exact, NaN and -0.0 included */
static void json_double(FILE *f, double d)
{
	unsigned char be[8];
	__u64 bits;
	int i;

	memcpy(&bits, &d, 8);
	for (i = 0; i < 8; i++)
		be[i] = (unsigned char)(bits >> (56 - 8 * i));
	json_hex(f, be, 8);
}

static void json_triple(FILE *f, const char *key, const __s32 v[3])
{
	if (v[0] | v[1] | v[2])
		fprintf(f, ", \"%s\": [%d, %d, %d]", key, v[0], v[1], v[2]);
}

static void json_event(FILE *f, const struct xpu_cevent *ev)
{
	__u32 i, n_frames = (__u32)ev->n_kernel + ev->n_user;

	fprintf(f, "{\"k\": %u, \"id\": %llu, \"ts\": %llu", ev->kind, ev->id, ev->ts_ns);
	json_u64(f, "pid", ev->pid);
	json_u64(f, "tid", ev->tid);
	json_u64(f, "cpu", ev->cpu);
	json_u64(f, "end", ev->end_ns);
	json_u64(f, "flags", ev->flags);
	json_u64(f, "corr", ev->correlation_id);
	json_u64(f, "parent", ev->parent_id);
	json_u64(f, "root", ev->root_id);
	json_u64(f, "ct", ev->corr_type);
	if (ev->confidence != 0.0f) {
		unsigned char be[4];
		__u32 bits;

		memcpy(&bits, &ev->confidence, 4);
		for (i = 0; i < 4; i++)
			be[i] = (unsigned char)(bits >> (24 - 8 * i));
		fprintf(f, ", \"conf\": ");
		json_hex(f, be, 4);
	}
	if (ev->n_links) {
		fprintf(f, ", \"links\": [");
		for (i = 0; i < ev->n_links; i++)
			fprintf(f, "%s[%u, %llu]", i ? ", " : "", ev->links[i].type,
				ev->links[i].target);
		fprintf(f, "]");
	}
	json_u64(f, "dev", ev->device);
	json_u64(f, "ctx", ev->context);
	json_u64(f, "str", ev->stream);
	json_u64(f, "graph", ev->graph_id);
	json_u64(f, "node", ev->graph_node_id);
	json_triple(f, "grid", ev->grid);
	json_triple(f, "block", ev->block);
	json_u64(f, "regs", ev->registers);
	json_u64(f, "smem", ev->shared_mem);
	json_u64(f, "api", ev->api_id);
	json_u64(f, "sub", ev->sub_kind);
	json_u64(f, "bytes", ev->bytes);
	json_u64(f, "addr", ev->address);
	json_u64(f, "val", ev->value);
	json_u64(f, "delta", ev->delta);
	if (ev->scale != 0.0) {
		fprintf(f, ", \"scale\": ");
		json_double(f, ev->scale);
	}
	if (ev->name_len) {
		fprintf(f, ", \"name\": ");
		json_hex(f, ev->name, ev->name_len);
	}
	json_u64(f, "nk", ev->n_kernel);
	if (n_frames) {
		fprintf(f, ", \"stack\": [");
		for (i = 0; i < n_frames; i++)
			fprintf(f, "%s%llu", i ? ", " : "", ev->stack[i]);
		fprintf(f, "]");
	}
	for (i = 0; ev->frames && i < n_frames && !(ev->frames[i] && ev->frames[i][0]); i++)
		;
	if (ev->frames && i < n_frames) { /* a name to write: the encoder writes "frames" */
		fprintf(f, ", \"frames\": [");
		for (i = 0; i < n_frames; i++) {
			const char *name = ev->frames[i];

			fprintf(f, "%s", i ? ", " : "");
			if (name && name[0])
				json_hex(f, name, strlen(name));
			else
				fprintf(f, "null");
		}
		fprintf(f, "]");
	}
	if (ev->n_counters) {
		fprintf(f, ", \"counters\": [");
		for (i = 0; i < ev->n_counters; i++) {
			fprintf(f, "%s[", i ? ", " : "");
			json_hex(f, ev->counters[i].name, ev->counters[i].name_len);
			fprintf(f, ", ");
			json_double(f, ev->counters[i].delta);
			fprintf(f, "]");
		}
		fprintf(f, "]");
	}
	json_u64(f, "cflags", ev->counter_flags);
	if (ev->ipc != 0.0) {
		fprintf(f, ", \"ipc\": ");
		json_double(f, ev->ipc);
	}
	fprintf(f, "}");
}

static void json_batch(FILE *f, __u32 producer, __u64 seq, const struct xpu_cevent *ev, __u32 n)
{
	__u32 i;

	fprintf(f, "{\"v\": %d, \"producer\": %u, \"seq\": %llu, \"events\": [", XPU_WIRE_VERSION,
		producer, seq);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s\n  ", i ? "," : "");
		json_event(f, &ev[i]);
	}
	fprintf(f, "]}");
}

/* ---- the batches ---- */

static const __u64 sample_stack[] = {
	0xffffffff81001234ull,
	0xffffffff81abcdefull, /* kernel */
	0x7f3a2b1c0d00ull,
	0x401000,
	0x400abc,
	0x7fff0000,
	0x1, /* user */
};
static const __u64 launch_stack[] = { 0x7f0011223344ull, 0x5555deadbeefull, 0x400000 };
/* a C++ kernel name with a Greek letter (UTF-8) and bytes that are not UTF-8 at all */
static const char kernel_name[] = "void gemm<\xce\xbb, 128>(float const*, float*) \xff\xfe\x80";

/*
 * Batch 4's frame names. Interned names are shared by pointer: both stacks below use
 * main_name; the kernel's launch stack names "forward" through a second copy of the text (the
 * encoder must still write it once), and a frame with "" has no name.
 */
static const char main_name[] = "main";
static const char forward_copy[] = "forward";
static const char *const sample_frames[] = {
	"do_syscall_64",
	NULL, /* kernel */
	"PyEval_EvalFrame; \"quoted\"\nline",
	"forward",
	main_name,
	NULL,
	"",
};
static const char *const launch_frames[] = { "cudaLaunchKernel", "void gemm<\xce\xbb>()",
					     main_name };
static const char *const kernel_frames[] = { "cudaLaunchKernel", forward_copy, main_name };
static const char *const unnamed_frames[] = { NULL, "", NULL };

#define N_BATCHES 6
#define MAX_PER_BATCH 8

static struct xpu_cevent batches[N_BATCHES][MAX_PER_BATCH];
static __u32 batch_len[N_BATCHES];

static struct xpu_cevent *next(__u32 b, __u16 kind, __u64 id, __u64 ts)
{
	struct xpu_cevent *ev = &batches[b][batch_len[b]++];

	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->id = id;
	ev->ts_ns = ts;
	ev->pid = 4242;
	ev->tid = 4243;
	return ev;
}

static void build(void)
{
	struct xpu_cevent *ev;

	/* batch 0: CPU side */
	ev = next(0, XPU_REC_CPU_SAMPLE, 1, 1000000);
	ev->cpu = 3;
	ev->value = 10101010; /* weight: the sampling period in ns */
	ev->stack = sample_stack;
	ev->n_kernel = 2;
	ev->n_user = 5;
	ev->name = "python3";
	ev->name_len = 7;
	ev->n_links = 1;
	ev->links[0].type = XPU_LINK_SAMPLED_IN;
	ev->links[0].target = 3;
	ev->parent_id = 3;
	ev->corr_type = XPU_CORR_NESTING;
	ev->confidence = 1.0f;
	ev = next(0, XPU_REC_LAUNCH, 2, 1000100);
	ev->correlation_id = 991;
	ev->api_id = 211;
	ev->stack = launch_stack;
	ev->n_user = 3;
	ev = next(0, XPU_REC_CUDA_API, 3, 999000);
	ev->end_ns = 1002000;
	ev->correlation_id = 991;
	ev->api_id = 211;
	ev->sub_kind = XPU_API_RUNTIME;

	/* batch 1: GPU side */
	ev = next(1, XPU_REC_GPU_KERNEL, 4, 1005000);
	ev->pid = 4242;
	ev->tid = 0;
	ev->end_ns = 1009000;
	ev->correlation_id = 991;
	ev->parent_id = 2;
	ev->root_id = 3;
	ev->corr_type = XPU_CORR_TIMESTAMP;
	ev->confidence = 0.75f;
	ev->n_links = 4;
	ev->links[0].type = XPU_LINK_LAUNCHED_BY;
	ev->links[0].target = 2;
	ev->links[1].type = XPU_LINK_INSIDE_RANGE;
	ev->links[1].target = 9;
	ev->links[2].type = XPU_LINK_SAME_STREAM_PREV;
	ev->links[2].target = UINT64_MAX;
	ev->links[3].type = XPU_LINK_COMPLETES;
	ev->links[3].target = 0;
	ev->device = 1;
	ev->context = 2;
	ev->stream = 13;
	ev->graph_id = 5;
	ev->graph_node_id = 0x1122334455667788ull;
	ev->grid[0] = -1;
	ev->grid[1] = INT32_MIN;
	ev->grid[2] = INT32_MAX;
	ev->block[0] = 256;
	ev->block[1] = -200;
	ev->block[2] = 1;
	ev->registers = 64;
	ev->shared_mem = 49152;
	ev->name = kernel_name;
	ev->name_len = sizeof(kernel_name) - 1;
	ev->stack = launch_stack;
	ev->n_user = 3;
	ev->flags = 3;
	ev = next(1, XPU_REC_GPU_MEMCPY, 5, 1010000);
	ev->end_ns = 1010500;
	ev->bytes = 1ull << 32;
	ev->sub_kind = XPU_COPY_HTOD;
	ev->stream = 13;
	ev->flags = 1;
	ev = next(1, XPU_REC_PMU_COUNTER, 6, 1020000);
	ev->cpu = 7;
	ev->value = 123456789012ull;
	ev->delta = 65536;
	ev->scale = 4.0 / 3.0;
	ev->sub_kind = XPU_PMU_SCOPE_CPU;
	ev->name = "cycles";
	ev->name_len = 6;
	ev = next(1, XPU_REC_GPU_MEMORY, 7, 1030000);
	ev->address = 0x7f8000000000ull;
	ev->bytes = 1 << 20;
	ev->sub_kind = XPU_MEM_ALLOC;

	/* batch 2: the other kinds */
	ev = next(2, XPU_REC_RANGE, 8, 1040000);
	ev->end_ns = 1050000;
	ev->sub_kind = XPU_RANGE_PUSH;
	ev->name = "forward";
	ev->name_len = 7;
	ev = next(2, XPU_REC_PROC_EXEC, 9, 1060000);
	ev->name = "bash";
	ev->name_len = 4;
	ev = next(2, XPU_REC_PROC_EXIT, 10, 1070000);
	ev->value = (__u64)(__s64)-1; /* a negative exit code, sign-extended */
	ev->name = "bash";
	ev->name_len = 4;
	ev = next(2, XPU_REC_CLOCK_SYNC, 11, 1080000);
	ev->end_ns = 1080010;
	ev->value = UINT64_MAX;
	ev->sub_kind = XPU_CLOCK_CUPTI;
	ev = next(2, XPU_REC_STRING, 12, 1090000);
	ev->value = 77;
	ev->sub_kind = XPU_STR_KERNEL;
	ev->name = "_Z6vecAddPfS_S_i";
	ev->name_len = 16;
	ev = next(2, XPU_REC_LOSS, 13, 1100000);
	ev->value = 17;
	ev->sub_kind = XPU_LOSS_RING_FULL;
	ev = next(2, XPU_REC_GPU_SYNC, 14, 1300000);
	ev->sub_kind = XPU_SYNC_STREAM;
	ev->end_ns = 1300500;
	ev = next(2, XPU_REC_GPU_MEMSET, 15, 1400000);
	ev->bytes = 4096;
	ev->value = 0xff;

	/* batch 3 stays empty */

	/* batch 4: frame names (batches 0 to 3 have none, and their bytes stay what they were) */
	ev = next(4, XPU_REC_CPU_SAMPLE, 16, 2000000);
	ev->value = 1;
	ev->stack = sample_stack;
	ev->frames = sample_frames;
	ev->n_kernel = 2;
	ev->n_user = 5;
	ev->name = "python3";
	ev->name_len = 7;
	ev = next(4, XPU_REC_LAUNCH, 17, 2000100);
	ev->correlation_id = 992;
	ev->stack = launch_stack;
	ev->frames = launch_frames;
	ev->n_user = 3;
	ev = next(4, XPU_REC_GPU_KERNEL, 18, 2005000);
	ev->end_ns = 2009000;
	ev->correlation_id = 992;
	ev->stack = launch_stack;
	ev->frames = kernel_frames;
	ev->n_user = 3;
	ev = next(4, XPU_REC_GPU_MEMCPY, 19, 2010000);
	ev->end_ns = 2010500;
	ev->bytes = 64;
	ev->stack = launch_stack;
	ev->frames = unnamed_frames; /* no name at all: no "frames" */
	ev->n_user = 3;

	/* batch 5: counters over a kernel and a range (batches 0 to 4 have none, and their bytes
	 * stay what they were) */
	ev = next(5, XPU_REC_GPU_KERNEL, 20, 3000000);
	ev->end_ns = 3400000;
	ev->n_counters = 4;
	ev->counters[0] = (struct xpu_wire_counter){ .name = "instructions",
						     .name_len = 12,
						     .delta = 123456789.5 };
	ev->counters[1] =
		(struct xpu_wire_counter){ .name = "cycles", .name_len = 6, .delta = 98765432.25 };
	ev->counters[2] = (struct xpu_wire_counter){ .name = "cache-misses", .name_len = 12 };
	ev->counters[3] = (struct xpu_wire_counter){ .name = "r01c2:u\xff", /* not UTF-8 */
						     .name_len = 8,
						     .delta = 1.7976931348623157e308 };
	ev->counter_flags = XPU_COUNTERS_F_ESTIMATED;
	ev->ipc = 123456789.5 / 98765432.25;
	ev = next(5, XPU_REC_RANGE, 21, 3500000);
	ev->sub_kind = XPU_RANGE_POP;
	ev->n_counters = 1;
	ev->counters[0] =
		(struct xpu_wire_counter){ .name = "task-clock", .name_len = 10, .delta = 400000 };
}

static int write_u32le(FILE *f, __u32 v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	return fwrite(b, 1, 4, f) == 4 ? 0 : -EIO;
}

static int encode(const char *bin_path, const char *json_path)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(7);
	FILE *bin = fopen(bin_path, "wb"), *json = fopen(json_path, "w");
	int ret = -EIO;
	__u32 b, i;

	if (!enc || !bin || !json) {
		fprintf(stderr, "xpusup: unable to open outputs: %s\n", strerror(errno));
		goto out;
	}
	build();
	fprintf(json, "[");
	for (b = 0; b < N_BATCHES; b++) {
		const void *data;
		size_t len;

		ret = xpu_wire_enc__begin(enc, b);
		for (i = 0; !ret && i < batch_len[b]; i++)
			ret = xpu_wire_enc__add(enc, &batches[b][i]);
		if (!ret)
			ret = xpu_wire_enc__finish(enc, &data, &len);
		if (ret) {
			fprintf(stderr, "xpusup: unable to encode batch %u: %s\n", b,
				strerror(-ret));
			goto out;
		}
		if (write_u32le(bin, (__u32)len) || fwrite(data, 1, len, bin) != len) {
			ret = -EIO;
			fprintf(stderr, "xpusup: unable to write %s\n", bin_path);
			goto out;
		}
		fprintf(json, "%s\n", b ? "," : "");
		json_batch(json, 7, b, batches[b], batch_len[b]);
	}
	fprintf(json, "\n]\n");
	ret = 0;
out:
	if (json && fclose(json) && !ret)
		ret = -EIO;
	if (bin && fclose(bin) && !ret)
		ret = -EIO;
	xpu_wire_enc__free(enc);
	return ret;
}

#define MESSAGE_MAX (1u << 20)
#define DECODE_EVENTS 64
#define DECODE_FRAMES (DECODE_EVENTS * XPU_WIRE_STACK_MAX)

static int decode(const char *path)
{
	static unsigned char msg[MESSAGE_MAX];
	static struct xpu_cevent events[DECODE_EVENTS];
	static __u64 stack[DECODE_FRAMES];
	static const char *frames[DECODE_FRAMES];
	static char text[XPU_WIRE_TEXT_MAX(MESSAGE_MAX)];
	static const struct xpu_wire_pool pool = { stack, DECODE_FRAMES, frames, text,
						   sizeof(text) };
	struct xpu_wire_batch batch;
	struct xpu_wire_error err;
	FILE *f = fopen(path, "rb");
	size_t len;
	int ret;

	if (!f) {
		fprintf(stderr, "xpusup: unable to open %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	len = fread(msg, 1, sizeof(msg), f);
	fclose(f);
	ret = xpu_wire_decode(msg, len, NULL, &batch, events, DECODE_EVENTS, &pool, &err);
	if (ret) {
		printf("{\"error\": %d, \"reason\": \"%s\", \"offset\": %zu}\n", ret,
		       err.reason ? err.reason : "", err.offset);
		return 0;
	}
	json_batch(stdout, batch.producer, batch.seq, events, batch.n_events);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "encode"))
		return encode(argv[2], argv[3]) ? 111 : 0;
	if (argc == 3 && !strcmp(argv[1], "decode"))
		return decode(argv[2]) ? 111 : 0;
	fprintf(stderr, "usage: wire_dump encode BATCHES JSON | wire_dump decode MESSAGE\n");
	return 100;
}
