// SPDX-License-Identifier: MIT
/*
 * The pprof format (kind pprof): gzip-compressed profile.proto files (google/pprof's schema,
 * the one Debian ships, compiled with protoc-c at build time), one per interval_s and a last
 * one at stop, for the continuous-profiling stores that ingest pprof (Pyroscope, Parca) and
 * for `pprof` itself. docs/fleet.md says what is filled and how it was checked.
 *
 * Sample types, in this order (docs/fleet.md says why):
 *
 *	samples/count		CPU samples			one per CPU_SAMPLE
 *	cpu/nanoseconds		CPU time			the sample's period (its weight)
 *	gpu_time/nanoseconds	GPU kernels, memcpy, memset	their duration
 *	copy_bytes/bytes	memcpy				bytes copied
 *
 * default cpu; period_type cpu/nanoseconds with the period the CPU samples carry. A stack is
 * the one flame.folded draws (flame_frames.h names its frames), leaf first: kernel frames
 * (mapping "[kernel.kallsyms]"), user frames, the enclosing "[range] NAME" frames; GPU work
 * has the leaf "[gpu] KERNEL" over its launch stack (or over "[gpu] no launch stack"). The
 * comm is a label, not a frame. Labels: pid, thread, comm, device, stream, kernel (strings,
 * as every store keeps them), host and the configured ones.
 *
 * Memory is bounded per interval: the string, function, location, mapping and sample tables
 * are deduplicated (open addressing over each) and hold at most max_entries entries each.
 * An event that needs an entry past that is not dropped: its weight goes to one sample whose
 * stack is the frame "[pprof tables full]", counted in events_full. The tables are emptied
 * when a file is written; a file that cannot be written keeps them, and the next attempt
 * (a second later, or at stop) writes a file that covers the longer time.
 *
 * A file is written as it is encoded, never whole in memory: a protobuf message is the
 * concatenation of its fields, and repeated fields concatenate, so the profile goes out as a
 * run of small Profile messages (the header fields, then the tables PPROF_CHUNK entries at a
 * time) packed by protobuf-c into zlib's deflate and through out.h (.partial, then rename).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "actors/sink/flame_frames.h"
#include "actors/sink/fmt.h"
#include "actors/sink/out.h"
#include "actors/sink/push.h"
#include "actors/sink/sink_options.h"
#include "actors/sink/table_hash.h"
#include "common/mix.h"
#include "common/pyframe.h"
#include "common/utf8.h"
#include "profile.pb-c.h"
#include "xpusup/event.h"

#define PPROF_PATH_MAX 4096
#define PPROF_CHUNK 1024 /* table entries packed at a time */
#define STRING_BYTES_MAX (64u << 20) /* bytes of strings an interval keeps */
#define LOCS_PER_SAMPLE 16 /* the location-id arena: max_entries times this many ids */
/* the longest stack: kernel and user frames, range frames, the two GPU frames */
#define STACK_MAX (XPU_WIRE_STACK_MAX + FLAME_SCOPE_DEPTH_MAX + 2)
#define RETRY_NS 1000000000ull /* after a failed write, the next attempt */
#define NAME_MAX_BYTES (2 * XPU_WIRE_FRAME_NAME_MAX + 64) /* a name made valid UTF-8 */
#define FULL_FRAME "[pprof tables full]"
#define KERNEL_MAPPING "[kernel.kallsyms]"
#define COMMENT "xpusup " XPUSUP_VERSION
#define GPU_PREFIX 6 /* "[gpu] " before a GPU leaf's name */

enum { V_SAMPLES, V_CPU, V_GPU, V_COPY, V_N };

static char empty[1]; /* string 0 */

static const char *const value_types[V_N][2] = {
	[V_SAMPLES] = { "samples", "count" },
	[V_CPU] = { "cpu", "nanoseconds" },
	[V_GPU] = { "gpu_time", "nanoseconds" },
	[V_COPY] = { "copy_bytes", "bytes" },
};

/* The labels a sample's key holds (string ids, 0: none), in this order but host, written
 * last (after the configured ones). host is the batch's origin (a subscriber's batches name
 * the host they came from, docs/wire.md "Origin"), else this sink's own. */
enum { L_PID, L_THREAD, L_COMM, L_DEVICE, L_STREAM, L_KERNEL, L_HOST, L_N };

static const char *const label_keys[L_N] = { "pid",    "thread", "comm", "device",
					     "stream", "kernel", "host" };

/* One deduplicated table's index: open addressing over entry numbers (slot: number + 1, 0
 * free), 2 slots or more per entry the table may hold, so probes end. */
struct index {
	__u32 *slot;
	__u64 *hash; /* by entry number */
	__u32 mask, n, max;
};

struct function {
	__u32 name, file; /* string ids */
};

struct location {
	__u64 address;
	__u32 mapping; /* id, 0: none */
	__u32 function; /* id, 0: none */
	__u32 line;
	__u32 zero; /* the key is hashed and compared whole: no padding */
};

struct sample {
	__u32 loc_at, n_locs; /* in pprof.loc_ids */
	__u32 label[L_N];
	int64_t value[V_N];
};

/* Lookups spared (frame_location, number_id): direct-mapped, an entry valid while its gen
 * is the current one. batch_gen changes with every batch and with the tables, tables_gen
 * with the tables (ids are the tables'). */
#define MEMO_FRAMES 4096
#define MEMO_NUMBERS 256
struct frame_memo {
	__u64 ip;
	const char *name;
	__u32 loc, gen;
	bool kernel;
	bool whole_tables; /* gen is a tables_gen (a frame without a name), not a batch_gen */
};

struct number_memo {
	__u64 v;
	__u32 id, gen;
};

/* A GPU activity's leaf location and kernel label by what the leaf's text depends on: the
 * kind, a copy's direction, and a kernel's name by its text (hash, then the bytes against the
 * label's string), not by its pointer: every event carries its own copy of the name in the
 * message, so a pointer never repeats (this memo missed on every kernel until 2026-11-27). */
#define MEMO_GPU 256
struct gpu_memo {
	__u64 h;
	__u32 name_len, sub_kind;
	__u16 kind;
	__u32 loc, kernel, gen;
};

/* A process's comm label by its pid and text (the comm table rewrites a comm in place), while
 * the tables hold. */
#define MEMO_COMMS 64
struct comm_memo {
	char comm[FLAME_COMM_MAX + 1];
	__u32 pid, id, gen;
};

/* The range frames of the last scope seen (events come in runs under one scope), by its
 * text: a scope's string may be freed and another made at its address. */
