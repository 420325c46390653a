// SPDX-License-Identifier: MIT
/*
 * wire_bench - the wire codec (common/wire.h) alone: encode and decode ns/event and bytes/event
 * over batches of correlated events shaped like what a correlator shard sends, next to a copy
 * of the same events in the same run.
 *
 * The batch: N events (4096 by default, what a shard's encoder holds at most before it sends)
 * in the proportions the synthetic source produces per 4 launches: 4 CUDA_API, 3 GPU_KERNEL,
 * 1 GPU_MEMCPY and 1 CPU_SAMPLE. A kernel carries a mangled name, its 20-frame launch stack
 * and 2 links (launched_by, same_stream_prev); a memcpy its 20-frame launch stack and 1 link; a
 * sample 4 kernel + 12 user frames, the comm and a sampled_in link. Timestamps, ids and
 * addresses have the magnitudes of real ones, so integers take their real widths.
 *
 * Per run: B batches encoded (begin, add per event, finish: what a shard does), then the last
 * message decoded B times (what a sink does), then B deep copies of the batch with memcpy (the
 * event array, its frames and its names, all laid out contiguously): the baseline, i.e. moving
 * the same information without a format. The ratios say what the format costs on top of
 * touching the bytes. Runs repeat R times after one untimed warm-up (the encoder's buffer
 * grows to its final size there); min and median are reported.
 *
 * Before timing, one decoded batch is compared field by field with what was encoded: a codec
 * that got faster by dropping fields must fail here, not look good.
 *
 * Then the same again with frame names (struct xpu_cevent.frames), as a correlator that
 * symbolizes sends them: every frame named from a set of NAMES interned names of 20 to 90
 * characters (a frame's name follows from its address), but one frame in 16 without a name.
 * The baseline then copies the frames' name pointers too, and the names' bytes once.
 */
#include "common/wire.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "common/config.h"
#include "common/status.h"

#define EXIT_USAGE 100
#define EXIT_SYSTEM 111

#define MAX_EVENTS (1u << 20) /* xpu_wire_default_limits.max_events */
#define MAX_REPEAT 99
#define LAUNCH_FRAMES 20
#define SAMPLE_KERNEL_FRAMES 4
#define SAMPLE_USER_FRAMES 12
#define CYCLE 9 /* events per 4 launches: 4 CUDA_API, 3 GPU_KERNEL, 1 GPU_MEMCPY, 1 sample */
#define NAMES 1024 /* distinct function names the frames are named from */

struct options {
	unsigned long long events; /* per batch */
	unsigned long long batches; /* per run */
	unsigned long long repeat;
	bool help;
};

/* One batch's events and everything they point to, each kind of data contiguous so that the
 * baseline can copy it with three memcpy calls. */
struct batch {
	struct xpu_cevent *ev;
	__u64 *frames;
	char *names;
	size_t n_ev, n_frames, name_bytes;
	unsigned int per_kind[XPU_REC_TYPE_MAX];
	/* the frames' names, parallel to frames, from the interned names in symbols */
	const char **frame_names;
	const char *symbols[NAMES];
	char *symbol_text;
	size_t symbol_bytes;
};

/* Kernel names as CUPTI reports them: mangled C++, 20 to 100 characters. */
static const char *const kernel_names[] = {
	"_Z6vecAddPKfS0_Pfi",
	"_ZN7cutlass6KernelINS_4gemm6kernel4GemmIfEEEEvNT_6ParamsE",
	"_Z23layer_norm_fwd_kernelIN3c104HalfEfEvPKT_S4_S4_PS2_Pfifi",
	"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
};

