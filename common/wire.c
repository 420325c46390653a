// SPDX-License-Identifier: MIT
/*
 * The wire format of common/wire.h: batches of correlated events as MessagePack.
 *
 * docs/wire.md is the specification; this file and that page must say the same thing. The
 * encoder is msgpack-c's packer writing into an sbuffer that is reused across batches. The
 * decoder is our own pull reader: msgpack-c's unpacker sizes its allocations from the
 * lengths a message declares, which lets a 20-byte message ask for gigabytes. Here every
 * declared length or count is checked against the bytes that are left (every element takes
 * at least one byte) and against the caller's limits before it is used, nothing is
 * allocated, and unknown values are skipped with a bounded explicit stack, not recursion.
 */
#include "common/wire.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack/pack.h>
#include <msgpack/sbuffer.h>

#include "common/mix.h"

/* The batch nests one level deeper per container: the batch map, the events array, an event
 * map, then an event's arrays (links, stack, grid, block, counters) and finally a link's or a
 * counter's pair. */
enum {
	DEPTH_BATCH = 1,
	DEPTH_EVENTS = 2,
	DEPTH_EVENT = 3,
	DEPTH_FIELD = 4,
	DEPTH_LINK = 5,
};

const struct xpu_wire_limits xpu_wire_default_limits = {
	.max_message = 64u << 20,
	.max_events = 1u << 20,
	.max_depth = 5,
};

void xpu_wire_seq__batch(struct xpu_wire_seq *t, const struct xpu_wire_batch *b)
{
	__u32 p = b->producer & 255;

	if (t->seen[p] && b->seq > t->next[p])
		t->missed += b->seq - t->next[p];
	else if (t->seen[p] && b->seq < t->next[p])
		t->rewinds++;
	t->seen[p] = true;
	t->next[p] = b->seq + b->n_events;
}

const char *xpu_link_type__name(__u32 type)
{
	static const char *const names[XPU_LINK_TYPE_MAX] = {
		[XPU_LINK_LAUNCHED_BY] = "launched_by",
		[XPU_LINK_INSIDE_RANGE] = "inside_range",
		[XPU_LINK_COMPLETES] = "completes",
		[XPU_LINK_SAME_STREAM_PREV] = "same_stream_prev",
		[XPU_LINK_SAMPLED_IN] = "sampled_in",
	};

	if (type < XPU_LINK_TYPE_MAX && names[type])
		return names[type];
	return "unknown";
}

const char *xpu_corr_type__name(__u32 type)
{
	static const char *const names[XPU_CORR_TYPE_MAX] = {
		[XPU_CORR_NONE] = "none",
		[XPU_CORR_EXACT_ID] = "exact_id",
		[XPU_CORR_TIMESTAMP] = "timestamp",
		[XPU_CORR_NESTING] = "nesting",
		[XPU_CORR_APPROXIMATE] = "approximate",
	};

	if (type < XPU_CORR_TYPE_MAX && names[type])
		return names[type];
	return "unknown";
}

/* ---- encoder ---- */

/*
 * Frame names (docs/wire.md, "Frame names"): each distinct name of a batch goes once into the
 * batch's symbol table, and an event's "frames" array holds indices into it. add() finds a
 * name's index by its pointer (by_ptr), and for a pointer it has not seen in this batch, by
 * its bytes (by_text), so that two copies of a name still make one entry. Only a pointer seen
 * for the first time in the batch costs a strlen, a hash of the bytes and a copy; a repeat
 * costs one probe. Both tables hold entries of every batch; an entry is of this batch when
 * its gen is the encoder's, so begin() empties them by counting, not by clearing.
 */
struct sym {
	__u32 at; /* where its bytes are in enc->names */
	__u32 len;
};

struct sym_by_ptr {
	const char *p;
	__u32 idx;
	__u32 gen;
};

struct sym_by_text {
	__u64 hash;
	__u32 idx;
	__u32 gen;
};

#define SYMS_MAX (1u << 30) /* indices stay below IDX_MISS */
#define IDX_NONE UINT32_MAX /* a frame without a name: nil */
#define IDX_MISS (1u << 31) /* add()'s first pass: not seen yet, the low bits are its length */

struct xpu_wire_enc {
	msgpack_sbuffer sbuf; /* kept across batches: after warm-up, add() never allocates */
	size_t count_at; /* offset of the events array32's 4-byte count */
	size_t names_at; /* where finish() appended the symbol table; 0: not appended */
	__u32 producer;
	__u32 count;
	bool open; /* begin() succeeded; add() and finish() are allowed */
	/* the batch's frame names: their str values, packed as finish() writes them */
	msgpack_sbuffer names;
	struct sym *syms;
	__u32 n_syms, syms_cap;
	struct sym_by_ptr *by_ptr; /* ptr_mask + 1 slots, at most half of them in use */
	struct sym_by_text *by_text; /* text_mask + 1 slots */
	__u32 ptr_mask, text_mask, n_ptr;
	__u32 gen; /* the batch's: never 0, which is what calloc'd slots hold */
};

/*
 * Speed (we need millions of events per second per correlator): add() reserves room for the
 * whole event once (event_bound()) and then packs with write_reserved(), a callback that only
 * copies, with no capacity check and no realloc per value. The packer lives on add()'s stack
 * and add() is flattened, so msgpack-c's pack functions (static inline, but too big for GCC
 * to inline on its own) are inlined there, the callback becomes a direct call, and each
 * 1..9-byte write of a key or an integer becomes a store or two instead of a call to memcpy.
 * That took a GPU kernel event with a 20-frame stack from 380 ns to 80 ns. msgpack-c's own
 * msgpack_sbuffer_write, which checks and grows on every write, packs the batch header.
 */
#define PACKER(pk, enc, write) \
	msgpack_packer pk;     \
	msgpack_packer_init(&pk, &(enc)->sbuf, write)

/* Keys are string literals, so their fixstr header is a constant. */
#define PACK_KEY(pk, lit) msgpack_pack_str_with_body(pk, lit, sizeof(lit) - 1)

static inline int write_reserved(void *data, const char *buf, size_t len)
{
	msgpack_sbuffer *sb = data;

	memcpy(sb->data + sb->size, buf, len);
	sb->size += len;
	return 0;
}

/* Grow the sbuffer as msgpack_sbuffer_write() would (doubling), so that need bytes fit. */
static int sbuffer__reserve(msgpack_sbuffer *sb, size_t need)
{
	size_t cap = sb->alloc ? sb->alloc : MSGPACK_SBUFFER_INIT_SIZE;
	char *data;

	if (sb->alloc - sb->size >= need)
		return 0;
	while (cap - sb->size < need) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	data = realloc(sb->data, cap);
	if (!data)
		return -ENOMEM;
	sb->data = data;
	sb->alloc = cap;
	return 0;
}

struct xpu_wire_enc *xpu_wire_enc__new(__u32 producer)
{
	struct xpu_wire_enc *enc = calloc(1, sizeof(*enc));

	if (!enc)
		return NULL;
	msgpack_sbuffer_init(&enc->sbuf);
	msgpack_sbuffer_init(&enc->names);
	enc->producer = producer;
	enc->gen = 1;
	return enc;
}

void xpu_wire_enc__free(struct xpu_wire_enc *enc)
{
	if (!enc)
		return;
	msgpack_sbuffer_destroy(&enc->sbuf);
	msgpack_sbuffer_destroy(&enc->names);
	free(enc->syms);
	free(enc->by_ptr);
	free(enc->by_text);
	free(enc);
}

/* Eight bytes a step, then xpu_mix64 for the low bits the table uses: every name is new to
 * every batch, so this runs once per distinct name and batch. */
static __u64 text_hash(const char *s, __u32 len)
{
	__u64 h = len, w;
	__u32 i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 32;
	}
	if (i < len) {
		w = 0;
		memcpy(&w, s + i, len - i);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	}
	return xpu_mix64(h);
}

/* The slot of p: its entry in this batch, or the free slot where it belongs. One multiply
 * (Fibonacci hashing) spreads pointers well enough, and this is done for every named frame. */