#define MEMO_SCOPE_TEXT 256
#define MEMO_SCOPE_LOCS 16
struct scope_memo {
	char text[MEMO_SCOPE_TEXT];
	__u32 len, n, gen;
	__u32 loc[MEMO_SCOPE_LOCS];
};

/* A whole stack's locations by its frames' addresses and name pointers (names: as
 * frame_memo's, within a batch): most events of a batch repeat a few stacks, and one hash
 * and compare of the stack spares each frame its own lookup. */
#define MEMO_STACKS 256
#define MEMO_STACK_FRAMES 48
struct stack_memo {
	__u64 h;
	__u32 gen, n, n_kernel;
	__u64 ip[MEMO_STACK_FRAMES];
	const char *name[MEMO_STACK_FRAMES];
	__u32 loc[MEMO_STACK_FRAMES];
};

struct memo {
	struct frame_memo frames[MEMO_FRAMES];
	struct stack_memo stacks[MEMO_STACKS];
	struct scope_memo scope;
	struct number_memo numbers[MEMO_NUMBERS];
	struct gpu_memo gpu[MEMO_GPU];
	struct comm_memo comms[MEMO_COMMS];
	__u32 batch_gen, tables_gen; /* from 1: 0 marks an empty entry */
};

/* A new generation in *gen: every entry of the old one is stale. On wrapping, the entries
 * are cleared, so that an entry of a generation long gone never passes for a new one. */
static void memo__next(struct memo *m, __u32 *gen)
{
	if (++*gen == 0) {
		memset(m, 0, sizeof(*m));
		m->batch_gen = m->tables_gen = 1;
	}
}

struct pprof {
	char stem[PPROF_PATH_MAX]; /* path without .pb.gz */
	__u64 interval_ns;
	/* the interval being gathered */
	__u64 start_mono, start_wall, retry_at;
	bool failed; /* the last write failed: the next one waits until retry_at */
	char **strings; /* by id */
	size_t string_bytes;
	struct index istrings, ifunctions, ilocations, imappings, isamples;
	struct function *functions; /* id - 1 */
	struct location *locations;
	__u32 *mappings; /* filename string id */
	struct sample *samples;
	__u64 *loc_ids; /* the samples' stacks, leaf first */
	__u32 n_loc_ids, max_loc_ids;
	__u64 period; /* the CPU samples' period, ns */
	/* every sample's own labels: host and the configured ones (string texts) */
	const char *extra_keys[PPROF_LABELS_MAX], *extra_values[PPROF_LABELS_MAX];
	unsigned int n_extra;
	char *labels_text; /* extra_* point into it */
	char host[256];
	long batch_host; /* the host label of the batch being added (string id) */
	struct flame_comms comms;
	struct flame_scopes scopes;
	char *name; /* NAME_MAX_BYTES: a name being made */
	__u64 stack[STACK_MAX]; /* location ids being gathered */
	struct memo memo;
	/* counted over the run */
	__u64 files, cpu_samples, gpu_events, events_full, bytes_written;
	long no_stack_loc; /* FLAME_NO_LAUNCH_STACK's location in the tables */
	struct pusher *push; /* push_url: each finished file is posted; NULL: none */
	unsigned long long push_drain_ms;
};

static const char *const counter_names[] = {
	"files_written", "cpu_samples", "gpu_events", "samples",     "locations",
	"functions",	 "mappings",	"strings",    "events_full", "bytes_written",
};

/* ---- the tables ------------------------------------------------------------------------ */

static int index__init(struct index *ix, __u32 max)
{
	__u32 cap = 16;

	while (cap < 2 * max)
		cap <<= 1;
	ix->slot = calloc(cap, sizeof(*ix->slot));
	ix->hash = calloc(max, sizeof(*ix->hash));
	ix->mask = cap - 1;
	ix->max = max;
	ix->n = 0;
	return ix->slot && ix->hash ? 0 : -ENOMEM;
}

static void index__free(struct index *ix)
{
	free(ix->slot);
	free(ix->hash);
}

static void index__clear(struct index *ix)
{
	if (ix->n)
		memset(ix->slot, 0, ((size_t)ix->mask + 1) * sizeof(*ix->slot));
	ix->n = 0;
}

/* The slot of the entry with hash h that same(ctx, entry, key) says is the key, or the free
 * slot where it would go. */
static __u32 *index__find(struct index *ix, __u64 h,
			  bool (*same)(const void *, __u32, const void *), const void *ctx,
			  const void *key)
{
	__u32 i = (__u32)xpu_mix64(h) & ix->mask;

	for (;; i = (i + 1) & ix->mask) {
		__u32 e = ix->slot[i];

		if (!e || (ix->hash[e - 1] == h && same(ctx, e - 1, key)))
			return &ix->slot[i];
	}
}

/* Take the free slot for a new entry: its number, or -1 when the table is full. */
static long index__take(struct index *ix, __u32 *slot, __u64 h)
{
	if (ix->n >= ix->max)
		return -1;
	ix->hash[ix->n] = h;
	*slot = ++ix->n;
	return (long)ix->n - 1;
}

struct text {
	const char *s;
	size_t n;
};

static bool same_string(const void *ctx, __u32 e, const void *key)
{
	const struct pprof *p = ctx;
	const struct text *t = key;

	return !strncmp(p->strings[e], t->s, t->n) && !p->strings[e][t->n];
}

/* The id of the string s (n bytes, valid UTF-8, no NUL), added when new; 0 for "" and -1
 * when there is no room. */
static long string_id(struct pprof *p, const char *s, size_t n)
{
	struct text key = { s, n };
	__u64 h = sink_hash_words(n, s, n);
	__u32 *slot;
	long e;
	char *copy;

	if (!n)
		return 0;
	slot = index__find(&p->istrings, h, same_string, p, &key);
	if (*slot)
		return *slot - 1;
	if (p->string_bytes + n + 1 > STRING_BYTES_MAX || !(copy = strndup(s, n)))
		return -1;
	e = index__take(&p->istrings, slot, h);
	if (e < 0) {
		free(copy);
		return -1;
	}
	p->strings[e] = copy;
	p->string_bytes += n + 1;
	return e;
}

/* A name as a string id: well-formed UTF-8 kept, any other byte written as the code point of
 * the same value (Latin-1), as the JSON outputs do (common/json_escape.h): protobuf strings
 * must be UTF-8, and stores that decode them strictly refuse a profile that is not. */
