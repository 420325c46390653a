// SPDX-License-Identifier: MIT
/*
 * Wire format: golden bytes written by hand from docs/wire.md, round trips of every kind with
 * its fields at their limits, the same events written by an independent (deliberately
 * non-minimal) writer in this file, and every rejection the decoder promises, each with the
 * reason it must give.
 */
#include "common/wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/wire_fields.h"
#include "tests/tap.h"

/* ---- a tiny independent MessagePack writer: the widths and order are the test's choice ---- */

struct mp {
	__u8 b[4 << 20];
	size_t n;
};

static struct mp m; /* the message under construction; tests build one at a time */
static struct mp ev_buf; /* events written apart, for a batch whose symbol table comes first */

static void put(struct mp *w, const void *p, size_t n)
{
	if (w->n + n > sizeof(w->b))
		tap_bail("test message buffer too small");
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void put8(struct mp *w, __u8 v)
{
	put(w, &v, 1);
}

/* tag, then v as a big-endian integer of width bytes */
static void put_be(struct mp *w, __u8 tag, __u64 v, unsigned int width)
{
	unsigned int i;

	put8(w, tag);
	for (i = width; i-- > 0;)
		put8(w, (__u8)(v >> (8 * i)));
}

static void put_fixstr(struct mp *w, const char *s)
{
	put8(w, (__u8)(0xa0 | strlen(s)));
	put(w, s, strlen(s));
}

static void put_str8(struct mp *w, const char *s)
{
	put_be(w, 0xd9, strlen(s), 1);
	put(w, s, strlen(s));
}

/* The smallest positive encoding, as the spec's minimal form. */
static void put_uint(struct mp *w, __u64 v)
{
	if (v < 0x80)
		put8(w, (__u8)v);
	else if (v <= 0xff)
		put_be(w, 0xcc, v, 1);
	else if (v <= 0xffff)
		put_be(w, 0xcd, v, 2);
	else if (v <= 0xffffffff)
		put_be(w, 0xce, v, 4);
	else
		put_be(w, 0xcf, v, 8);
}

static void put_float64(struct mp *w, double d)
{
	__u64 u;

	memcpy(&u, &d, 8);
	put_be(w, 0xcb, u, 8);
}

/* A batch header with "v" first, as the encoder writes it; n events follow in array16. */
static void put_header(struct mp *w, __u64 version, __u32 n_events)
{
	put8(w, 0x84);
	put_fixstr(w, "v");
	put_uint(w, version);
	put_fixstr(w, "producer");
	put_uint(w, 3);
	put_fixstr(w, "seq");
	put_uint(w, 7);
	put_fixstr(w, "events");
	put_be(w, 0xdc, n_events, 2);
}

static void start(__u64 version, __u32 n_events)
{
	m.n = 0;
	put_header(&m, version, n_events);
}

/* ---- events ---- */

enum use {
	U_PID = 1u << 0,
	U_TID = 1u << 1,
	U_CPU = 1u << 2,
	U_END = 1u << 3,
	U_FLAGS = 1u << 4,
	U_CORR = 1u << 5,
	U_PARENT = 1u << 6,
	U_ROOT = 1u << 7,
	U_CT = 1u << 8,
	U_CONF = 1u << 9,
	U_LINKS = 1u << 10,
	U_DEV = 1u << 11,
	U_CTX = 1u << 12,
	U_STR = 1u << 13,
	U_GRAPH = 1u << 14,
	U_NODE = 1u << 15,
	U_GRID = 1u << 16,
	U_BLOCK = 1u << 17,
	U_REGS = 1u << 18,
	U_SMEM = 1u << 19,
	U_API = 1u << 20,
	U_SUB = 1u << 21,
	U_BYTES = 1u << 22,
	U_ADDR = 1u << 23,
	U_VAL = 1u << 24,
	U_DELTA = 1u << 25,
	U_SCALE = 1u << 26,
	U_NAME = 1u << 27,
	U_STACK = 1u << 28,
	U_COUNTERS = 1u << 29, /* counters, cflags, ipc */
};

#define U_COMMON (U_PID | U_TID | U_FLAGS | U_PARENT | U_ROOT | U_CT | U_CONF | U_LINKS)
#define U_GPU (U_END | U_CORR | U_DEV | U_CTX | U_STR)

/* Which fields each kind uses: the table in docs/wire.md. */
static const __u32 kind_fields[XPU_REC_TYPE_MAX] = {
	[XPU_REC_CPU_SAMPLE] = U_COMMON | U_CPU | U_VAL | U_NAME | U_STACK,
	[XPU_REC_LAUNCH] = U_COMMON | U_CORR | U_API | U_STACK,
	[XPU_REC_CUDA_API] = U_COMMON | U_END | U_CORR | U_API | U_SUB,
	[XPU_REC_GPU_KERNEL] = U_COMMON | U_GPU | U_GRAPH | U_NODE | U_GRID | U_BLOCK | U_REGS |
			       U_SMEM | U_NAME | U_STACK | U_COUNTERS,
	[XPU_REC_GPU_MEMCPY] = U_COMMON | U_GPU | U_BYTES | U_SUB | U_STACK,
	[XPU_REC_GPU_MEMSET] = U_COMMON | U_GPU | U_BYTES | U_VAL | U_STACK,
	[XPU_REC_GPU_SYNC] = U_COMMON | U_GPU | U_SUB,
	[XPU_REC_GPU_MEMORY] = U_COMMON | U_CORR | U_DEV | U_CTX | U_STR | U_SUB | U_BYTES | U_ADDR,
	[XPU_REC_PMU_COUNTER] = U_COMMON | U_CPU | U_VAL | U_DELTA | U_SCALE | U_SUB | U_NAME,
	[XPU_REC_RANGE] = U_COMMON | U_END | U_CORR | U_SUB | U_NAME | U_COUNTERS,
	[XPU_REC_PROC_EXEC] = U_COMMON | U_NAME,
	[XPU_REC_PROC_EXIT] = U_COMMON | U_VAL | U_NAME,
	[XPU_REC_CLOCK_SYNC] = U_END | U_VAL | U_SUB,
	[XPU_REC_STRING] = U_PID | U_VAL | U_SUB | U_NAME,
	[XPU_REC_LOSS] = U_PID | U_SUB | U_VAL,
};

enum variant {
	V_MAX, /* every used field at its largest value, the longest name, the fullest stack */
	V_ALL, /* every field of the struct at its largest, whatever the kind: the biggest event */
	V_EDGE, /* values on MessagePack's width boundaries, negative grid and block */
	V_MIN, /* required keys only, all zero */
	V_COUNT,
};

static __u64 frames[V_COUNT][XPU_REC_TYPE_MAX][XPU_WIRE_STACK_MAX];
static char long_name[XPU_STRING_MAX];
static const char utf8_name[] = "void k<\xce\xbb>(float*) \xff\xfe not UTF-8 \x01";

/*
 * Frame names. V_MAX and V_ALL name every frame, each with its own name of the longest length
 * (every byte value but NUL); the kinds share them, as a symbolizer's interned names are
 * shared. V_EDGE mixes short names, repeats, names alike in content but not in pointer, NULL,
 * "" (no name either) and bytes a sink must take care of.
 */
static char max_names[XPU_WIRE_STACK_MAX][XPU_WIRE_FRAME_NAME_MAX + 1];
static const char *max_frames[XPU_WIRE_STACK_MAX];
static const char main_copy[] = "main";
static const char *const edge_frames[20] = {
	"a", NULL,	"main",	    "",	  "void f<\xce\xbb>(int; char)\n\xff",
	"a", main_copy, "main",	    NULL, "b",
	"c", "d",	"e",	    "f",  "g",
	"h", "i",	"\x01\x7f", "j",  NULL,
};

/* Counter names: V_MAX and V_ALL the longest (every byte value but NUL), distinct; V_EDGE
 * short ones, one of them with bytes that are not UTF-8. */
static char max_counter_names[XPU_WIRE_COUNTERS_MAX][XPU_WIRE_COUNTER_NAME_MAX];
static const char edge_counter_name[] = "cache-misses:u\xff";

static void names__init(void)
{
	__u32 j, k;

	for (j = 0; j < XPU_WIRE_STACK_MAX; j++) {
		for (k = 0; k < XPU_WIRE_FRAME_NAME_MAX; k++)
			max_names[j][k] = (char)((j + k * 7) % 255 + 1);
		max_names[j][0] = (char)(j + 1); /* distinct: each starts with its own byte */
		max_frames[j] = max_names[j];
	}
	for (j = 0; j < XPU_WIRE_COUNTERS_MAX; j++) {
		for (k = 0; k < XPU_WIRE_COUNTER_NAME_MAX; k++)
			max_counter_names[j][k] = (char)((j * 3 + k * 11) % 255 + 1);
		max_counter_names[j][0] = (char)(0xf0 + j);
	}
}

static const __u64 edges[] = {
	1,
	0x7f,
	0x80,
	0xff,
	0x100,
	0xffff,
	0x10000,
	0xffffffff,
	0x100000000,
	0x7fffffffffffffffull,
	0x8000000000000000ull,
	UINT64_MAX,
};
static const __s32 sedges[] = { -1,	-32,	   -33, -128, -129,	 -32768,
				-32769, INT32_MIN, 127, 128,  INT32_MAX, 0 };

#define N_EDGES (sizeof(edges) / sizeof(edges[0]))

static __u64 pick(enum variant v, unsigned int i, __u64 max)
{
	__u64 e = v <= V_ALL ? UINT64_MAX : edges[i % N_EDGES];

	return e > max ? max : e;
}

static void make_event(struct xpu_cevent *ev, __u16 kind, enum variant v)
{
	__u32 use = v == V_MIN ? 0 : v == V_ALL ? ~0u : kind_fields[kind];
	int max = v <= V_ALL;
	unsigned int i = kind; /* varies the edge values from kind to kind */
	__u32 n, j;

	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	if (v == V_MIN)
		return;
	ev->id = pick(v, i++, UINT64_MAX);
	ev->ts_ns = pick(v, i++, UINT64_MAX);
	if (use & U_PID)
		ev->pid = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_TID)
		ev->tid = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_CPU)
		ev->cpu = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_END)
		ev->end_ns = pick(v, i++, UINT64_MAX);
	if (use & U_FLAGS)
		ev->flags = (__u16)pick(v, i++, UINT16_MAX);
	if (use & U_CORR)
		ev->correlation_id = pick(v, i++, UINT64_MAX);
	if (use & U_PARENT)
		ev->parent_id = pick(v, i++, UINT64_MAX);
	if (use & U_ROOT)
		ev->root_id = pick(v, i++, UINT64_MAX);
	if (use & U_CT)
		ev->corr_type = (__u32)pick(v, i++, XPU_CORR_TYPE_MAX - 1);
	if (use & U_CONF)
		ev->confidence = max ? 1.0f : 0.3f;
	if (use & U_LINKS) {
		ev->n_links = max ? XPU_WIRE_LINKS_MAX : 2;
		for (j = 0; j < ev->n_links; j++) {
			ev->links[j].type = max ? XPU_LINK_TYPE_MAX - 1 - j : j + 1;
			ev->links[j].target = pick(v, i++, UINT64_MAX);
		}
	}
	if (use & U_DEV)
		ev->device = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_CTX)
		ev->context = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_STR)
		ev->stream = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_GRAPH)
		ev->graph_id = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_NODE)
		ev->graph_node_id = pick(v, i++, UINT64_MAX);
	for (j = 0; j < 3; j++) {
		if (use & U_GRID)
			ev->grid[j] = max ? (j == 1 ? INT32_MIN : INT32_MAX) : sedges[i++ % 12];
		if (use & U_BLOCK)
			ev->block[j] = max ? (j == 2 ? -1 : INT32_MAX) : sedges[i++ % 12];
	}
	if (use & U_REGS)
		ev->registers = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_SMEM)
		ev->shared_mem = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_API)
		ev->api_id = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_SUB)
		ev->sub_kind = (__u32)pick(v, i++, UINT32_MAX);
	if (use & U_BYTES)
		ev->bytes = pick(v, i++, UINT64_MAX);
	if (use & U_ADDR)
		ev->address = pick(v, i++, UINT64_MAX);
	if (use & U_VAL)
		ev->value = pick(v, i++, UINT64_MAX);
	if (use & U_DELTA)
		ev->delta = pick(v, i++, UINT64_MAX);
	if (use & U_SCALE)
		ev->scale = max ? 1.7976931348623157e308 : 1.25;
	if (use & U_NAME) {
		ev->name = max ? long_name : utf8_name;
		ev->name_len = max ? XPU_STRING_MAX : (__u32)sizeof(utf8_name) - 1;
	}
	if (use & U_COUNTERS) {
		ev->n_counters = max ? XPU_WIRE_COUNTERS_MAX : 2;
		for (j = 0; j < ev->n_counters; j++) {
			ev->counters[j].name = max ? max_counter_names[j] :
					       j   ? "cycles" :
						     edge_counter_name;
			ev->counters[j].name_len = max ? XPU_WIRE_COUNTER_NAME_MAX :
						   j   ? 6 :
							 (__u32)sizeof(edge_counter_name) - 1;
			ev->counters[j].delta = max ? 1.7976931348623157e308 : j ? 0.0 : 1.5e9;
		}
		ev->counter_flags = max ? UINT32_MAX : XPU_COUNTERS_F_ESTIMATED;
		ev->ipc = max ? 1.7976931348623157e308 : 0.75;
	}
	if (use & U_STACK) {
		n = max ? XPU_WIRE_STACK_MAX : 20;
		for (j = 0; j < n; j++)
			frames[v][kind][j] = pick(v, i++, UINT64_MAX) - j;
		ev->stack = frames[v][kind];
		ev->frames = max ? max_frames : edge_frames;
		ev->n_kernel = (__u16)(max ? XPU_MAX_FRAMES : 3);
		ev->n_user = (__u16)(n - ev->n_kernel);
	}
}

/* Frame i's name as the decoder must give it: NULL for none, "" included. */
static const char *frame_name(const struct xpu_cevent *ev, __u32 i)
{
	const char *name = ev->frames ? ev->frames[i] : NULL;

	return name && name[0] ? name : NULL;
}

