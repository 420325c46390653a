// SPDX-License-Identifier: MIT
/*
 * The wire decoder of common/wire.h: one message, one batch, into the caller's arrays.
 *
 * docs/wire.md is the specification. Built on the bounded reader of common/msgpack_reader.h
 * (every length checked against the bytes left before it is used, nothing allocated, unknown
 * values skipped without recursion). The event map's fields come from the table in
 * common/wire_fields.h, which the encoder (common/wire_enc.c) is generated from too: a key
 * finds its field through an index built once from the table, and the field's code is the
 * expansion of its type's DEC_* macro. The fields whose shape is not one scalar (links, grid
 * and block, name, nk with stack and frames, counters) have their readers here, as do the
 * batch map and its symbol table.
 */
#include "common/wire.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/msgpack_reader.h"
#include "common/wire_fields.h"

_Static_assert(XPU_WIRE_DEPTH_MAX == MP_READER_DEPTH_MAX,
	       "wire.h promises the reader's depth bound");

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

/*
 * Key -> field. A key of at most 8 bytes is one integer (its bytes, zero-padded) and its
 * length, so that "pid" and "pid\0" differ. The table's keys go into an index of 256 slots by
 * a multiplicative hash of the code; key_index__build() tries multipliers until no two keys
 * share a slot, so a key of ours is found by one load, a multiply and one comparison (the
 * switch this replaced took a similar binary search). Slots are open-addressed all the same,
 * so the index stays right should no multiplier separate some future set of keys. An empty
 * slot names the sentinel entry WIRE_F_COUNT, whose length no key has.
 */
#define KEY_SLOTS 256

struct key_code {
	__u64 code;
	__u64 bit; /* the field's bit in decode_event()'s seen keys; 0 for the sentinel */
	__u32 len;
	__u32 field; /* enum wire_field */
};

/* The table's keys, padded with zeros to 8 bytes. */
#define KEY_FITS(key, type, member, presence, check, kinds) \
	_Static_assert(sizeof(key) - 1 <= 8, "the wire key " key " is longer than 8 bytes");
XPU_WIRE_EVENT_FIELDS(KEY_FITS)
#undef KEY_FITS