static long name_id(struct pprof *p, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, len = 0, k;

	for (i = 0; i < n && u[i] < 0x80; i++)
		;
	if (i == n)
		return string_id(p, s, n);
	for (i = 0; i < n && len + 4 < NAME_MAX_BYTES; i++) {
		if (u[i] < 0x80) {
			p->name[len++] = (char)u[i];
		} else if ((k = xpu_utf8_len(u + i, n - i))) {
			memcpy(p->name + len, s + i, k);
			len += k;
			i += k - 1;
		} else {
			p->name[len++] = (char)(0xc0 | u[i] >> 6);
			p->name[len++] = (char)(0x80 | (u[i] & 0x3f));
		}
	}
	return string_id(p, p->name, len);
}

/* A text's string id: the texts every file has are made by tables__reset, and found here. */
static int64_t made_id(struct pprof *p, const char *s)
{
	return string_id(p, s, strlen(s));
}

struct fixed {
	const void *entries;
	size_t size;
};

static bool same_fixed(const void *ctx, __u32 e, const void *key)
{
	const struct fixed *t = ctx;

	return !memcmp((const char *)t->entries + (size_t)e * t->size, key, t->size);
}

/* The id (1...) of the entry key (size bytes, compared and hashed whole: no padding) of the
 * table ix over entries, added when new; -1 when there is no room. */
static long fixed_id(struct index *ix, void *entries, const void *key, size_t size)
{
	struct fixed t = { entries, size };
	__u64 h = sink_hash_words(size, key, size);
	__u32 *slot = index__find(ix, h, same_fixed, &t, key);
	long e;

	if (*slot)
		return *slot;
	e = index__take(ix, slot, h);
	if (e < 0)
		return -1;
	memcpy((char *)entries + (size_t)e * size, key, size);
	return e + 1;
}

/* The id of the function named name (a string id) in file, -1 when there is no room. */
static long function_id(struct pprof *p, long name, long file)
{
	struct function key = { (__u32)name, (__u32)file };

	if (name < 0 || file < 0)
		return -1;
	return fixed_id(&p->ifunctions, p->functions, &key, sizeof(key));
}

/* The id of a location, -1 when there is no room. function, mapping: ids, 0 none. */
static long location_id(struct pprof *p, __u64 address, long mapping, long function, __u32 line)
{
	struct location key = { address, (__u32)mapping, (__u32)function, line, 0 };

	if (mapping < 0 || function < 0)
		return -1;
	return fixed_id(&p->ilocations, p->locations, &key, sizeof(key));
}

/* The id of the mapping of the file named file (a string id), -1 when there is no room. */
static long mapping_id(struct pprof *p, long file)
{
	__u32 key = (__u32)file;

	if (file < 0)
		return -1;
	return fixed_id(&p->imappings, p->mappings, &key, sizeof(key));
}

/* A location that is only a name: GPU leaves, ranges, FULL_FRAME. */
static long named_location(struct pprof *p, const char *name, size_t n)
{
	return location_id(p, 0, 0, function_id(p, name_id(p, name, n), 0), 0);
}

struct sample_key {
	const __u64 *locs;
	__u32 n_locs;
	const __u32 *label;
};

static bool same_sample(const void *ctx, __u32 e, const void *key)
{
	const struct pprof *p = ctx;
	const struct sample *s = &p->samples[e];
	const struct sample_key *k = key;

	return s->n_locs == k->n_locs && !memcmp(s->label, k->label, sizeof(s->label)) &&
	       !memcmp(p->loc_ids + s->loc_at, k->locs, k->n_locs * sizeof(*k->locs));
}

/* The sample of that stack and those labels, made when new; NULL when there is no room. */
static struct sample *sample_of(struct pprof *p, const __u64 *locs, __u32 n_locs,
				const __u32 *label)
{
	struct sample_key key = { locs, n_locs, label };
	__u64 h = sink_hash_words(n_locs, locs, n_locs * sizeof(*locs));
	struct sample *s;
	__u32 *slot;
	long e;

	h = sink_hash_words(h, label, L_N * sizeof(*label));
	slot = index__find(&p->isamples, h, same_sample, p, &key);
	if (*slot)
		return &p->samples[*slot - 1];
	if (p->n_loc_ids + n_locs > p->max_loc_ids)
		return NULL;
	e = index__take(&p->isamples, slot, h);
	if (e < 0)
		return NULL;
	s = &p->samples[e];
	memset(s, 0, sizeof(*s));
	s->loc_at = p->n_loc_ids;
	s->n_locs = n_locs;
	memcpy(s->label, label, sizeof(s->label));
	memcpy(p->loc_ids + p->n_loc_ids, locs, n_locs * sizeof(*locs));
	p->n_loc_ids += n_locs;
	return s;
}

/* Empty the tables for the next interval. String 0 is "" (the schema's rule); sample 0 is the
 * one events past the tables go to, its stack the location of FULL_FRAME, made first so that
 * it always has room. */
static void tables__reset(struct pprof *p)
{
	__u32 i;
	__u32 none[L_N] = { 0 };
	__u64 full;

	for (i = 1; i < p->istrings.n; i++)
		free(p->strings[i]);
	index__clear(&p->istrings);
	index__clear(&p->ifunctions);
	index__clear(&p->ilocations);
	index__clear(&p->imappings);
	index__clear(&p->isamples);
	memo__next(&p->memo, &p->memo.batch_gen);
	memo__next(&p->memo, &p->memo.tables_gen);
	p->string_bytes = 0;
	p->n_loc_ids = 0;
	p->period = 0;
	p->strings[0] = empty;
	p->istrings.n = 1; /* "" is id 0, found without a lookup */
	/* what every file has (put_header, put_samples): the table is far from full now */
	for (i = 0; i < V_N; i++) {
		made_id(p, value_types[i][0]);
		made_id(p, value_types[i][1]);
	}
	for (i = 0; i < L_N; i++)
		made_id(p, label_keys[i]);
	for (i = 0; i < p->n_extra; i++) {
		made_id(p, p->extra_keys[i]);
		made_id(p, p->extra_values[i]);
	}
	made_id(p, p->host);
	made_id(p, COMMENT);
	full = (__u64)named_location(p, FULL_FRAME, strlen(FULL_FRAME));
	sample_of(p, &full, 1, none);
	/* every GPU activity without a launch stack has it: made once a file */
	p->no_stack_loc = named_location(p, FLAME_NO_LAUNCH_STACK, strlen(FLAME_NO_LAUNCH_STACK));
}

/* ---- events ---------------------------------------------------------------------------- */

/* A number's text as a string id (pids, tids, devices, streams: a few values, met on every
 * event), remembered in memo.numbers while the tables last. */
