// SPDX-License-Identifier: MIT
/*
 * The wire encoder of common/wire.h: batches of correlated events as MessagePack.
 *
 * docs/wire.md is the specification. msgpack-c's packer writes into an sbuffer that is reused
 * across batches. The event map's fields come from the table in common/wire_fields.h, which
 * the decoder (common/wire_dec.c) is generated from too; the fields whose shape is not one
 * scalar (links, grid and block, name, stack and frames, counters) have their pack functions
 * here, and the batch's frame-name table (the symbols) is all here.
 */
#include "common/wire.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack/pack.h>
#include <msgpack/sbuffer.h>

#include "common/mix.h"
#include "common/wire_fields.h"

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

/*
 * add()'s packer writes through a cursor of its own, on add()'s stack: a store through the
 * buffer's char pointer may alias the sbuffer's size field as far as the compiler knows, so
 * with write_reserved it loaded and stored the size around every 1..9-byte write; a local
 * whose address never leaves add() stays in a register. add() sets the size once, at the end.
 */
struct cursor {
	char *p;
};

static inline int write_cursor(void *data, const char *buf, size_t len)
{
	struct cursor *c = data;

	memcpy(c->p, buf, len);
	c->p += len;
	return 0;
}

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

/* A field's check (wire_fields.h): the decoder would reject what fails it. */
#define ENC_VALID(key, type, member, presence, check, kinds) \
	if (!WIRE_VALID_##check(ev->member))                 \
		return false;

/* What the format cannot carry: the decoder would reject it, so the encoder refuses it. The
 * table's checks first, then the counts and lengths of the fields with hand-written code. */
static bool cevent__encodable(const struct xpu_cevent *ev)
{
	__u32 i;

	XPU_WIRE_EVENT_FIELDS(ENC_VALID)
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
	if (ev->n_counters > XPU_WIRE_COUNTERS_MAX)
		return false;
	for (i = 0; i < ev->n_counters; i++) {
		const struct xpu_wire_counter *c = &ev->counters[i];

		if (!c->name || !c->name_len || c->name_len > XPU_WIRE_COUNTER_NAME_MAX ||
		    !wire_delta__valid(c->delta))
			return false;
	}
	return true;
}

static bool triple__zero(const __s32 v[3])
{
	return !(v[0] | v[1] | v[2]);
}

/*
 * The most an event can take besides its names and its frames, from the table: a map16 header
 * (3), and per field its key with its fixstr header (sizeof the literal) and its value at its
 * widest encoding (EVENT_MAX_*: a scalar's tag and bytes; links, grid and block whole; the
 * name's str16 header; the stack's and frames' array16 headers; 4 counters without their
 * names' bytes). About 520 bytes. A frame takes 9 bytes in the stack and 5 in frames at most.
 * add() asserts the bound; wire_test's biggest event, every field at its maximum, checks it.
 */
#define EVENT_MEMBER_SIZE(m) sizeof(((const struct xpu_cevent *)0)->m)
#define EVENT_MAX_UINT(m) (1 + EVENT_MEMBER_SIZE(m))
#define EVENT_MAX_ENUM(m) (1 + EVENT_MEMBER_SIZE(m))
#define EVENT_MAX_FLOAT(m) (1 + EVENT_MEMBER_SIZE(m))
#define EVENT_MAX_LINKS(m) (1 + XPU_WIRE_LINKS_MAX * (1 + 5 + 9))
#define EVENT_MAX_TRIPLE(m) (1 + 3 * 5)
#define EVENT_MAX_NAME(m) 3
#define EVENT_MAX_NK(m) 3
#define EVENT_MAX_STACK(m) 3
#define EVENT_MAX_FRAMES(m) 3
#define EVENT_MAX_COUNTERS(m) (1 + XPU_WIRE_COUNTERS_MAX * (1 + 3 + 9))
#define EVENT_MAX_FIELD(key, type, member, presence, check, kinds) \
	+sizeof(key) + EVENT_MAX_##type(member)
#define EVENT_FIXED_MAX (3 XPU_WIRE_EVENT_FIELDS(EVENT_MAX_FIELD))

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
 * The event's fields, from the table in wire_fields.h. Each type says when an OPT field is
 * written (ENC_NONZERO_*) and how (ENC_PACK_*); these refer to add()'s locals by name: ev,
 * pk, and for frames named and idx. The table is expanded twice, once to count the map's
 * entries and once to write them, so the two can never disagree; the expansion is code, not
 * a loop over data, so each field compiles to a test and a store or two as hand-written code
 * would.
 */
#define PACK_UINT(pk, v)                      \
	_Generic((v), __u16                   \
		 : msgpack_pack_uint16, __u32 \
		 : msgpack_pack_uint32, __u64 \
		 : msgpack_pack_uint64)((pk), (v))
#define PACK_FLOAT(pk, v) \
	_Generic((v), float : msgpack_pack_float, double : msgpack_pack_double)((pk), (v))

#define ENC_NONZERO_UINT(m) (ev->m != 0)
#define ENC_NONZERO_ENUM(m) (ev->m != 0)
#define ENC_NONZERO_FLOAT(m) (ev->m != 0) /* -0.0 too is absent; a float compared as a float */
#define ENC_NONZERO_LINKS(m) (ev->n_links != 0)
#define ENC_NONZERO_TRIPLE(m) (!triple__zero(ev->m))
#define ENC_NONZERO_NAME(m) (ev->name_len != 0)
#define ENC_NONZERO_NK(m) (ev->n_kernel != 0)
#define ENC_NONZERO_STACK(m) (ev->n_kernel + ev->n_user != 0)
#define ENC_NONZERO_FRAMES(m) (named != 0)
#define ENC_NONZERO_COUNTERS(m) (ev->n_counters != 0)

#define ENC_PACK_UINT(m) PACK_UINT(&pk, ev->m)
#define ENC_PACK_ENUM(m) PACK_UINT(&pk, ev->m)
#define ENC_PACK_FLOAT(m) PACK_FLOAT(&pk, ev->m)
#define ENC_PACK_LINKS(m) pack_links(&pk, ev)
#define ENC_PACK_TRIPLE(m) pack_triple(&pk, ev->m)
#define ENC_PACK_NAME(m) msgpack_pack_str_with_body(&pk, ev->name, ev->name_len)
#define ENC_PACK_NK(m) PACK_UINT(&pk, ev->n_kernel)
#define ENC_PACK_STACK(m) pack_stack(&pk, ev)
#define ENC_PACK_FRAMES(m) pack_frames(&pk, ev, idx)
#define ENC_PACK_COUNTERS(m) pack_counters(&pk, ev)

#define ENC_PRESENT_REQ(type, m) 1
#define ENC_PRESENT_OPT(type, m) ENC_NONZERO_##type(m)

#define ENC_COUNT(key, type, member, presence, check, kinds) \
	+(ENC_PRESENT_##presence(type, member) ? 1u : 0u)
#define ENC_WRITE(key, type, member, presence, check, kinds) \
	if (ENC_PRESENT_##presence(type, member)) {          \
		PACK_KEY(&pk, key);                          \
		ENC_PACK_##type(member);                     \
	}

__attribute__((flatten)) int xpu_wire_enc__add(struct xpu_wire_enc *enc,
					       const struct xpu_cevent *ev)
{
	__u32 entries, idx[XPU_WIRE_STACK_MAX];
	struct cursor cur;
	msgpack_packer pk;
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

	cur.p = enc->sbuf.data + enc->sbuf.size;
	msgpack_packer_init(&pk, &cur, write_cursor);
	entries = 0 XPU_WIRE_EVENT_FIELDS(ENC_COUNT);
	msgpack_pack_map(&pk, entries);
	XPU_WIRE_EVENT_FIELDS(ENC_WRITE)
	assert((size_t)(cur.p - enc->sbuf.data) - enc->sbuf.size <= event_bound(ev));
	enc->sbuf.size = (size_t)(cur.p - enc->sbuf.data);
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

/* ---- the origin keys a publish sink adds (docs/wire.md, "Origin") ---- */

bool xpu_wire_origin__valid_host(const char *host, size_t len)
{
	size_t i;

	if (!host || !len || len > XPU_WIRE_HOST_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (host[i] < 0x21 || host[i] > 0x7e)
			return false;
	return true;
}

/* The keys' bytes: "host" (fixstr 4) and its str8 at most, "session" (fixstr 7) and a uint64,
 * "clock" (fixstr 5), a fixarray of 2 and two uint64. */
#define ORIGIN_HOST_BOUND(len) (5 + 2 + (size_t)(len))
#define ORIGIN_SESSION_BOUND (8 + 9)
#define ORIGIN_CLOCK_BOUND (6 + 1 + 2 * 9)
#define ORIGIN_HEADER_GROWTH 2 /* fixmap to map16, or map16 to map32 */

size_t xpu_wire_origin__bound(const struct xpu_wire_origin *o)
{
	return ORIGIN_HEADER_GROWTH + (o->host ? ORIGIN_HOST_BOUND(o->host_len) : 0) +
	       ORIGIN_SESSION_BOUND + ORIGIN_CLOCK_BOUND;
}

struct fixed_buf {
	char *p;
	size_t left;
};

/* msgpack-c's write callback into a buffer already known to be large enough. */
static int write_fixed(void *data, const char *buf, size_t len)
{
	struct fixed_buf *f = data;

	assert(len <= f->left);
	memcpy(f->p, buf, len);
	f->p += len;
	f->left -= len;
	return 0;
}

static void pack_key(msgpack_packer *pk, const char *key)
{
	msgpack_pack_str(pk, strlen(key));
	msgpack_pack_str_body(pk, key, strlen(key));
}

int xpu_wire_origin__add(const void *msg, size_t len, const struct xpu_wire_origin *o, void *out,
			 size_t room, size_t *out_len)
{
	const __u8 *m = msg;
	struct fixed_buf f = { .p = out };
	msgpack_packer pk;
	size_t hdr;
	__u32 n, more = 0;

	if (o->host && !xpu_wire_origin__valid_host(o->host, o->host_len))
		return -EINVAL;
	if (len >= 1 && (m[0] & 0xf0) == 0x80) {
		n = m[0] & 0x0f;
		hdr = 1;
	} else if (len >= 3 && m[0] == 0xde) {
		n = (__u32)m[1] << 8 | m[2];
		hdr = 3;
	} else if (len >= 5 && m[0] == 0xdf) {
		n = (__u32)m[1] << 24 | (__u32)m[2] << 16 | (__u32)m[3] << 8 | m[4];
		hdr = 5;
	} else {
		return -EINVAL;
	}
	more = (o->host ? 1 : 0) + (o->session ? 1 : 0) +
	       (o->clock_mono_ns || o->clock_real_ns ? 1 : 0);
	if (n > UINT32_MAX - more)
		return -EINVAL;
	if (room < len + xpu_wire_origin__bound(o))
		return -ENOSPC;
	f.left = room;
	msgpack_packer_init(&pk, &f, write_fixed);
	msgpack_pack_map(&pk, n + more); /* the smallest header for the new count */
	write_fixed(&f, (const char *)m + hdr, len - hdr);
	if (o->host) {
		pack_key(&pk, "host");
		msgpack_pack_str(&pk, o->host_len);
		msgpack_pack_str_body(&pk, o->host, o->host_len);
	}
	if (o->session) {
		pack_key(&pk, "session");
		msgpack_pack_uint64(&pk, o->session);
	}
	if (o->clock_mono_ns || o->clock_real_ns) {
		pack_key(&pk, "clock");
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint64(&pk, o->clock_mono_ns);
		msgpack_pack_uint64(&pk, o->clock_real_ns);
	}
	*out_len = room - f.left;
	return 0;
}