static struct sym_by_ptr *by_ptr__find(const struct xpu_wire_enc *enc, const char *p)
{
	__u32 i = (__u32)(((__u64)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 32) & enc->ptr_mask;

	for (;; i = (i + 1) & enc->ptr_mask) {
		struct sym_by_ptr *s = &enc->by_ptr[i];

		if (s->gen != enc->gen || s->p == p)
			return s;
	}
}

static struct sym_by_text *by_text__find(const struct xpu_wire_enc *enc, __u64 hash, const char *p,
					 __u32 len)
{
	__u32 i = (__u32)hash & enc->text_mask;

	for (;; i = (i + 1) & enc->text_mask) {
		struct sym_by_text *t = &enc->by_text[i];
		const struct sym *sym;

		if (t->gen != enc->gen)
			return t;
		sym = &enc->syms[t->idx];
		if (t->hash == hash && sym->len == len &&
		    !memcmp(enc->names.data + sym->at, p, len))
			return t;
	}
}

/* Room for entries more pointers and names in this batch, so that adding them cannot fail;
 * the tables are rebuilt larger with this batch's entries only. */
static int syms__reserve(struct xpu_wire_enc *enc, __u32 more, size_t bytes)
{
	__u32 need = enc->n_syms + more, cap, i;

	if (need > SYMS_MAX || enc->n_ptr + more > SYMS_MAX)
		return -ENOMEM;
	if (sbuffer__reserve(&enc->names, bytes))
		return -ENOMEM;
	if (need > enc->syms_cap) {
		struct sym *syms;

		cap = enc->syms_cap ? enc->syms_cap : 64;
		while (cap < need)
			cap *= 2;
		syms = realloc(enc->syms, cap * sizeof(*syms));
		if (!syms)
			return -ENOMEM;
		enc->syms = syms;
		enc->syms_cap = cap;
	}
	if (!enc->by_ptr || 2 * (enc->n_ptr + more) > enc->ptr_mask + 1) {
		struct sym_by_ptr *old = enc->by_ptr, *grown;
		__u32 old_cap = old ? enc->ptr_mask + 1 : 0;

		for (cap = old_cap ? old_cap : 256; cap < 2 * (enc->n_ptr + more); cap *= 2)
			;
		grown = calloc(cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		enc->by_ptr = grown;
		enc->ptr_mask = cap - 1;
		for (i = 0; i < old_cap; i++)
			if (old[i].gen == enc->gen)
				*by_ptr__find(enc, old[i].p) = old[i];
		free(old);
	}
	if (!enc->by_text || 2 * need > enc->text_mask + 1) {
		struct sym_by_text *old = enc->by_text, *grown;
		__u32 old_cap = old ? enc->text_mask + 1 : 0;

		for (cap = old_cap ? old_cap : 256; cap < 2 * need; cap *= 2)
			;
		grown = calloc(cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		enc->by_text = grown;
		enc->text_mask = cap - 1;
		/* every entry is a distinct name: no comparison needed, only a free slot */
		for (i = 0; i < old_cap; i++) {
			__u32 j = (__u32)old[i].hash & enc->text_mask;

			if (old[i].gen != enc->gen)
				continue;
			while (grown[j].gen == enc->gen)
				j = (j + 1) & enc->text_mask;
			grown[j] = old[i];
		}
		free(old);
	}
	return 0;
}

/* The index of a name new to the pointer table; syms__reserve() made room. */
static __u32 sym__add(struct xpu_wire_enc *enc, const char *p, __u32 len)
{
	struct sym_by_ptr *s = by_ptr__find(enc, p);
	struct sym_by_text *t;
	msgpack_packer pk;
	__u64 hash;

	if (s->gen == enc->gen) /* the same pointer earlier in this event */
		return s->idx;
	hash = text_hash(p, len);
	t = by_text__find(enc, hash, p, len);
	if (t->gen != enc->gen) {
		msgpack_packer_init(&pk, &enc->names, write_reserved);
		msgpack_pack_str_with_body(&pk, p, len);
		enc->syms[enc->n_syms] =
			(struct sym){ .at = (__u32)(enc->names.size - len), .len = len };
		*t = (struct sym_by_text){ .hash = hash, .idx = enc->n_syms++, .gen = enc->gen };
	}
	*s = (struct sym_by_ptr){ .p = p, .idx = t->idx, .gen = enc->gen };
	enc->n_ptr++;
	return t->idx;
}

/*
 * idx[i]: the symbol index of frame i's name, or IDX_NONE. Returns how many frames have a
 * name, or -EINVAL (a name too long) / -ENOMEM with the batch unchanged: the first pass only
 * looks (and measures the names it has not seen), the second adds them, in room reserved
 * between the two.
 */
static int frames__index(struct xpu_wire_enc *enc, const struct xpu_cevent *ev, __u32 *idx)
{
	__u32 i, n = (__u32)ev->n_kernel + ev->n_user, named = 0, misses = 0;
	size_t bytes = 0, len;

	for (i = 0; i < n; i++) {
		const char *p = ev->frames[i];
		const struct sym_by_ptr *s;

		idx[i] = IDX_NONE;
		if (!p)
			continue;
		if (enc->by_ptr) {
			s = by_ptr__find(enc, p);
			if (s->gen == enc->gen) {
				idx[i] = s->idx;
				named++;
				continue;
			}
		}
		len = strnlen(p, XPU_WIRE_FRAME_NAME_MAX + 1);
		if (len > XPU_WIRE_FRAME_NAME_MAX)
			return -EINVAL;
		if (!len) /* "" is no name */
			continue;
		idx[i] = IDX_MISS | (__u32)len;
		bytes += len + 3; /* a str16 header at most */
		misses++;
		named++;
	}
	if (!misses)
		return (int)named;
	if (syms__reserve(enc, misses, bytes))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (idx[i] != IDX_NONE && idx[i] & IDX_MISS)
			idx[i] = sym__add(enc, ev->frames[i], idx[i] & ~IDX_MISS);
	return (int)named;
}

int xpu_wire_enc__begin(struct xpu_wire_enc *enc, __u64 seq)
{
	/* array32 with a zero count: finish() writes the real count over the zeros, so add()
	 * can append events without knowing how many will follow. */
	static const char events_header[5] = { (char)0xdd, 0, 0, 0, 0 };
	PACKER(pk, enc, msgpack_sbuffer_write);
	int bad = 0;

	msgpack_sbuffer_clear(&enc->sbuf);
	msgpack_sbuffer_clear(&enc->names);
	enc->count = 0;
	enc->open = false;
	enc->names_at = 0;
	enc->n_syms = 0;
	enc->n_ptr = 0;
	if (++enc->gen == 0) { /* four billion batches: the old entries' gen comes round */
		if (enc->by_ptr)
			memset(enc->by_ptr, 0, (enc->ptr_mask + 1) * sizeof(*enc->by_ptr));
		if (enc->by_text)
			memset(enc->by_text, 0, (enc->text_mask + 1) * sizeof(*enc->by_text));
		enc->gen = 1;
	}
	/* 4 entries; finish() makes it 5 when it appends the symbol table */
	bad |= msgpack_pack_map(&pk, 4);
	bad |= PACK_KEY(&pk, "v");
	bad |= msgpack_pack_uint32(&pk, XPU_WIRE_VERSION);
	bad |= PACK_KEY(&pk, "producer");
	bad |= msgpack_pack_uint32(&pk, enc->producer);
	bad |= PACK_KEY(&pk, "seq");
	bad |= msgpack_pack_uint64(&pk, seq);
	bad |= PACK_KEY(&pk, "events");
	bad |= msgpack_sbuffer_write(&enc->sbuf, events_header, sizeof(events_header));
	if (bad) {
		msgpack_sbuffer_clear(&enc->sbuf);
		return -ENOMEM;
	}
	enc->count_at = enc->sbuf.size - 4;
	enc->open = true;
	return 0;
}

/* A counter delta or an ipc: finite and not negative. Written this way round so that NaN
 * fails too. */
static bool delta__valid(double d)
{
	return d >= 0.0 && d <= DBL_MAX;
}

/* What the format cannot carry: the decoder would reject it, so the encoder refuses it. */
static bool cevent__encodable(const struct xpu_cevent *ev)
{
	__u32 i;

	if (ev->kind < XPU_REC_CPU_SAMPLE || ev->kind >= XPU_REC_EVENT_END)
		return false;
	if (ev->corr_type >= XPU_CORR_TYPE_MAX)
		return false;
	/* written this way round so that NaN fails too */
	if (!(ev->confidence >= 0.0f && ev->confidence <= 1.0f))
		return false;
	if (ev->n_links > XPU_WIRE_LINKS_MAX)
		return false;
	for (i = 0; i < ev->n_links; i++) {
		if (ev->links[i].type == 0 || ev->links[i].type >= XPU_LINK_TYPE_MAX)
			return false;
	}
	if ((__u32)ev->n_kernel + ev->n_user > XPU_WIRE_STACK_MAX)
		return false;
	if (ev->n_kernel + ev->n_user && !ev->stack)
		return false;
	if (ev->name_len > XPU_STRING_MAX || (ev->name_len && !ev->name))
		return false;
	if (ev->n_counters > XPU_WIRE_COUNTERS_MAX || !delta__valid(ev->ipc))
		return false;
	for (i = 0; i < ev->n_counters; i++) {
		const struct xpu_wire_counter *c = &ev->counters[i];

		if (!c->name || !c->name_len || c->name_len > XPU_WIRE_COUNTER_NAME_MAX ||
		    !delta__valid(c->delta))
			return false;
	}
	return true;
}

static bool triple__zero(const __s32 v[3])
{
	return !(v[0] | v[1] | v[2]);
}

/*
 * The most an event can take besides its names and its frames: a map16 header (3), the 37 keys
 * with their fixstr headers (181), every scalar at its widest encoding (189), 4 links (45),
 * grid and block (32), the name's str16 and the stack's and frames' array16 headers (9), and 4
 * counters without their names' bytes (53): 512 bytes. A frame takes 9 bytes in the stack and
 * 5 in frames at most. add() asserts the bound; wire_test's biggest event, every field at its
 * maximum, checks it.
 */
#define EVENT_FIXED_MAX 512

/* add() has checked the counts (cevent__encodable) before this is called. */
static size_t event_bound(const struct xpu_cevent *ev)
{
	size_t n = EVENT_FIXED_MAX + ev->name_len +
		   (ev->frames ? 14u : 9u) * ((size_t)ev->n_kernel + ev->n_user);
	__u32 i;

	for (i = 0; i < ev->n_counters; i++)
		n += ev->counters[i].name_len;
	return n;
}

/* The pack functions below cannot fail: add() reserved the room and write_reserved() only
 * copies. Their return values are ignored for that reason. */
static void pack_triple(msgpack_packer *pk, const __s32 v[3])
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_int32(pk, v[0]);
	msgpack_pack_int32(pk, v[1]);
	msgpack_pack_int32(pk, v[2]);
}

static void pack_links(msgpack_packer *pk, const struct xpu_cevent *ev)
{
	__u32 i;

	msgpack_pack_array(pk, ev->n_links);
	for (i = 0; i < ev->n_links; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_uint32(pk, ev->links[i].type);
		msgpack_pack_uint64(pk, ev->links[i].target);
	}
}

/* [[name, delta], ...]: the delta always as float64, so the encoding is one fixed point */
static void pack_counters(msgpack_packer *pk, const struct xpu_cevent *ev)
{
	__u32 i;

	msgpack_pack_array(pk, ev->n_counters);
	for (i = 0; i < ev->n_counters; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_str_with_body(pk, ev->counters[i].name, ev->counters[i].name_len);
		msgpack_pack_double(pk, ev->counters[i].delta);
	}
}

static void pack_stack(msgpack_packer *pk, const struct xpu_cevent *ev)
{
	__u32 i, n = (__u32)ev->n_kernel + ev->n_user;

	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++)
		msgpack_pack_uint64(pk, ev->stack[i]);
}

static void pack_frames(msgpack_packer *pk, const struct xpu_cevent *ev, const __u32 *idx)
{
	__u32 i, n = (__u32)ev->n_kernel + ev->n_user;

	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++) {
		if (idx[i] == IDX_NONE)
			msgpack_pack_nil(pk);
		else
			msgpack_pack_uint32(pk, idx[i]);
	}
}