static long number_id(struct pprof *p, __u64 v)
{
	struct number_memo *m = &p->memo.numbers[xpu_mix64(v) & (MEMO_NUMBERS - 1)];
	char buf[24];
	long id;

	if (m->gen == p->memo.tables_gen && m->v == v)
		return m->id;
	id = string_id(p, buf, (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)v));
	if (id > 0)
		*m = (struct number_memo){ .v = v, .id = (__u32)id, .gen = p->memo.tables_gen };
	return id;
}

/* The location of frame k of e (k < n_kernel: a kernel frame). A Python frame is its
 * function "[py] QUALNAME (FILE)" (folded's name, common/pyframe.h) in file FILE at its line;
 * a native frame its address and its name, "0x<address>" when it has none (flame.folded's
 * spelling). */
static long new_frame_location(struct pprof *p, __u64 ip, const char *name, bool kernel)
{
	char py[XPU_PYFRAME_FUNCTION_SIZE(XPU_WIRE_FRAME_NAME_MAX)]; /* name_id uses p->name */
	long mapping = 0, fn = 0, file = 0;
	size_t n, fl;
	char *open;

	if (xpu_pyframe__is(ip)) {
		n = xpu_pyframe__function(py, sizeof(py), ip, name);
		fn = name_id(p, py, n);
		fl = name ? xpu_pyframe__function_len(name, strlen(name)) : 0;
		/* "QUALNAME (FILE" when the name had a line: FILE follows the last " (" */
		if (name && fl < strlen(name)) {
			for (open = NULL, n = 0; n + 1 < fl; n++)
				if (name[n] == ' ' && name[n + 1] == '(')
					open = (char *)name + n + 2;
			if (open)
				file = name_id(p, open, (size_t)(name + fl - open));
		}
		return location_id(p, 0, 0, function_id(p, fn, file), xpu_pyframe__line(ip));
	}
	if (kernel)
		mapping = mapping_id(p, string_id(p, KERNEL_MAPPING, strlen(KERNEL_MAPPING)));
	if (!name) { /* flame.folded's spelling: pprof would merge them all into "<unknown>" */
		snprintf(py, sizeof(py), "0x%" PRIx64, (uint64_t)ip);
		name = py;
	}
	fn = function_id(p, name_id(p, name, strlen(name)), 0);
	return location_id(p, ip, mapping, fn, 0);
}

/* The name pointer of frame k as the memos key it ("" and NULL alike: no name). */
static const char *frame_name(const struct xpu_cevent *e, __u32 k)
{
	return e->frames && e->frames[k] && e->frames[k][0] ? e->frames[k] : NULL;
}

/* frame_location through memo.frames: within a batch a frame name's pointer stands for its
 * text (the decoder points every occurrence into the message's one copy), so (address,
 * name pointer, kernel) is the location while the batch and the tables last. Most events
 * of a batch repeat a few stacks: this spares each frame its three table lookups. */
static long frame_location(struct pprof *p, const struct xpu_cevent *e, __u32 k, bool kernel)
{
	__u64 ip = e->stack[k];
	const char *name = frame_name(e, k);
	struct frame_memo *m =
		&p->memo.frames[xpu_mix64(ip ^ (__u64)(uintptr_t)name) & (MEMO_FRAMES - 1)];
	/* a frame without a name is its address alone: it holds while the tables do */
	__u32 gen = name ? p->memo.batch_gen : p->memo.tables_gen;
	long loc;

	if (m->gen == gen && m->ip == ip && m->name == name && m->kernel == kernel &&
	    m->whole_tables == !name)
		return m->loc;
	loc = new_frame_location(p, ip, name, kernel);
	if (loc > 0)
		*m = (struct frame_memo){ .ip = ip,
					  .name = name,
					  .loc = (__u32)loc,
					  .gen = gen,
					  .kernel = kernel,
					  .whole_tables = !name };
	return loc;
}

/* Push the range frames of scope ("[range] outer;...;[range] inner"), innermost first. */
static bool push_scope(struct pprof *p, __u32 *n, const char *scope)
{
	size_t len = strlen(scope);
	const char *end = scope + len, *semi;
	struct scope_memo *m = &p->memo.scope;
	__u32 first = *n, i;
	long loc;

	if (m->gen == p->memo.tables_gen && m->len == len && !memcmp(m->text, scope, len) &&
	    *n + m->n <= STACK_MAX) {
		for (i = 0; i < m->n; i++)
			p->stack[(*n)++] = m->loc[i];
		return true;
	}
	while (end > scope && *n < STACK_MAX) {
		for (semi = end; semi > scope && semi[-1] != ';'; semi--)
			;
		loc = named_location(p, semi, (size_t)(end - semi));
		if (loc < 0)
			return false;
		p->stack[(*n)++] = (__u64)loc;
		end = semi > scope ? semi - 1 : scope;
	}
	if (end == scope && len < MEMO_SCOPE_TEXT && *n - first <= MEMO_SCOPE_LOCS) {
		memcpy(m->text, scope, len);
		m->len = (__u32)len;
		m->n = *n - first;
		for (i = 0; i < m->n; i++)
			m->loc[i] = (__u32)p->stack[first + i];
		m->gen = p->memo.tables_gen;
	}
	return true;
}

/* Push the locations of e's frames [0, frames), the first n_kernel kernel frames, through
 * memo.stacks; false when a table is full. */
static bool push_frames(struct pprof *p, const struct xpu_cevent *e, __u32 *n, __u32 frames,
			__u32 n_kernel)
{
	struct stack_memo *m;
	__u64 h = frames ^ (__u64)n_kernel << 32;
	__u32 k, first = *n;
	long id;

	if (frames > XPU_WIRE_STACK_MAX)
		frames = XPU_WIRE_STACK_MAX;
	if (frames > MEMO_STACK_FRAMES) {
		m = NULL;
	} else {
		for (k = 0; k < frames; k++)
			h = xpu_mix64(h ^ e->stack[k] ^ (__u64)(uintptr_t)frame_name(e, k) << 1);
		m = &p->memo.stacks[h & (MEMO_STACKS - 1)];
		if (m->gen == p->memo.batch_gen && m->h == h && m->n == frames &&
		    m->n_kernel == n_kernel && !memcmp(m->ip, e->stack, frames * sizeof(__u64))) {
			for (k = 0; k < frames && m->name[k] == frame_name(e, k); k++)
				;
			if (k == frames) {
				for (k = 0; k < frames; k++)
					p->stack[(*n)++] = m->loc[k];
				return true;
			}
		}
	}
	for (k = 0; k < frames; k++) {
		id = frame_location(p, e, k, k < n_kernel);
		if (id <= 0)
			return false;
		p->stack[(*n)++] = (__u64)id;
	}
	if (m) {
		m->h = h;
		m->gen = p->memo.batch_gen;
		m->n = frames;
		m->n_kernel = n_kernel;
		memcpy(m->ip, e->stack, frames * sizeof(__u64));
		for (k = 0; k < frames; k++) {
			m->name[k] = frame_name(e, k);
			m->loc[k] = (__u32)p->stack[first + k];
		}
	}
	return true;
}