static __u64 mix(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Appends n frames to b->frames: user addresses in a 64-bit process's mappings, kernel ones in
 * the kernel's text, both 9 bytes in MessagePack as they are in real stacks. */
static const __u64 *add_frames(struct batch *b, __u64 seed, unsigned int n_kernel,
			       unsigned int n_user)
{
	__u64 *f = b->frames + b->n_frames;
	unsigned int i;

	for (i = 0; i < n_kernel; i++)
		f[i] = 0xffffffff81000000ull + (mix(seed + i) & 0xffffff);
	for (i = 0; i < n_user; i++)
		f[n_kernel + i] = 0x7f3a00000000ull + (mix(seed ^ (i + 1) << 20) & 0xffffffff);
	b->n_frames += n_kernel + n_user;
	return f;
}

static const char *add_name(struct batch *b, const char *name, __u32 *len)
{
	char *p = b->names + b->name_bytes;

	*len = (__u32)strlen(name);
	memcpy(p, name, *len);
	b->name_bytes += *len;
	return p;
}

static void build_event(struct batch *b, size_t i)
{
	struct xpu_cevent *ev = &b->ev[i];
	/* API, kernel, API, kernel, API, kernel, API, memcpy, sample: the sample falls in the
	 * cycle's last launch */
	__u64 launch = i / CYCLE * 4 + ((i % CYCLE) / 2 < 3 ? (i % CYCLE) / 2 : 3);
	__u32 p = (__u32)(launch % 64);

	memset(ev, 0, sizeof(*ev));
	ev->id = 0x100000000ull + i;
	ev->pid = 1000000 + p;
	ev->tid = ev->pid + (__u32)(launch % 4);
	ev->ts_ns = 12345678901234ull + launch * 3000;
	switch (i % CYCLE) {
	case 0:
	case 2:
	case 4:
	case 6:
		ev->kind = XPU_REC_CUDA_API;
		ev->end_ns = ev->ts_ns + 4000;
		ev->correlation_id = 1000000 + launch;
		ev->api_id = 211; /* cudaLaunchKernel */
		ev->sub_kind = XPU_API_RUNTIME;
		break;
	case 1:
	case 3:
	case 5:
		ev->kind = XPU_REC_GPU_KERNEL;
		ev->ts_ns += 20000;
		ev->end_ns = ev->ts_ns + 1000 * (1 + launch % 50);
		ev->correlation_id = 1000000 + launch;
		ev->parent_id = ev->id - 1;
		ev->root_id = ev->id - 1;
		ev->corr_type = XPU_CORR_EXACT_ID;
		ev->confidence = 1.0f;
		ev->n_links = 2;
		ev->links[0].type = XPU_LINK_LAUNCHED_BY;
		ev->links[0].target = ev->id - 1;
		ev->links[1].type = XPU_LINK_SAME_STREAM_PREV;
		ev->links[1].target = ev->id - 2;
		ev->context = 1;
		ev->stream = 7;
		ev->grid[0] = 256;
		ev->grid[1] = ev->grid[2] = 1;
		ev->block[0] = 128;
		ev->block[1] = ev->block[2] = 1;
		ev->registers = 32;
		ev->shared_mem = 4096;
		ev->name = add_name(b, kernel_names[launch % 4], &ev->name_len);
		ev->n_user = LAUNCH_FRAMES;
		ev->stack = add_frames(b, launch, 0, LAUNCH_FRAMES);
		break;
	case 7:
		ev->kind = XPU_REC_GPU_MEMCPY;
		ev->ts_ns += 20000;
		ev->end_ns = ev->ts_ns + 40000;
		ev->flags = XPU_COPY_F_ASYNC;
		ev->correlation_id = 1000000 + launch;
		ev->parent_id = ev->id - 1;
		ev->root_id = ev->id - 1;
		ev->corr_type = XPU_CORR_EXACT_ID;
		ev->confidence = 1.0f;
		ev->n_links = 1;
		ev->links[0].type = XPU_LINK_LAUNCHED_BY;
		ev->links[0].target = ev->id - 1;
		ev->context = 1;
		ev->stream = 7;
		ev->bytes = 4 << 20;
		ev->sub_kind = XPU_COPY_HTOD;
		ev->n_user = LAUNCH_FRAMES;
		ev->stack = add_frames(b, launch, 0, LAUNCH_FRAMES);
		break;
	default:
		ev->kind = XPU_REC_CPU_SAMPLE;
		ev->cpu = (__u32)(launch % 2);
		ev->value = 10101010; /* the sampling period in ns */
		ev->parent_id = ev->id - 2;
		ev->corr_type = XPU_CORR_NESTING;
		ev->confidence = 1.0f;
		ev->n_links = 1;
		ev->links[0].type = XPU_LINK_SAMPLED_IN;
		ev->links[0].target = ev->id - 2;
		ev->name = add_name(b, "python3", &ev->name_len);
		ev->n_kernel = SAMPLE_KERNEL_FRAMES;
		ev->n_user = SAMPLE_USER_FRAMES;
		ev->stack = add_frames(b, mix(i), SAMPLE_KERNEL_FRAMES, SAMPLE_USER_FRAMES);
		break;
	}
	b->per_kind[ev->kind]++;
}

/* Names such as a symbolizer gives, C++ and Python, 20 to 90 characters, each once in
 * symbol_text (interned); every frame is named after its address, one in 16 not at all. */
static int batch__name(struct batch *b)
{
	static const char *const parts[] = {
		"at::native", "torch::autograd",    "cutlass::gemm",
		"c10::impl",  "std::vector<float>", "pybind11::detail"
	};
	char *p;
	size_t i;

	b->symbol_text = malloc(NAMES * 96);
	b->frame_names = calloc(b->n_frames ? b->n_frames : 1, sizeof(*b->frame_names));
	if (!b->symbol_text || !b->frame_names)
		return -ENOMEM;
	p = b->symbol_text;
	for (i = 0; i < NAMES; i++) {
		__u64 r = mix(i + 77);
		int n = snprintf(p, 96, "%s::%.*s_%zu(%s)", parts[r % 6], (int)(r >> 8) % 40 + 1,
				 "forward_backward_kernel_launch_dispatch", i,
				 parts[(r >> 16) % 6]);

		b->symbols[i] = p;
		p += n + 1;
	}
	b->symbol_bytes = (size_t)(p - b->symbol_text);
	for (i = 0; i < b->n_frames; i++) {
		__u64 r = mix(b->frames[i]);

		b->frame_names[i] = r % 16 ? b->symbols[(r >> 4) % NAMES] : NULL;
	}
	return 0;
}

/* Frame names on or off: every event's frames point into frame_names, or are NULL. */
static void batch__set_names(struct batch *b, bool on)
{
	size_t i;

	for (i = 0; i < b->n_ev; i++)
		b->ev[i].frames =
			on && b->ev[i].stack ? b->frame_names + (b->ev[i].stack - b->frames) : NULL;
}

static int batch__build(struct batch *b, size_t n)
{
	size_t i;

	memset(b, 0, sizeof(*b));
	b->ev = calloc(n, sizeof(*b->ev));
	b->frames = calloc(n, LAUNCH_FRAMES * sizeof(*b->frames));
	b->names = malloc(n * 128);
	if (!b->ev || !b->frames || !b->names)
		return -ENOMEM;
	b->n_ev = n;
	for (i = 0; i < n; i++)
		build_event(b, i);
	return batch__name(b);
}

static void batch__free(struct batch *b)
{
	free(b->ev);
	free(b->frames);
	free(b->names);
	free(b->frame_names);
	free(b->symbol_text);
}

/* NULL when got carries everything want does; otherwise the first field that differs, for the
 * message. */
static const char *cevent__diff(const struct xpu_cevent *got, const struct xpu_cevent *want)
{
	__u32 i, n = (__u32)want->n_kernel + want->n_user;

#define SAME(f)                        \
	do {                           \
		if (got->f != want->f) \
			return #f;     \
	} while (0)
	SAME(id);
	SAME(kind);
	SAME(flags);
	SAME(pid);
	SAME(tid);
	SAME(cpu);
	SAME(ts_ns);
	SAME(end_ns);
	SAME(correlation_id);
	SAME(parent_id);
	SAME(root_id);
	SAME(corr_type);
	SAME(confidence);
	SAME(n_links);
	SAME(device);
	SAME(context);
	SAME(stream);
	SAME(graph_id);
	SAME(graph_node_id);
	SAME(registers);
	SAME(shared_mem);
	SAME(api_id);
	SAME(sub_kind);
	SAME(bytes);
	SAME(address);
	SAME(value);
	SAME(delta);
	SAME(scale);
	SAME(name_len);
	SAME(n_kernel);
	SAME(n_user);
	for (i = 0; i < 3; i++) {
		SAME(grid[i]);
		SAME(block[i]);
	}
	for (i = 0; i < want->n_links; i++) {
		SAME(links[i].type);
		SAME(links[i].target);
	}
	for (i = 0; i < n; i++)
		SAME(stack[i]);
#undef SAME
	if (want->name_len && memcmp(got->name, want->name, want->name_len))
		return "name";
	for (i = 0; i < n; i++) {
		const char *g = got->frames ? got->frames[i] : NULL;
		const char *w = want->frames ? want->frames[i] : NULL;

		if (!g != !w || (g && strcmp(g, w)))
			return "frames";
	}
	return NULL;
}

struct codec {
	struct xpu_wire_enc *enc;
	const void *msg; /* the last finished batch, owned by enc */
	size_t len;
	struct xpu_cevent *out; /* decoder's output */
	struct xpu_wire_pool pool;
	/* the baseline's destination */
	struct xpu_cevent *copy_ev;
	__u64 *copy_frames;
	char *copy_names;
	const char **copy_frame_names;
	char *copy_symbols;
	bool names; /* the baseline copies the frames' names too */
};

static int encode_batches(struct codec *c, const struct batch *b, __u64 batches)
{
	__u64 k;
	size_t i;
	int err;

	for (k = 0; k < batches; k++) {
		/* seq: the events this producer sent before the batch (wire.h) */
		err = xpu_wire_enc__begin(c->enc, k * b->n_ev);
		for (i = 0; !err && i < b->n_ev; i++)
			err = xpu_wire_enc__add(c->enc, &b->ev[i]);
		if (!err)
			err = xpu_wire_enc__finish(c->enc, &c->msg, &c->len);
		if (err)
			return err;
	}
	return 0;
}

static int decode_batches(struct codec *c, const struct batch *b, __u64 batches)
{
	struct xpu_wire_batch hdr;
	struct xpu_wire_error werr;
	__u64 k;
	int err;

	for (k = 0; k < batches; k++) {
		err = xpu_wire_decode(c->msg, c->len, &xpu_wire_default_limits, &hdr, c->out,
				      (__u32)b->n_ev, &c->pool, &werr);
		if (err) {
			fprintf(stderr, "wire_bench: decoding failed at byte %zu: %s\n",
				werr.offset, werr.reason);
			return err;
		}
		if (hdr.n_events != b->n_ev)
			return -EBADMSG;
	}
	return 0;
}

static void copy_batches(struct codec *c, const struct batch *b, __u64 batches)
{
	__u64 k;

	for (k = 0; k < batches; k++) {
		memcpy(c->copy_ev, b->ev, b->n_ev * sizeof(*b->ev));
		memcpy(c->copy_frames, b->frames, b->n_frames * sizeof(*b->frames));
		memcpy(c->copy_names, b->names, b->name_bytes);
		if (c->names) {
			memcpy(c->copy_frame_names, b->frame_names,
			       b->n_frames * sizeof(*b->frame_names));
			memcpy(c->copy_symbols, b->symbol_text, b->symbol_bytes);
		}
		/* The copies are never read: without this barrier the compiler may drop all
		 * but the last round, or all of them. */
		__asm__ __volatile__("" : : "r"(c->copy_ev), "r"(c->copy_frames) : "memory");
	}
}

/* Encodes one batch, decodes it and compares every event with what went in. */
static int check_round_trip(struct codec *c, const struct batch *b)
{
	const char *field;
	size_t i;
	int err;

	err = encode_batches(c, b, 1);
	if (!err)
		err = decode_batches(c, b, 1);
	if (err)
		return err;
	for (i = 0; i < b->n_ev; i++) {
		field = cevent__diff(&c->out[i], &b->ev[i]);
		if (field) {
			fprintf(stderr, "wire_bench: event %zu decoded differs in %s\n", i, field);
			return -EBADMSG;
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wire_bench [-n EVENTS] [-b BATCHES] [-r REPEAT]\n"
		"Encode and decode ns/event of the wire codec, next to a memcpy of the same events;\n"
		"the events without frame names, then with.\n"
		"  -n EVENTS   events per batch (default 4096)\n"
		"  -b BATCHES  batches encoded, decoded and copied per run (default 256)\n"
		"  -r REPEAT   timed runs after one warm-up; min and median reported (default 7)\n"
		"  -h          this help\n");
}

static int parse_options(int argc, char **argv, struct options *o)
{
	int c;

	o->events = 4096;
	o->batches = 256;
	o->repeat = 7;
	o->help = false;
	while ((c = getopt(argc, argv, "n:b:r:h")) != -1) {
		switch (c) {
		case 'n':
			if (conf_parse_uint(optarg, 1, MAX_EVENTS, &o->events))
				goto bad;
			break;
		case 'b':
			if (conf_parse_uint(optarg, 1, 1000000, &o->batches))
				goto bad;
			break;
		case 'r':
			if (conf_parse_uint(optarg, 1, MAX_REPEAT, &o->repeat))
				goto bad;
			break;
		case 'h':
			o->help = true;
			return 0;
		default:
			goto bad;
		}
	}
	if (optind == argc)
		return 0;
bad:
	usage(stderr);
	return -EINVAL;
}

/* One case, names off or on: the round trip checked, then the timed runs. 0 or -errno. */
static int run_case(struct codec *c, struct batch *b, const struct options *o, bool names)
{
	double enc_ns[MAX_REPEAT], dec_ns[MAX_REPEAT], copy_ns[MAX_REPEAT];
	double enc_med, dec_med, copy_med, per;
	size_t copied;
	unsigned int r;
	__u64 t0, t1, t2, t3;
	int err;

	batch__set_names(b, names);
	c->names = names;
	err = check_round_trip(c, b);
	if (err) {
		fprintf(stderr, "wire_bench: unable to round-trip the batch: %s\n", strerror(-err));
		return err;
	}
	per = 1.0 / ((double)o->batches * (double)b->n_ev);
	copied = b->n_ev * sizeof(*b->ev) + b->n_frames * sizeof(*b->frames) + b->name_bytes;
	if (names)
		copied += b->n_frames * sizeof(*b->frame_names) + b->symbol_bytes;
	if (names)
		printf("with frame names (%d names, 1 frame in 16 without):\n", NAMES);
	printf("message: %zu bytes, %.1f bytes/event; baseline copies %.1f bytes/event (struct "
	       "xpu_cevent %zu bytes + frames + names%s); round trip checked field by field\n",
	       c->len, (double)c->len / (double)b->n_ev, (double)copied / (double)b->n_ev,
	       sizeof(*b->ev), names ? " + frame name pointers + their text once" : "");
	/* Run 0 is the warm-up: first touches of the output arrays, the encoder's buffer
	 * growing to a batch's size. */
	for (r = 0; r <= o->repeat; r++) {
		t0 = xpu_now_ns();
		err = encode_batches(c, b, o->batches);
		t1 = xpu_now_ns();
		if (!err)
			err = decode_batches(c, b, o->batches);
		t2 = xpu_now_ns();
		copy_batches(c, b, o->batches);
		t3 = xpu_now_ns();
		if (err) {
			fprintf(stderr, "wire_bench: unable to run the codec: %s\n",
				strerror(-err));
			return err;
		}
		if (!r)
			continue;
		enc_ns[r - 1] = (double)(t1 - t0) * per;
		dec_ns[r - 1] = (double)(t2 - t1) * per;
		copy_ns[r - 1] = (double)(t3 - t2) * per;
		printf("run %u/%llu: encode %.1f ns/event, decode %.1f ns/event, baseline copy %.1f "
		       "ns/event\n",
		       r, o->repeat, enc_ns[r - 1], dec_ns[r - 1], copy_ns[r - 1]);
	}
	/* bench_median() sorts, so the minimum is element 0 afterwards */
	enc_med = bench_median(enc_ns, (unsigned int)o->repeat);
	dec_med = bench_median(dec_ns, (unsigned int)o->repeat);
	copy_med = bench_median(copy_ns, (unsigned int)o->repeat);
	printf("encode: min %.1f, median %.1f ns/event (%.2f M events/s, %.0f MB/s out); "
	       "ratio to baseline %.1f\n",
	       enc_ns[0], enc_med, 1e3 / enc_med, (double)c->len / (double)b->n_ev * 1e3 / enc_med,
	       enc_med / copy_med);
	printf("decode: min %.1f, median %.1f ns/event (%.2f M events/s, %.0f MB/s in); "
	       "ratio to baseline %.1f\n",
	       dec_ns[0], dec_med, 1e3 / dec_med, (double)c->len / (double)b->n_ev * 1e3 / dec_med,
	       dec_med / copy_med);
	printf("baseline (memcpy of events, frames and names%s): min %.1f, median %.1f ns/event\n",
	       names ? ", frame name pointers and text" : "", copy_ns[0], copy_med);
	return 0;
}

int main(int argc, char **argv)
{
	struct codec c = { 0 };
	struct options o;
	struct batch b;
	int code = EXIT_SYSTEM, err;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	if (o.help) {
		usage(stdout);
		return 0;
	}
	err = batch__build(&b, o.events);
	c.enc = xpu_wire_enc__new(0);
	c.out = calloc(b.n_ev, sizeof(*c.out));
	c.copy_ev = malloc(b.n_ev * sizeof(*c.copy_ev));
	c.copy_frames = malloc((b.n_frames ? b.n_frames : 1) * sizeof(*c.copy_frames));
	c.copy_names = malloc(b.name_bytes ? b.name_bytes : 1);
	c.copy_frame_names = malloc((b.n_frames ? b.n_frames : 1) * sizeof(*c.copy_frame_names));
	c.copy_symbols = malloc(NAMES * 96);
	/* each name of the batch once, and its entry in the text's index */
	if (err || !c.enc || !c.out || !c.copy_ev || !c.copy_frames || !c.copy_names ||
	    !c.copy_frame_names || !c.copy_symbols ||
	    xpu_wire_pool__init(&c.pool, (__u32)b.n_frames, b.symbol_bytes + 5 * NAMES + 3)) {
		fprintf(stderr, "wire_bench: unable to allocate the batch: %s\n", strerror(ENOMEM));
		goto out;
	}
	printf("wire_bench: %zu events per batch (%u CUDA_API; %u GPU_KERNEL with name, %d-frame "
	       "stack, 2 links; %u GPU_MEMCPY with %d-frame stack; %u CPU_SAMPLE with %d frames), "
	       "%llu batches per run, %llu runs after a warm-up\n",
	       b.n_ev, b.per_kind[XPU_REC_CUDA_API], b.per_kind[XPU_REC_GPU_KERNEL], LAUNCH_FRAMES,
	       b.per_kind[XPU_REC_GPU_MEMCPY], LAUNCH_FRAMES, b.per_kind[XPU_REC_CPU_SAMPLE],
	       SAMPLE_KERNEL_FRAMES + SAMPLE_USER_FRAMES, o.batches, o.repeat);
	if (run_case(&c, &b, &o, false) || run_case(&c, &b, &o, true))
		goto out;
	code = 0;
out:
	free(c.copy_symbols);
	free(c.copy_frame_names);
	free(c.copy_names);
	free(c.copy_frames);
	free(c.copy_ev);
	xpu_wire_pool__fini(&c.pool);
	free(c.out);
	xpu_wire_enc__free(c.enc);
	batch__free(&b);
	return code;
}