/* Field-by-field comparison; names each field that differs. Returns the number of them. */
static int cevent__diff(const struct xpu_cevent *got, const struct xpu_cevent *want)
{
	int bad = 0;
	__u32 i;

#define DIFF(f)                                                                                   \
	do {                                                                                      \
		if (got->f != want->f) {                                                          \
			tap_diag("field " #f ": got %llu, want %llu", (unsigned long long)got->f, \
				 (unsigned long long)want->f);                                    \
			bad++;                                                                    \
		}                                                                                 \
	} while (0)
	DIFF(id);
	DIFF(kind);
	DIFF(flags);
	DIFF(pid);
	DIFF(tid);
	DIFF(cpu);
	DIFF(ts_ns);
	DIFF(end_ns);
	DIFF(correlation_id);
	DIFF(parent_id);
	DIFF(root_id);
	DIFF(corr_type);
	DIFF(n_links);
	for (i = 0; i < XPU_WIRE_LINKS_MAX; i++) {
		DIFF(links[i].type);
		DIFF(links[i].reserved);
		DIFF(links[i].target);
	}
	DIFF(device);
	DIFF(context);
	DIFF(stream);
	DIFF(graph_id);
	DIFF(graph_node_id);
	for (i = 0; i < 3; i++) {
		DIFF(grid[i]);
		DIFF(block[i]);
	}
	DIFF(registers);
	DIFF(shared_mem);
	DIFF(api_id);
	DIFF(sub_kind);
	DIFF(bytes);
	DIFF(address);
	DIFF(value);
	DIFF(delta);
	DIFF(name_len);
	DIFF(n_kernel);
	DIFF(n_user);
	DIFF(n_counters);
	DIFF(counter_flags);
	for (i = 0; i < XPU_WIRE_COUNTERS_MAX; i++) {
		DIFF(counters[i].name_len);
		DIFF(counters[i].reserved);
	}
#undef DIFF
	for (i = 0; i < XPU_WIRE_COUNTERS_MAX; i++) {
		if (got->counters[i].delta != want->counters[i].delta ||
		    (got->counters[i].name_len == want->counters[i].name_len &&
		     got->counters[i].name_len &&
		     memcmp(got->counters[i].name, want->counters[i].name,
			    got->counters[i].name_len))) {
			tap_diag("counter %u: delta %g/%g or its name differs", i,
				 got->counters[i].delta, want->counters[i].delta);
			bad++;
		}
	}
	if (got->ipc != want->ipc) {
		tap_diag("ipc %g/%g", got->ipc, want->ipc);
		bad++;
	}
	if (got->confidence != want->confidence || got->scale != want->scale) {
		tap_diag("conf %g/%g, scale %g/%g", got->confidence, want->confidence, got->scale,
			 want->scale);
		bad++;
	}
	if (got->name_len == want->name_len && got->name_len &&
	    memcmp(got->name, want->name, got->name_len)) {
		tap_diag("name bytes differ");
		bad++;
	}
	if (got->n_kernel + got->n_user == want->n_kernel + want->n_user &&
	    (got->n_kernel + got->n_user) &&
	    memcmp(got->stack, want->stack, 8u * (got->n_kernel + got->n_user))) {
		tap_diag("stack frames differ");
		bad++;
	}
	for (i = 0; got->n_kernel + got->n_user == want->n_kernel + want->n_user &&
		    i < (__u32)got->n_kernel + got->n_user;
	     i++) {
		const char *g = frame_name(got, i), *w = frame_name(want, i);

		if (!g != !w || (g && strcmp(g, w))) {
			tap_diag("frame %u: name %s, want %s", i, g ? "differs" : "missing",
				 w ? "a name" : "none");
			bad++;
			break;
		}
	}
	return bad;
}

/*
 * The independent writer: the event's keys in the reverse of the encoder's order, every
 * integer at its widest (uint64, or int64 for every other key), str8 keys, float64
 * confidence, map32/array16/array32/str32 headers, and optionally an unknown key whose value
 * nests a map and an array. The decoder must read it back to the same event.
 */
static void put_wide_int(struct mp *w, __u64 v, int signed_form)
{
	if (signed_form && v <= INT64_MAX)
		put_be(w, 0xd3, v, 8);
	else
		put_be(w, 0xcf, v, 8);
}

/* The independent writer's symbol table: names by content, in the order first met. */
static const char *wide_syms[4 * XPU_WIRE_STACK_MAX];
static __u32 n_wide_syms;

static __u32 wide_index(const char *name)
{
	__u32 i;

	for (i = 0; i < n_wide_syms; i++)
		if (!strcmp(wide_syms[i], name))
			return i;
	if (n_wide_syms == sizeof(wide_syms) / sizeof(wide_syms[0]))
		tap_bail("test symbol table full");
	wide_syms[n_wide_syms] = name;
	return n_wide_syms++;
}

/* "symbols": the table as str32s in an array32 */
static void put_symbols_wide(struct mp *w)
{
	__u32 i;

	put_str8(w, "symbols");
	put_be(w, 0xdd, n_wide_syms, 4);
	for (i = 0; i < n_wide_syms; i++) {
		put_be(w, 0xdb, strlen(wide_syms[i]), 4);
		put(w, wide_syms[i], strlen(wide_syms[i]));
	}
}

static void put_event_wide(struct mp *w, const struct xpu_cevent *ev, int unknown)
{
	__u32 n_frames = (__u32)ev->n_kernel + ev->n_user, entries = 3, j;
	size_t count_at;
	int s = 0;

	put_be(w, 0xdf, 0, 4); /* patched below */
	count_at = w->n - 4;
	if (ev->ipc != 0.0) {
		put_str8(w, "ipc");
		put_float64(w, ev->ipc);
		entries++;
	}
	if (ev->n_counters) {
		/* array32 of array16 pairs, str32 names, the deltas as float64 */
		put_str8(w, "counters");
		put_be(w, 0xdd, ev->n_counters, 4);
		for (j = 0; j < ev->n_counters; j++) {
			put_be(w, 0xdc, 2, 2);
			put_be(w, 0xdb, ev->counters[j].name_len, 4);
			put(w, ev->counters[j].name, ev->counters[j].name_len);
			put_float64(w, ev->counters[j].delta);
		}
		entries++;
	}
	if (n_frames && ev->frames) {
		/* before the stack, every index a uint32, nil for none (and for "") */
		put_str8(w, "frames");
		put_be(w, 0xdd, n_frames, 4);
		for (j = 0; j < n_frames; j++) {
			if (frame_name(ev, j))
				put_be(w, 0xce, wide_index(ev->frames[j]), 4);
			else
				put8(w, 0xc0);
		}
		entries++;
	}
#define WIDE(cond, key, value)                          \
	do {                                            \
		if (cond) {                             \
			put_str8(w, key);               \
			put_wide_int(w, value, s ^= 1); \
			entries++;                      \
		}                                       \
	} while (0)
	if (n_frames) {
		put_str8(w, "stack");
		put_be(w, 0xdd, n_frames, 4);
		for (j = 0; j < n_frames; j++)
			put_wide_int(w, ev->stack[j], j & 1);
		entries++;
	}
	WIDE(ev->n_kernel, "nk", ev->n_kernel);
	WIDE(ev->counter_flags, "cflags", ev->counter_flags);
	if (ev->name_len) {
		put_str8(w, "name");
		put_be(w, 0xdb, ev->name_len, 4);
		put(w, ev->name, ev->name_len);
		entries++;
	}
	if (ev->scale != 0.0) {
		put_str8(w, "scale");
		put_float64(w, ev->scale);
		entries++;
	}
	WIDE(ev->delta, "delta", ev->delta);
	WIDE(ev->value, "val", ev->value);
	WIDE(ev->address, "addr", ev->address);
	WIDE(ev->bytes, "bytes", ev->bytes);
	if (unknown) {
		/* {"future": {"a": [1, nil], "c": bin8 "xy"}}: depth 4 and 5, the limit */
		put_fixstr(w, "future");
		put8(w, 0x82);
		put_fixstr(w, "a");
		put8(w, 0x92);
		put8(w, 0x01);
		put8(w, 0xc0);
		put_fixstr(w, "c");
		put_be(w, 0xc4, 2, 1);
		put(w, "xy", 2);
		entries++;
	}
	WIDE(ev->sub_kind, "sub", ev->sub_kind);
	WIDE(ev->api_id, "api", ev->api_id);
	WIDE(ev->shared_mem, "smem", ev->shared_mem);
	WIDE(ev->registers, "regs", ev->registers);
	if (ev->block[0] | ev->block[1] | ev->block[2]) {
		put_str8(w, "block");
		put_be(w, 0xdc, 3, 2);
		for (j = 0; j < 3; j++)
			put_be(w, 0xd3, (__u64)(__s64)ev->block[j], 8);
		entries++;
	}
	if (ev->grid[0] | ev->grid[1] | ev->grid[2]) {
		put_str8(w, "grid");
		put8(w, 0x93);
		for (j = 0; j < 3; j++)
			put_be(w, 0xd2, (__u32)ev->grid[j], 4);
		entries++;
	}
	WIDE(ev->graph_node_id, "node", ev->graph_node_id);
	WIDE(ev->graph_id, "graph", ev->graph_id);
	WIDE(ev->stream, "str", ev->stream);
	WIDE(ev->context, "ctx", ev->context);
	WIDE(ev->device, "dev", ev->device);
	if (ev->n_links) {
		put_str8(w, "links");
		put_be(w, 0xdd, ev->n_links, 4);
		for (j = 0; j < ev->n_links; j++) {
			put_be(w, 0xdc, 2, 2);
			put_wide_int(w, ev->links[j].type, 1);
			put_wide_int(w, ev->links[j].target, 0);
		}
		entries++;
	}
	if (ev->confidence != 0.0f) {
		put_str8(w, "conf");
		put_float64(w, ev->confidence);
		entries++;
	}
	WIDE(ev->corr_type, "ct", ev->corr_type);
	WIDE(ev->root_id, "root", ev->root_id);
	WIDE(ev->parent_id, "parent", ev->parent_id);
	WIDE(ev->correlation_id, "corr", ev->correlation_id);
	WIDE(ev->flags, "flags", ev->flags);
	WIDE(ev->end_ns, "end", ev->end_ns);
	WIDE(ev->cpu, "cpu", ev->cpu);
	WIDE(ev->tid, "tid", ev->tid);
	WIDE(ev->pid, "pid", ev->pid);
	put_str8(w, "ts");
	put_wide_int(w, ev->ts_ns, 0);
	put_str8(w, "id");
	put_wide_int(w, ev->id, 1);
	put_str8(w, "k");
	put_wide_int(w, ev->kind, 0);
#undef WIDE
	w->b[count_at] = (__u8)(entries >> 24);
	w->b[count_at + 1] = (__u8)(entries >> 16);
	w->b[count_at + 2] = (__u8)(entries >> 8);
	w->b[count_at + 3] = (__u8)entries;
}

/* ---- decode helpers ---- */

#define MAX_EVENTS 32
#define POOL_LEN (MAX_EVENTS * XPU_WIRE_STACK_MAX)
#define TEXT_LEN (4u << 20)

static struct xpu_cevent out[MAX_EVENTS];
static __u64 stack_pool[POOL_LEN];
static const char *frames_pool[POOL_LEN];
static _Alignas(8) char text_pool[TEXT_LEN];
static const struct xpu_wire_pool pool = { stack_pool, POOL_LEN, frames_pool, text_pool, TEXT_LEN };
static struct xpu_wire_batch batch;
static struct xpu_wire_error werr;

static int decode(const void *buf, size_t len)
{
	return xpu_wire_decode(buf, len, NULL, &batch, out, MAX_EVENTS, &pool, &werr);
}

/* One rejection: -EBADMSG with exactly this reason, at an offset inside the message. */
static void expect_bad(const void *buf, size_t len, const char *reason, const char *what)
{
	int ret = decode(buf, len);

	if (!tap_ok(ret == -EBADMSG && werr.reason && !strcmp(werr.reason, reason) &&
			    werr.offset <= len,
		    "rejects %s: \"%s\"", what, reason))
		tap_diag("got %d, reason \"%s\" at %zu", ret, werr.reason ? werr.reason : "(null)",
			 werr.offset);
}

static void expect_bad_m(const char *reason, const char *what)
{
	expect_bad(m.b, m.n, reason, what);
}

/* A minimal valid event: {"k": kind, "id": id, "ts": 5} plus extra entries the caller adds. */
static void put_event(struct mp *w, __u64 kind, __u64 id, unsigned int extra)
{
	put8(w, (__u8)(0x80 | (3 + extra)));
	put_fixstr(w, "k");
	put_uint(w, kind);
	put_fixstr(w, "id");
	put_uint(w, id);
	put_fixstr(w, "ts");
	put_uint(w, 5);
}

/* ---- tests ---- */

static void test_names(void)
{
	tap_ok(!strcmp(xpu_link_type__name(XPU_LINK_LAUNCHED_BY), "launched_by") &&
		       !strcmp(xpu_link_type__name(XPU_LINK_INSIDE_RANGE), "inside_range") &&
		       !strcmp(xpu_link_type__name(XPU_LINK_COMPLETES), "completes") &&
		       !strcmp(xpu_link_type__name(XPU_LINK_SAME_STREAM_PREV),
			       "same_stream_prev") &&
		       !strcmp(xpu_link_type__name(XPU_LINK_SAMPLED_IN), "sampled_in"),
	       "link type names");
	tap_ok(!strcmp(xpu_link_type__name(0), "unknown") &&
		       !strcmp(xpu_link_type__name(XPU_LINK_TYPE_MAX), "unknown") &&
		       !strcmp(xpu_link_type__name(UINT32_MAX), "unknown"),
	       "unknown link types");
	tap_ok(!strcmp(xpu_corr_type__name(XPU_CORR_NONE), "none") &&
		       !strcmp(xpu_corr_type__name(XPU_CORR_EXACT_ID), "exact_id") &&
		       !strcmp(xpu_corr_type__name(XPU_CORR_TIMESTAMP), "timestamp") &&
		       !strcmp(xpu_corr_type__name(XPU_CORR_NESTING), "nesting") &&
		       !strcmp(xpu_corr_type__name(XPU_CORR_APPROXIMATE), "approximate") &&
		       !strcmp(xpu_corr_type__name(XPU_CORR_TYPE_MAX), "unknown"),
	       "correlation type names");
	tap_ok(xpu_wire_default_limits.max_message == 64u << 20 &&
		       xpu_wire_default_limits.max_events == 1u << 20 &&
		       xpu_wire_default_limits.max_depth == 5,
	       "default limits: 64 MiB, 1<<20 events, depth 5");
}

/*
 * The golden batch of docs/wire.md, byte by byte from the spec (not from the encoder):
 * producer 3, seq 7; a LAUNCH with a two-frame user stack and a GPU_KERNEL linked to it.
 */
static const __u64 golden_stack[2] = { 0x401000, 0x7f0000001000 };