/* A GPU activity's leaf ("[gpu] NAME", flame.folded's) as a location, and a kernel's name as
 * its kernel label (*kernel; 0 for a copy or a memset), through memo.gpu. The memo keeps a
 * named kernel only where the label's string is the name byte for byte (plain ASCII, no NUL,
 * not cut), so that comparing the name with that string is comparing the leaves. */
static long gpu_leaf(struct pprof *p, const struct xpu_cevent *e, __u32 *kernel)
{
	bool named = e->kind == XPU_REC_GPU_KERNEL && e->name_len;
	__u32 len = named ? e->name_len : 0, sub = e->kind == XPU_REC_GPU_MEMCPY ? e->sub_kind : 0;
	__u64 h = sink_hash_words((__u64)e->kind << 32 ^ sub, e->name, len);
	struct gpu_memo *m = &p->memo.gpu[xpu_mix64(h) & (MEMO_GPU - 1)];
	char leaf[FLAME_GPU_LEAF_MAX];
	__u32 leaf_len;
	long loc;

	if (m->gen == p->memo.tables_gen && m->h == h && m->name_len == len && m->kind == e->kind &&
	    m->sub_kind == sub && (!len || !memcmp(p->strings[m->kernel], e->name, len))) {
		*kernel = m->kernel;
		return m->loc;
	}
	leaf_len = flame_frame__gpu_leaf(e, leaf);
	loc = named_location(p, leaf, leaf_len);
	if (e->kind == XPU_REC_GPU_KERNEL) /* the leaf's name after "[gpu] " */
		*kernel = (__u32)name_id(p, leaf + GPU_PREFIX, leaf_len - GPU_PREFIX);
	if (loc <= 0 || *kernel == (__u32)-1)
		return loc;
	if (len && (leaf_len - GPU_PREFIX != len || memcmp(p->strings[*kernel], e->name, len)))
		return loc; /* escaped or cut: the label is not the name */
	*m = (struct gpu_memo){ .h = h,
				.name_len = len,
				.sub_kind = sub,
				.kind = e->kind,
				.loc = (__u32)loc,
				.kernel = *kernel,
				.gen = p->memo.tables_gen };
	return loc;
}

/* Add e's values under its stack and labels; past the tables, under FULL_FRAME. */
static void add_event(struct pprof *p, __u32 producer, const struct xpu_cevent *e,
		      const int64_t *value)
{
	bool gpu = e->kind != XPU_REC_CPU_SAMPLE;
	__u32 n = 0, k, frames, label[L_N] = { 0 };
	struct comm_memo *cm;
	const char *comm, *scope;
	struct sample *s = NULL;
	bool ok = true;
	long id;

	frames = !e->stack ? 0 : gpu ? e->n_user : (__u32)e->n_kernel + e->n_user;
	if (gpu) {
		id = gpu_leaf(p, e, &label[L_KERNEL]);
		ok = id > 0;
		p->stack[n++] = (__u64)id;
		if (!frames) {
			ok = ok && p->no_stack_loc > 0;
			p->stack[n++] = (__u64)p->no_stack_loc;
		}
	}
	if (ok && frames)
		ok = push_frames(p, e, &n, frames, gpu ? 0 : e->n_kernel);
	scope = flame_scopes__of(&p->scopes, producer, e);
	if (ok && scope)
		ok = push_scope(p, &n, scope);

	label[L_PID] = (__u32)number_id(p, e->pid);
	label[L_THREAD] = e->tid ? (__u32)number_id(p, e->tid) : 0;
	comm = flame_comms__get(&p->comms, e->pid);
	cm = &p->memo.comms[xpu_mix64(e->pid) & (MEMO_COMMS - 1)];
	if (comm && cm->gen == p->memo.tables_gen && cm->pid == e->pid &&
	    !strncmp(cm->comm, comm, sizeof(cm->comm))) {
		label[L_COMM] = cm->id;
	} else if (comm) {
		label[L_COMM] = (__u32)name_id(p, comm, strlen(comm));
		*cm = (struct comm_memo){ .pid = e->pid,
					  .id = label[L_COMM],
					  .gen = p->memo.tables_gen };
		snprintf(cm->comm, sizeof(cm->comm), "%s", comm);
	}
	label[L_HOST] = (__u32)p->batch_host;
	if (gpu) {
		label[L_DEVICE] = (__u32)number_id(p, e->device);
		label[L_STREAM] = (__u32)number_id(p, e->stream);
	}
	for (k = 0; k < L_N; k++)
		ok = ok && label[k] != (__u32)-1;
	if (ok)
		s = sample_of(p, p->stack, n, label);
	if (!s) {
		s = &p->samples[0];
		p->events_full++;
	}
	for (k = 0; k < V_N; k++)
		s->value[k] += value[k];
}

static void pprof_batch(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct pprof *p = st;
	int64_t v[V_N];
	__u32 i;

	memo__next(&p->memo, &p->memo.batch_gen); /* the last batch's name pointers are gone */
	p->batch_host = b->origin.host ? name_id(p, b->origin.host, b->origin.host_len) :
					 made_id(p, p->host);
	for (i = 0; i < b->n_events; i++) {
		const struct xpu_cevent *e = &ev[i];

		memset(v, 0, sizeof(v));
		switch (e->kind) {
		case XPU_REC_CPU_SAMPLE:
			flame_comms__learn(&p->comms, e);
			v[V_SAMPLES] = 1;
			v[V_CPU] = (int64_t)e->value;
			if (e->value)
				p->period = e->value;
			p->cpu_samples++;
			add_event(p, b->producer, e, v);
			break;
		case XPU_REC_PROC_EXEC:
			flame_comms__learn(&p->comms, e);
			break;
		case XPU_REC_RANGE:
			if (e->sub_kind == XPU_RANGE_PUSH || e->sub_kind == XPU_RANGE_START)
				flame_scopes__add(&p->scopes, b->producer, e);
			break;
		case XPU_REC_GPU_MEMCPY:
			v[V_COPY] = (int64_t)e->bytes;
			/* fall through */
		case XPU_REC_GPU_KERNEL:
		case XPU_REC_GPU_MEMSET:
			v[V_GPU] = e->end_ns > e->ts_ns ? (int64_t)(e->end_ns - e->ts_ns) : 0;
			p->gpu_events++;
			add_event(p, b->producer, e, v);
			break;
		default:
			break;
		}
	}
}

