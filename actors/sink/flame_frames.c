// SPDX-License-Identifier: MIT
/* What xpusup's flame graphs call a frame (flame_frames.h), shared by the folded and pprof
 * formats. */
#include "actors/sink/flame_frames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/mix.h"
#include "xpusup/event.h"

struct flame_name_slot {
	__u64 hash;
	char *s; /* NULL: free */
};

struct flame_comm {
	__u32 pid; /* 0: empty */
	char name[FLAME_COMM_MAX + 1];
};

/* A range begin (PUSH or START) as the correlator sent it. Ids are unique per producer (a
 * correlator shard), so (producer, id) names a range. */
struct flame_range {
	__u64 id; /* 0: a free slot */
	__u64 parent_id; /* the range it was pushed inside, 0: outermost */
	__u32 producer;
	__u32 next; /* the next in its hash chain: index + 1, 0: none */
	const char *
		frame; /* "[range] NAME", sanitised, interned (struct flame_names); NULL: no room */
	__u32 added; /* ranges.added when it came: the ring forgets in this order */
	/* flame_scopes__of's answer for this range, kept (scope_n > 0) while it stays true: while no
	 * range of its chain is forgotten (the oldest of them came at scope_oldest) and, for a
	 * chain that ended at a parent not (or no longer) known, while no range was added
	 * (scope_at: ranges.added then); scope_open says it ended so */
	__u32 scope_oldest, scope_at;
	__u8 scope_n; /* the chain's ranges, 0: nothing kept */
	bool scope_open;
	const char *scope;
};

static struct flame_comm *comm_slot(struct flame_comms *t, __u32 pid, bool create)
{
	__u32 mask = 2 * FLAME_COMMS_MAX - 1, i = (__u32)xpu_mix64(pid) & mask;

	for (;; i = (i + 1) & mask) {
		if (t->slot[i].pid == pid)
			return &t->slot[i];
		if (!t->slot[i].pid) {
			if (!create || t->n >= FLAME_COMMS_MAX)
				return NULL;
			t->n++;
			t->slot[i].pid = pid;
			return &t->slot[i];
		}
	}
}

void flame_comms__learn(struct flame_comms *t, const struct xpu_cevent *ev)
{
	struct flame_comm *c;
	__u32 n = ev->name_len < FLAME_COMM_MAX ? ev->name_len : FLAME_COMM_MAX;

	if (!ev->pid || !n || !(c = comm_slot(t, ev->pid, true)))
		return;
	memcpy(c->name, ev->name, n);
	c->name[n] = 0;
}

static __u64 name_hash(const char *s, size_t n)
{
	return xpu_hash_bytes(s, n);
}

const char *flame_names__intern(struct flame_names *t, const char *name)
{
	size_t n = strlen(name);
	__u64 h = name_hash(name, n);
	struct flame_name_slot *slot;
	__u32 i;

	/* a name kept is found even when the table is full: only new ones are refused */
	for (i = (__u32)h & t->mask; t->slot && t->slot[i].s; i = (i + 1) & t->mask)
		if (t->slot[i].hash == h && !strcmp(t->slot[i].s, name))
			return t->slot[i].s;
	if (t->n >= (t->max ? t->max : FLAME_NAMES_MAX) ||
	    t->bytes + n + 1 > (t->max_bytes ? t->max_bytes : FLAME_NAMES_BYTES_MAX))
		return NULL;
	if (2 * (t->n + 1) > t->mask + 1) {
		struct flame_name_slot *old = t->slot, *grown;
		__u32 old_cap = old ? t->mask + 1 : 0, cap = old_cap ? 2 * old_cap : 1024, j;

		if (!(grown = calloc(cap, sizeof(*grown))))
			return NULL;
		for (j = 0; j < old_cap; j++) {
			if (!old[j].s)
				continue;
			for (i = (__u32)old[j].hash & (cap - 1); grown[i].s;
			     i = (i + 1) & (cap - 1))
				;
			grown[i] = old[j];
		}
		free(old);
		t->slot = grown;
		t->mask = cap - 1;
	}
	for (i = (__u32)h & t->mask; t->slot[i].s; i = (i + 1) & t->mask)
		;
	slot = &t->slot[i];
	slot->s = strdup(name);
	if (!slot->s)
		return NULL;
	slot->hash = h;
	t->n++;
	t->bytes += n + 1;
	return slot->s;
}

void flame_names__free(struct flame_names *t)
{
	__u32 i;

	for (i = 0; t->slot && i <= t->mask; i++)
		free(t->slot[i].s);
	free(t->slot);
	t->slot = NULL;
	t->mask = t->n = 0;
	t->bytes = 0;
}

static __u64 range_hash(__u32 producer, __u64 id)
{
	return xpu_mix64(id ^ ((__u64)producer << 48));
}

/* the chain's bucket: the hash's low bits; the filter's bit: its high bits */
static __u32 range_bucket(__u32 producer, __u64 id)
{
	return (__u32)range_hash(producer, id) & (FLAME_RANGES_MAX - 1);
}