/*
 * The optional fields in the order the encoder writes them (docs/wire.md lists the same).
 * OPT(cond, key, pack) is used twice: once to count the map's entries, once to write them,
 * so the two can never disagree.
 */
#define OPTIONAL_FIELDS(OPT, pk, ev, named, idx)                                                \
	OPT((ev)->pid, "pid", msgpack_pack_uint32(pk, (ev)->pid))                               \
	OPT((ev)->tid, "tid", msgpack_pack_uint32(pk, (ev)->tid))                               \
	OPT((ev)->cpu, "cpu", msgpack_pack_uint32(pk, (ev)->cpu))                               \
	OPT((ev)->end_ns, "end", msgpack_pack_uint64(pk, (ev)->end_ns))                         \
	OPT((ev)->flags, "flags", msgpack_pack_uint16(pk, (ev)->flags))                         \
	OPT((ev)->correlation_id, "corr", msgpack_pack_uint64(pk, (ev)->correlation_id))        \
	OPT((ev)->parent_id, "parent", msgpack_pack_uint64(pk, (ev)->parent_id))                \
	OPT((ev)->root_id, "root", msgpack_pack_uint64(pk, (ev)->root_id))                      \
	OPT((ev)->corr_type, "ct", msgpack_pack_uint32(pk, (ev)->corr_type))                    \
	OPT((ev)->confidence != 0.0f, "conf", msgpack_pack_float(pk, (ev)->confidence))         \
	OPT((ev)->n_links, "links", pack_links(pk, (ev)))                                       \
	OPT((ev)->device, "dev", msgpack_pack_uint32(pk, (ev)->device))                         \
	OPT((ev)->context, "ctx", msgpack_pack_uint32(pk, (ev)->context))                       \
	OPT((ev)->stream, "str", msgpack_pack_uint32(pk, (ev)->stream))                         \
	OPT((ev)->graph_id, "graph", msgpack_pack_uint32(pk, (ev)->graph_id))                   \
	OPT((ev)->graph_node_id, "node", msgpack_pack_uint64(pk, (ev)->graph_node_id))          \
	OPT(!triple__zero((ev)->grid), "grid", pack_triple(pk, (ev)->grid))                     \
	OPT(!triple__zero((ev)->block), "block", pack_triple(pk, (ev)->block))                  \
	OPT((ev)->registers, "regs", msgpack_pack_uint32(pk, (ev)->registers))                  \
	OPT((ev)->shared_mem, "smem", msgpack_pack_uint32(pk, (ev)->shared_mem))                \
	OPT((ev)->api_id, "api", msgpack_pack_uint32(pk, (ev)->api_id))                         \
	OPT((ev)->sub_kind, "sub", msgpack_pack_uint32(pk, (ev)->sub_kind))                     \
	OPT((ev)->bytes, "bytes", msgpack_pack_uint64(pk, (ev)->bytes))                         \
	OPT((ev)->address, "addr", msgpack_pack_uint64(pk, (ev)->address))                      \
	OPT((ev)->value, "val", msgpack_pack_uint64(pk, (ev)->value))                           \
	OPT((ev)->delta, "delta", msgpack_pack_uint64(pk, (ev)->delta))                         \
	OPT((ev)->scale != 0.0, "scale", msgpack_pack_double(pk, (ev)->scale))                  \
	OPT((ev)->name_len, "name", msgpack_pack_str_with_body(pk, (ev)->name, (ev)->name_len)) \
	OPT((ev)->n_kernel, "nk", msgpack_pack_uint16(pk, (ev)->n_kernel))                      \
	OPT((ev)->n_kernel + (ev)->n_user, "stack", pack_stack(pk, (ev)))                       \
	OPT(named, "frames", pack_frames(pk, (ev), (idx)))                                      \
	OPT((ev)->n_counters, "counters", pack_counters(pk, (ev)))                              \
	OPT((ev)->counter_flags, "cflags", msgpack_pack_uint32(pk, (ev)->counter_flags))        \
	OPT((ev)->ipc != 0.0, "ipc", msgpack_pack_double(pk, (ev)->ipc))

#define COUNT_FIELD(cond, key, pack) +((cond) ? 1u : 0u)
#define WRITE_FIELD(cond, key, pack) \
	if (cond) {                  \
		PACK_KEY(&pk, key);  \
		pack;                \
	}

__attribute__((flatten)) int xpu_wire_enc__add(struct xpu_wire_enc *enc,
					       const struct xpu_cevent *ev)
{
	PACKER(pk, enc, write_reserved);
	__u32 entries, idx[XPU_WIRE_STACK_MAX];
	size_t start;
	int named = 0;

	if (!enc->open || !cevent__encodable(ev))
		return -EINVAL;
	/* array32 cannot count more; four billion events would not fit in memory anyway */
	if (enc->count == UINT32_MAX)
		return -ENOMEM;
	if (enc->names_at) { /* after finish(): take the symbol table off again */
		enc->sbuf.size = enc->names_at;
		enc->sbuf.data[0] = (char)0x84;
		enc->names_at = 0;
	}
	if (sbuffer__reserve(&enc->sbuf, event_bound(ev)))
		return -ENOMEM;
	if (ev->frames && ev->n_kernel + ev->n_user) {
		named = frames__index(enc, ev, idx);
		if (named < 0)
			return named;
	}

	start = enc->sbuf.size;
	entries = 3 OPTIONAL_FIELDS(COUNT_FIELD, &pk, ev, named, idx);
	msgpack_pack_map(&pk, entries);
	PACK_KEY(&pk, "k");
	msgpack_pack_uint16(&pk, ev->kind);
	PACK_KEY(&pk, "id");
	msgpack_pack_uint64(&pk, ev->id);
	PACK_KEY(&pk, "ts");
	msgpack_pack_uint64(&pk, ev->ts_ns);
	OPTIONAL_FIELDS(WRITE_FIELD, &pk, ev, named, idx)
	assert(enc->sbuf.size - start <= event_bound(ev));
	(void)start;
	enc->count++;
	return 0;
}