static const __u8 golden[] = {
	0x84, /* map of 4 */
	0xa1, 'v',  0x01, /* "v": 1 */
	0xa8, 'p',  'r',  'o',	'd',  'u',  'c',  'e',	'r',  0x03, /* "producer": 3 */
	0xa3, 's',  'e',  'q',	0x07, /* "seq": 7 */
	0xa6, 'e',  'v',  'e',	'n',  't',  's', /* "events": */
	0xdd, 0x00, 0x00, 0x00, 0x02, /* array32 of 2 (always array32) */
	0x88, /* event 1: map of 8 */
	0xa1, 'k',  0x03, /* "k": 3 (LAUNCH) */
	0xa2, 'i',  'd',  0x01, /* "id": 1 */
	0xa2, 't',  's',  0xcd, 0x03, 0xe8, /* "ts": uint16 1000 */
	0xa3, 'p',  'i',  'd',	0x2a, /* "pid": 42 */
	0xa3, 't',  'i',  'd',	0x2b, /* "tid": 43 */
	0xa4, 'c',  'o',  'r',	'r',  0x4d, /* "corr": 77 */
	0xa3, 'a',  'p',  'i',	0xcc, 0xd3, /* "api": uint8 211 */
	0xa5, 's',  't',  'a',	'c',  'k',  0x92, /* "stack": array of 2 */
	0xce, 0x00, 0x40, 0x10, 0x00, /* uint32 0x401000 */
	0xcf, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, /* uint64 0x7f0000001000 */
	0x8e, /* event 2: map of 14 */
	0xa1, 'k',  0x05, /* "k": 5 (GPU_KERNEL) */
	0xa2, 'i',  'd',  0x02, /* "id": 2 */
	0xa2, 't',  's',  0xcd, 0x07, 0xd0, /* "ts": 2000 */
	0xa3, 'p',  'i',  'd',	0x2a, /* "pid": 42 */
	0xa3, 'e',  'n',  'd',	0xcd, 0x0b, 0xb8, /* "end": 3000 */
	0xa4, 'c',  'o',  'r',	'r',  0x4d, /* "corr": 77 */
	0xa6, 'p',  'a',  'r',	'e',  'n',  't',  0x01, /* "parent": 1 */
	0xa2, 'c',  't',  0x01, /* "ct": 1 (exact_id) */
	0xa4, 'c',  'o',  'n',	'f',  0xca, 0x3f, 0x80, 0x00, 0x00, /* "conf": float32 1.0 */
	0xa5, 'l',  'i',  'n',	'k',  's',  0x91, 0x92, 0x01, 0x01, /* "links": [[1, 1]] */
	0xa3, 's',  't',  'r',	0x07, /* "str": 7 */
	0xa4, 'g',  'r',  'i',	'd',  0x93, 0x02, 0x01, 0x01, /* "grid": [2, 1, 1] */
	0xa5, 'b',  'l',  'o',	'c',  'k',  0x93, 0xcc, 0x80, 0x01, 0x01, /* "block": [128, 1, 1] */
	0xa4, 'n',  'a',  'm',	'e',  0xa6, 'v',  'e',	'c',  'A',  'd',
	'd', /* "name": "vecAdd" */
};

static void golden_events(struct xpu_cevent ev[2])
{
	memset(ev, 0, 2 * sizeof(*ev));
	ev[0].kind = XPU_REC_LAUNCH;
	ev[0].id = 1;
	ev[0].ts_ns = 1000;
	ev[0].pid = 42;
	ev[0].tid = 43;
	ev[0].correlation_id = 77;
	ev[0].api_id = 211;
	ev[0].stack = golden_stack;
	ev[0].n_user = 2;

	ev[1].kind = XPU_REC_GPU_KERNEL;
	ev[1].id = 2;
	ev[1].ts_ns = 2000;
	ev[1].pid = 42;
	ev[1].end_ns = 3000;
	ev[1].correlation_id = 77;
	ev[1].parent_id = 1;
	ev[1].corr_type = XPU_CORR_EXACT_ID;
	ev[1].confidence = 1.0f;
	ev[1].n_links = 1;
	ev[1].links[0].type = XPU_LINK_LAUNCHED_BY;
	ev[1].links[0].target = 1;
	ev[1].stream = 7;
	ev[1].grid[0] = 2;
	ev[1].grid[1] = 1;
	ev[1].grid[2] = 1;
	ev[1].block[0] = 128;
	ev[1].block[1] = 1;
	ev[1].block[2] = 1;
	ev[1].name = "vecAdd";
	ev[1].name_len = 6;
}

static void test_golden(void)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(3);
	struct xpu_cevent ev[2];
	const void *data = NULL;
	size_t len = 0, i;
	int ret;

	golden_events(ev);
	tap_ok(enc != NULL, "encoder created");
	if (!enc)
		tap_bail("no encoder");
	tap_eq_u64(xpu_wire_enc__begin(enc, 7), 0, "begin");
	tap_eq_u64(xpu_wire_enc__size(enc), 31, "batch header is 31 bytes");
	tap_eq_u64(xpu_wire_enc__add(enc, &ev[0]), 0, "add launch");
	tap_eq_u64(xpu_wire_enc__add(enc, &ev[1]), 0, "add kernel");
	tap_eq_u64(xpu_wire_enc__count(enc), 2, "count 2");
	tap_eq_u64(xpu_wire_enc__size(enc), sizeof(golden), "size so far is the whole batch");
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), 0, "finish");
	tap_eq_u64(len, sizeof(golden), "golden length %zu", sizeof(golden));
	if (!tap_ok(len == sizeof(golden) && !memcmp(data, golden, len), "golden bytes")) {
		for (i = 0; i < len && i < sizeof(golden); i++) {
			if (((const __u8 *)data)[i] != golden[i]) {
				tap_diag("first difference at byte %zu: %02x, want %02x", i,
					 ((const __u8 *)data)[i], golden[i]);
				break;
			}
		}
	}
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), 0, "finish again is harmless");
	tap_ok(len == sizeof(golden) && !memcmp(data, golden, len), "and gives the same bytes");

	/* the encoder is reused: same batch again, same bytes, nothing left of the first */
	tap_eq_u64(xpu_wire_enc__begin(enc, 7), 0, "begin again");
	tap_eq_u64(xpu_wire_enc__count(enc), 0, "count reset by begin");
	xpu_wire_enc__add(enc, &ev[0]);
	xpu_wire_enc__add(enc, &ev[1]);
	xpu_wire_enc__finish(enc, &data, &len);
	tap_ok(len == sizeof(golden) && !memcmp(data, golden, len), "reused encoder, same bytes");

	ret = decode(golden, sizeof(golden));
	tap_eq_u64(ret, 0, "golden decodes");
	tap_ok(batch.version == 1 && batch.producer == 3 && batch.seq == 7 && batch.n_events == 2,
	       "golden batch header: v 1, producer 3, seq 7, 2 events");
	tap_eq_u64(cevent__diff(&out[0], &ev[0]), 0, "golden launch equal field by field");
	tap_eq_u64(cevent__diff(&out[1], &ev[1]), 0, "golden kernel equal field by field");
	tap_ok(out[1].name == (const char *)golden + sizeof(golden) - 6,
	       "decoded name points into the message");
	tap_ok(out[0].stack == stack_pool, "decoded stack is in the caller's pool");
	tap_ok(out[0].frames == NULL && out[1].frames == NULL, "no names: frames NULL");
	tap_ok(out[1].stack == NULL && out[1].n_kernel == 0 && out[1].n_user == 0,
	       "no stack: NULL and zero counts");
	xpu_wire_enc__free(enc);
	xpu_wire_enc__free(NULL);
	tap_ok(1, "free(NULL) is a no-op");
}

/*
 * Every prefix of a valid batch is malformed: the decoder must say so and never read past
 * the prefix (ASan sees any overread, as the prefix is copied into its own allocation).
 */
static void test_truncation(void)
{
	size_t n, bad = 0;

	for (n = 0; n < sizeof(golden); n++) {
		__u8 *copy = malloc(n ? n : 1);
		int ret;

		memcpy(copy, golden, n);
		ret = decode(copy, n);
		if (ret != -EBADMSG || !werr.reason || werr.offset > n) {
			tap_diag("prefix of %zu bytes: %d (%s)", n, ret,
				 werr.reason ? werr.reason : "no reason");
			bad++;
		}
		free(copy);
	}
	tap_eq_u64(bad, 0, "all %zu proper prefixes of the golden batch are rejected",
		   sizeof(golden));
	expect_bad(golden, 0, "truncated", "an empty message");
	expect_bad(NULL, 0, "truncated", "a NULL message");
	expect_bad(golden, sizeof(golden) - 1, "string longer than the message",
		   "the golden batch less its last byte");
}

static void test_round_trip(void)
{
	static struct xpu_cevent want[XPU_REC_TYPE_MAX];
	struct xpu_wire_enc *enc = xpu_wire_enc__new(0xffffffff);
	unsigned int v, k, n;
	const void *data;
	size_t len, i;

	for (i = 0; i < XPU_STRING_MAX; i++)
		long_name[i] = (char)(i * 7 + 1); /* every byte value, NUL and 0xff included */
	names__init();
	for (v = 0; v < V_COUNT; v++) {
		static const char *const vname[V_COUNT] = { "max", "all", "edge", "min" };

		xpu_wire_enc__begin(enc, v == V_MAX ? UINT64_MAX : v);
		for (k = XPU_REC_CPU_SAMPLE, n = 0; k < XPU_REC_EVENT_END; k++, n++) {
			make_event(&want[n], (__u16)k, (enum variant)v);
			if (xpu_wire_enc__add(enc, &want[n]))
				tap_diag("add %s failed", xpu_rec_type__name(k));
		}
		xpu_wire_enc__finish(enc, &data, &len);
		tap_ok(decode(data, len) == 0 && batch.n_events == n,
		       "%s batch of %u kinds decodes", vname[v], n);
		tap_ok(batch.producer == 0xffffffff && batch.seq == (v == V_MAX ? UINT64_MAX : v),
		       "%s batch: producer and seq", vname[v]);
		for (i = 0; i < n; i++) {
			tap_eq_u64(cevent__diff(&out[i], &want[i]), 0,
				   "%s %s round trip, field by field", vname[v],
				   xpu_rec_type__name(want[i].kind));
		}

		/* the same events from the independent writer, unknown keys sprinkled in, the
		 * symbol table before the events */
		ev_buf.n = 0;
		n_wide_syms = 0;
		for (i = 0; i < n; i++)
			put_event_wide(&ev_buf, &want[i], (int)(i & 1));
		m.n = 0;
		put8(&m, 0x85);
		put_symbols_wide(&m);
		put_fixstr(&m, "v");
		put_uint(&m, 1);
		put_fixstr(&m, "producer");
		put_uint(&m, 3);
		put_fixstr(&m, "seq");
		put_uint(&m, 7);
		put_fixstr(&m, "events");
		put_be(&m, 0xdc, n, 2);
		put(&m, ev_buf.b, ev_buf.n);
		tap_ok(decode(m.b, m.n) == 0 && batch.n_events == n,
		       "%s batch from the wide writer decodes", vname[v]);
		for (i = 0; i < n; i++) {
			tap_eq_u64(cevent__diff(&out[i], &want[i]), 0,
				   "%s %s from the wide writer, field by field", vname[v],
				   xpu_rec_type__name(want[i].kind));
		}
	}
	xpu_wire_enc__free(enc);
}

/* The golden batch again, every integer and container at a wider encoding than needed, keys in
 * other orders (and "v" last), unknown keys at both levels with nested values. */
static void test_liberal_reader(void)
{
	struct xpu_cevent ev[2];

	golden_events(ev);
	m.n = 0;
	put_be(&m, 0xdf, 6, 4); /* map32 of 6: 4 known keys, 2 unknown */
	put_str8(&m, "seq");
	put_be(&m, 0xd3, 7, 8); /* int64 */
	put_fixstr(&m, "x-future");
	put8(&m, 0x91); /* [[ ]] */
	put8(&m, 0x90);
	put_fixstr(&m, "events");
	put_be(&m, 0xdc, 2, 2); /* array16 */
	put_event_wide(&m, &ev[0], 1);
	put_event_wide(&m, &ev[1], 0);
	put_fixstr(&m, "producer");
	put_be(&m, 0xcd, 3, 2); /* uint16 */
	put_fixstr(&m, "meta");
	put8(&m, 0x81); /* {"host": "a"} */
	put_fixstr(&m, "host");
	put_fixstr(&m, "a");
	put_fixstr(&m, "v");
	put_be(&m, 0xcf, 1, 8); /* uint64 */
	tap_eq_u64(decode(m.b, m.n), 0, "non-minimal widths, other key order, unknown keys: ok");
	tap_ok(batch.version == 1 && batch.producer == 3 && batch.seq == 7 && batch.n_events == 2,
	       "liberal batch header");
	tap_eq_u64(cevent__diff(&out[0], &ev[0]), 0, "liberal launch equals the golden one");
	tap_eq_u64(cevent__diff(&out[1], &ev[1]), 0, "liberal kernel equals the golden one");

	/* an unknown key's value may be of any MessagePack type */
	start(1, 1);
	put_event(&m, XPU_REC_LOSS, 9, 1);
	put_fixstr(&m, "any");
	put8(&m, 0x9f); /* fixarray of 15, one of each type */
	put8(&m, 0xc0); /* nil */
	put8(&m, 0xc2); /* false */
	put8(&m, 0xc3); /* true */
	put8(&m, 0xe0); /* -32 */
	put_be(&m, 0xd1, 0xff00, 2); /* int16 */
	put_be(&m, 0xca, 0x3f800000, 4); /* float32 */
	put_float64(&m, -2.5);
	put_be(&m, 0xda, 3, 2); /* str16 "abc" */
	put(&m, "abc", 3);
	put_be(&m, 0xc6, 1, 4); /* bin32 */
	put8(&m, 0);
	put_be(&m, 0xc7, 2, 1); /* ext8: length 2, type 5 */
	put8(&m, 5);
	put(&m, "ab", 2);
	put_be(&m, 0xd8, 0x01, 1); /* fixext16 type 1 */
	put(&m, "0123456789abcdef", 16);
	put_be(&m, 0xd4, 0x7f, 1); /* fixext1 */
	put8(&m, 1);
	put_be(&m, 0xde, 0, 2); /* empty map16 */
	put_be(&m, 0xdd, 0, 4); /* empty array32 */
	put_be(&m, 0xdf, 1, 4); /* map32 {1: 2} */
	put8(&m, 1);
	put8(&m, 2);
	tap_eq_u64(decode(m.b, m.n), 0,
		   "an unknown key's value of every MessagePack type is skipped");
	tap_ok(batch.n_events == 1 && out[0].kind == XPU_REC_LOSS && out[0].id == 9 &&
		       out[0].ts_ns == 5,
	       "and the event around it decodes");

	/* signed encodings of non-negative values are integers like any other */
	start(1, 1);
	put8(&m, 0x83);
	put_fixstr(&m, "k");
	put_be(&m, 0xd0, XPU_REC_RANGE, 1);
	put_fixstr(&m, "id");
	put_be(&m, 0xd3, INT64_MAX, 8);
	put_fixstr(&m, "ts");
	put_be(&m, 0xcf, UINT64_MAX, 8);
	tap_ok(decode(m.b, m.n) == 0 && out[0].kind == XPU_REC_RANGE && out[0].id == INT64_MAX &&
		       out[0].ts_ns == UINT64_MAX,
	       "int8/int64 encodings of non-negative values accepted");

	/* empty name and empty stack are valid and decode as absent */
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 3);
	put_fixstr(&m, "name");
	put8(&m, 0xa0);
	put_fixstr(&m, "stack");
	put8(&m, 0x90);
	put_fixstr(&m, "nk");
	put8(&m, 0);
	tap_ok(decode(m.b, m.n) == 0 && out[0].name_len == 0 && out[0].n_kernel == 0 &&
		       out[0].n_user == 0,
	       "empty name, empty stack, nk 0");

	/* nk before stack */
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2);
	put_fixstr(&m, "nk");
	put8(&m, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x93);
	put8(&m, 1);
	put8(&m, 2);
	put8(&m, 3);
	tap_ok(decode(m.b, m.n) == 0 && out[0].n_kernel == 2 && out[0].n_user == 1 &&
		       out[0].stack[2] == 3,
	       "nk before stack: 2 kernel frames, 1 user frame");

	/* a batch of no events */
	start(1, 0);
	tap_ok(decode(m.b, m.n) == 0 && batch.n_events == 0, "empty batch");

	/* conf as float64, scale as float32 */
	start(1, 1);
	put_event(&m, XPU_REC_PMU_COUNTER, 1, 2);
	put_fixstr(&m, "conf");
	put_float64(&m, 0.5);
	put_fixstr(&m, "scale");
	put_be(&m, 0xca, 0x40000000, 4); /* 2.0f */
	tap_ok(decode(m.b, m.n) == 0 && out[0].confidence == 0.5f && out[0].scale == 2.0,
	       "conf as float64 and scale as float32");
	/* exactly the limits of conf */
	start(1, 2);
	put_event(&m, XPU_REC_PMU_COUNTER, 1, 1);
	put_fixstr(&m, "conf");
	put_float64(&m, 0.0);
	put_event(&m, XPU_REC_PMU_COUNTER, 2, 1);
	put_fixstr(&m, "conf");
	put_float64(&m, 1.0);
	tap_ok(decode(m.b, m.n) == 0 && out[0].confidence == 0.0f && out[1].confidence == 1.0f,
	       "conf 0.0 and 1.0 are within 0..1");
}