static void filter_set(struct flame_ranges *t, __u64 h)
{
	__u32 bit = (__u32)(h >> 44) & (FLAME_RANGES_FILTER_BITS - 1);

	t->filter[bit / 64] |= 1ull << (bit % 64);
}

static struct flame_range *ranges__find(struct flame_ranges *t, __u32 producer, __u64 id)
{
	__u64 h = range_hash(producer, id);
	__u32 bit = (__u32)(h >> 44) & (FLAME_RANGES_FILTER_BITS - 1), i;

	if (!(t->filter[bit / 64] & 1ull << (bit % 64)))
		return NULL;
	for (i = t->bucket[(__u32)h & (FLAME_RANGES_MAX - 1)]; i; i = t->e[i - 1].next)
		if (t->e[i - 1].id == id && t->e[i - 1].producer == producer)
			return &t->e[i - 1];
	return NULL;
}

/* The filter made again from the ranges known: the bits of forgotten ones go. */
static void ranges__refilter(struct flame_ranges *t)
{
	__u32 i;

	memset(t->filter, 0, FLAME_RANGES_FILTER_BITS / 8);
	for (i = 0; i < FLAME_RANGES_MAX; i++)
		if (t->e[i].id)
			filter_set(t, range_hash(t->e[i].producer, t->e[i].id));
}

/* Remember a range begin, forgetting the oldest one when the table is full. */
void flame_scopes__add(struct flame_scopes *sc, __u32 producer, const struct xpu_cevent *e)
{
	struct flame_ranges *t = &sc->ranges;
	struct flame_range *r = &t->e[t->head];
	__u32 slot = t->head + 1, *p;
	char name[FLAME_SCOPE_NAME_MAX + 16];
	size_t len, i;

	if (!e->id || ranges__find(t, producer, e->id))
		return;
	if (r->id) { /* evict the oldest: unlink it from its chain */
		for (p = &t->bucket[range_bucket(r->producer, r->id)]; *p != slot;
		     p = &t->e[*p - 1].next)
			;
		*p = r->next;
	}
	len = (size_t)snprintf(name, sizeof(name), "[%s] ",
			       e->flags & XPU_RANGE_F_NVTX ? "nvtx" : "range");
	if (!e->name_len) {
		len += (size_t)snprintf(name + len, sizeof(name) - len, "unnamed");
	} else {
		/* ';' would split the frame, a control byte (a line break) end the line */
		for (i = 0; i < e->name_len && i < FLAME_SCOPE_NAME_MAX; i++) {
			unsigned char c = (unsigned char)e->name[i];

			name[len++] = c == ';' || c < 0x20 || c == 0x7f ? '_' : (char)c;
		}
		name[len] = 0;
	}
	*r = (struct flame_range){ .id = e->id,
				   .parent_id = e->parent_id,
				   .producer = producer,
				   .frame = flame_names__intern(&sc->names, name),
				   .added = t->added++ };
	p = &t->bucket[range_bucket(producer, e->id)];
	r->next = *p;
	*p = slot;
	t->head = (t->head + 1) % FLAME_RANGES_MAX;
	filter_set(t, range_hash(producer, e->id));
	if (t->added % FLAME_RANGES_MAX == 0)
		ranges__refilter(t);
}

/* The range an event happened inside: its inside_range link, else its parent when that is a
 * range (a CPU sample inside an API call has the call as parent, the range as link). */
static struct flame_range *range_of(struct flame_scopes *sc, __u32 producer,
				    const struct xpu_cevent *e)
{
	__u32 i;

	for (i = 0; i < e->n_links && i < XPU_WIRE_LINKS_MAX; i++)
		if (e->links[i].type == XPU_LINK_INSIDE_RANGE)
			return ranges__find(&sc->ranges, producer, e->links[i].target);
	/* GPU work's parent is what launched it (a call, a LAUNCH, a CPU sample: docs/wire.md),
	 * never a range, which comes as the link above: looking it up would find nothing, at the
	 * price of a cache miss in the filter for most GPU records */
	if (e->kind >= XPU_REC_GPU_KERNEL && e->kind <= XPU_REC_GPU_SYNC)
		return NULL;
	return e->parent_id ? ranges__find(&sc->ranges, producer, e->parent_id) : NULL;
}