/* "symbols" and the array header before the names: what finish() appends to the batch. */
static size_t names_header(const struct xpu_wire_enc *enc)
{
	return 8 + (enc->n_syms < 16 ? 1 : enc->n_syms <= 0xffff ? 3 : 5);
}

int xpu_wire_enc__finish(struct xpu_wire_enc *enc, const void **data, size_t *len)
{
	unsigned char *p;

	if (!enc->open)
		return -EINVAL;
	if (enc->n_syms && !enc->names_at) {
		PACKER(pk, enc, write_reserved);

		if (sbuffer__reserve(&enc->sbuf, names_header(enc) + enc->names.size))
			return -ENOMEM;
		enc->names_at = enc->sbuf.size;
		PACK_KEY(&pk, "symbols");
		msgpack_pack_array(&pk, enc->n_syms);
		write_reserved(&enc->sbuf, enc->names.data, enc->names.size);
		enc->sbuf.data[0] = (char)0x85; /* the batch map's fifth entry */
	}
	p = (unsigned char *)enc->sbuf.data + enc->count_at;
	p[0] = (unsigned char)(enc->count >> 24);
	p[1] = (unsigned char)(enc->count >> 16);
	p[2] = (unsigned char)(enc->count >> 8);
	p[3] = (unsigned char)enc->count;
	*data = enc->sbuf.data;
	*len = enc->sbuf.size;
	return 0;
}

__u32 xpu_wire_enc__count(const struct xpu_wire_enc *enc)
{
	return enc->count;
}

size_t xpu_wire_enc__size(const struct xpu_wire_enc *enc)
{
	if (!enc->n_syms || enc->names_at)
		return enc->sbuf.size;
	return enc->sbuf.size + names_header(enc) + enc->names.size;
}

/* ---- decoder ---- */

/*
 * A cursor over [base, end). Every read checks what is left before it loads a byte; a
 * failure records the first reason and where it happened and returns -EBADMSG, which the
 * callers pass straight up.
 */
struct reader {
	const __u8 *base;
	const __u8 *p;
	const __u8 *end;
	__u32 max_depth; /* already clamped to XPU_WIRE_DEPTH_MAX */
	const char *reason;
	const __u8 *fail_at;
};

static int fail(struct reader *r, const __u8 *at, const char *reason)
{
	r->reason = reason;
	r->fail_at = at;
	return -EBADMSG;
}

static inline size_t left(const struct reader *r)
{
	return (size_t)(r->end - r->p);
}

/* A big-endian integer of n = 1, 2, 4 or 8 bytes (the host is little-endian: event.h). */
static inline __u64 load_be(const __u8 *p, size_t n)
{
	__u16 v16;
	__u32 v32;
	__u64 v64;

	switch (n) {
	case 1:
		return p[0];
	case 2:
		memcpy(&v16, p, 2);
		return __builtin_bswap16(v16);
	case 4:
		memcpy(&v32, p, 4);
		return __builtin_bswap32(v32);
	default:
		memcpy(&v64, p, 8);
		return __builtin_bswap64(v64);
	}
}

static inline int enter(struct reader *r, const __u8 *at, __u32 depth)
{
	return depth > r->max_depth ? fail(r, at, "depth limit") : 0;
}

/*
 * One integer in any of MessagePack's encodings. *neg tells a negative value, whose two's
 * complement is in *v; the signed encodings of non-negative values count as non-negative.
 */
static int read_int(struct reader *r, __u64 *v, bool *neg)
{
	const __u8 *at = r->p;
	size_t n;
	__u8 b;

	if (!left(r))
		return fail(r, at, "truncated");
	b = *at;
	if (b <= 0x7f || b >= 0xe0) {
		*v = (__u64)(__s64)(__s8)b;
		*neg = b >= 0xe0;
		r->p++;
		return 0;
	}
	if (b < 0xcc || b > 0xd3)
		return fail(r, at, "expected an integer");
	n = (size_t)1 << (b & 3); /* cc..cf and d0..d3 carry 1, 2, 4, 8 bytes */
	if (left(r) < 1 + n)
		return fail(r, at, "truncated");
	*v = load_be(at + 1, n);
	*neg = false;
	if (b >= 0xd0 && (*v >> (8 * n - 1)) & 1) {
		/* sign-extend the int8..int64 payload */
		if (n < 8)
			*v |= ~(__u64)0 << (8 * n);
		*neg = true;
	}
	r->p += 1 + n;
	return 0;
}

static int read_uint(struct reader *r, __u64 max, __u64 *v)
{
	const __u8 *at = r->p;
	bool neg;
	int ret;

	ret = read_int(r, v, &neg);
	if (ret)
		return ret;
	if (neg)
		return fail(r, at, "negative integer for an unsigned field");
	if (*v > max)
		return fail(r, at, "integer out of range");
	return 0;
}

static int read_u64(struct reader *r, __u64 *out)
{
	return read_uint(r, UINT64_MAX, out);
}

static int read_u32(struct reader *r, __u32 *out)
{
	__u64 v;
	int ret = read_uint(r, UINT32_MAX, &v);

	if (!ret)
		*out = (__u32)v;
	return ret;
}

static int read_u16(struct reader *r, __u16 *out)
{
	__u64 v;
	int ret = read_uint(r, UINT16_MAX, &v);

	if (!ret)
		*out = (__u16)v;
	return ret;
}

static int read_s32(struct reader *r, __s32 *out)
{
	const __u8 *at = r->p;
	bool neg;
	__u64 v;
	int ret;

	ret = read_int(r, &v, &neg);
	if (ret)
		return ret;
	if (neg ? (__s64)v < INT32_MIN : v > INT32_MAX)
		return fail(r, at, "integer out of range");
	*out = (__s32)(__s64)v;
	return 0;
}

static int read_float(struct reader *r, double *out)
{
	const __u8 *at = r->p;
	union {
		__u32 u;
		float f;
	} f32;
	union {
		__u64 u;
		double d;
	} f64;

	if (!left(r))
		return fail(r, at, "truncated");
	if (*at == 0xca) {
		if (left(r) < 5)
			return fail(r, at, "truncated");
		f32.u = (__u32)load_be(at + 1, 4);
		*out = f32.f;
		r->p += 5;
		return 0;
	}
	if (*at == 0xcb) {
		if (left(r) < 9)
			return fail(r, at, "truncated");
		f64.u = load_be(at + 1, 8);
		*out = f64.d;
		r->p += 9;
		return 0;
	}
	return fail(r, at, "expected a float");
}

/* A str of any width; *s points into the message, checked to lie inside it. */
static int read_str(struct reader *r, const __u8 **s, __u32 *len, const char *not_str)
{
	const __u8 *at = r->p;
	size_t hdr;
	__u8 b;

	if (!left(r))
		return fail(r, at, "truncated");
	b = *at;
	if ((b & 0xe0) == 0xa0) {
		hdr = 1;
		*len = b & 0x1f;
	} else if (b >= 0xd9 && b <= 0xdb) {
		hdr = 1 + ((size_t)1 << (b - 0xd9)); /* str8, str16, str32 */
		if (left(r) < hdr)
			return fail(r, at, "truncated");
		*len = (__u32)load_be(at + 1, hdr - 1);
	} else {
		return fail(r, at, not_str);
	}
	if (left(r) - hdr < *len)
		return fail(r, at, "string longer than the message");
	*s = at + hdr;
	r->p += hdr + *len;
	return 0;
}

/* An array or map header (map: is_map). The count is checked against the bytes left: an
 * array element takes at least one byte, a map entry at least two. */
static int read_container(struct reader *r, bool is_map, __u32 *n, const char *wrong_type)
{
	const __u8 *at = r->p;
	__u8 fix = is_map ? 0x80 : 0x90, wide = is_map ? 0xde : 0xdc;
	size_t hdr;
	__u8 b;

	if (!left(r))
		return fail(r, at, "truncated");
	b = *at;
	if ((b & 0xf0) == fix) {
		hdr = 1;
		*n = b & 0x0f;
	} else if (b == wide || b == wide + 1) {
		hdr = b == wide ? 3 : 5;
		if (left(r) < hdr)
			return fail(r, at, "truncated");
		*n = (__u32)load_be(at + 1, hdr - 1);
	} else {
		return fail(r, at, wrong_type);
	}
	if ((__u64)*n * (is_map ? 2 : 1) > left(r) - hdr)
		return fail(r, at,
			    is_map ? "map longer than the message" :
				     "array longer than the message");
	r->p += hdr;
	return 0;
}