static void test_hostile(void)
{
	struct xpu_wire_limits lim = xpu_wire_default_limits;
	struct timespec t0, t1;
	unsigned int i;
	double ms;
	int ret;

	/* a str32 key declaring nearly 4 GiB */
	start(1, 1);
	put8(&m, 0x81);
	put_be(&m, 0xdb, 0xffffff00, 4);
	put(&m, "k", 1);
	expect_bad_m("string longer than the message", "a str32 length past the end");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "name");
	put_be(&m, 0xd9, 10, 1);
	put(&m, "abc", 3);
	expect_bad_m("string longer than the message", "a str8 name past the end");

	/* 20 bytes, one of which says four billion events follow */
	m.n = 0;
	put8(&m, 0x82);
	put_fixstr(&m, "v");
	put8(&m, 1);
	put_fixstr(&m, "events");
	put_be(&m, 0xdd, 0xffffffff, 4);
	while (m.n < 20)
		put8(&m, 0x80);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_bad_m("array longer than the message", "array32 of 4294967295 events in 20 bytes");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	tap_ok(ms < 50, "and answers at once (%.3f ms), allocating nothing", ms);
	tap_eq_u64(werr.offset, 11, "the error points at the array header");

	/* the same with a limit the count is under but the bytes are not */
	start(1, 1000);
	expect_bad_m("array longer than the message", "array16 of 1000 events in a short message");
	lim.max_events = 1;
	ret = xpu_wire_decode(golden, sizeof(golden), &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "too many events"),
	       "2 events over max_events 1: too many events");
	lim = xpu_wire_default_limits;
	lim.max_message = sizeof(golden) - 1;
	ret = xpu_wire_decode(golden, sizeof(golden), &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "message larger than max_message") &&
		       werr.offset == 0,
	       "message over max_message rejected unread");

	/* depth: an unknown value nested past the limit, at the batch and at the event level */
	start(1, 1);
	put_event(&m, XPU_REC_LOSS, 1, 1);
	put_fixstr(&m, "deep");
	put8(&m, 0x91); /* depth 4 */
	put8(&m, 0x91); /* 5 */
	put8(&m, 0x91); /* 6: over */
	put8(&m, 0x01);
	expect_bad_m("depth limit", "an unknown value 6 levels deep");
	m.n -= 2;
	put8(&m, 0x01);
	put8(&m, 0x00); /* [[1]] at depth 4..5 is fine; the trailing 0 is not */
	expect_bad_m("trailing bytes after the batch", "a byte after the batch");
	m.n--;
	tap_eq_u64(decode(m.b, m.n), 0, "an unknown value 5 levels deep is within the limit");
	m.n = 0;
	put8(&m, 0x81);
	put_fixstr(&m, "x");
	for (i = 0; i < 100000; i++)
		put8(&m, 0x91);
	put8(&m, 0xc0);
	expect_bad_m("depth limit", "100000 nested arrays at the batch level");
	tap_eq_u64(werr.offset, 3 + 4, "depth limit found at the 6th level's header");
	lim = xpu_wire_default_limits;
	lim.max_depth = 1000000; /* clamped to XPU_WIRE_DEPTH_MAX */
	ret = xpu_wire_decode(m.b, m.n, &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "depth limit") &&
		       werr.offset == 3 + XPU_WIRE_DEPTH_MAX - 1,
	       "max_depth 1000000 is clamped to XPU_WIRE_DEPTH_MAX (%d)", XPU_WIRE_DEPTH_MAX);
	lim.max_depth = 3;
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "grid");
	put8(&m, 0x93);
	put8(&m, 1);
	put8(&m, 1);
	put8(&m, 1);
	ret = xpu_wire_decode(m.b, m.n, &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "depth limit"),
	       "max_depth 3 refuses an event's grid array");
	lim.max_depth = 0;
	ret = xpu_wire_decode(golden, sizeof(golden), &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "depth limit"),
	       "max_depth 0 refuses the batch map itself");

	m.n = 0;
	put8(&m, 0x81);
	put_fixstr(&m, "x");
	put8(&m, 0xc1);
	expect_bad_m("reserved type byte 0xc1", "the never-used byte 0xc1");
	m.n = 0;
	put8(&m, 0x81);
	put_fixstr(&m, "x");
	put_be(&m, 0xc7, 200, 1);
	put8(&m, 1);
	expect_bad_m("bin or ext longer than the message", "an ext8 longer than the message");
	m.n = 0;
	put8(&m, 0x81);
	put_fixstr(&m, "x");
	put_be(&m, 0xdf, 0x7fffffff, 4);
	expect_bad_m("map longer than the message", "an unknown map32 of 2^31 entries");
	m.n = 0;
	put8(&m, 0x81);
	put_fixstr(&m, "x");
	put_be(&m, 0xcb, 0, 4); /* float64 cut short */
	expect_bad_m("truncated", "a float64 cut short in an unknown value");
}

static void test_shape(void)
{
	static const __u8 array_top[] = { 0x91, 0x01 };
	static const __u8 int_top[] = { 0x01 };

	expect_bad(array_top, sizeof(array_top), "batch is not a map", "an array at the top");
	expect_bad(int_top, sizeof(int_top), "batch is not a map", "an integer at the top");

	start(2, 0);
	expect_bad_m("unsupported version", "v = 2");
	start(0, 0);
	expect_bad_m("unsupported version", "v = 0");

	/* v after events whose shape v 1 does not know: the version is the error */
	m.n = 0;
	put8(&m, 0x84);
	put_fixstr(&m, "events");
	put8(&m, 0x91);
	put8(&m, 0x92); /* an event that is an array */
	put8(&m, 1);
	put8(&m, 2);
	put_fixstr(&m, "producer");
	put8(&m, 3);
	put_fixstr(&m, "seq");
	put8(&m, 7);
	put_fixstr(&m, "v");
	put8(&m, 2);
	expect_bad_m("unsupported version", "v = 2 after v2-shaped events");
	m.n--;
	put8(&m, 1);
	expect_bad_m("event is not a map", "the same with v = 1");

	m.n = 0;
	put8(&m, 0x83);
	put_fixstr(&m, "v");
	put8(&m, 1);
	put_fixstr(&m, "producer");
	put8(&m, 3);
	put_fixstr(&m, "events");
	put8(&m, 0x90);
	expect_bad_m("missing required key seq", "a batch without seq");
	m.n = 0;
	put8(&m, 0x83);
	put_fixstr(&m, "seq");
	put8(&m, 1);
	put_fixstr(&m, "producer");
	put8(&m, 3);
	put_fixstr(&m, "events");
	put8(&m, 0x90);
	expect_bad_m("missing required key v", "a batch without v");
	m.n = 0;
	put8(&m, 0x83);
	put_fixstr(&m, "v");
	put8(&m, 1);
	put_fixstr(&m, "seq");
	put8(&m, 3);
	put_fixstr(&m, "events");
	put8(&m, 0x90);
	expect_bad_m("missing required key producer", "a batch without producer");
	m.n = 0;
	put8(&m, 0x83);
	put_fixstr(&m, "v");
	put8(&m, 1);
	put_fixstr(&m, "seq");
	put8(&m, 3);
	put_fixstr(&m, "producer");
	put8(&m, 0x90);
	expect_bad_m("expected an integer", "producer that is an array");
	m.n = 0;
	put_header(&m, 1, 0);
	m.b[0] = 0x85;
	put_fixstr(&m, "seq");
	put8(&m, 1);
	expect_bad_m("duplicate key", "seq twice");
	m.n = 0;
	put8(&m, 0x84);
	put_fixstr(&m, "v");
	put8(&m, 1);
	put_fixstr(&m, "producer");
	put_be(&m, 0xcf, 0x100000000ull, 8);
	expect_bad_m("integer out of range", "producer over 32 bits");
	m.n = 0;
	put8(&m, 0x81);
	put8(&m, 0x01);
	put8(&m, 0x01);
	expect_bad_m("batch key is not a string", "an integer key in the batch");
	start(1, 1);
	put8(&m, 0x91);
	expect_bad_m("event is not a map", "an event that is an array");
}

static void test_event_rejects(void)
{
	unsigned int i;

	start(1, 1);
	put8(&m, 0x82);
	put_fixstr(&m, "k");
	put8(&m, XPU_REC_LOSS);
	put_fixstr(&m, "ts");
	put8(&m, 1);
	expect_bad_m("missing required key id", "an event without id");
	tap_eq_u64(werr.offset, 29, "missing id: offset of the event map");
	start(1, 1);
	put8(&m, 0x82);
	put_fixstr(&m, "id");
	put8(&m, 1);
	put_fixstr(&m, "ts");
	put8(&m, 1);
	expect_bad_m("missing required key k", "an event without k");
	start(1, 1);
	put8(&m, 0x82);
	put_fixstr(&m, "k");
	put8(&m, XPU_REC_LOSS);
	put_fixstr(&m, "id");
	put8(&m, 1);
	expect_bad_m("missing required key ts", "an event without ts");

	start(1, 1);
	put_event(&m, 99, 1, 0);
	expect_bad_m("unknown kind", "kind 99");
	tap_eq_u64(werr.offset, 32, "bad kind: offset of the kind's value");
	start(1, 1);
	put_event(&m, XPU_REC_TYPE_MAX, 1, 0);
	expect_bad_m("unknown kind", "kind XPU_REC_TYPE_MAX");
	start(1, 1);
	put_event(&m, XPU_REC_MODULE, 1, 0);
	expect_bad_m("unknown kind", "kind MODULE: a record for the correlator, never an event");
	start(1, 1);
	put_event(&m, 0, 1, 0);
	expect_bad_m("unknown kind", "kind 0 (INVALID)");
	start(1, 1);
	put_event(&m, XPU_REC_PAD, 1, 0);
	expect_bad_m("kind PAD is not an event", "kind PAD");
	start(1, 1);
	put_event(&m, 0x10005, 1, 0);
	expect_bad_m("unknown kind", "kind 0x10005 (not truncated to 5)");

	/* links */
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x91);
	put8(&m, 0x92);
	put8(&m, 0);
	put8(&m, 1);
	expect_bad_m("unknown link type", "link type 0");
	m.n -= 2;
	put8(&m, XPU_LINK_TYPE_MAX);
	put8(&m, 1);
	expect_bad_m("unknown link type", "link type XPU_LINK_TYPE_MAX");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x95);
	for (i = 0; i < 5; i++) {
		put8(&m, 0x92);
		put8(&m, 1);
		put8(&m, (__u8)i);
	}
	expect_bad_m("too many links", "5 links");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x90);
	expect_bad_m("empty links array", "0 links");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x91);
	put8(&m, 0x93);
	put8(&m, 1);
	put8(&m, 1);
	put8(&m, 1);
	expect_bad_m("link is not a [type, target] pair", "a link of 3 elements");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x91);
	put8(&m, 0x81);
	put8(&m, 1);
	put8(&m, 1);
	expect_bad_m("link is not a [type, target] pair", "a link that is a map");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "links");
	put8(&m, 0x01);
	expect_bad_m("links is not an array", "links that is an integer");

	/* grid and block */
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "grid");
	put8(&m, 0x92);
	put8(&m, 1);
	put8(&m, 1);
	expect_bad_m("grid is not 3 integers", "grid with 2 elements");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "block");
	put8(&m, 0x94);
	for (i = 0; i < 4; i++)
		put8(&m, 1);
	expect_bad_m("block is not 3 integers", "block with 4 elements");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "grid");
	put8(&m, 0x93);
	put8(&m, 1);
	put_be(&m, 0xce, 0x80000000u, 4);
	put8(&m, 1);
	expect_bad_m("integer out of range", "grid element 2^31");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "block");
	put8(&m, 0x93);
	put8(&m, 1);
	put_be(&m, 0xd3, (__u64)((__s64)INT32_MIN - 1), 8);
	put8(&m, 1);
	expect_bad_m("integer out of range", "block element -2^31 - 1");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "grid");
	put8(&m, 0x93);
	put8(&m, 1);
	put_float64(&m, 1.0);
	put8(&m, 1);
	expect_bad_m("expected an integer", "a float in grid");

	/* conf */
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "conf");
	put_float64(&m, 1.5);
	expect_bad_m("confidence outside 0..1", "conf 1.5");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "conf");
	put_be(&m, 0xca, 0xbf000000, 4); /* -0.5f */
	expect_bad_m("confidence outside 0..1", "conf -0.5");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "conf");
	put_be(&m, 0xca, 0x7fc00000, 4); /* NaN */
	expect_bad_m("confidence outside 0..1", "conf NaN");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "conf");
	put8(&m, 1);
	expect_bad_m("expected a float", "conf as the integer 1");

	/* stack */
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x92);
	put8(&m, 1);
	put8(&m, 2);
	put_fixstr(&m, "nk");
	put8(&m, 3);
	expect_bad_m("nk greater than the stack length", "nk 3 with 2 frames");
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "nk");
	put8(&m, 1);
	expect_bad_m("nk greater than the stack length", "nk 1 with no stack");
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "stack");
	put_be(&m, 0xdc, XPU_WIRE_STACK_MAX + 1, 2);
	for (i = 0; i < XPU_WIRE_STACK_MAX + 1; i++)
		put8(&m, 1);
	expect_bad_m("stack longer than XPU_WIRE_STACK_MAX", "a stack of 255 frames");
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "stack");
	put8(&m, 0x91);
	put8(&m, 0xff); /* -1 */
	expect_bad_m("negative integer for an unsigned field", "a negative frame");

	/* name */
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "name");
	put_be(&m, 0xda, XPU_STRING_MAX + 1, 2);
	for (i = 0; i < XPU_STRING_MAX + 1; i++)
		put8(&m, 'a');
	expect_bad_m("name longer than XPU_STRING_MAX", "a name of 16385 bytes");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "name");
	put_be(&m, 0xc4, 1, 1);
	put8(&m, 'a');
	expect_bad_m("name is not a string", "a name as bin");

	/* integers */
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "pid");
	put8(&m, 0xff);
	expect_bad_m("negative integer for an unsigned field", "pid -1");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "pid");
	put_be(&m, 0xcf, 0x100000000ull, 8);
	expect_bad_m("integer out of range", "pid 2^32");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "flags");
	put_be(&m, 0xce, 0x10000, 4);
	expect_bad_m("integer out of range", "flags 65536");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "ct");
	put8(&m, XPU_CORR_TYPE_MAX);
	expect_bad_m("unknown correlation type", "ct XPU_CORR_TYPE_MAX");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "ts");
	put8(&m, 1);
	expect_bad_m("duplicate key", "ts twice");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "end");
	put_fixstr(&m, "1000");
	expect_bad_m("expected an integer", "end as a string");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put8(&m, 0x07);
	put8(&m, 0x07);
	expect_bad_m("event key is not a string", "an integer key in an event");
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 1);
	put_fixstr(&m, "scale");
	put_fixstr(&m, "x");
	expect_bad_m("expected a float", "scale as a string");
}