/* See flame_frames.h. */
const char *flame_scopes__of(struct flame_scopes *sc, __u32 producer, const struct xpu_cevent *e)
{
	struct flame_range *r = range_of(sc, producer, e), *in = r;
	const struct flame_range *chain[FLAME_SCOPE_DEPTH_MAX];
	struct flame_ranges *t = &sc->ranges;
	__u32 oldest;
	size_t len = 0;
	bool open = false;
	int n = 0, k;

	if (r && r->scope_n && (__u32)(t->added - r->scope_oldest) <= FLAME_RANGES_MAX &&
	    (!r->scope_open || r->scope_at == t->added)) {
		sc->in_range++;
		return r->scope; /* the chain is the one it was: the same text */
	}
	for (; r && n < FLAME_SCOPE_DEPTH_MAX; r = ranges__find(t, producer, r->parent_id)) {
		if (!r->frame) {
			open = true; /* no room for its name: the frames above it stay out too */
			break;
		}
		chain[n++] = r;
		if (!r->parent_id)
			break;
	}
	if (!n)
		return NULL;
	/* the walk ended at a parent not known (or at a name without room): a range added
	 * later may change where it ends */
	open = open || (!r && chain[n - 1]->parent_id);
	sc->in_range++;
	for (k = 0, oldest = in->added; k < n; k++) /* ages: how many begins came since */
		if ((__u32)(t->added - chain[k]->added) > (__u32)(t->added - oldest))
			oldest = chain[k]->added;
	for (k = n - 1; k >= 0; k--) {
		size_t m = strlen(chain[k]->frame);

		if (len + m + 2 > FLAME_SCOPE_MAX)
			break;
		if (k != n - 1)
			sc->scope[len++] = ';';
		memcpy(sc->scope + len, chain[k]->frame, m);
		len += m;
	}
	sc->scope[len] = 0;
	in->scope = flame_names__intern(&sc->names, sc->scope);
	/* a scope without room in the names now may find room later: not kept */
	in->scope_n = in->scope ? (__u8)n : 0;
	in->scope_oldest = oldest;
	in->scope_open = open;
	in->scope_at = t->added;
	return in->scope;
}

#define FLAME_KERNEL_NAME_MAX 4096 /* bytes of a kernel's name kept in its leaf */
#define FLAME_GPU_LEAF_MAX (FLAME_KERNEL_NAME_MAX + 8)

/* The leaf text of GPU work e into leaf (FLAME_GPU_LEAF_MAX bytes, not NUL-terminated): "[gpu]
 * KERNEL NAME" (up to its first NUL byte, at most FLAME_KERNEL_NAME_MAX bytes), "[gpu] memcpy
 * HtoD" (DtoH, DtoD, other), "[gpu] memset". Returns its length. Copied, not printed: this
 * runs for every GPU record. */
__u32 flame_frame__gpu_leaf(const struct xpu_cevent *e, char *leaf)
{
	static const char prefix[] = "[gpu] ", unnamed[] = "unnamed kernel";
	const char *text;
	size_t n;

	memcpy(leaf, prefix, sizeof(prefix) - 1);
	if (e->kind == XPU_REC_GPU_KERNEL && e->name_len) {
		text = e->name;
		n = strnlen(text, e->name_len < FLAME_KERNEL_NAME_MAX ? e->name_len :
									FLAME_KERNEL_NAME_MAX);
	} else {
		text = e->kind == XPU_REC_GPU_KERNEL ? unnamed :
		       e->kind == XPU_REC_GPU_MEMSET ? "memset" :
		       e->sub_kind == XPU_COPY_HTOD  ? "memcpy HtoD" :
		       e->sub_kind == XPU_COPY_DTOH  ? "memcpy DtoH" :
		       e->sub_kind == XPU_COPY_DTOD  ? "memcpy DtoD" :
						       "memcpy other";
		n = strlen(text);
	}
	memcpy(leaf + sizeof(prefix) - 1, text, n);
	return (__u32)(sizeof(prefix) - 1 + n);
}

int flame_comms__init(struct flame_comms *t)
{
	t->slot = calloc(2 * FLAME_COMMS_MAX, sizeof(*t->slot));
	t->n = 0;
	return t->slot ? 0 : -ENOMEM;
}

void flame_comms__free(struct flame_comms *t)
{
	free(t->slot);
	t->slot = NULL;
}

const char *flame_comms__get(struct flame_comms *t, __u32 pid)
{
	struct flame_comm *c = pid ? comm_slot(t, pid, false) : NULL;

	return c && c->name[0] ? c->name : NULL;
}

int flame_scopes__init(struct flame_scopes *sc)
{
	sc->ranges.e = calloc(FLAME_RANGES_MAX, sizeof(*sc->ranges.e));
	sc->ranges.bucket = calloc(FLAME_RANGES_MAX, sizeof(*sc->ranges.bucket));
	sc->ranges.filter = calloc(FLAME_RANGES_FILTER_BITS / 64, sizeof(*sc->ranges.filter));
	sc->scope = malloc(FLAME_SCOPE_MAX);
	if (!sc->ranges.e || !sc->ranges.bucket || !sc->ranges.filter || !sc->scope)
		return -ENOMEM;
	return 0;
}

void flame_scopes__free(struct flame_scopes *sc)
{
	free(sc->ranges.e);
	free(sc->ranges.bucket);
	free(sc->ranges.filter);
	free(sc->scope);
	flame_names__free(&sc->names);
	*sc = (struct flame_scopes){ 0 };
}