/* ---- writing --------------------------------------------------------------------------- */

/* protobuf-c's output: each packed piece deflated into the file. */
struct gz {
	ProtobufCBuffer base; /* first: protobuf-c hands &base to append */
	z_stream z;
	struct out *o;
	bool failed; /* deflate refused (it does not, with a valid stream) */
	unsigned char buf[1 << 16];
};

/* Run deflate with flush over what is in z.next_in, writing what it makes. */
static void gz_run(struct gz *g, int flush)
{
	int rc;

	do {
		g->z.next_out = g->buf;
		g->z.avail_out = sizeof(g->buf);
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR) {
			g->failed = true;
			return;
		}
		out__write(g->o, g->buf, sizeof(g->buf) - g->z.avail_out);
	} while (g->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct gz *g = (struct gz *)b;

	g->z.next_in = (Bytef *)(uintptr_t)data; /* zlib's API is not const */
	g->z.avail_in = (uInt)len; /* a piece is at most a chunk of one table */
	gz_run(g, Z_NO_FLUSH);
}

static void put(struct gz *g, const Perftools__Profiles__Profile *m)
{
	perftools__profiles__profile__pack_to_buffer(m, &g->base);
}

/* Scratch for one chunk of any table. */
struct chunk {
	Perftools__Profiles__Sample sample[PPROF_CHUNK], *sample_p[PPROF_CHUNK];
	Perftools__Profiles__Label label[PPROF_CHUNK][L_N + PPROF_LABELS_MAX];
	Perftools__Profiles__Label *label_p[PPROF_CHUNK][L_N + PPROF_LABELS_MAX];
	Perftools__Profiles__Location location[PPROF_CHUNK], *location_p[PPROF_CHUNK];
	Perftools__Profiles__Line line[PPROF_CHUNK], *line_p[PPROF_CHUNK];
	Perftools__Profiles__Function function[PPROF_CHUNK], *function_p[PPROF_CHUNK];
	Perftools__Profiles__Mapping mapping[PPROF_CHUNK], *mapping_p[PPROF_CHUNK];
};

/* What every profile has before its tables: the sample types, times and period. Their
 * strings were made by tables__reset, so they are found here whatever the tables hold. */
static void put_header(struct pprof *p, struct gz *g, __u64 end_wall)
{
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[V_N], *vt_p[V_N], period_type;
	int64_t comment;
	int i;

	for (i = 0; i < V_N; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = made_id(p, value_types[i][0]);
		vt[i].unit = made_id(p, value_types[i][1]);
		vt_p[i] = &vt[i];
	}
	period_type = vt[V_CPU];
	comment = made_id(p, COMMENT);
	m.n_sample_type = V_N;
	m.sample_type = vt_p;
	m.default_sample_type = vt[V_CPU].type;
	m.period_type = &period_type;
	m.period = (int64_t)p->period;
	m.time_nanos = (int64_t)p->start_wall;
	m.duration_nanos = (int64_t)(end_wall - p->start_wall);
	m.n_comment = 1;
	m.comment = &comment;
	put(g, &m);
}

static void put_samples(struct pprof *p, struct gz *g, struct chunk *c)
{
	Perftools__Profiles__Profile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	int64_t key[L_N], extra_key[PPROF_LABELS_MAX], extra_value[PPROF_LABELS_MAX];
	int64_t own_host = made_id(p, p->host);
	__u32 i, k, n = 0, l;

	for (k = 0; k < L_N; k++)
		key[k] = made_id(p, label_keys[k]);
	for (k = 0; k < p->n_extra; k++) {
		extra_key[k] = made_id(p, p->extra_keys[k]);
		extra_value[k] = made_id(p, p->extra_values[k]);
	}
	for (i = 0; i < p->isamples.n; i++) {
		const struct sample *s = &p->samples[i];
		Perftools__Profiles__Sample *out = &c->sample[n];

		if (!s->value[V_SAMPLES] && !s->value[V_CPU] && !s->value[V_GPU] &&
		    !s->value[V_COPY])
			continue; /* the unused FULL_FRAME sample */
		perftools__profiles__sample__init(out);
		out->n_location_id = s->n_locs;
		out->location_id = (uint64_t *)(p->loc_ids + s->loc_at);
		out->n_value = V_N;
		out->value = (int64_t *)s->value;
		/* the sample's own labels, the configured ones, host (the tables-full sample
		 * has none of its own: this sink's) */
		for (k = 0, l = 0; k < L_N + p->n_extra; k++) {
			Perftools__Profiles__Label *lab = &c->label[n][l];
			__u32 j = k < L_HOST ? k : k - L_HOST; /* [L_HOST, L_N + n_extra): extras */

			if (k < L_HOST && !s->label[k])
				continue;
			perftools__profiles__label__init(lab);
			if (k < L_HOST) {
				lab->key = key[k];
				lab->str = s->label[k];
			} else if (j < p->n_extra) {
				lab->key = extra_key[j];
				lab->str = extra_value[j];
			} else {
				lab->key = key[L_HOST];
				lab->str = s->label[L_HOST] ? s->label[L_HOST] : own_host;
			}
			c->label_p[n][l++] = lab;
		}
		out->n_label = l;
		out->label = c->label_p[n];
		c->sample_p[n++] = out;
		if (n == PPROF_CHUNK) {
			m.n_sample = n;
			m.sample = c->sample_p;
			put(g, &m);
			n = 0;
		}
	}
	if (n) {
		m.n_sample = n;
		m.sample = c->sample_p;
		put(g, &m);
	}
}

/* Entries [i, i + n) of one table into m; n is at most PPROF_CHUNK. */
typedef void fill_fn(const struct pprof *p, struct chunk *c, __u32 i, __u32 n,
		     Perftools__Profiles__Profile *m);

static void fill_mappings(const struct pprof *p, struct chunk *c, __u32 i, __u32 n,
			  Perftools__Profiles__Profile *m)
{
	__u32 k;

	for (k = 0; k < n; k++) {
		perftools__profiles__mapping__init(&c->mapping[k]);
		c->mapping[k].id = i + k + 1;
		c->mapping[k].filename = p->mappings[i + k];
		/* names come from the correlator's symbolizer: nothing to resolve */
		c->mapping[k].has_functions = true;
		c->mapping_p[k] = &c->mapping[k];
	}
	m->n_mapping = n;
	m->mapping = c->mapping_p;
}