static void test_nospc(void)
{
	__u64 one_frame[1];
	const struct xpu_wire_pool small_pool = { .stack = one_frame, .stack_len = 1 };
	const struct xpu_wire_pool two = { stack_pool, 2, NULL, NULL, 0 };
	int ret;

	ret = xpu_wire_decode(golden, sizeof(golden), NULL, &batch, out, 1, &pool, &werr);
	tap_ok(ret == -ENOSPC && !strcmp(werr.reason, "events array too small"),
	       "2 events into room for 1: -ENOSPC");
	tap_eq_u64(werr.offset, 88, "ENOSPC offset: the first event that did not fit");
	tap_eq_u64(batch.n_events, 2, "on ENOSPC n_events says how many the batch holds");
	ret = xpu_wire_decode(golden, sizeof(golden), NULL, &batch, NULL, 0, &pool, &werr);
	tap_eq_u64(ret, (__u64)(__s64)-ENOSPC, "no events array at all: -ENOSPC");
	ret = xpu_wire_decode(golden, sizeof(golden), NULL, &batch, out, MAX_EVENTS, &small_pool,
			      &werr);
	tap_ok(ret == -ENOSPC && !strcmp(werr.reason, "stack pool too small"),
	       "2 frames into a pool of 1: -ENOSPC");
	ret = xpu_wire_decode(golden, sizeof(golden), NULL, &batch, out, MAX_EVENTS, NULL, NULL);
	tap_eq_u64(ret, (__u64)(__s64)-ENOSPC, "no pool, no err: -ENOSPC");

	/* -ENOSPC only for a batch that is otherwise valid */
	start(1, 2);
	put_event(&m, XPU_REC_LOSS, 1, 0);
	put_event(&m, 99, 2, 0);
	ret = xpu_wire_decode(m.b, m.n, NULL, &batch, out, 1, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "unknown kind"),
	       "an invalid event past the room is still -EBADMSG");
	start(1, 2);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "stack");
	put8(&m, 0x92);
	put8(&m, 1);
	put8(&m, 2);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "stack");
	put8(&m, 0x91);
	put8(&m, 0xc0);
	ret = xpu_wire_decode(m.b, m.n, NULL, &batch, out, MAX_EVENTS, &small_pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "expected an integer"),
	       "an invalid frame past the pool is still -EBADMSG");
	ret = xpu_wire_decode(golden, sizeof(golden), NULL, &batch, out, 2, &two, &werr);
	tap_eq_u64(ret, 0, "exactly enough room: ok");
}

/*
 * The batch with frame names of docs/wire.md, byte by byte from the spec: a CPU sample whose
 * kernel frame and outer user frame are named, the frame between them not; a launch that
 * names its frames with a long name and "main" again, through a second copy of the text.
 * Each name is in the symbol table once, after the events.
 */
#define LONG_NAME "at::native::vectorized_elementwise_kernel"

static const __u64 names_stack1[3] = { 0xffffffff81000010ull, 0x401000, 0x401100 };
static const __u64 names_stack2[2] = { 0x402000, 0x401100 };
static const char *const names_frames1[3] = { "sys_read", NULL, "main" };
static const char *const names_frames2[2] = { LONG_NAME, main_copy };

static const __u8 golden_names[] = {
	0x85, /* map of 5: the symbol table is the fifth entry */
	0xa1, 'v',  0x01, /* "v": 1 */
	0xa8, 'p',  'r',  'o',	'd',  'u',  'c',  'e',	'r',  0x03, /* "producer": 3 */
	0xa3, 's',  'e',  'q',	0x07, /* "seq": 7 */
	0xa6, 'e',  'v',  'e',	'n',  't',  's',  0xdd, 0x00, 0x00, 0x00, 0x02, /* "events": 2 */
	0x86, /* event 1: map of 6 */
	0xa1, 'k',  0x02, /* "k": 2 (CPU_SAMPLE) */
	0xa2, 'i',  'd',  0x01, /* "id": 1 */
	0xa2, 't',  's',  0xcd, 0x03, 0xe8, /* "ts": 1000 */
	0xa2, 'n',  'k',  0x01, /* "nk": 1 */
	0xa5, 's',  't',  'a',	'c',  'k',  0x93, /* "stack": array of 3 */
	0xcf, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00, 0x00, 0x10, /* kernel 0xffffffff81000010 */
	0xce, 0x00, 0x40, 0x10, 0x00, /* user 0x401000 */
	0xce, 0x00, 0x40, 0x11, 0x00, /* user 0x401100 */
	0xa6, 'f',  'r',  'a',	'm',  'e',  's',  0x93, /* "frames": array of 3 */
	0x00, 0xc0, 0x01, /* symbol 0 ("sys_read"), nil (no name), symbol 1 ("main") */
	0x85, /* event 2: map of 5 */
	0xa1, 'k',  0x03, /* "k": 3 (LAUNCH) */
	0xa2, 'i',  'd',  0x02, /* "id": 2 */
	0xa2, 't',  's',  0xcd, 0x07, 0xd0, /* "ts": 2000 */
	0xa5, 's',  't',  'a',	'c',  'k',  0x92, /* "stack": array of 2 */
	0xce, 0x00, 0x40, 0x20, 0x00, /* 0x402000 */
	0xce, 0x00, 0x40, 0x11, 0x00, /* 0x401100 */
	0xa6, 'f',  'r',  'a',	'm',  'e',  's',  0x92, 0x02, 0x01, /* "frames": [2, 1] */
	0xa7, 's',  'y',  'm',	'b',  'o',  'l',  's',	0x93, /* "symbols": array of 3 */
	0xa8, 's',  'y',  's',	'_',  'r',  'e',  'a',	'd', /* 0: "sys_read" */
	0xa4, 'm',  'a',  'i',	'n', /* 1: "main" */
	0xd9, 0x29, /* 2: str8 of 41 bytes */
	'a',  't',  ':',  ':',	'n',  'a',  't',  'i',	'v',  'e',  ':',  ':',	'v', 'e',
	'c',  't',  'o',  'r',	'i',  'z',  'e',  'd',	'_',  'e',  'l',  'e',	'm', 'e',
	'n',  't',  'w',  'i',	's',  'e',  '_',  'k',	'e',  'r',  'n',  'e',	'l',
};

static void golden_names_events(struct xpu_cevent ev[2])
{
	memset(ev, 0, 2 * sizeof(*ev));
	ev[0].kind = XPU_REC_CPU_SAMPLE;
	ev[0].id = 1;
	ev[0].ts_ns = 1000;
	ev[0].stack = names_stack1;
	ev[0].frames = names_frames1;
	ev[0].n_kernel = 1;
	ev[0].n_user = 2;
	ev[1].kind = XPU_REC_LAUNCH;
	ev[1].id = 2;
	ev[1].ts_ns = 2000;
	ev[1].stack = names_stack2;
	ev[1].frames = names_frames2;
	ev[1].n_user = 2;
}

/* Encode evs into a fresh batch (producer 3, seq 7); the message stays the encoder's. */
static int encode_events(struct xpu_wire_enc *enc, const struct xpu_cevent *evs, __u32 n,
			 const void **data, size_t *len)
{
	__u32 i;
	int ret = xpu_wire_enc__begin(enc, 7);

	for (i = 0; !ret && i < n; i++)
		ret = xpu_wire_enc__add(enc, &evs[i]);
	return ret ? ret : xpu_wire_enc__finish(enc, data, len);
}

static void expect_golden_names(const void *data, size_t len, const char *what)
{
	size_t i;

	if (tap_ok(len == sizeof(golden_names) && !memcmp(data, golden_names, len), "%s", what))
		return;
	for (i = 0; i < len && i < sizeof(golden_names); i++) {
		if (((const __u8 *)data)[i] != golden_names[i]) {
			tap_diag("first difference at byte %zu: %02x, want %02x", i,
				 ((const __u8 *)data)[i], golden_names[i]);
			return;
		}
	}
	tap_diag("length %zu, want %zu", len, sizeof(golden_names));
}

static void test_golden_names(void)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(3);
	struct xpu_cevent ev[2];
	const void *data = NULL;
	size_t len = 0, n;
	int ret;

	golden_names_events(ev);
	tap_eq_u64(xpu_wire_enc__begin(enc, 7), 0, "names: begin");
	tap_eq_u64(xpu_wire_enc__add(enc, &ev[0]), 0, "names: add the sample");
	tap_eq_u64(xpu_wire_enc__add(enc, &ev[1]), 0, "names: add the launch");
	tap_eq_u64(xpu_wire_enc__size(enc), sizeof(golden_names),
		   "size before finish counts the symbol table to come");
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), 0, "names: finish");
	expect_golden_names(data, len, "golden bytes with frame names");
	tap_eq_u64(xpu_wire_enc__size(enc), len, "size after finish is the message");
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), 0, "finish again");
	expect_golden_names(data, len, "finish again appends nothing");

	/* the same names through other pointers: the bytes do not change */
	tap_eq_u64(encode_events(enc, ev, 2, &data, &len), 0, "names: the batch again");
	expect_golden_names(data, len, "a reused encoder gives the same bytes");

	/* an event after finish() goes before the symbol table, which grows */
	tap_eq_u64(xpu_wire_enc__begin(enc, 7), 0, "begin");
	xpu_wire_enc__add(enc, &ev[0]);
	xpu_wire_enc__finish(enc, &data, &len);
	tap_eq_u64(xpu_wire_enc__add(enc, &ev[1]), 0, "add after finish");
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), 0, "finish once more");
	expect_golden_names(data, len, "add after finish: the same batch");

	ret = decode(golden_names, sizeof(golden_names));
	tap_eq_u64(ret, 0, "golden names decode");
	tap_ok(batch.n_events == 2 && cevent__diff(&out[0], &ev[0]) == 0 &&
		       cevent__diff(&out[1], &ev[1]) == 0,
	       "golden names: both events equal field by field, names included");
	tap_ok(out[0].frames == frames_pool && out[1].frames == frames_pool + 3 &&
		       out[1].stack == stack_pool + 3,
	       "frames lie beside their stack in the pool");
	tap_ok(out[0].frames[2] == out[1].frames[1] && out[0].frames[1] == NULL,
	       "a name shared by two events is one copy; no name is NULL");
	tap_ok((const char *)out[0].frames[0] >= text_pool &&
		       (const char *)out[0].frames[0] < text_pool + TEXT_LEN &&
		       !strcmp(out[1].frames[0], LONG_NAME),
	       "names are copied into the text pool, NUL-terminated");

	/* every prefix is malformed */
	for (n = 0, ret = 0; n < sizeof(golden_names); n++) {
		__u8 *copy = malloc(n ? n : 1);

		memcpy(copy, golden_names, n);
		if (decode(copy, n) != -EBADMSG)
			ret++;
		free(copy);
	}
	tap_eq_u64(ret, 0, "all %zu proper prefixes of the names batch are rejected",
		   sizeof(golden_names));

	/* a batch without names is what it always was, whatever frames says */
	golden_events(ev);
	ev[0].frames = (const char *const[]){ NULL, "" };
	tap_eq_u64(encode_events(enc, ev, 2, &data, &len), 0, "frames without a name");
	tap_ok(len == sizeof(golden) && !memcmp(data, golden, len),
	       "frames of NULL and \"\" only: the golden bytes, no frames, no symbol table");
	xpu_wire_enc__free(enc);
}

/* The symbol table before the events, between them and "v", and names across many events. */
static void test_names_liberal(void)
{
	struct xpu_cevent ev[2];
	__u32 i;

	golden_names_events(ev);
	/* "symbols" first, str16 names, frames before the stack, indices as uint32 */
	m.n = 0;
	put8(&m, 0x85);
	put_fixstr(&m, "symbols");
	put8(&m, 0x93);
	put_be(&m, 0xda, 4, 2);
	put(&m, "main", 4);
	put_be(&m, 0xda, strlen(LONG_NAME), 2);
	put(&m, LONG_NAME, strlen(LONG_NAME));
	put_be(&m, 0xda, 8, 2);
	put(&m, "sys_read", 8);
	put_fixstr(&m, "seq");
	put8(&m, 7);
	put_fixstr(&m, "events");
	put8(&m, 0x92);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 3);
	m.n -= 1; /* put_event wrote ts 5: make it 1000 */
	put_be(&m, 0xcd, 1000, 2);
	put_fixstr(&m, "frames");
	put8(&m, 0x93);
	put_be(&m, 0xce, 2, 4);
	put8(&m, 0xc0);
	put_be(&m, 0xcf, 0, 8);
	put_fixstr(&m, "nk");
	put8(&m, 1);
	put_fixstr(&m, "stack");
	put8(&m, 0x93);
	for (i = 0; i < 3; i++)
		put_uint(&m, names_stack1[i]);
	put_event(&m, XPU_REC_LAUNCH, 2, 2);
	m.n -= 1;
	put_be(&m, 0xcd, 2000, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x92);
	put_uint(&m, names_stack2[0]);
	put_uint(&m, names_stack2[1]);
	put_fixstr(&m, "frames");
	put8(&m, 0x92);
	put8(&m, 1);
	put8(&m, 0);
	put_fixstr(&m, "producer");
	put8(&m, 3);
	put_fixstr(&m, "v");
	put8(&m, 1);
	tap_eq_u64(decode(m.b, m.n), 0, "symbols before the events, v last, other widths: ok");
	tap_ok(batch.n_events == 2 && cevent__diff(&out[0], &ev[0]) == 0 &&
		       cevent__diff(&out[1], &ev[1]) == 0,
	       "and the same events as the golden names batch");

	/* frames of nils only, and no symbol table: no names */
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x91);
	put8(&m, 5);
	put_fixstr(&m, "frames");
	put8(&m, 0x91);
	put8(&m, 0xc0);
	tap_ok(decode(m.b, m.n) == 0 && out[0].frames && out[0].frames[0] == NULL,
	       "frames of nil without a symbol table: ok, no name");
	/* an empty symbol is no name */
	m.b[0] = 0x85;
	put_fixstr(&m, "symbols");
	put8(&m, 0x91);
	put8(&m, 0xa0);
	m.b[m.n - 11] = 0x00; /* the frame's nil becomes index 0 */
	tap_ok(decode(m.b, m.n) == 0 && out[0].frames && out[0].frames[0] == NULL,
	       "an empty symbol decodes as no name");
	/* an unused symbol is allowed */
	m.n -= 2;
	put8(&m, 0x92);
	put_fixstr(&m, "y");
	put_fixstr(&m, "x");
	tap_ok(decode(m.b, m.n) == 0 && out[0].frames && !strcmp(out[0].frames[0], "y"),
	       "a symbol no frame uses is allowed");
	/* frames of length 0 beside no stack */
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "frames");
	put8(&m, 0x90);
	tap_ok(decode(m.b, m.n) == 0 && !out[0].frames && !out[0].stack,
	       "an empty frames array without a stack: ok");

	/* names not wanted: still checked, not copied */
	{
		const struct xpu_wire_pool no_names = { .stack = stack_pool,
							.stack_len = POOL_LEN };
		int ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out,
					  MAX_EVENTS, &no_names, &werr);

		tap_ok(ret == 0 && !out[0].frames && !out[1].frames && out[1].stack,
		       "pool without frames: the names are skipped, the stacks kept");
	}
}