static int read_array(struct reader *r, __u32 *n, const char *wrong_type)
{
	return read_container(r, false, n, wrong_type);
}

/*
 * Skip one value of any type. depth is the depth the value has if it is a container. Instead
 * of recursing, pending[level] counts the elements still to skip in each open container
 * (pending[0]: the value itself); levels never exceed max_depth - depth + 1, which the
 * clamp to XPU_WIRE_DEPTH_MAX keeps inside the array. Each turn of the loop consumes at least
 * one byte or closes a level, so the time is linear in the message.
 */
static int skip_value(struct reader *r, __u32 depth)
{
	__u64 pending[XPU_WIRE_DEPTH_MAX + 1];
	__u32 top = 0;

	pending[0] = 1;
	for (;;) {
		const __u8 *at = r->p;
		__u64 items = 0, body = 0;
		bool container = false, str = false;
		size_t hdr = 1, width = 0;
		__u8 b;

		if (!pending[top]) {
			if (!top)
				return 0;
			top--;
			continue;
		}
		pending[top]--;
		if (!left(r))
			return fail(r, at, "truncated");
		b = *at;
		if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
			r->p++; /* fixint, nil, false, true */
			continue;
		}
		if ((b & 0xe0) == 0xa0) {
			body = b & 0x1f;
			str = true;
		} else if ((b & 0xf0) == 0x90) {
			items = b & 0x0f;
			container = true;
		} else if ((b & 0xf0) == 0x80) {
			items = 2u * (b & 0x0f);
			container = true;
		} else {
			switch (b) {
			case 0xc4: /* bin8, bin16, bin32: length, bytes */
			case 0xc5:
			case 0xc6:
				width = (size_t)1 << (b - 0xc4);
				hdr = 1 + width;
				str = true;
				break;
			case 0xc7: /* ext8, ext16, ext32: length, type byte, bytes */
			case 0xc8:
			case 0xc9:
				width = (size_t)1 << (b - 0xc7);
				hdr = 2 + width;
				str = true;
				break;
			case 0xca: /* float32, float64 */
				body = 4;
				break;
			case 0xcb:
				body = 8;
				break;
			case 0xcc: /* uint8..uint64, int8..int64 */
			case 0xcd:
			case 0xce:
			case 0xcf:
			case 0xd0:
			case 0xd1:
			case 0xd2:
			case 0xd3:
				body = (__u64)1 << (b & 3);
				break;
			case 0xd4: /* fixext1..fixext16: type byte, 1..16 bytes */
			case 0xd5:
			case 0xd6:
			case 0xd7:
			case 0xd8:
				hdr = 2;
				body = (__u64)1 << (b - 0xd4);
				break;
			case 0xd9: /* str8, str16, str32 */
			case 0xda:
			case 0xdb:
				width = (size_t)1 << (b - 0xd9);
				hdr = 1 + width;
				str = true;
				break;
			case 0xdc: /* array16, array32 */
			case 0xdd:
				width = b == 0xdc ? 2 : 4;
				hdr = 1 + width;
				container = true;
				break;
			case 0xde: /* map16, map32 */
			case 0xdf:
				width = b == 0xde ? 2 : 4;
				hdr = 1 + width;
				container = true;
				break;
			default: /* 0xc1 is the one byte MessagePack never uses */
				return fail(r, at, "reserved type byte 0xc1");
			}
		}
		if (left(r) < hdr)
			return fail(r, at, "truncated");
		if (width) {
			__u64 n = load_be(at + 1, width);

			if (container)
				items = b >= 0xde ? 2 * n : n;
			else
				body = n;
		}
		r->p += hdr;
		if (!container) {
			if (body > left(r))
				return fail(r, at,
					    !str ? "truncated" :
					    b >= 0xd9 || (b & 0xe0) == 0xa0 ?
						   "string longer than the message" :
						   "bin or ext longer than the message");
			r->p += body;
			continue;
		}
		if (depth + top > r->max_depth)
			return fail(r, at, "depth limit");
		if (items > left(r))
			return fail(r, at,
				    b >= 0xde || (b & 0xf0) == 0x80 ?
					    "map longer than the message" :
					    "array longer than the message");
		if (items)
			pending[++top] = items;
	}
}

enum field {
	F_K,
	F_ID,
	F_TS,
	F_PID,
	F_TID,
	F_CPU,
	F_END,
	F_FLAGS,
	F_CORR,
	F_PARENT,
	F_ROOT,
	F_CT,
	F_CONF,
	F_LINKS,
	F_DEV,
	F_CTX,
	F_STR,
	F_GRAPH,
	F_NODE,
	F_GRID,
	F_BLOCK,
	F_REGS,
	F_SMEM,
	F_API,
	F_SUB,
	F_BYTES,
	F_ADDR,
	F_VAL,
	F_DELTA,
	F_SCALE,
	F_NAME,
	F_STACK,
	F_NK,
	F_FRAMES,
	F_COUNTERS,
	F_CFLAGS,
	F_IPC,
	F_UNKNOWN,
};

_Static_assert(F_UNKNOWN <= 64, "seen-key bits fit in a __u64");

/* A key of at most 7 bytes as one integer: its bytes, and its length in the top byte so that
 * "pid" and "pid\0" differ. Lets the lookup be one switch the compiler turns into a search. */