static const struct {
	char key[8];
	__u32 len;
} field_keys[WIRE_F_COUNT] = {
#define KEY_ENTRY(key, type, member, presence, check, kinds) \
	[WIRE_F_##member] = { key, sizeof(key) - 1 },
	XPU_WIRE_EVENT_FIELDS(KEY_ENTRY)
#undef KEY_ENTRY
};

static struct key_code key_codes[WIRE_F_COUNT + 1];
static __u8 key_slot[KEY_SLOTS]; /* enum wire_field; WIRE_F_COUNT: empty */
static __u64 key_mult;
static pthread_once_t key_index_once = PTHREAD_ONCE_INIT;

_Static_assert(WIRE_F_COUNT < KEY_SLOTS && WIRE_F_COUNT <= UINT8_MAX,
	       "the key index has room for every field and a free slot");

/* The code alone: keys that differ only in length ("pid", "pid\0") share a slot, which the
 * comparison of lengths tells apart; no two keys of the table do. */
static __u32 key_hash(__u64 code, __u64 mult)
{
	return (__u32)((code * mult) >> 56);
}

/* Lay the keys out with mult; true if no two wanted the same slot. */
static bool key_index__place(__u64 mult)
{
	bool perfect = true;
	__u32 f, i;

	memset(key_slot, WIRE_F_COUNT, sizeof(key_slot));
	for (f = 0; f < WIRE_F_COUNT; f++) {
		for (i = key_hash(key_codes[f].code, mult); key_slot[i] != WIRE_F_COUNT;
		     i = (i + 1) & (KEY_SLOTS - 1))
			perfect = false;
		key_slot[i] = (__u8)f;
	}
	key_mult = mult;
	return perfect;
}

/* Run once through pthread_once(), whose return orders these stores before every decoder's
 * reads of the index. Today's 37 keys take 20 tries; the last try stands if none is perfect. */
static void key_index__build(void)
{
	__u64 mult = 0x9e3779b97f4a7c15ull;
	__u32 f, tries;

	for (f = 0; f < WIRE_F_COUNT; f++) {
		memcpy(&key_codes[f].code, field_keys[f].key, 8);
		key_codes[f].bit = 1ull << f;
		key_codes[f].len = field_keys[f].len;
		key_codes[f].field = f;
	}
	key_codes[WIRE_F_COUNT] = (struct key_code){ 0, 0, UINT32_MAX, WIRE_F_COUNT };
	for (tries = 0; tries < 4096 && !key_index__place(mult); tries++)
		mult += 0x2545f4914f6cdd1eull; /* stays odd */
}

/* room: how many bytes may be read from s (to the end of the message), at least len. The
 * key's entry; the sentinel (field WIRE_F_COUNT, bit 0) for a key that is not ours. */
static const struct key_code *event_field(const __u8 *s, __u32 len, size_t room)
{
	/* the low len bytes of 8: a table, not a shift, because len may be 0 or 8 */
	static const __u64 masks[9] = {
		0,
		0xff,
		0xffff,
		0xffffff,
		0xffffffff,
		0xffffffffffull,
		0xffffffffffffull,
		0xffffffffffffffull,
		~0ull,
	};
	__u64 code = 0;
	__u32 i;

	if (len > 8)
		return &key_codes[WIRE_F_COUNT];
	if (room >= 8) {
		/* one load instead of a loop whose length changes from key to key (and
		 * mispredicts); the key's value follows it, so 8 bytes are nearly always there */
		memcpy(&code, s, 8);
		code &= masks[len];
	} else {
		for (i = 0; i < len; i++)
			code |= (__u64)s[i] << (8 * i);
	}
	for (i = key_hash(code, key_mult);; i = (i + 1) & (KEY_SLOTS - 1)) {
		const struct key_code *k = &key_codes[key_slot[i]];

		if ((k->code == code && k->len == len) || k->field == WIRE_F_COUNT)
			return k;
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

/* An array's header at depth: *n elements follow. */
static int read_array_at(struct mp_reader *r, __u32 depth, __u32 *n, const char *not_array)
{
	const __u8 *at = r->p;
	int ret;

	ret = mp_reader__array(r, n, not_array);
	if (!ret)
		ret = mp_reader__enter(r, at, depth);
	return ret;
}

/* An event's list of 1..max elements (links, counters). */
static int read_list(struct mp_reader *r, __u32 max, __u32 *n, const char *not_array,
		     const char *empty, const char *too_many)
{
	const __u8 *at = r->p;
	int ret;

	ret = read_array_at(r, DEPTH_FIELD, n, not_array);
	if (!ret && *n == 0)
		ret = mp_reader__fail(r, at, empty);
	if (!ret && *n > max)
		ret = mp_reader__fail(r, at, too_many);
	return ret;
}

/* A list element's [a, b] pair header: the two values follow. */
static int read_pair(struct mp_reader *r, const char *not_pair)
{
	const __u8 *at = r->p;
	__u32 n;
	int ret;

	ret = read_array_at(r, DEPTH_LINK, &n, not_pair);
	if (!ret && n != 2)
		ret = mp_reader__fail(r, at, not_pair);
	return ret;
}

static int read_triple(struct mp_reader *r, __s32 out[3], const char *not_triple)
{
	const __u8 *at = r->p;
	__u32 n, i;
	int ret;

	ret = read_array_at(r, DEPTH_FIELD, &n, not_triple);
	if (!ret && n != 3)
		ret = mp_reader__fail(r, at, not_triple);
	for (i = 0; !ret && i < 3; i++)
		ret = mp_reader__s32(r, &out[i]);
	return ret;
}

static int read_links(struct mp_reader *r, struct xpu_cevent *ev)
{
	const __u8 *at;
	__u32 n, i;
	__u64 type;
	int ret;

	ret = read_list(r, XPU_WIRE_LINKS_MAX, &n, "links is not an array", "empty links array",
			"too many links");
	for (i = 0; !ret && i < n; i++) {
		ret = read_pair(r, "link is not a [type, target] pair");
		at = r->p;
		if (!ret)
			ret = mp_reader__u64(r, &type);
		if (!ret && (type == 0 || type >= XPU_LINK_TYPE_MAX))
			ret = mp_reader__fail(r, at, "unknown link type");
		if (!ret)
			ret = mp_reader__u64(r, &ev->links[i].target);
		if (!ret)
			ev->links[i].type = (__u32)type;
	}
	if (!ret)
		ev->n_links = n;
	return ret;
}

/* [[name, delta], ...]: names point into the message, as the event's name does. */
static int read_counters(struct mp_reader *r, struct xpu_cevent *ev)
{
	const __u8 *at, *s;
	__u32 n, i;
	int ret;

	ret = read_list(r, XPU_WIRE_COUNTERS_MAX, &n, "counters is not an array",
			"empty counters array", "too many counters");
	for (i = 0; !ret && i < n; i++) {
		struct xpu_wire_counter *c = &ev->counters[i];

		ret = read_pair(r, "counter is not a [name, delta] pair");
		at = r->p;
		if (!ret)
			ret = mp_reader__str(r, &s, &c->name_len, "counter name is not a string");
		if (!ret && !c->name_len)
			ret = mp_reader__fail(r, at, "empty counter name");
		if (!ret && c->name_len > XPU_WIRE_COUNTER_NAME_MAX)
			ret = mp_reader__fail(r, at,
					      "counter name longer than XPU_WIRE_COUNTER_NAME_MAX");
		at = r->p;
		if (!ret)
			ret = mp_reader__float(r, &c->delta);
		if (!ret && !wire_delta__valid(c->delta))
			ret = mp_reader__fail(r, at, "counter delta negative or not finite");
		if (!ret)
			c->name = (const char *)s;
	}
	if (!ret)
		ev->n_counters = n;
	return ret;
}

/* Frames go to the pool while it has room; after that they are still read and checked, so
 * that -ENOSPC is only ever said of a batch that is otherwise valid. decode_event() moves
 * stack_used on once the event is read: its names go beside the frames. */
static int read_stack(struct mp_reader *r, struct room *room, struct xpu_cevent *ev, __u32 *len)
{
	const __u8 *at = r->p;
	__u64 *dst = NULL, frame;
	__u32 n, i;
	int ret;

	ret = read_array_at(r, DEPTH_FIELD, &n, "stack is not an array");
	if (ret)
		return ret;
	if (n > XPU_WIRE_STACK_MAX)
		return mp_reader__fail(r, at, "stack longer than XPU_WIRE_STACK_MAX");
	if (n && room->stack_len - room->stack_used >= n)
		dst = room->stack + room->stack_used;
	else if (n && !room->stack_short)
		room->stack_short = at;
	for (i = 0; i < n; i++) {
		ret = mp_reader__u64(r, &frame);
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
static int read_frames(struct mp_reader *r, struct room *room, const char ***dst, __u32 *len)
{
	const __u8 *at = r->p;
	const char **out = NULL;
	__u32 n, i, v;
	int ret;

	ret = read_array_at(r, DEPTH_FIELD, &n, "frames is not an array");
	if (ret)
		return ret;
	if (n > XPU_WIRE_STACK_MAX)
		return mp_reader__fail(r, at, "frames longer than XPU_WIRE_STACK_MAX");
	if (n && room->frames && room->stack_len - room->stack_used >= n)
		out = room->frames + room->stack_used;
	for (i = 0; i < n; i++) {
		const __u8 *idx_at = r->p;
		__u8 b;

		if (!mp_reader__left(r))
			return mp_reader__fail(r, idx_at, "truncated");
		b = *idx_at;
		if (b == 0xc0) {
			r->p++;
			if (out)
				out[i] = NULL;
			continue;
		}
		if (!(b <= 0x7f || b >= 0xe0 || (b >= 0xcc && b <= 0xd3)))
			return mp_reader__fail(r, idx_at, "frame name is not an index or nil");
		ret = mp_reader__u32(r, &v);
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

/*
 * What each type of the table does with its field's value (wire_fields.h). These refer to
 * decode_event()'s locals by name: r, ev, at (where the value starts), v and d (scratch),
 * ret, and for the hand-written types room, the stack's and frames' lengths and positions.
 * A failed check says why with WHY_<check>.
 */
#define WHY_NONE(key, v) "invalid value"
#define WHY_KIND(key, v) ((v) == XPU_REC_PAD ? "kind PAD is not an event" : "unknown kind")
#define WHY_CORR_TYPE(key, v) "unknown correlation type"
#define WHY_CONFIDENCE(key, v) "confidence outside 0..1"
#define WHY_DELTA(key, v) key " negative or not finite"

#define READ_UINT(r, p)                  \
	_Generic(*(p), __u16             \
		 : mp_reader__u16, __u32 \
		 : mp_reader__u32, __u64 \
		 : mp_reader__u64)((r), (p))

/* the member's width bounds it */
#define DEC_UINT(key, m, check)                 \
	ret = READ_UINT(r, &ev->m);             \
	if (!ret && !WIRE_VALID_##check(ev->m)) \
		ret = mp_reader__fail(r, at, WHY_##check(key, ev->m));
/* the check bounds it, whatever the member's width */
#define DEC_ENUM(key, m, check)                                    \
	ret = mp_reader__u64(r, &v);                               \
	if (!ret && !WIRE_VALID_##check(v))                        \
		ret = mp_reader__fail(r, at, WHY_##check(key, v)); \
	ev->m = v;
#define DEC_FLOAT(key, m, check)                                   \
	ret = mp_reader__float(r, &d);                             \
	if (!ret && !WIRE_VALID_##check(d))                        \
		ret = mp_reader__fail(r, at, WHY_##check(key, d)); \
	if (!ret)                                                  \
		ev->m = d;
#define DEC_LINKS(key, m, check) ret = read_links(r, ev);
#define DEC_TRIPLE(key, m, check) ret = read_triple(r, ev->m, key " is not 3 integers");
#define DEC_NAME(key, m, check) ret = read_name(r, ev);
#define DEC_NK(key, m, check) \
	nk_at = at;           \
	ret = mp_reader__u64(r, &nk);
#define DEC_STACK(key, m, check) ret = read_stack(r, room, ev, &stack_len);
#define DEC_FRAMES(key, m, check) \
	frames_at = at;           \
	ret = read_frames(r, room, &frames, &frames_len);
#define DEC_COUNTERS(key, m, check) ret = read_counters(r, ev);

#define DEC_CASE(key, type, member, presence, check, kinds) \
	case WIRE_F_##member:                               \
		DEC_##type(key, member, check) break;

#define DEC_IS_REQ_REQ 1
#define DEC_IS_REQ_OPT 0
#define DEC_REQUIRED(key, type, member, presence, check, kinds)         \
	if (DEC_IS_REQ_##presence && !(seen & 1ull << WIRE_F_##member)) \
		return mp_reader__fail(r, start, "missing required key " key);

static int read_name(struct mp_reader *r, struct xpu_cevent *ev)
{
	const __u8 *at = r->p, *s;
	int ret;

	ret = mp_reader__str(r, &s, &ev->name_len, "name is not a string");
	if (!ret && ev->name_len > XPU_STRING_MAX)
		ret = mp_reader__fail(r, at, "name longer than XPU_STRING_MAX");
	if (!ret)
		ev->name = (const char *)s;
	return ret;
}

/* Flattened: the readers it calls per key are inlined into the one loop, which took a GPU
 * kernel event with a 20-frame stack from 260 ns to 200 ns. */
__attribute__((flatten)) static int decode_event(struct mp_reader *r, struct room *room,
						 struct xpu_cevent *ev)
{
	const __u8 *start = r->p, *nk_at = NULL, *frames_at = NULL;
	const char **frames = NULL;
	__u32 n, i, stack_len = 0, frames_len = 0;
	__u64 seen = 0, v = 0, nk = 0;
	double d;
	int ret;

	ret = mp_reader__map(r, &n, "event is not a map");
	if (!ret)
		ret = mp_reader__enter(r, start, DEPTH_EVENT);
	if (ret)
		return ret;
	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < n; i++) {
		const __u8 *key_at = r->p, *key, *at;
		const struct key_code *k;
		__u32 len;

		ret = mp_reader__str(r, &key, &len, "event key is not a string");
		if (ret)
			return ret;
		k = event_field(key, len, (size_t)(r->end - key));
		if (seen & k->bit) /* 0 for unknown keys, which may repeat */
			return mp_reader__fail(r, key_at, "duplicate key");
		seen |= k->bit;
		at = r->p;
		switch ((enum wire_field)k->field) {
			XPU_WIRE_EVENT_FIELDS(DEC_CASE)
		case WIRE_F_COUNT:
			/* a key from a newer minor revision of the format */
			ret = mp_reader__skip(r, DEPTH_FIELD);
			break;
		}
		if (ret)
			return ret;
	}
	XPU_WIRE_EVENT_FIELDS(DEC_REQUIRED)
	/* nk may come before or after stack, so it is checked once both are known */
	if (nk > stack_len)
		return mp_reader__fail(r, nk_at, "nk greater than the stack length");
	if (frames_at && frames_len != stack_len)
		return mp_reader__fail(r, frames_at, "frames and stack differ in length");
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
	B_HOST, /* the origin's keys (docs/wire.md, "Origin") */
	B_SESSION,
	B_CLOCK,
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
	if (len == 4 && !memcmp(s, "host", 4))
		return B_HOST;
	if (len == 7 && !memcmp(s, "session", 7))
		return B_SESSION;
	if (len == 5 && !memcmp(s, "clock", 5))
		return B_CLOCK;
	return B_UNKNOWN;
}

/* "host": a str of 1..XPU_WIRE_HOST_MAX printable bytes, pointing into the message. */
static int read_host(struct mp_reader *r, struct xpu_wire_origin *o)
{
	const __u8 *at = r->p, *s;
	__u32 len;
	int ret;

	ret = mp_reader__str(r, &s, &len, "host is not a string");
	if (ret)
		return ret;
	if (!xpu_wire_origin__valid_host((const char *)s, len))
		return mp_reader__fail(
			r, at, "host empty, longer than XPU_WIRE_HOST_MAX or not printable");
	o->host = (const char *)s;
	o->host_len = len;
	return 0;
}

/* "clock": [monotonic ns, realtime ns]. */
static int read_clock(struct mp_reader *r, struct xpu_wire_origin *o)
{
	const __u8 *at = r->p;
	__u32 n;
	int ret;

	ret = mp_reader__array(r, &n, "clock is not a [monotonic, realtime] pair");
	if (!ret)
		ret = mp_reader__enter(r, at, DEPTH_EVENTS);
	if (!ret && n != 2)
		ret = mp_reader__fail(r, at, "clock is not a [monotonic, realtime] pair");
	if (!ret)
		ret = mp_reader__u64(r, &o->clock_mono_ns);
	if (!ret)
		ret = mp_reader__u64(r, &o->clock_real_ns);
	return ret;
}

/*
 * The batch's symbol table: every name checked, and, when names are wanted, its index
 * (4-byte aligned) then the names copied NUL-terminated into text while there is room. An
 * empty name is no name: it takes no text.
 */
static int read_symbols(struct mp_reader *r, struct room *room)
{
	const __u8 *at = r->p, *s;
	__u32 n, i, len;
	size_t pad;
	int ret;

	ret = read_array_at(r, DEPTH_EVENTS, &n, "symbols is not an array");
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

		ret = mp_reader__str(r, &s, &len, "symbol is not a string");
		if (ret)
			return ret;
		if (len > XPU_WIRE_FRAME_NAME_MAX)
			return mp_reader__fail(r, sym,
					       "symbol longer than XPU_WIRE_FRAME_NAME_MAX");
		if (memchr(s, 0, len))
			return mp_reader__fail(r, sym, "symbol holds a NUL byte");
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

static int read_version(struct mp_reader *r, __u32 *version)
{
	const __u8 *at = r->p;
	__u64 v = 0;
	int ret;

	ret = mp_reader__u64(r, &v);
	if (!ret && v != XPU_WIRE_VERSION)
		ret = mp_reader__fail(r, at, "unsupported version");
	*version = (__u32)v;
	return ret;
}

/*
 * Our encoder writes "v" first. When another writer puts it later, look for it before
 * reading any event: the events of another version may not parse as ours, and "unsupported
 * version" is the error that helps. Reads a copy of the cursor; only a failure (its reason
 * and place) is copied back.
 */
static int find_version(struct mp_reader *main_r, __u32 n)
{
	struct mp_reader r = *main_r;
	__u32 i, version, len;
	const __u8 *key;
	int ret = 0;

	for (i = 0; !ret && i < n; i++) {
		ret = mp_reader__str(&r, &key, &len, "batch key is not a string");
		if (!ret && batch_key(key, len) == B_V) {
			ret = read_version(&r, &version);
			break;
		}
		if (!ret)
			ret = mp_reader__skip(&r, DEPTH_EVENTS);
	}
	if (ret) {
		main_r->reason = r.reason;
		main_r->fail_at = r.fail_at;
	}
	return ret; /* no "v" at all: the main pass reports the missing key */
}

static int decode_batch(struct mp_reader *r, const struct xpu_wire_limits *limits,
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
	__u64 v = 0;
	int ret;

	ret = mp_reader__map(r, &n, "batch is not a map");
	if (!ret)
		ret = mp_reader__enter(r, start, DEPTH_BATCH);
	if (ret)
		return ret;
	if (n && (mp_reader__left(r) < 2 || r->p[0] != 0xa1 || r->p[1] != 'v')) {
		ret = find_version(r, n);
		if (ret)
			return ret;
	}
	for (i = 0; i < n; i++) {
		const __u8 *key_at = r->p, *key, *at;
		enum batch_key k;
		__u32 len;

		ret = mp_reader__str(r, &key, &len, "batch key is not a string");
		if (ret)
			return ret;
		k = batch_key(key, len);
		if (k == B_UNKNOWN) {
			ret = mp_reader__skip(r, DEPTH_EVENTS);
			if (ret)
				return ret;
			continue;
		}
		if (seen & 1u << k)
			return mp_reader__fail(r, key_at, "duplicate key");
		seen |= 1u << k;
		at = r->p;
		switch (k) {
		case B_V:
			ret = read_version(r, &batch->version);
			break;
		case B_PRODUCER:
			ret = mp_reader__u32(r, &batch->producer);
			break;
		case B_SEQ:
			ret = mp_reader__u64(r, &v);
			batch->seq = v;
			break;
		case B_EVENTS:
			ret = mp_reader__array(r, &batch->n_events, "events is not an array");
			if (!ret)
				ret = mp_reader__enter(r, at, DEPTH_EVENTS);
			if (!ret && batch->n_events > limits->max_events)
				ret = mp_reader__fail(r, at, "too many events");
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
		case B_HOST:
			ret = read_host(r, &batch->origin);
			break;
		case B_SESSION:
			ret = mp_reader__u64(r, &batch->origin.session);
			break;
		case B_CLOCK:
			ret = read_clock(r, &batch->origin);
			break;
		case B_UNKNOWN:
			break;
		}
		if (ret)
			return ret;
	}
	if (r->p != r->end)
		return mp_reader__fail(r, r->p, "trailing bytes after the batch");
	for (i = 0; i < B_REQUIRED; i++) {
		if (!(seen & 1u << i))
			return mp_reader__fail(r, start, missing[i]);
	}
	/* the table may come before or after the events: indices are checked once both are read */
	if (room->max_idx_at && room->max_idx >= room->n_syms)
		return mp_reader__fail(r, room->max_idx_at,
				       "frame name index past the symbol table");
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
	struct mp_reader r;
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
	mp_reader__init(&r, buf, len, limits->max_depth);
	pthread_once(&key_index_once, key_index__build);
	memset(batch, 0, sizeof(*batch));
	if (err) {
		err->offset = 0;
		err->reason = NULL;
	}

	if (len > limits->max_message)
		ret = mp_reader__fail(&r, r.p, "message larger than max_message");
	else
		ret = decode_batch(&r, limits, batch, events, max_events, &room, &events_short);
	if (ret) {
		if (err) {
			err->offset = mp_reader__offset(&r);
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