static void test_names_rejects(void)
{
	unsigned int i;

	/* an index past the table, after and before it */
	m.n = 0;
	put(&m, golden_names, sizeof(golden_names));
	m.b[0x7d] = 0x03; /* event 2's first index: 2 -> 3 */
	if (!tap_ok(golden_names[0x7d] == 0x02, "byte 0x7d is event 2's first name index"))
		return;
	expect_bad_m("frame name index past the symbol table", "index 3 of 3 symbols");
	tap_eq_u64(werr.offset, 0x7d, "the error points at the index");
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x91);
	put8(&m, 5);
	put_fixstr(&m, "frames");
	put8(&m, 0x91);
	put8(&m, 0);
	expect_bad_m("frame name index past the symbol table", "an index without a symbol table");
	m.b[0] = 0x85;
	put_fixstr(&m, "symbols");
	put8(&m, 0x90);
	expect_bad_m("frame name index past the symbol table", "an index into an empty table");
	m.n = 0;
	put8(&m, 0x85);
	put_fixstr(&m, "symbols");
	put8(&m, 0x91);
	put_fixstr(&m, "a");
	put_header(&m, 1, 1);
	if (!tap_ok(m.b[12] == 0x84, "the header's map byte follows the table"))
		return;
	memmove(m.b + 12, m.b + 13, m.n - 13); /* it goes: the first map holds all 5 */
	m.n--;
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2);
	put_fixstr(&m, "stack");
	put8(&m, 0x91);
	put8(&m, 5);
	put_fixstr(&m, "frames");
	put8(&m, 0x91);
	put_be(&m, 0xcd, 1, 2);
	expect_bad_m("frame name index past the symbol table", "index 1 of a table of 1 before");

	/* the table */
#define SYMBOLS_BATCH(...)                 \
	do {                               \
		start(1, 0);               \
		m.b[0] = 0x85;             \
		put_fixstr(&m, "symbols"); \
		__VA_ARGS__;               \
	} while (0)
	SYMBOLS_BATCH(put8(&m, 0x01));
	expect_bad_m("symbols is not an array", "symbols that is an integer");
	SYMBOLS_BATCH(put8(&m, 0x81); put_fixstr(&m, "a"); put_fixstr(&m, "b"));
	expect_bad_m("symbols is not an array", "symbols that is a map");
	SYMBOLS_BATCH(put8(&m, 0x92); put_fixstr(&m, "a"); put8(&m, 0x07));
	expect_bad_m("symbol is not a string", "a symbol that is an integer");
	SYMBOLS_BATCH(put8(&m, 0x91); put8(&m, 0xc0));
	expect_bad_m("symbol is not a string", "a symbol that is nil");
	SYMBOLS_BATCH(put8(&m, 0x91); put_be(&m, 0xc4, 1, 1); put8(&m, 'a'));
	expect_bad_m("symbol is not a string", "a symbol packed as bin");
	SYMBOLS_BATCH(put8(&m, 0x91); put_be(&m, 0xda, XPU_WIRE_FRAME_NAME_MAX + 1, 2);
		      for (i = 0; i < XPU_WIRE_FRAME_NAME_MAX + 1; i++) put8(&m, 'a'));
	expect_bad_m("symbol longer than XPU_WIRE_FRAME_NAME_MAX", "a symbol of 4097 bytes");
	m.n -= 3 + XPU_WIRE_FRAME_NAME_MAX + 1; /* back to before the str16 */
	put_be(&m, 0xda, XPU_WIRE_FRAME_NAME_MAX, 2);
	for (i = 0; i < XPU_WIRE_FRAME_NAME_MAX; i++)
		put8(&m, 'a');
	tap_eq_u64(decode(m.b, m.n), 0, "a symbol of 4096 bytes is fine");
	SYMBOLS_BATCH(put8(&m, 0x91); put(&m,
					  "\xa3"
					  "a\0b",
					  4));
	expect_bad_m("symbol holds a NUL byte", "a symbol with a NUL inside");
	SYMBOLS_BATCH(put8(&m, 0x91); put(&m,
					  "\xa3"
					  "ab",
					  3));
	expect_bad_m("string longer than the message", "a symbol cut short");
	SYMBOLS_BATCH(put_be(&m, 0xdd, 0xffffffffu, 4));
	expect_bad_m("array longer than the message", "a table of 4294967295 symbols");
	SYMBOLS_BATCH(put8(&m, 0x90); put_fixstr(&m, "symbols"); put8(&m, 0x90));
	m.b[0] = 0x86;
	expect_bad_m("duplicate key", "symbols twice");

	/* an event's frames */
#define FRAMES_EVENT(n_stack, ...)                       \
	do {                                             \
		start(1, 1);                             \
		m.b[0] = 0x85;                           \
		put_event(&m, XPU_REC_CPU_SAMPLE, 1, 2); \
		put_fixstr(&m, "stack");                 \
		put8(&m, (__u8)(0x90 | (n_stack)));      \
		for (i = 0; i < (n_stack); i++)          \
			put8(&m, (__u8)(i + 1));         \
		put_fixstr(&m, "frames");                \
		__VA_ARGS__;                             \
		put_fixstr(&m, "symbols");               \
		put8(&m, 0x92);                          \
		put_fixstr(&m, "a");                     \
		put_fixstr(&m, "b");                     \
	} while (0)
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 1));
	tap_ok(decode(m.b, m.n) == 0 && !strcmp(out[0].frames[0], "a") &&
		       !strcmp(out[0].frames[1], "b"),
	       "the frames test event is valid as it stands");
	FRAMES_EVENT(2, put8(&m, 0x91); put8(&m, 0));
	expect_bad_m("frames and stack differ in length", "1 name for 2 frames");
	FRAMES_EVENT(1, put8(&m, 0x92); put8(&m, 0); put8(&m, 1));
	expect_bad_m("frames and stack differ in length", "2 names for 1 frame");
	FRAMES_EVENT(2, put8(&m, 0x01));
	expect_bad_m("frames is not an array", "frames that is an integer");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put_fixstr(&m, "b"));
	expect_bad_m("frame name is not an index or nil", "a name in place of an index");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 0xc3));
	expect_bad_m("frame name is not an index or nil", "true in place of an index");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 0xff));
	expect_bad_m("negative integer for an unsigned field", "index -1");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put_be(&m, 0xcf, 1ull << 32, 8));
	expect_bad_m("integer out of range", "index 2^32");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 2));
	expect_bad_m("frame name index past the symbol table", "index 2 of 2 symbols");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 0x91); put8(&m, 0));
	expect_bad_m("frame name is not an index or nil", "an array in place of an index");
	start(1, 1);
	put_event(&m, XPU_REC_CPU_SAMPLE, 1, 1);
	put_fixstr(&m, "frames");
	put_be(&m, 0xdc, XPU_WIRE_STACK_MAX + 1, 2);
	for (i = 0; i < XPU_WIRE_STACK_MAX + 1; i++)
		put8(&m, 0xc0);
	expect_bad_m("frames longer than XPU_WIRE_STACK_MAX", "255 names");
	FRAMES_EVENT(2, put8(&m, 0x92); put8(&m, 0); put8(&m, 1); m.b[29] = 0x86;
		     put_fixstr(&m, "frames"); put8(&m, 0x90));
	expect_bad_m("duplicate key", "frames twice");
#undef FRAMES_EVENT
#undef SYMBOLS_BATCH
}

static void test_names_nospc(void)
{
	/* "sys_read", "main", LONG_NAME with their NULs, and 3 index entries */
	const size_t need = 9 + 5 + sizeof(LONG_NAME) + 3 * 4;
	struct xpu_wire_pool small = pool;
	int ret;

	small.text_len = need;
	ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out, MAX_EVENTS,
			      &small, &werr);
	tap_ok(ret == 0 && !strcmp(out[1].frames[0], LONG_NAME),
	       "text of exactly %zu bytes is enough", need);
	small.text_len = need - 1;
	ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out, MAX_EVENTS,
			      &small, &werr);
	tap_ok(ret == -ENOSPC && !strcmp(werr.reason, "text pool too small") &&
		       werr.offset == sizeof(golden_names) - 2 - strlen(LONG_NAME),
	       "a byte less: -ENOSPC at the name that did not fit");
	tap_ok(batch.n_events == 2 && !out[0].frames && !out[1].frames && out[1].stack,
	       "and no names at all rather than some");
	small.text_len = 11;
	ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out, MAX_EVENTS,
			      &small, &werr);
	tap_ok(ret == -ENOSPC &&
		       werr.offset == sizeof(golden_names) - 9 - 5 - 2 - strlen(LONG_NAME) - 1,
	       "no room for the table's index: -ENOSPC at the table");
	small.text = NULL;
	small.text_len = 0;
	ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out, MAX_EVENTS,
			      &small, &werr);
	tap_ok(ret == -ENOSPC && !strcmp(werr.reason, "text pool too small"),
	       "frames without text: -ENOSPC");
	/* -ENOSPC only for a valid batch */
	m.n = 0;
	put(&m, golden_names, sizeof(golden_names));
	m.b[0x7d] = 0x03;
	ret = xpu_wire_decode(m.b, m.n, NULL, &batch, out, MAX_EVENTS, &small, &werr);
	tap_ok(ret == -EBADMSG, "a bad index with no text is still -EBADMSG");
	small = pool;
	small.stack_len = 3;
	ret = xpu_wire_decode(golden_names, sizeof(golden_names), NULL, &batch, out, MAX_EVENTS,
			      &small, &werr);
	tap_ok(ret == -ENOSPC && !strcmp(werr.reason, "stack pool too small") && out[0].frames &&
		       !out[1].stack && !out[1].frames,
	       "the second stack does not fit: its names neither, the first's are there");
}

/* Many names: tables that grow mid-batch, indices of every width, batches that share nothing. */
static void test_names_many(void)
{
	enum { EVENTS = 300, PER = XPU_WIRE_STACK_MAX };
	static char text[EVENTS * PER][12];
	static const char *names[EVENTS * PER], *rev[PER];
	static __u64 stack[PER];
	static struct xpu_cevent evs[EVENTS + 1], got[EVENTS + 1]; /* sent, received */
	struct xpu_wire_enc *enc = xpu_wire_enc__new(1);
	struct xpu_wire_pool big;
	struct xpu_cevent ev;
	const void *data;
	size_t len, before;
	__u32 i, j, bad = 0;
	int ret;

	for (i = 0; i < EVENTS * PER; i++) {
		snprintf(text[i], sizeof(text[i]), "f%u", i);
		names[i] = text[i];
	}
	for (j = 0; j < PER; j++) {
		stack[j] = j;
		rev[j] = names[EVENTS * PER - 1 - j]; /* last event's names, again, reversed */
	}
	for (i = 0; i < EVENTS; i++) {
		memset(&evs[i], 0, sizeof(evs[i]));
		evs[i].kind = XPU_REC_CPU_SAMPLE;
		evs[i].id = i;
		evs[i].stack = stack;
		evs[i].frames = names + i * PER;
		evs[i].n_user = PER;
	}
	evs[EVENTS] = evs[EVENTS - 1];
	evs[EVENTS].frames = rev;
	ret = encode_events(enc, evs, EVENTS + 1, &data, &len);
	tap_eq_u64(ret, 0, "%u events, %u distinct names", EVENTS + 1, EVENTS * PER);
	ret = xpu_wire_pool__init(&big, (EVENTS + 1) * PER, XPU_WIRE_TEXT_MAX(len));
	if (ret)
		tap_bail("no memory for the pool");
	ret = xpu_wire_decode(data, len, NULL, &batch, got, EVENTS + 1, &big, &werr);
	tap_ok(ret == 0 && batch.n_events == EVENTS + 1, "and they decode");
	for (i = 0; !ret && i <= EVENTS; i++)
		bad += cevent__diff(&got[i], &evs[i]) != 0;
	tap_eq_u64(bad, 0, "every name back, indices up to %u (uint32 past 65535)",
		   EVENTS * PER - 1);
	tap_ok(!ret && got[EVENTS].frames[0] == got[EVENTS - 1].frames[PER - 1],
	       "names met again late in the batch are not written again");

	/* the next batch is self-contained: only its own names */
	tap_eq_u64(encode_events(enc, evs + 5, 1, &data, &len), 0, "a batch of one event");
	ret = xpu_wire_decode(data, len, NULL, &batch, got, 1, &big, &werr);
	tap_ok(ret == 0 && cevent__diff(&got[0], &evs[5]) == 0 && len < 200 + PER * 12 + PER * 6,
	       "carries its own %u names and no other (%zu bytes)", PER, len);

	/* a name too long refuses the event and leaves the batch as it was */
	xpu_wire_enc__begin(enc, 7);
	xpu_wire_enc__add(enc, &evs[0]);
	before = xpu_wire_enc__size(enc);
	ev = evs[1];
	{
		static const char *too_long[PER];
		static char long_text[XPU_WIRE_FRAME_NAME_MAX + 2];

		memset(long_text, 'x', XPU_WIRE_FRAME_NAME_MAX + 1);
		memcpy(too_long, evs[1].frames, sizeof(too_long));
		too_long[PER - 1] = long_text;
		ev.frames = too_long;
		tap_eq_u64(xpu_wire_enc__add(&*enc, &ev), (__u64)(__s64)-EINVAL,
			   "a name of %d bytes: -EINVAL", XPU_WIRE_FRAME_NAME_MAX + 1);
		tap_ok(xpu_wire_enc__size(enc) == before && xpu_wire_enc__count(enc) == 1,
		       "and the batch (symbol table included) is unchanged");
		long_text[XPU_WIRE_FRAME_NAME_MAX] = 0;
		tap_eq_u64(xpu_wire_enc__add(enc, &ev), 0, "a name of %d bytes is fine",
			   XPU_WIRE_FRAME_NAME_MAX);
	}
	xpu_wire_enc__finish(enc, &data, &len);
	ret = xpu_wire_decode(data, len, NULL, &batch, got, 2, &big, &werr);
	tap_ok(ret == 0 && cevent__diff(&got[0], &evs[0]) == 0 && cevent__diff(&got[1], &ev) == 0,
	       "the batch decodes with the names of both events");
	xpu_wire_pool__fini(&big);
	xpu_wire_pool__fini(&big);
	tap_ok(!big.stack && !big.frames && !big.text, "pool fini twice is harmless");
	xpu_wire_enc__free(enc);
}