#define KEY(len, a, b, c, d, e, f)                                                                 \
	((__u64)(len) << 56 | (__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | \
	 (__u64)(e) << 32 | (__u64)(f) << 40)

/* room: how many bytes may be read from s (to the end of the message), at least len. */
static enum field event_field(const __u8 *s, __u32 len, size_t room)
{
	__u64 code = 0;
	__u32 i;

	if (len == 8 && !memcmp(s, "counters", 8)) /* the one key longer than KEY() holds */
		return F_COUNTERS;
	if (len > 6)
		return F_UNKNOWN;
	if (room >= 8) {
		/* one load instead of a loop whose length changes from key to key (and
		 * mispredicts); the key's value follows it, so 8 bytes are nearly always there */
		memcpy(&code, s, 8);
		code &= ((__u64)1 << (8 * len)) - 1;
	} else {
		for (i = 0; i < len; i++)
			code |= (__u64)s[i] << (8 * i);
	}
	switch (code | (__u64)len << 56) {
	case KEY(1, 'k', 0, 0, 0, 0, 0):
		return F_K;
	case KEY(2, 'i', 'd', 0, 0, 0, 0):
		return F_ID;
	case KEY(2, 't', 's', 0, 0, 0, 0):
		return F_TS;
	case KEY(3, 'p', 'i', 'd', 0, 0, 0):
		return F_PID;
	case KEY(3, 't', 'i', 'd', 0, 0, 0):
		return F_TID;
	case KEY(3, 'c', 'p', 'u', 0, 0, 0):
		return F_CPU;
	case KEY(3, 'e', 'n', 'd', 0, 0, 0):
		return F_END;
	case KEY(5, 'f', 'l', 'a', 'g', 's', 0):
		return F_FLAGS;
	case KEY(4, 'c', 'o', 'r', 'r', 0, 0):
		return F_CORR;
	case KEY(6, 'p', 'a', 'r', 'e', 'n', 't'):
		return F_PARENT;
	case KEY(4, 'r', 'o', 'o', 't', 0, 0):
		return F_ROOT;
	case KEY(2, 'c', 't', 0, 0, 0, 0):
		return F_CT;
	case KEY(4, 'c', 'o', 'n', 'f', 0, 0):
		return F_CONF;
	case KEY(5, 'l', 'i', 'n', 'k', 's', 0):
		return F_LINKS;
	case KEY(3, 'd', 'e', 'v', 0, 0, 0):
		return F_DEV;
	case KEY(3, 'c', 't', 'x', 0, 0, 0):
		return F_CTX;
	case KEY(3, 's', 't', 'r', 0, 0, 0):
		return F_STR;
	case KEY(5, 'g', 'r', 'a', 'p', 'h', 0):
		return F_GRAPH;
	case KEY(4, 'n', 'o', 'd', 'e', 0, 0):
		return F_NODE;
	case KEY(4, 'g', 'r', 'i', 'd', 0, 0):
		return F_GRID;
	case KEY(5, 'b', 'l', 'o', 'c', 'k', 0):
		return F_BLOCK;
	case KEY(4, 'r', 'e', 'g', 's', 0, 0):
		return F_REGS;
	case KEY(4, 's', 'm', 'e', 'm', 0, 0):
		return F_SMEM;
	case KEY(3, 'a', 'p', 'i', 0, 0, 0):
		return F_API;
	case KEY(3, 's', 'u', 'b', 0, 0, 0):
		return F_SUB;
	case KEY(5, 'b', 'y', 't', 'e', 's', 0):
		return F_BYTES;
	case KEY(4, 'a', 'd', 'd', 'r', 0, 0):
		return F_ADDR;
	case KEY(3, 'v', 'a', 'l', 0, 0, 0):
		return F_VAL;
	case KEY(5, 'd', 'e', 'l', 't', 'a', 0):
		return F_DELTA;
	case KEY(5, 's', 'c', 'a', 'l', 'e', 0):
		return F_SCALE;
	case KEY(4, 'n', 'a', 'm', 'e', 0, 0):
		return F_NAME;
	case KEY(5, 's', 't', 'a', 'c', 'k', 0):
		return F_STACK;
	case KEY(2, 'n', 'k', 0, 0, 0, 0):
		return F_NK;
	case KEY(6, 'f', 'r', 'a', 'm', 'e', 's'):
		return F_FRAMES;
	case KEY(6, 'c', 'f', 'l', 'a', 'g', 's'):
		return F_CFLAGS;
	case KEY(3, 'i', 'p', 'c', 0, 0, 0):
		return F_IPC;
	default:
		return F_UNKNOWN;
	}
}

#define SYM_EMPTY UINT32_MAX /* room.sym_at of an empty name: no name */

/*
 * Where decoded stacks and frame names go (the caller's struct xpu_wire_pool), and whether the
 * batch needed more room than the caller gave. An event's frames go to stack[stack_used..]
 * and their names to frames[stack_used..]. A name is first stored as its symbol index + 1
 * cast to a pointer (0: no name), because the symbol table may come after the events;
 * resolve_frames() turns them into pointers into text once the whole batch is read. text
 * starts with the table's index, sym_at: where each name's copy is.
 */
struct room {
	__u64 *stack;
	const char **frames; /* NULL: names not wanted */
	char *text;
	size_t text_len, text_used;
	__u32 stack_len, stack_used;
	const __u8 *stack_short; /* the first stack that did not fit */
	const __u8 *text_short; /* the table or the first name that did not fit */
	__u32 *sym_at; /* NULL: no table, or no room for it */
	__u32 n_syms;
	/* the largest name index of the batch, checked against the table once both are read */
	__u32 max_idx;
	const __u8 *max_idx_at; /* NULL: no index at all */
};

static int read_triple(struct reader *r, __s32 out[3], const char *not_triple)
{
	const __u8 *at = r->p;
	__u32 n, i;
	int ret;

	ret = read_array(r, &n, not_triple);
	if (!ret)
		ret = enter(r, at, DEPTH_FIELD);
	if (!ret && n != 3)
		ret = fail(r, at, not_triple);
	for (i = 0; !ret && i < 3; i++)
		ret = read_s32(r, &out[i]);
	return ret;
}

static int read_links(struct reader *r, struct xpu_cevent *ev)
{
	const __u8 *at = r->p;
	__u32 n, i, pair;
	__u64 type;
	int ret;

	ret = read_array(r, &n, "links is not an array");
	if (!ret)
		ret = enter(r, at, DEPTH_FIELD);
	if (ret)
		return ret;
	if (n == 0)
		return fail(r, at, "empty links array");
	if (n > XPU_WIRE_LINKS_MAX)
		return fail(r, at, "too many links");
	for (i = 0; i < n; i++) {
		at = r->p;
		ret = read_array(r, &pair, "link is not a [type, target] pair");
		if (!ret)
			ret = enter(r, at, DEPTH_LINK);
		if (!ret && pair != 2)
			ret = fail(r, at, "link is not a [type, target] pair");
		at = r->p;
		if (!ret)
			ret = read_u64(r, &type);
		if (!ret && (type == 0 || type >= XPU_LINK_TYPE_MAX))
			ret = fail(r, at, "unknown link type");
		if (!ret)
			ret = read_u64(r, &ev->links[i].target);
		if (ret)
			return ret;
		ev->links[i].type = (__u32)type;
	}
	ev->n_links = n;
	return 0;
}

/* [[name, delta], ...]: names point into the message, as the event's name does. */
static int read_counters(struct reader *r, struct xpu_cevent *ev)
{
	const __u8 *at = r->p, *s;
	__u32 n, i, pair;
	int ret;

	ret = read_array(r, &n, "counters is not an array");
	if (!ret)
		ret = enter(r, at, DEPTH_FIELD);
	if (ret)
		return ret;
	if (n == 0)
		return fail(r, at, "empty counters array");
	if (n > XPU_WIRE_COUNTERS_MAX)
		return fail(r, at, "too many counters");
	for (i = 0; i < n; i++) {
		struct xpu_wire_counter *c = &ev->counters[i];

		at = r->p;
		ret = read_array(r, &pair, "counter is not a [name, delta] pair");
		if (!ret)
			ret = enter(r, at, DEPTH_LINK);
		if (!ret && pair != 2)
			ret = fail(r, at, "counter is not a [name, delta] pair");
		at = r->p;
		if (!ret)
			ret = read_str(r, &s, &c->name_len, "counter name is not a string");
		if (!ret && !c->name_len)
			ret = fail(r, at, "empty counter name");
		if (!ret && c->name_len > XPU_WIRE_COUNTER_NAME_MAX)
			ret = fail(r, at, "counter name longer than XPU_WIRE_COUNTER_NAME_MAX");
		at = r->p;
		if (!ret)
			ret = read_float(r, &c->delta);
		if (!ret && !delta__valid(c->delta))
			ret = fail(r, at, "counter delta negative or not finite");
		if (ret)
			return ret;
		c->name = (const char *)s;
	}
	ev->n_counters = n;
	return 0;
}

/* Frames go to the pool while it has room; after that they are still read and checked, so
 * that -ENOSPC is only ever said of a batch that is otherwise valid. decode_event() moves
 * stack_used on once the event is read: its names go beside the frames. */
static int read_stack(struct reader *r, struct room *room, struct xpu_cevent *ev, __u32 *len)
{
	const __u8 *at = r->p;
	__u64 *dst = NULL, frame;
	__u32 n, i;
	int ret;

	ret = read_array(r, &n, "stack is not an array");
	if (!ret)
		ret = enter(r, at, DEPTH_FIELD);
	if (ret)
		return ret;
	if (n > XPU_WIRE_STACK_MAX)
		return fail(r, at, "stack longer than XPU_WIRE_STACK_MAX");
	if (n && room->stack_len - room->stack_used >= n)
		dst = room->stack + room->stack_used;
	else if (n && !room->stack_short)
		room->stack_short = at;
	for (i = 0; i < n; i++) {
		ret = read_u64(r, &frame);
		if (ret)
			return ret;
		if (dst)
			dst[i] = frame;
	}
	ev->stack = dst;
	*len = n;
	return 0;
}

/* An event's frames: a name index or nil per frame. *dst: where they went, NULL when names
 * are not wanted or the stack has no room. */
static int read_frames(struct reader *r, struct room *room, const char ***dst, __u32 *len)
{
	const __u8 *at = r->p;
	const char **out = NULL;
	__u32 n, i, v;
	int ret;

	ret = read_array(r, &n, "frames is not an array");
	if (!ret)
		ret = enter(r, at, DEPTH_FIELD);
	if (ret)
		return ret;
	if (n > XPU_WIRE_STACK_MAX)
		return fail(r, at, "frames longer than XPU_WIRE_STACK_MAX");
	if (n && room->frames && room->stack_len - room->stack_used >= n)
		out = room->frames + room->stack_used;
	for (i = 0; i < n; i++) {
		const __u8 *idx_at = r->p;
		__u8 b;

		if (!left(r))
			return fail(r, idx_at, "truncated");
		b = *idx_at;
		if (b == 0xc0) {
			r->p++;
			if (out)
				out[i] = NULL;
			continue;
		}
		if (!(b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)))
			return fail(r, idx_at, "frame name is not an index or nil");
		ret = read_u32(r, &v);
		if (ret)
			return ret;
		if (!room->max_idx_at || v > room->max_idx) {
			room->max_idx = v;
			room->max_idx_at = idx_at;
		}
		if (out)
			out[i] = (const char *)(uintptr_t)((__u64)v + 1);
	}
	*dst = out;
	*len = n;
	return 0;
}