static void fill_locations(const struct pprof *p, struct chunk *c, __u32 i, __u32 n,
			   Perftools__Profiles__Profile *m)
{
	__u32 k;

	for (k = 0; k < n; k++) {
		const struct location *l = &p->locations[i + k];
		Perftools__Profiles__Location *out = &c->location[k];

		perftools__profiles__location__init(out);
		out->id = i + k + 1;
		out->mapping_id = l->mapping;
		out->address = l->address;
		if (l->function) {
			perftools__profiles__line__init(&c->line[k]);
			c->line[k].function_id = l->function;
			c->line[k].line = l->line;
			c->line_p[k] = &c->line[k];
			out->n_line = 1;
			out->line = &c->line_p[k];
		}
		c->location_p[k] = out;
	}
	m->n_location = n;
	m->location = c->location_p;
}

static void fill_functions(const struct pprof *p, struct chunk *c, __u32 i, __u32 n,
			   Perftools__Profiles__Profile *m)
{
	__u32 k;

	for (k = 0; k < n; k++) {
		Perftools__Profiles__Function *out = &c->function[k];

		perftools__profiles__function__init(out);
		out->id = i + k + 1;
		out->name = p->functions[i + k].name;
		/* system_name (the mangled name) is not known: the symbolizer demangles. Left
		 * empty, it also keeps pprof from shortening the name ("a::f<int>(int)" to
		 * "a::f"), which it does to names equal to their system_name */
		out->filename = p->functions[i + k].file;
		c->function_p[k] = out;
	}
	m->n_function = n;
	m->function = c->function_p;
}

static void fill_strings(const struct pprof *p, struct chunk *c, __u32 i, __u32 n,
			 Perftools__Profiles__Profile *m)
{
	(void)c;
	m->n_string_table = n;
	m->string_table = p->strings + i;
}

static void put_table(const struct pprof *p, struct gz *g, struct chunk *c, __u32 count,
		      fill_fn *fill)
{
	Perftools__Profiles__Profile m;
	__u32 i, n;

	for (i = 0; i < count; i += n) {
		n = count - i < PPROF_CHUNK ? count - i : PPROF_CHUNK;
		m = (Perftools__Profiles__Profile)PERFTOOLS__PROFILES__PROFILE__INIT;
		fill(p, c, i, n, &m);
		put(g, &m);
	}
}

static __u64 wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* STEM-YYYYMMDDTHHMMSS.mmmZ.pb.gz: the interval's start in UTC. */
static int file_name(const struct pprof *p, char *buf, size_t size)
{
	time_t sec = (time_t)(p->start_wall / 1000000000ull);
	struct tm tm;
	int n;

	gmtime_r(&sec, &tm);
	n = snprintf(buf, size, "%s-%04d%02d%02dT%02d%02d%02d.%03uZ.pb.gz", p->stem,
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     (unsigned int)(p->start_wall / 1000000 % 1000));
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* A file is complete, fsync'ed and in place under its final name path, holding what the
 * sink received in [from_ns, until_ns) (CLOCK_REALTIME, ns since the epoch): the one place
 * that knows a finished file (an uploader takes it from here; path is the caller's buffer,
 * valid for this call only). Called from write_file, on the sink's thread, at a tick or at
 * finish; must not block the sink for long. */
static void pprof_finished(struct pprof *p, const char *path, __u64 from_ns, __u64 until_ns)
{
	p->files++;
	/* into the spool (a link, a copy across file systems), never the network; a file it
	 * cannot take is counted there (push_dropped) and said in its words */
	if (p->push)
		pusher__submit(p->push, path, from_ns / 1000000000ull,
			       (until_ns + 999999999ull) / 1000000000ull);
}

/* Whether the interval has nothing to write. */
static bool pprof_empty(const struct pprof *p)
{
	const int64_t *v = p->samples[0].value;

	return p->isamples.n <= 1 && !v[V_SAMPLES] && !v[V_CPU] && !v[V_GPU] && !v[V_COPY];
}

/* Write the interval's file and start the next interval. 0 or -errno with why; on error
 * the tables stay, for the next attempt. */
static int write_file(struct pprof *p, char *why, size_t why_len)
{
	char path[PPROF_PATH_MAX];
	__u64 end_wall = wall_now();
	struct chunk *c = NULL;
	struct gz *g;
	int err;

	err = file_name(p, path, sizeof(path));
	if (err) {
		snprintf(why, why_len, "the file name of %s is too long", p->stem);
		return err;
	}
	g = calloc(1, sizeof(*g));
	c = malloc(sizeof(*c));
	if (!g || !c) {
		snprintf(why, why_len, "out of memory writing %s", path);
		err = -ENOMEM;
		goto free_scratch;
	}
	g->base.append = gz_append;
	/* windowBits 15 + 16: a gzip header and trailer, as pprof and the stores read */
	if (deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(why, why_len, "out of memory writing %s", path);
		err = -ENOMEM;
		goto free_scratch;
	}
	err = out__open(&g->o, path, why, why_len);
	if (err)
		goto end_deflate;
	put_header(p, g, end_wall);
	put_samples(p, g, c);
	put_table(p, g, c, p->imappings.n, fill_mappings);
	put_table(p, g, c, p->ilocations.n, fill_locations);
	put_table(p, g, c, p->ifunctions.n, fill_functions);
	put_table(p, g, c, p->istrings.n, fill_strings);
	g->z.avail_in = 0;
	gz_run(g, Z_FINISH);
	if (g->failed) {
		out__abort(g->o);
		snprintf(why, why_len, "unable to compress %s", path);
		err = -EIO;
		goto end_deflate;
	}
	p->bytes_written += out__bytes(g->o);
	err = out__commit(g->o, why, why_len);
	if (err)
		goto end_deflate;
	pprof_finished(p, path, p->start_wall, end_wall);
	tables__reset(p);
	p->start_wall = end_wall;
end_deflate:
	deflateEnd(&g->z);
free_scratch:
	free(c);
	free(g);
	return err;
}

static int pprof_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct pprof *p = st;
	int err;

	if (!p->start_mono)
		p->start_mono = now_ns;
	if (now_ns - p->start_mono < p->interval_ns || (p->failed && now_ns < p->retry_at))
		return FMT_IDLE;
	if (pprof_empty(p)) { /* nothing came: no file, the next interval starts now */
		p->start_mono = now_ns;
		p->start_wall = wall_now();
		return p->files ? FMT_COMPLETE : FMT_IDLE;
	}
	err = write_file(p, why, why_len);
	if (err) {
		p->failed = true;
		p->retry_at = now_ns + RETRY_NS;
		return err;
	}
	p->failed = false;
	p->start_mono = now_ns;
	return FMT_COMPLETE;
}