/*
 * The batch with counters of docs/wire.md, byte by byte from the spec: a GPU kernel with the
 * instructions and cycles its process counted while it ran, one of them extrapolated, and the
 * IPC of the two. An event without counters is encoded as before they existed (test_golden).
 */
static const __u8 golden_counters[] = {
	0x84, /* map of 4 */
	0xa1, 'v',  0x01, /* "v": 1 */
	0xa8, 'p',  'r',  'o',	'd',  'u',  'c',  'e',	'r',  0x03, /* "producer": 3 */
	0xa3, 's',  'e',  'q',	0x07, /* "seq": 7 */
	0xa6, 'e',  'v',  'e',	'n',  't',  's', /* "events": */
	0xdd, 0x00, 0x00, 0x00, 0x01, /* array32 of 1 */
	0x88, /* event: map of 8 */
	0xa1, 'k',  0x05, /* "k": 5 (GPU_KERNEL) */
	0xa2, 'i',  'd',  0x09, /* "id": 9 */
	0xa2, 't',  's',  0xcd, 0x03, 0xe8, /* "ts": 1000 */
	0xa3, 'p',  'i',  'd',	0x2a, /* "pid": 42 */
	0xa3, 'e',  'n',  'd',	0xcd, 0x0b, 0xb8, /* "end": 3000 */
	0xa8, 'c',  'o',  'u',	'n',  't',  'e',  'r',	's',  0x92, /* "counters": array of 2 */
	0x92, 0xac, 'i',  'n',	's',  't',  'r',  'u',	'c',  't',  'i',  'o',	'n',  's', /* */
	0xcb, 0x40, 0x97, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, /* ["instructions", 1500.0] */
	0x92, 0xa6, 'c',  'y',	'c',  'l',  'e',  's', /* */
	0xcb, 0x40, 0x9f, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, /* ["cycles", 2000.0] */
	0xa6, 'c',  'f',  'l',	'a',  'g',  's',  0x01, /* "cflags": 1 (estimated) */
	0xa3, 'i',  'p',  'c',	0xcb, 0x3f, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 0.75 */
};

static void golden_counters_event(struct xpu_cevent *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = XPU_REC_GPU_KERNEL;
	ev->id = 9;
	ev->ts_ns = 1000;
	ev->pid = 42;
	ev->end_ns = 3000;
	ev->n_counters = 2;
	ev->counters[0] = (struct xpu_wire_counter){ .name = "instructions",
						     .name_len = 12,
						     .delta = 1500.0 };
	ev->counters[1] =
		(struct xpu_wire_counter){ .name = "cycles", .name_len = 6, .delta = 2000.0 };
	ev->counter_flags = XPU_COUNTERS_F_ESTIMATED;
	ev->ipc = 0.75;
}

static void test_golden_counters(void)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(3);
	struct xpu_cevent ev;
	const void *data = NULL;
	size_t len = 0;

	golden_counters_event(&ev);
	xpu_wire_enc__begin(enc, 7);
	tap_eq_u64(xpu_wire_enc__add(enc, &ev), 0, "add a kernel with counters");
	xpu_wire_enc__finish(enc, &data, &len);
	tap_ok(len == sizeof(golden_counters) && !memcmp(data, golden_counters, len),
	       "golden bytes with counters (%zu bytes)", len);
	tap_ok(decode(golden_counters, sizeof(golden_counters)) == 0 && batch.n_events == 1,
	       "golden counters decode");
	tap_eq_u64(cevent__diff(&out[0], &ev), 0, "golden counters equal field by field");
	tap_ok(out[0].counters[0].name == (const char *)golden_counters + 69 &&
		       out[0].counters[1].name == (const char *)golden_counters + 92,
	       "decoded counter names point into the message");

	/* liberal: float32 deltas, str8 names, a uint64 cflags, keys in another order */
	start(1, 1);
	put_event(&m, XPU_REC_RANGE, 1, 3);
	put_fixstr(&m, "ipc");
	put_be(&m, 0xca, 0x3f400000, 4); /* 0.75f */
	put_fixstr(&m, "cflags");
	put_be(&m, 0xcf, 1, 8);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put8(&m, 0x92);
	put_str8(&m, "task-clock");
	put_be(&m, 0xca, 0x44bb8000, 4); /* 1500.0f */
	tap_ok(decode(m.b, m.n) == 0 && out[0].n_counters == 1 &&
		       out[0].counters[0].delta == 1500.0 && out[0].counters[0].name_len == 10 &&
		       !memcmp(out[0].counters[0].name, "task-clock", 10) && out[0].ipc == 0.75 &&
		       out[0].counter_flags == 1,
	       "counters with float32 deltas, a str8 name, wide cflags, in any key order");
	xpu_wire_enc__free(enc);
}

/* One counter pair of an event: [name, delta] with name as fixstr and delta as float64. */
static void put_counter(struct mp *w, const char *name, double delta)
{
	put8(w, 0x92);
	put_fixstr(w, name);
	put_float64(w, delta);
}

static void test_counters_rejects(void)
{
	struct xpu_wire_limits lim = xpu_wire_default_limits;
	char long_counter[XPU_WIRE_COUNTER_NAME_MAX + 2];
	unsigned int i;
	int ret;

	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x90);
	expect_bad_m("empty counters array", "0 counters");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x95);
	for (i = 0; i < 5; i++)
		put_counter(&m, "c", 1.0);
	expect_bad_m("too many counters", "5 counters");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x81);
	put8(&m, 1);
	put8(&m, 2);
	expect_bad_m("counters is not an array", "counters as a map");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put8(&m, 0x93);
	put_fixstr(&m, "c");
	put_float64(&m, 1.0);
	put8(&m, 1);
	expect_bad_m("counter is not a [name, delta] pair", "a counter of 3 elements");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put8(&m, 0x92);
	put8(&m, 7);
	put_float64(&m, 1.0);
	expect_bad_m("counter name is not a string", "a counter named by an integer");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put_counter(&m, "", 1.0);
	expect_bad_m("empty counter name", "a counter without a name");
	memset(long_counter, 'x', sizeof(long_counter));
	long_counter[XPU_WIRE_COUNTER_NAME_MAX + 1] = 0;
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put8(&m, 0x92);
	put_be(&m, 0xda, XPU_WIRE_COUNTER_NAME_MAX + 1, 2);
	put(&m, long_counter, XPU_WIRE_COUNTER_NAME_MAX + 1);
	put_float64(&m, 1.0);
	expect_bad_m("counter name longer than XPU_WIRE_COUNTER_NAME_MAX",
		     "a counter name of 257 bytes");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put8(&m, 0x92);
	put_fixstr(&m, "c");
	put8(&m, 5);
	expect_bad_m("expected a float", "a counter delta as an integer");
	for (i = 0; i < 3; i++) {
		static const double bad[3] = { -1.0, NAN, INFINITY };

		start(1, 1);
		put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
		put_str8(&m, "counters");
		put8(&m, 0x91);
		put_counter(&m, "c", bad[i]);
		expect_bad_m("counter delta negative or not finite", i == 0 ? "a delta of -1" :
								     i == 1 ? "a delta of NaN" :
									      "an infinite delta");
	}
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "ipc");
	put_float64(&m, -0.5);
	expect_bad_m("ipc negative or not finite", "ipc -0.5");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "ipc");
	put_float64(&m, NAN);
	expect_bad_m("ipc negative or not finite", "ipc NaN");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 1);
	put_fixstr(&m, "cflags");
	put_be(&m, 0xcf, 1ull << 32, 8);
	expect_bad_m("integer out of range", "cflags 2^32");
	start(1, 1);
	put_event(&m, XPU_REC_GPU_KERNEL, 1, 2);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put_counter(&m, "c", 1.0);
	put_str8(&m, "counters");
	put8(&m, 0x91);
	put_counter(&m, "c", 1.0);
	expect_bad_m("duplicate key", "counters twice");

	/* a counter's pair is as deep as a link's: depth 5, the default limit */
	lim.max_depth = 4;
	memcpy(m.b, golden_counters, sizeof(golden_counters));
	m.n = sizeof(golden_counters);
	ret = xpu_wire_decode(m.b, m.n, &lim, &batch, out, MAX_EVENTS, &pool, &werr);
	tap_ok(ret == -EBADMSG && !strcmp(werr.reason, "depth limit"),
	       "counters need depth 5: rejected at max_depth 4");
	/* every prefix of the counters batch is malformed */
	for (i = 0, ret = 0; i < sizeof(golden_counters); i++)
		if (decode(golden_counters, i) != -EBADMSG)
			ret++;
	tap_eq_u64(ret, 0, "every prefix of the counters batch is rejected");
}

static void test_encoder_rejects(void)
{
	struct xpu_wire_enc *enc = xpu_wire_enc__new(1);
	static __u64 stack[XPU_WIRE_STACK_MAX + 1];
	struct xpu_cevent ev;
	const void *data;
	size_t len, before;

	memset(&ev, 0, sizeof(ev));
	ev.kind = XPU_REC_CPU_SAMPLE;
	tap_eq_u64(xpu_wire_enc__add(enc, &ev), (__u64)(__s64)-EINVAL, "add before begin: -EINVAL");
	tap_eq_u64(xpu_wire_enc__finish(enc, &data, &len), (__u64)(__s64)-EINVAL,
		   "finish before begin: -EINVAL");
	xpu_wire_enc__begin(enc, 1);
	before = xpu_wire_enc__size(enc);

#define REJECT(what, ...)                                                                      \
	do {                                                                                   \
		memset(&ev, 0, sizeof(ev));                                                    \
		ev.kind = XPU_REC_GPU_KERNEL;                                                  \
		__VA_ARGS__;                                                                   \
		tap_ok(xpu_wire_enc__add(enc, &ev) == -EINVAL &&                               \
			       xpu_wire_enc__size(enc) == before && !xpu_wire_enc__count(enc), \
		       "encoder rejects %s, writes nothing", what);                            \
	} while (0)
	REJECT("kind 0", ev.kind = 0);
	REJECT("kind PAD", ev.kind = XPU_REC_PAD);
	REJECT("kind XPU_REC_TYPE_MAX", ev.kind = XPU_REC_TYPE_MAX);
	REJECT("kind MODULE (not an event)", ev.kind = XPU_REC_MODULE);
	REJECT("5 links", ev.n_links = 5; ev.links[0].type = 1);
	REJECT("link type 0", ev.n_links = 1);
	REJECT("link type XPU_LINK_TYPE_MAX", ev.n_links = 1; ev.links[0].type = XPU_LINK_TYPE_MAX);
	REJECT("a stack of 255 frames", ev.stack = stack; ev.n_kernel = 128; ev.n_user = 127);
	REJECT("frames without a stack pointer", ev.n_user = 1);
	REJECT("a name of 16385 bytes", ev.name = long_name; ev.name_len = XPU_STRING_MAX + 1);
	REJECT("a name length without a name", ev.name_len = 1);
	REJECT("conf 1.5", ev.confidence = 1.5f);
	REJECT("conf -0.1", ev.confidence = -0.1f);
	REJECT("conf NaN", ev.confidence = NAN);
	REJECT("ct XPU_CORR_TYPE_MAX", ev.corr_type = XPU_CORR_TYPE_MAX);
	REJECT("5 counters", ev.n_counters = 5;
	       for (int c = 0; c < 4; c++)
		       ev.counters[c] = (struct xpu_wire_counter){ .name = "c", .name_len = 1 });
	REJECT("a counter without a name pointer", ev.n_counters = 1; ev.counters[0].name_len = 1);
	REJECT("a counter with an empty name", ev.n_counters = 1; ev.counters[0].name = "c");
	REJECT("a counter name of 257 bytes", ev.n_counters = 1; ev.counters[0].name = long_name;
	       ev.counters[0].name_len = XPU_WIRE_COUNTER_NAME_MAX + 1);
	REJECT("a counter delta of -1", ev.n_counters = 1; ev.counters[0].name = "c";
	       ev.counters[0].name_len = 1; ev.counters[0].delta = -1);
	REJECT("a counter delta of NaN", ev.n_counters = 1; ev.counters[0].name = "c";
	       ev.counters[0].name_len = 1; ev.counters[0].delta = NAN);
	REJECT("an infinite counter delta", ev.n_counters = 1; ev.counters[0].name = "c";
	       ev.counters[0].name_len = 1; ev.counters[0].delta = INFINITY);
	REJECT("ipc -0.5", ev.ipc = -0.5);
	REJECT("ipc NaN", ev.ipc = NAN);
	REJECT("ipc infinite", ev.ipc = INFINITY);
#undef REJECT

	memset(&ev, 0, sizeof(ev));
	ev.kind = XPU_REC_CPU_SAMPLE;
	ev.stack = stack;
	ev.n_kernel = XPU_MAX_FRAMES;
	ev.n_user = XPU_MAX_FRAMES;
	ev.name = long_name;
	ev.name_len = XPU_STRING_MAX;
	tap_eq_u64(xpu_wire_enc__add(enc, &ev), 0, "a full stack and the longest name are fine");
	tap_ok(xpu_wire_enc__finish(enc, &data, &len) == 0 && decode(data, len) == 0 &&
		       batch.n_events == 1 && batch.producer == 1 && batch.seq == 1,
	       "and decode");
	xpu_wire_enc__free(enc);
}

/* docs/wire.md's receiver rules: seq counts events; gaps exact, rewinds counted apart. */
static void test_seq(void)
{
	struct xpu_wire_seq t = { 0 };
	struct xpu_wire_batch b = { .producer = 1, .seq = 500, .n_events = 10 };

	xpu_wire_seq__batch(&t, &b); /* the first batch sets the expectation */
	b.seq = 510;
	xpu_wire_seq__batch(&t, &b);
	tap_ok(t.missed == 0 && t.rewinds == 0, "seq: in order, nothing missed");
	b.seq = 527; /* 520..526 lost */
	xpu_wire_seq__batch(&t, &b);
	tap_eq_u64(t.missed, 7, "seq: a gap counts the events lost, not the batches");
	b.producer = 2;
	b.seq = 0;
	xpu_wire_seq__batch(&t, &b);
	tap_eq_u64(t.missed, 7, "seq: each producer has its own numbering");
	b.producer = 1;
	b.seq = 100;
	xpu_wire_seq__batch(&t, &b);
	tap_ok(t.rewinds == 1 && t.missed == 7 && t.next[1] == 110,
	       "seq: going back is a rewind, not a loss, and numbering goes on from there");
}

/* ---- the field table (common/wire_fields.h) says what docs/wire.md says ---- */

struct doc_field {
	const char *key;
	const char *type; /* what the "type" column of the key table starts with */
	unsigned int bits; /* UINT: the member's width */
	bool required;
	__u32 kinds;
};