/* Flattened: the readers it calls per key are inlined into the one loop, which took a GPU
 * kernel event with a 20-frame stack from 260 ns to 200 ns. */
__attribute__((flatten)) static int decode_event(struct reader *r, struct room *room,
						 struct xpu_cevent *ev)
{
	const __u8 *start = r->p, *nk_at = NULL, *frames_at = NULL;
	const char **frames = NULL;
	__u32 n, i, stack_len = 0, frames_len = 0;
	__u64 seen = 0, v = 0, nk = 0;
	double d;
	int ret;

	ret = read_container(r, true, &n, "event is not a map");
	if (!ret)
		ret = enter(r, start, DEPTH_EVENT);
	if (ret)
		return ret;
	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < n; i++) {
		const __u8 *key_at = r->p, *key, *at;
		enum field f;
		__u32 len;

		ret = read_str(r, &key, &len, "event key is not a string");
		if (ret)
			return ret;
		f = event_field(key, len, (size_t)(r->end - key));
		if (f == F_UNKNOWN) {
			/* a key from a newer minor revision of the format */
			ret = skip_value(r, DEPTH_FIELD);
			if (ret)
				return ret;
			continue;
		}
		if (seen & (1ull << f))
			return fail(r, key_at, "duplicate key");
		seen |= 1ull << f;
		at = r->p;
		switch (f) {
		case F_K:
			ret = read_u64(r, &v);
			if (!ret && v == XPU_REC_PAD)
				ret = fail(r, at, "kind PAD is not an event");
			else if (!ret && (v < XPU_REC_CPU_SAMPLE || v >= XPU_REC_EVENT_END))
				ret = fail(r, at, "unknown kind");
			ev->kind = (__u16)v;
			break;
		case F_ID:
			ret = read_u64(r, &ev->id);
			break;
		case F_TS:
			ret = read_u64(r, &ev->ts_ns);
			break;
		case F_PID:
			ret = read_u32(r, &ev->pid);
			break;
		case F_TID:
			ret = read_u32(r, &ev->tid);
			break;
		case F_CPU:
			ret = read_u32(r, &ev->cpu);
			break;
		case F_END:
			ret = read_u64(r, &ev->end_ns);
			break;
		case F_FLAGS:
			ret = read_u16(r, &ev->flags);
			break;
		case F_CORR:
			ret = read_u64(r, &ev->correlation_id);
			break;
		case F_PARENT:
			ret = read_u64(r, &ev->parent_id);
			break;
		case F_ROOT:
			ret = read_u64(r, &ev->root_id);
			break;
		case F_CT:
			ret = read_u64(r, &v);
			if (!ret && v >= XPU_CORR_TYPE_MAX)
				ret = fail(r, at, "unknown correlation type");
			ev->corr_type = (__u32)v;
			break;
		case F_CONF:
			ret = read_float(r, &d);
			/* written this way round so that NaN fails too */
			if (!ret && !(d >= 0.0 && d <= 1.0))
				ret = fail(r, at, "confidence outside 0..1");
			if (!ret)
				ev->confidence = (float)d;
			break;
		case F_LINKS:
			ret = read_links(r, ev);
			break;
		case F_DEV:
			ret = read_u32(r, &ev->device);
			break;
		case F_CTX:
			ret = read_u32(r, &ev->context);
			break;
		case F_STR:
			ret = read_u32(r, &ev->stream);
			break;
		case F_GRAPH:
			ret = read_u32(r, &ev->graph_id);
			break;
		case F_NODE:
			ret = read_u64(r, &ev->graph_node_id);
			break;
		case F_GRID:
			ret = read_triple(r, ev->grid, "grid is not 3 integers");
			break;
		case F_BLOCK:
			ret = read_triple(r, ev->block, "block is not 3 integers");
			break;
		case F_REGS:
			ret = read_u32(r, &ev->registers);
			break;
		case F_SMEM:
			ret = read_u32(r, &ev->shared_mem);
			break;
		case F_API:
			ret = read_u32(r, &ev->api_id);
			break;
		case F_SUB:
			ret = read_u32(r, &ev->sub_kind);
			break;
		case F_BYTES:
			ret = read_u64(r, &ev->bytes);
			break;
		case F_ADDR:
			ret = read_u64(r, &ev->address);
			break;
		case F_VAL:
			ret = read_u64(r, &ev->value);
			break;
		case F_DELTA:
			ret = read_u64(r, &ev->delta);
			break;
		case F_SCALE:
			ret = read_float(r, &ev->scale);
			break;
		case F_NAME: {
			const __u8 *s;

			ret = read_str(r, &s, &ev->name_len, "name is not a string");
			if (!ret && ev->name_len > XPU_STRING_MAX)
				ret = fail(r, at, "name longer than XPU_STRING_MAX");
			if (!ret)
				ev->name = (const char *)s;
			break;
		}
		case F_STACK:
			ret = read_stack(r, room, ev, &stack_len);
			break;
		case F_FRAMES:
			frames_at = at;
			ret = read_frames(r, room, &frames, &frames_len);
			break;
		case F_NK:
			nk_at = at;
			ret = read_u64(r, &nk);
			break;
		case F_COUNTERS:
			ret = read_counters(r, ev);
			break;
		case F_CFLAGS:
			ret = read_u32(r, &ev->counter_flags);
			break;
		case F_IPC:
			ret = read_float(r, &ev->ipc);
			if (!ret && !delta__valid(ev->ipc))
				ret = fail(r, at, "ipc negative or not finite");
			break;
		case F_UNKNOWN:
			break;
		}
		if (ret)
			return ret;
	}
	if (!(seen & 1ull << F_K))
		return fail(r, start, "missing required key k");
	if (!(seen & 1ull << F_ID))
		return fail(r, start, "missing required key id");
	if (!(seen & 1ull << F_TS))
		return fail(r, start, "missing required key ts");
	/* nk may come before or after stack, so it is checked once both are known */
	if (nk > stack_len)
		return fail(r, nk_at, "nk greater than the stack length");
	if (frames_at && frames_len != stack_len)
		return fail(r, frames_at, "frames and stack differ in length");
	ev->n_kernel = (__u16)nk;
	ev->n_user = (__u16)(stack_len - nk);
	if (ev->stack) {
		/* frames had the same room as the stack: both are there or neither */
		ev->frames = frames;
		room->stack_used += stack_len;
	}
	return 0;
}

enum batch_key {
	B_V,
	B_PRODUCER,
	B_SEQ,
	B_EVENTS,
	B_REQUIRED, /* the keys above are required */
	B_SYMBOLS = B_REQUIRED,
	B_UNKNOWN,
};

static enum batch_key batch_key(const __u8 *s, __u32 len)
{
	if (len == 1 && s[0] == 'v')
		return B_V;
	if (len == 8 && !memcmp(s, "producer", 8))
		return B_PRODUCER;
	if (len == 3 && !memcmp(s, "seq", 3))
		return B_SEQ;
	if (len == 6 && !memcmp(s, "events", 6))
		return B_EVENTS;
	if (len == 7 && !memcmp(s, "symbols", 7))
		return B_SYMBOLS;
	return B_UNKNOWN;
}

/*
 * The batch's symbol table: every name checked, and, when names are wanted, its index
 * (4-byte aligned) then the names copied NUL-terminated into text while there is room. An
 * empty name is no name: it takes no text.
 */
static int read_symbols(struct reader *r, struct room *room)
{
	const __u8 *at = r->p, *s;
	__u32 n, i, len;
	size_t pad;
	int ret;

	ret = read_array(r, &n, "symbols is not an array");
	if (!ret)
		ret = enter(r, at, DEPTH_EVENTS);
	if (ret)
		return ret;
	room->n_syms = n;
	if (room->frames && n) {
		pad = room->text ? (size_t)(-(uintptr_t)room->text & 3) : 0;
		if (!room->text || room->text_len < pad || (room->text_len - pad) / 4 < n) {
			room->text_short = at;
		} else {
			room->sym_at = (__u32 *)(void *)(room->text + pad);
			room->text_used = pad + 4 * (size_t)n;
		}
	}
	for (i = 0; i < n; i++) {
		const __u8 *sym = r->p;

		ret = read_str(r, &s, &len, "symbol is not a string");
		if (ret)
			return ret;
		if (len > XPU_WIRE_FRAME_NAME_MAX)
			return fail(r, sym, "symbol longer than XPU_WIRE_FRAME_NAME_MAX");
		if (memchr(s, 0, len))
			return fail(r, sym, "symbol holds a NUL byte");
		if (!room->sym_at || room->text_short)
			continue;
		if (!len) {
			room->sym_at[i] = SYM_EMPTY;
			continue;
		}
		if (room->text_len - room->text_used <= len) {
			room->text_short = sym;
			continue;
		}
		memcpy(room->text + room->text_used, s, len);
		room->text[room->text_used + len] = 0;
		room->sym_at[i] = (__u32)room->text_used;
		room->text_used += len + 1;
	}
	return 0;
}