static int pprof_finish(void *st, char *why, size_t why_len)
{
	struct pprof *p = st;

	return pprof_empty(p) ? 0 : write_file(p, why, why_len);
}

static void pprof_free(void *st)
{
	struct pprof *p = st;
	__u32 i;

	if (!p)
		return;
	if (p->push) /* at stop: what is queued gets push_drain_ms, the rest waits in the spool */
		pusher__close(p->push, (unsigned int)p->push_drain_ms);
	for (i = 1; p->strings && i < p->istrings.n; i++)
		free(p->strings[i]);
	free(p->strings);
	index__free(&p->istrings);
	index__free(&p->ifunctions);
	index__free(&p->ilocations);
	index__free(&p->imappings);
	index__free(&p->isamples);
	free(p->functions);
	free(p->locations);
	free(p->mappings);
	free(p->samples);
	free(p->loc_ids);
	free(p->labels_text);
	free(p->name);
	flame_comms__free(&p->comms);
	flame_scopes__free(&p->scopes);
	free(p);
}

static unsigned int pprof_counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	struct pprof *p = st;
	__u64 v[] = {
		p->files,	 p->cpu_samples,
		p->gpu_events,	 p->isamples.n ? p->isamples.n - 1 : 0, /* not the FULL_FRAME one */
		p->ilocations.n, p->ifunctions.n,
		p->imappings.n,	 p->istrings.n,
		p->events_full,	 p->bytes_written
	};
	unsigned int i, n = sizeof(v) / sizeof(v[0]);

	for (i = 0; i < n && i < max; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	if (p->push)
		i += pusher__counters(p->push, names + i, values + i, max - i);
	return i;
}

/* The configured labels, "k=v,k=v" (checked by pprof_conf_kind), as the extra labels of
 * every sample. */
static int take_labels(struct pprof *p, const char *labels)
{
	char *s, *save = NULL, *kv, *eq;

	if (labels && labels[0]) {
		p->labels_text = strdup(labels);
		if (!p->labels_text)
			return -ENOMEM;
		for (s = p->labels_text; (kv = strtok_r(s, ",", &save)); s = NULL) {
			eq = strchr(kv, '=');
			if (!eq || p->n_extra >= PPROF_LABELS_MAX)
				return -EINVAL; /* pprof_conf_kind's check lets neither through */
			*eq = 0;
			p->extra_keys[p->n_extra] = kv;
			p->extra_values[p->n_extra++] = eq + 1;
		}
	}
	return 0;
}

/* push_url: the uploader, its spool push_spool or PUSH_SPOOL_DIR beside the files, the host
 * label the samples have, the labels the samples have unless push_labels says others. */
static int push_open(struct pprof *p, const struct fmt_env *env, struct pprof_options *o, char *why,
		     size_t why_len)
{
	char spool[PPROF_PATH_MAX];
	const char *slash;
	int err;

	err = env->path(env->ctx, "push_spool", spool, sizeof(spool));
	if (err == -ENOENT) {
		slash = strrchr(p->stem, '/');
		err = snprintf(spool, sizeof(spool), "%.*s%s",
			       slash ? (int)(slash - p->stem + 1) : 0, p->stem,
			       PUSH_SPOOL_DIR) >= (int)sizeof(spool) ?
			      -ENAMETOOLONG :
			      0;
	}
	if (err) {
		snprintf(why, why_len, "push_spool: the folder's name is too long");
		return -EINVAL;
	}
	o->push.spool = spool;
	o->push.host = p->host;
	if (!o->push.labels)
		o->push.labels = o->labels;
	p->push_drain_ms = o->push.drain_ms;
	return pusher__open(&p->push, &o->push, why, why_len); /* copies what it keeps */
}

static int pprof_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct pprof *p = calloc(1, sizeof(*p));
	struct pprof_options o;
	size_t n;
	__u32 max;
	int err;

	if (!p)
		return -ENOMEM;
	err = env->path(env->ctx, "path", p->stem, sizeof(p->stem));
	if (err) {
		snprintf(why, why_len, "no output file: set 'path'");
		err = -EINVAL;
		goto fail;
	}
	n = strlen(p->stem);
	if (n > 6 && !strcmp(p->stem + n - 6, ".pb.gz"))
		p->stem[n - 6] = 0;
	err = conf_kind__options(&pprof_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (err)
		goto fail;
	if (o.host)
		snprintf(p->host, sizeof(p->host), "%s", o.host);
	else if (gethostname(p->host, sizeof(p->host) - 1) || !p->host[0])
		snprintf(p->host, sizeof(p->host), "unknown");
	err = take_labels(p, o.labels);
	if (err) {
		snprintf(why, why_len, "bad labels '%s'", o.labels);
		goto fail;
	}
	p->interval_ns = o.interval_s * 1000000000ull;
	max = (__u32)o.max_entries;
	p->max_loc_ids = max * LOCS_PER_SAMPLE;
	p->strings = calloc(max, sizeof(*p->strings));
	p->functions = calloc(max, sizeof(*p->functions));
	p->locations = calloc(max, sizeof(*p->locations));
	p->mappings = calloc(max, sizeof(*p->mappings));
	p->samples = calloc(max, sizeof(*p->samples));
	p->loc_ids = malloc((size_t)p->max_loc_ids * sizeof(*p->loc_ids));
	p->name = malloc(NAME_MAX_BYTES);
	if (!p->strings || !p->functions || !p->locations || !p->mappings || !p->samples ||
	    !p->loc_ids || !p->name || index__init(&p->istrings, max) ||
	    index__init(&p->ifunctions, max) || index__init(&p->ilocations, max) ||
	    index__init(&p->imappings, max) || index__init(&p->isamples, max) ||
	    flame_comms__init(&p->comms) || flame_scopes__init(&p->scopes)) {
		snprintf(why, why_len, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	if (o.push.url) {
		err = push_open(p, env, &o, why, why_len);
		if (err)
			goto fail;
	}
	p->start_wall = wall_now();
	tables__reset(p);
	*out = p;
	return 0;
fail:
	pprof_free(p);
	return err;
}

const struct fmt_ops fmt_pprof = {
	.kind = "pprof",
	.open = pprof_open,
	.batch = pprof_batch,
	.tick = pprof_tick,
	.finish = pprof_finish,
	.free = pprof_free,
	.counters = pprof_counters,
};