#define DOC_TYPE_UINT "uint"
#define DOC_TYPE_ENUM "uint"
#define DOC_TYPE_FLOAT "float"
#define DOC_TYPE_LINKS "array"
#define DOC_TYPE_TRIPLE "array of 3 int32"
#define DOC_TYPE_NAME "str"
#define DOC_TYPE_NK "uint"
#define DOC_TYPE_STACK "array of uint64"
#define DOC_TYPE_FRAMES "array of uint or nil"
#define DOC_TYPE_COUNTERS "array"
#define DOC_BITS_UINT(m) (8 * (unsigned int)sizeof(((struct xpu_cevent *)0)->m))
#define DOC_BITS_ENUM(m) 0
#define DOC_BITS_FLOAT(m) 0
#define DOC_BITS_LINKS(m) 0
#define DOC_BITS_TRIPLE(m) 0
#define DOC_BITS_NAME(m) 0
#define DOC_BITS_NK(m) 0
#define DOC_BITS_STACK(m) 0
#define DOC_BITS_FRAMES(m) 0
#define DOC_BITS_COUNTERS(m) 0
#define DOC_REQ_REQ true
#define DOC_REQ_OPT false
#define DOC_FIELD(key, type, member, presence, check, kinds) \
	{ key, DOC_TYPE_##type, DOC_BITS_##type(member), DOC_REQ_##presence, kinds },

static const struct doc_field doc_fields[] = { XPU_WIRE_EVENT_FIELDS(DOC_FIELD) };
#define N_DOC_FIELDS (sizeof(doc_fields) / sizeof(doc_fields[0]))

/* Where the n-th (from 0) cell of a table row "| a | b | ... |" starts, or NULL. */
static const char *row_at(const char *row, unsigned int n)
{
	const char *p = row;

	for (unsigned int i = 0; p && i <= n; i++) {
		p = strchr(p, '|');
		if (p)
			p++;
	}
	return p;
}

/* The n-th (from 0) cell of a table row, trimmed, into cell; false if none. */
static bool row_cell(const char *row, unsigned int n, char *cell, size_t size)
{
	const char *p = row_at(row, n), *end;
	size_t len;

	if (!p)
		return false;
	end = strchr(p, '|');
	if (!end)
		end = p + strlen(p);
	while (p < end && *p == ' ')
		p++;
	while (end > p && end[-1] == ' ')
		end--;
	len = (size_t)(end - p) < size - 1 ? (size_t)(end - p) : size - 1;
	memcpy(cell, p, len);
	cell[len] = 0;
	return true;
}

/* Whether text holds `key` (backticked, exactly). */
static bool mentions(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p;

	for (p = strchr(text, '`'); p; p = strchr(p + 1, '`')) {
		if (!strncmp(p + 1, key, len) && p[1 + len] == '`')
			return true;
	}
	return false;
}

/*
 * docs/wire.md's event key table lists the table's keys in the table's order (the order the
 * encoder writes them), with the type and the required flag the table gives; its "Which
 * fields each kind uses" table names each field that not every kind carries in exactly the
 * rows of the kinds the table's kinds column says (frames, parallel to the stack, follows
 * stack's rows).
 */
static void test_field_table_docs(const char *path)
{
	char *text = path ? tap_slurp(path) : NULL;
	char line[8192], cell[4096];
	__u32 doc_kinds[N_DOC_FIELDS] = { 0 };
	unsigned int n_keys = 0, i;
	bool in_event = false, in_kinds = false, order_ok = true, type_ok = true;
	unsigned int kind_rows = 0;
	const char *p;

	if (!tap_ok(text != NULL, "docs/wire.md read (%s)", path ? path : "no path given"))
		return;
	for (p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		len = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = 0;
		p = nl ? nl + 1 : p + strlen(p);
		if (!strncmp(line, "#", 1)) {
			in_event = !strcmp(line, "## Event");
			in_kinds = !strcmp(line, "### Which fields each kind uses");
			continue;
		}
		if (in_event && !strncmp(line, "| `\"", 4)) {
			const struct doc_field *f = &doc_fields[n_keys < N_DOC_FIELDS ? n_keys : 0];
			char want[64];

			row_cell(line, 0, cell, sizeof(cell));
			snprintf(want, sizeof(want), "`\"%s\"`", f->key);
			if (n_keys >= N_DOC_FIELDS || strcmp(cell, want)) {
				tap_diag("docs key #%u is %s, the table's is %s", n_keys, cell,
					 n_keys < N_DOC_FIELDS ? want : "(none)");
				order_ok = false;
			}
			row_cell(line, 1, cell, sizeof(cell));
			if (f->bits)
				snprintf(want, sizeof(want), "%s%u", f->type, f->bits);
			else
				snprintf(want, sizeof(want), "%s", f->type);
			if (strncmp(cell, want, strlen(want)) ||
			    (strstr(cell, "**required**") != NULL) != f->required) {
				tap_diag("docs type of %s is \"%s\", the table's \"%s\"%s", f->key,
					 cell, want, f->required ? ", required" : "");
				type_ok = false;
			}
			n_keys++;
			continue;
		}
		if (in_kinds && line[0] == '|' && line[1] == ' ' && line[2] >= '0' &&
		    line[2] <= '9') {
			unsigned int k = (unsigned int)atoi(line + 2);
			/* the fields column is the rest of the row: it may hold '|' itself */
			const char *fields = row_at(line, 3);

			if (k >= 32 || !fields)
				continue;
			for (i = 0; i < N_DOC_FIELDS; i++) {
				const char *key = doc_fields[i].key;

				if (!strcmp(key, "frames"))
					key = "stack";
				if (mentions(fields, key))
					doc_kinds[i] |= 1u << k;
			}
			kind_rows++;
		}
	}
	tap_ok(order_ok && n_keys == N_DOC_FIELDS,
	       "docs/wire.md lists the table's %zu keys in its order (%u listed)", N_DOC_FIELDS,
	       n_keys);
	tap_ok(type_ok, "docs/wire.md gives each key the table's type, width and required flag");
	tap_ok(kind_rows == XPU_REC_EVENT_END - XPU_REC_CPU_SAMPLE,
	       "docs/wire.md has a row for each of the %d kinds (%u)",
	       XPU_REC_EVENT_END - XPU_REC_CPU_SAMPLE, kind_rows);
	for (i = 0; i < N_DOC_FIELDS; i++) {
		if (doc_fields[i].kinds == WIRE_K_ALL)
			continue;
		if (!tap_ok(doc_kinds[i] == doc_fields[i].kinds,
			    "field %s: the kinds docs/wire.md names it for are the table's",
			    doc_fields[i].key))
			tap_diag("docs 0x%x, table 0x%x", doc_kinds[i], doc_fields[i].kinds);
	}
	free(text);
}

/* ---- the origin keys (docs/wire.md, "Origin") ---- */

/* The golden batch with the origin a publish sink adds, byte by byte from the spec. */
static const __u8 golden_origin_tail[] = {
	0xa4, 'h',  'o',  's',	't',  0xa5, 'a',  'l',	'p',  'h', 'a', /* "host": "alpha" */
	0xa7, 's',  'e',  's',	's',  'i',  'o',  'n',	0x05, /* "session": 5 */
	0xa5, 'c',  'l',  'o',	'c',  'k',  0x92, /* "clock": [ */
	0xcd, 0x03, 0xe8, /* 1000 (monotonic), */
	0xcf, 0x17, 0x97, 0x9c, 0xfe, 0x36, 0x2a, 0x00, 0x00, /* 1700000000000000000] */
};

/* A batch of the four required keys (no events) and `extra` unknown keys "a", "b", ... */
static void put_wide_batch(unsigned int extra)
{
	unsigned int i;
	char key[2] = "a";

	m.n = 0;
	put8(&m, (__u8)(0x80 | (4 + extra)));
	put_fixstr(&m, "v");
	put_uint(&m, 1);
	put_fixstr(&m, "producer");
	put_uint(&m, 2);
	put_fixstr(&m, "seq");
	put_uint(&m, 9);
	put_fixstr(&m, "events");
	put8(&m, 0x90);
	for (i = 0; i < extra; i++) {
		key[0] = (char)('a' + i);
		put_fixstr(&m, key);
		put8(&m, 0xc0);
	}
}

/* The golden batch's four entries under a header that says n, then tail: an origin by hand. */
static void put_golden_with(__u8 header, const void *tail, size_t tail_len)
{
	m.n = 0;
	put8(&m, header);
	put(&m, golden + 1, sizeof(golden) - 1);
	put(&m, tail, tail_len);
}

static void test_origin(void)
{
	const struct xpu_wire_origin o = { .host = "alpha",
					   .host_len = 5,
					   .session = 5,
					   .clock_mono_ns = 1000,
					   .clock_real_ns = 1700000000000000000ull };
	static __u8 buf[4096];
	struct xpu_cevent ev[2];
	size_t len = 0, i;
	int ret;

	golden_events(ev);
	ret = xpu_wire_origin__add(golden, sizeof(golden), &o, buf, sizeof(buf), &len);
	put_golden_with(0x87, golden_origin_tail, sizeof(golden_origin_tail));
	tap_ok(!ret && len == m.n && !memcmp(buf, m.b, len),
	       "origin: added to the golden batch, bytes as the spec says (%zu bytes)", len);
	tap_ok(len <= sizeof(golden) + xpu_wire_origin__bound(&o), "origin: within the bound");
	ret = decode(buf, len);
	tap_ok(!ret && batch.producer == 3 && batch.seq == 7 && batch.n_events == 2 &&
		       batch.origin.host_len == 5 && !memcmp(batch.origin.host, "alpha", 5) &&
		       batch.origin.session == 5 && batch.origin.clock_mono_ns == 1000 &&
		       batch.origin.clock_real_ns == 1700000000000000000ull,
	       "origin: decodes with host, session and clock");
	tap_ok(!ret && !cevent__diff(&out[0], &ev[0]) && !cevent__diff(&out[1], &ev[1]),
	       "origin: the events are the golden ones");
	ret = decode(golden, sizeof(golden));
	tap_ok(!ret && !batch.origin.host && !batch.origin.host_len && !batch.origin.session &&
		       !batch.origin.clock_mono_ns && !batch.origin.clock_real_ns,
	       "origin: a batch without it decodes with a zero origin");

	/* only a host: one key more */
	ret = xpu_wire_origin__add(golden, sizeof(golden),
				   &(struct xpu_wire_origin){ .host = "b", .host_len = 1 }, buf,
				   sizeof(buf), &len);
	tap_ok(!ret && buf[0] == 0x85 && len == sizeof(golden) + 7 && !decode(buf, len) &&
		       batch.origin.host_len == 1 && !batch.origin.session,
	       "origin: only a host adds one key");

	/* 15 entries (a full fixmap) + 3 = 18: the header becomes a map16 */
	put_wide_batch(11);
	ret = xpu_wire_origin__add(m.b, m.n, &o, buf, sizeof(buf), &len);
	tap_ok(!ret && buf[0] == 0xde && buf[1] == 0 && buf[2] == 18 &&
		       len == m.n + 2 + sizeof(golden_origin_tail) &&
		       !memcmp(buf + 3, m.b + 1, m.n - 1),
	       "origin: a fixmap of 15 grows into a map16 of 18");
	ret = decode(buf, len);
	tap_ok(!ret && batch.origin.session == 5 && batch.seq == 9, "origin: and decodes");
	/* a map16 header stays one */
	memcpy(m.b + 3, buf + 3, len - 3);
	ret = xpu_wire_origin__add(buf, len, &(struct xpu_wire_origin){ .session = 6 }, m.b,
				   sizeof(m.b), &i);
	tap_ok(!ret && m.b[0] == 0xde && m.b[2] == 19 && i == len + 9,
	       "origin: a map16 header is counted up in place");
	tap_eq_u64(decode(m.b, i), (__u64)-EBADMSG, "origin: twice is a duplicate key");

	/* what add refuses */
	tap_eq_u64(xpu_wire_origin__add("\x91\x01", 2, &o, buf, sizeof(buf), &len), (__u64)-EINVAL,
		   "origin: refuses a message that is not a map");
	tap_eq_u64(xpu_wire_origin__add(golden, sizeof(golden), &o, buf, sizeof(golden) + 10, &len),
		   (__u64)-ENOSPC, "origin: refuses too little room");
	tap_eq_u64(xpu_wire_origin__add(golden, sizeof(golden),
					&(struct xpu_wire_origin){ .host = "a b", .host_len = 3 },
					buf, sizeof(buf), &len),
		   (__u64)-EINVAL, "origin: refuses a host with a space");
	tap_ok(!xpu_wire_origin__valid_host("", 0) && !xpu_wire_origin__valid_host("x\n", 2) &&
		       !xpu_wire_origin__valid_host("x\x80", 2) &&
		       xpu_wire_origin__valid_host("node-17.cluster_a", 17),
	       "origin: valid hosts are printable ASCII without spaces, not empty");
	memset(buf, 'h', XPU_WIRE_HOST_MAX + 1);
	tap_ok(xpu_wire_origin__valid_host((char *)buf, XPU_WIRE_HOST_MAX) &&
		       !xpu_wire_origin__valid_host((char *)buf, XPU_WIRE_HOST_MAX + 1),
	       "origin: a host of %d bytes at most", XPU_WIRE_HOST_MAX);

	/* what decode refuses */
	put_golden_with(0x85, "\xa4host\x05", 6);
	expect_bad_m("host is not a string", "a host that is an integer");
	put_golden_with(0x85, "\xa4host\xa0", 6);
	expect_bad_m("host empty, longer than XPU_WIRE_HOST_MAX or not printable", "an empty host");
	put_golden_with(0x85,
			"\xa4host\xa3"
			"a b",
			9);
	expect_bad_m("host empty, longer than XPU_WIRE_HOST_MAX or not printable",
		     "a host with a space");
	put_golden_with(0x85,
			"\xa5"
			"clock\x93\x01\x02\x03",
			10);
	expect_bad_m("clock is not a [monotonic, realtime] pair", "a clock of three");
	put_golden_with(0x85,
			"\xa5"
			"clock\x01",
			7);
	expect_bad_m("clock is not a [monotonic, realtime] pair", "a clock that is not an array");
	put_golden_with(0x85,
			"\xa5"
			"clock\x92\x01\xff",
			9);
	expect_bad_m("negative integer for an unsigned field", "a negative clock reading");
	put_golden_with(0x85, "\xa7session\xa1x", 10);
	expect_bad_m("expected an integer", "a session that is a string");
}

int main(int argc, char **argv)
{
	test_field_table_docs(argc > 1 ? argv[1] : NULL);
	test_seq();
	test_names();
	test_golden();
	test_origin();
	test_truncation();
	test_round_trip();
	test_liberal_reader();
	test_hostile();
	test_shape();
	test_event_rejects();
	test_nospc();
	test_encoder_rejects();
	test_golden_names();
	test_golden_counters();
	test_counters_rejects();
	test_names_liberal();
	test_names_rejects();
	test_names_nospc();
	test_names_many();
	return tap_done();
}