static int read_version(struct reader *r, __u32 *version)
{
	const __u8 *at = r->p;
	__u64 v;
	int ret;

	ret = read_u64(r, &v);
	if (!ret && v != XPU_WIRE_VERSION)
		ret = fail(r, at, "unsupported version");
	*version = (__u32)v;
	return ret;
}

/*
 * Our encoder writes "v" first. When another writer puts it later, look for it before
 * reading any event: the events of another version may not parse as ours, and "unsupported
 * version" is the error that helps. Reads a copy of the cursor; only a failure (its reason
 * and place) is copied back.
 */
static int find_version(struct reader *main_r, __u32 n)
{
	struct reader r = *main_r;
	__u32 i, version, len;
	const __u8 *key;
	int ret = 0;

	for (i = 0; !ret && i < n; i++) {
		ret = read_str(&r, &key, &len, "batch key is not a string");
		if (!ret && batch_key(key, len) == B_V) {
			ret = read_version(&r, &version);
			break;
		}
		if (!ret)
			ret = skip_value(&r, DEPTH_EVENTS);
	}
	if (ret) {
		main_r->reason = r.reason;
		main_r->fail_at = r.fail_at;
	}
	return ret; /* no "v" at all: the main pass reports the missing key */
}

static int decode_batch(struct reader *r, const struct xpu_wire_limits *limits,
			struct xpu_wire_batch *batch, struct xpu_cevent *events, __u32 max_events,
			struct room *room, const __u8 **events_short)
{
	static const char *const missing[B_REQUIRED] = {
		[B_V] = "missing required key v",
		[B_PRODUCER] = "missing required key producer",
		[B_SEQ] = "missing required key seq",
		[B_EVENTS] = "missing required key events",
	};
	const __u8 *start = r->p;
	unsigned int seen = 0;
	__u32 n, i, j;
	__u64 v;
	int ret;

	ret = read_container(r, true, &n, "batch is not a map");
	if (!ret)
		ret = enter(r, start, DEPTH_BATCH);
	if (ret)
		return ret;
	if (n && (left(r) < 2 || r->p[0] != 0xa1 || r->p[1] != 'v')) {
		ret = find_version(r, n);
		if (ret)
			return ret;
	}
	for (i = 0; i < n; i++) {
		const __u8 *key_at = r->p, *key, *at;
		enum batch_key k;
		__u32 len;

		ret = read_str(r, &key, &len, "batch key is not a string");
		if (ret)
			return ret;
		k = batch_key(key, len);
		if (k == B_UNKNOWN) {
			ret = skip_value(r, DEPTH_EVENTS);
			if (ret)
				return ret;
			continue;
		}
		if (seen & 1u << k)
			return fail(r, key_at, "duplicate key");
		seen |= 1u << k;
		at = r->p;
		switch (k) {
		case B_V:
			ret = read_version(r, &batch->version);
			break;
		case B_PRODUCER:
			ret = read_u32(r, &batch->producer);
			break;
		case B_SEQ:
			ret = read_u64(r, &v);
			batch->seq = v;
			break;
		case B_EVENTS:
			ret = read_array(r, &batch->n_events, "events is not an array");
			if (!ret)
				ret = enter(r, at, DEPTH_EVENTS);
			if (!ret && batch->n_events > limits->max_events)
				ret = fail(r, at, "too many events");
			for (j = 0; !ret && j < batch->n_events; j++) {
				struct xpu_cevent scratch;

				if (j < max_events) {
					ret = decode_event(r, room, &events[j]);
					continue;
				}
				/* no room: keep checking, so -ENOSPC means "valid but big" */
				if (!*events_short)
					*events_short = r->p;
				ret = decode_event(r, room, &scratch);
			}
			break;
		case B_SYMBOLS:
			ret = read_symbols(r, room);
			break;
		case B_UNKNOWN:
			break;
		}
		if (ret)
			return ret;
	}
	if (r->p != r->end)
		return fail(r, r->p, "trailing bytes after the batch");
	for (i = 0; i < B_REQUIRED; i++) {
		if (!(seen & 1u << i))
			return fail(r, start, missing[i]);
	}
	/* the table may come before or after the events: indices are checked once both are read */
	if (room->max_idx_at && room->max_idx >= room->n_syms)
		return fail(r, room->max_idx_at, "frame name index past the symbol table");
	return 0;
}

/* The names of the events kept: symbol indices + 1 become pointers into text (see room). */
static void resolve_frames(const struct room *room, struct xpu_cevent *events, __u32 n)
{
	__u32 i, j;

	for (i = 0; i < n; i++) {
		const char **f = (const char **)events[i].frames;
		__u32 frames = (__u32)events[i].n_kernel + events[i].n_user;

		if (!f)
			continue;
		if (room->text_short) { /* -ENOSPC: no names rather than some */
			events[i].frames = NULL;
			continue;
		}
		for (j = 0; j < frames; j++) {
			uintptr_t v = (uintptr_t)f[j];
			__u32 at = v ? room->sym_at[v - 1] : SYM_EMPTY;

			f[j] = at == SYM_EMPTY ? NULL : room->text + at;
		}
	}
}

int xpu_wire_pool__init(struct xpu_wire_pool *pool, __u32 stack_len, size_t text_len)
{
	memset(pool, 0, sizeof(*pool));
	pool->stack = calloc(stack_len ? stack_len : 1, sizeof(*pool->stack));
	pool->frames = calloc(stack_len ? stack_len : 1, sizeof(*pool->frames));
	pool->text = calloc(text_len ? text_len : 1, 1);
	if (!pool->stack || !pool->frames || !pool->text) {
		xpu_wire_pool__fini(pool);
		return -ENOMEM;
	}
	pool->stack_len = stack_len;
	pool->text_len = text_len;
	return 0;
}

void xpu_wire_pool__fini(struct xpu_wire_pool *pool)
{
	free(pool->stack);
	free(pool->frames);
	free(pool->text);
	memset(pool, 0, sizeof(*pool));
}

int xpu_wire_decode(const void *buf, size_t len, const struct xpu_wire_limits *limits,
		    struct xpu_wire_batch *batch, struct xpu_cevent *events, __u32 max_events,
		    const struct xpu_wire_pool *pool, struct xpu_wire_error *err)
{
	struct room room = { 0 };
	const __u8 *events_short = NULL, *short_at;
	const char *short_why;
	struct reader r = {
		.base = buf,
		.p = buf,
		.end = (const __u8 *)buf + len,
	};
	int ret;

	if (!limits)
		limits = &xpu_wire_default_limits;
	if (!events)
		max_events = 0;
	if (pool && pool->stack) {
		room.stack = pool->stack;
		room.stack_len = pool->stack_len;
		room.frames = pool->frames;
	}
	if (room.frames && pool->text) {
		room.text = pool->text;
		/* offsets into text are __u32, SYM_EMPTY excluded */
		room.text_len = pool->text_len < UINT32_MAX ? pool->text_len : UINT32_MAX;
	}
	if (!buf)
		r.base = r.p = r.end = (const __u8 *)"";
	r.max_depth = limits->max_depth < XPU_WIRE_DEPTH_MAX ? limits->max_depth :
							       XPU_WIRE_DEPTH_MAX;
	memset(batch, 0, sizeof(*batch));
	if (err) {
		err->offset = 0;
		err->reason = NULL;
	}

	if (len > limits->max_message)
		ret = fail(&r, r.p, "message larger than max_message");
	else
		ret = decode_batch(&r, limits, batch, events, max_events, &room, &events_short);
	if (ret) {
		if (err) {
			err->offset = (size_t)(r.fail_at - r.base);
			err->reason = r.reason;
		}
		return ret;
	}
	if (room.frames)
		resolve_frames(&room, events,
			       batch->n_events < max_events ? batch->n_events : max_events);
	if (events_short) {
		short_at = events_short;
		short_why = "events array too small";
	} else if (room.stack_short) {
		short_at = room.stack_short;
		short_why = "stack pool too small";
	} else if (room.text_short) {
		short_at = room.text_short;
		short_why = "text pool too small";
	} else {
		return 0;
	}
	if (err) {
		err->offset = (size_t)(short_at - r.base);
		err->reason = short_why;
	}
	return -ENOSPC;
}
