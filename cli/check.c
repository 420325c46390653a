// SPDX-License-Identifier: MIT
/*
 * xpusup check: the invariants of a merged timeline (docs/check.md) over a Chrome trace.
 *
 * Traces run to hundreds of MB, so the file is never held: the streaming JSON reader
 * (json_reader.h) walks it once, in 1 MiB reads, validating the syntax strictly (RFC 8259,
 * UTF-8), and each trace event, decoded into a fixed-size struct ev, goes to the checks. What a check must keep
 * beyond the event in hand is kept per track and small: 24 bytes per slice (start, end and
 * the event's byte offset), 16 per flow end, the open B events, the flows waiting for their
 * other end, each stack frame of stackFrames and each id events name in sf, once. Events arrive out of time order (the timeline sink writes them as they come),
 * so overlap and nesting are decided at the end, over each track's slices sorted. A
 * violation found then names its events by byte offset; only the ones printed are read
 * again (pread, a second reader), so names are never stored.
 *
 * Nothing in the input can crash the reader (json_reader.h says how); what the checks keep of
 * an event is bounded too: names cut for printing, compared by hash and length.
 */
#include "cli/check.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/json_reader.h"
#include "cli/usage.h"
#include "common/config.h"
#include "common/hash.h"
#include "common/mix.h"
#include "common/oatab.h"
#include "supervisor/supervisor.h"

#define READ_CHUNK (1u << 20)
#define DESCRIBE_CHUNK (64u << 10)
#define NAME_KEEP 96 /* bytes of a name kept for printing; compared by hash and length */
#define SHORT_KEEP JSON_NUM_KEEP
#define MAX_PRINTED_DEFAULT 100

const char check_usage[] =
	"usage: xpusup check [--max N] [--quiet] TRACE.json...\n"
	"\n"
	"Check a Chrome trace (the timeline sink's trace.json, or any Trace Event JSON) against\n"
	"the invariants of a merged timeline (docs/check.md states them and why), reading it\n"
	"once without holding it (any size):\n"
	"\n"
	"  event           every event has ph, a name (E may omit it), integer pid and tid, and\n"
	"                  (but metadata) a numeric ts >= 0; X has a dur >= 0\n"
	"  order           B and E events are in time order on their track, as the format\n"
	"                  requires; X slices and other events may come in any order\n"
	"  stream-overlap  slices on one GPU stream never overlap: a stream runs one kernel,\n"
	"                  copy or memset at a time (GPU stream tracks: the process is named\n"
	"                  'GPU D (pid N)', the thread 'stream S', or a slice has cat kernel,\n"
	"                  memcpy or memset)\n"
	"  nesting         on every other track, slices (X, and B/E pairs) nest: a parent spans\n"
	"                  its children; every E closes the B open on its track, by name, and\n"
	"                  every B is closed\n"
	"  flow            every flow arrow has both ends (s and f with one cat, name and id,\n"
	"                  once each; every flow_in a flow_out with its bind_id, which may bind\n"
	"                  several flow_in slices or none), the start not after the end, and s\n"
	"                  and f (bp e) each on a slice of its track\n"
	"  counter         C events have at least one value, all numeric\n"
	"  stack           every sf names a frame of stackFrames; every frame has a name and\n"
	"                  its parent, when it has one, is a frame; parents never loop back\n"
	"  metadata        otherData.events, when present, counts the events\n"
	"\n"
	"  -m, --max N     print at most N violations of each check per file (default 100;\n"
	"                  0: all); the summary counts them all\n"
	"  -q, --quiet     print only the summary line of each file\n"
	"\n"
	"Each violation is one line: FILE: byte OFFSET: CHECK: the event (ph, name, ts, track)\n"
	"and what is wrong; then a summary line per file. Exit status: 0 every file clean,\n"
	"1 violations, 100 usage, 111 a file unreadable or not a JSON trace (with the byte\n"
	"offset). Documentation: docs/check.md.\n";

/*
 * A time in microseconds as integer ns: exact for the plain decimals the timeline sink
 * writes (rounded half up beyond the third decimal), through strtod for exponents. False
 * when out of range (|t| above 9.2e15 us).
 */
static bool num_ns(const struct json_num *n, int64_t *ns)
{
	const char *s = n->text;
	int64_t ip = 0, frac = 0;
	bool neg = false;
	unsigned int i;
	double d;

	if (n->len >= sizeof(n->text))
		return false;
	if (strpbrk(s, "eE")) {
		d = strtod(s, NULL) * 1000;
		if (!(d > -9.2e18 && d < 9.2e18))
			return false;
		*ns = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
		return true;
	}
	if (*s == '-') {
		neg = true;
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++) {
		if (ip > 9200000000000000ll / 10)
			return false;
		ip = ip * 10 + (*s - '0');
	}
	if (ip > 9200000000000000ll)
		return false;
	if (*s == '.') {
		for (s++, i = 0; s[i] >= '0' && s[i] <= '9'; i++)
			if (i < 3)
				frac = frac * 10 + (s[i] - '0');
			else if (i == 3)
				frac += s[i] >= '5'; /* the fourth decimal rounds */
		for (; i < 3; i++)
			frac *= 10;
	}
	*ns = (ip * 1000 + frac) * (neg ? -1 : 1);
	return true;
}

/* ---- one trace event ----------------------------------------------------------------------- */

struct ev {
	uint64_t off; /* of its '{' */
	char ph[4], cat[SHORT_KEEP], name[NAME_KEEP], bp[4], scope[4];
	char ts_text[SHORT_KEEP], dur_text[SHORT_KEEP];
	char args_name[NAME_KEEP], args_bad[SHORT_KEEP];
	uint64_t name_hash, cat_hash, id_hash, bind_hash;
	size_t name_len;
	int64_t pid, tid, ts, dur;
	char sf_text[SHORT_KEEP];
	uint64_t sf_hash;
	bool has_ph, has_name, has_pid, has_tid, has_ts, has_dur, has_id, has_bind, has_sf;
	bool pid_bad, tid_bad, ts_bad, dur_bad, sf_bad; /* present but not what it must be */
	bool flow_in, flow_out, has_args_name;
	unsigned int args_kind; /* 0 none, 1 an object, 2 something else */
	unsigned int args_n, args_numeric;
};

static int read_str(struct json_reader *p, char *buf, size_t cap, bool *present, size_t *len,
		    uint64_t *hash)
{
	struct json_str s = { buf, cap, 0, 0 };

	if (json_reader__peek(p) != '"')
		return json_reader__skip_value(p, 2);
	if (json_reader__string(p, &s))
		return -1;
	*present = true;
	if (len)
		*len = s.len;
	if (hash)
		*hash = s.hash;
	return 0;
}

/* A number as text for printing and as a value; *bad when it is there but not a number. */
static int read_num(struct json_reader *p, struct json_num *n, bool *present, bool *bad)
{
	int c = json_reader__peek(p);

	*present = true;
	if (c != '-' && (c < '0' || c > '9')) {
		*bad = true;
		return json_reader__skip_value(p, 2);
	}
	return json_reader__number(p, n);
}

/* An id as flows and stack frames match it: a string's content, or a number's text (1 and
 * "1" are one id); text (SHORT_KEEP bytes, may be NULL) keeps it for printing. */
static int read_id(struct json_reader *p, bool *present, uint64_t *hash, char *text)
{
	char buf[SHORT_KEEP];
	struct json_str s = { text ? text : buf, SHORT_KEEP, 0, 0 };
	struct json_num n;
	int c = json_reader__peek(p);

	if (c == '"') {
		if (json_reader__string(p, &s))
			return -1;
		*hash = s.hash;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		if (json_reader__number(p, &n))
			return -1;
		*hash = xpu_hash_bytes(n.text, strlen(n.text));
		if (text)
			snprintf(text, SHORT_KEEP, "%s", n.text);
	} else {
		return json_reader__skip_value(p, 2);
	}
	*present = true;
	return 0;
}

static int args_member(struct json_reader *p, const char *key, void *arg)
{
	struct ev *e = arg;
	struct json_num n;
	int c = json_reader__peek(p);

	e->args_n++;
	if (c == '-' || (c >= '0' && c <= '9')) {
		e->args_numeric++;
		return json_reader__number(p, &n);
	}
	if (!e->args_bad[0])
		snprintf(e->args_bad, sizeof(e->args_bad), "%s", key[0] ? key : "(a long key)");
	if (!strcmp(key, "name") && c == '"')
		return read_str(p, e->args_name, sizeof(e->args_name), &e->has_args_name, NULL,
				NULL);
	return json_reader__skip_value(p, 3);
}

static int event_member(struct json_reader *p, const char *key, void *arg)
{
	struct ev *e = arg;
	struct json_num n;
	bool t;
	int c;

	if (!strcmp(key, "ph"))
		return read_str(p, e->ph, sizeof(e->ph), &e->has_ph, NULL, NULL);
	if (!strcmp(key, "name"))
		return read_str(p, e->name, sizeof(e->name), &e->has_name, &e->name_len,
				&e->name_hash);
	if (!strcmp(key, "cat"))
		return read_str(p, e->cat, sizeof(e->cat), &t, NULL, &e->cat_hash);
	if (!strcmp(key, "bp"))
		return read_str(p, e->bp, sizeof(e->bp), &t, NULL, NULL);
	if (!strcmp(key, "s"))
		return read_str(p, e->scope, sizeof(e->scope), &t, NULL, NULL);
	if (!strcmp(key, "pid") || !strcmp(key, "tid")) {
		bool pid = key[0] == 'p', bad = false;
		int64_t v = 0;

		if (read_num(p, &n, pid ? &e->has_pid : &e->has_tid, &bad))
			return -1;
		bad = bad || !json_num__i64(&n, &v) || v < 0;
		if (pid) {
			e->pid = v;
			e->pid_bad = bad;
		} else {
			e->tid = v;
			e->tid_bad = bad;
		}
		return 0;
	}
	if (!strcmp(key, "ts") || !strcmp(key, "dur")) {
		bool ts = key[0] == 't', bad = false;

		if (read_num(p, &n, ts ? &e->has_ts : &e->has_dur, &bad))
			return -1;
		if (ts) {
			bad = bad || !num_ns(&n, &e->ts) || e->ts < 0;
			snprintf(e->ts_text, sizeof(e->ts_text), "%s", bad ? "?" : n.text);
			e->ts_bad = bad;
		} else {
			bad = bad || !num_ns(&n, &e->dur) || e->dur < 0;
			snprintf(e->dur_text, sizeof(e->dur_text), "%s", bad ? "?" : n.text);
			e->dur_bad = bad;
		}
		return 0;
	}
	if (!strcmp(key, "id"))
		return read_id(p, &e->has_id, &e->id_hash, NULL);
	if (!strcmp(key, "bind_id"))
		return read_id(p, &e->has_bind, &e->bind_hash, NULL);
	if (!strcmp(key, "sf")) {
		c = json_reader__peek(p);
		if (c != '"' && c != '-' && (c < '0' || c > '9')) {
			e->sf_bad = true;
			return json_reader__skip_value(p, 2);
		}
		return read_id(p, &e->has_sf, &e->sf_hash, e->sf_text);
	}
	if (!strcmp(key, "flow_in") || !strcmp(key, "flow_out")) {
		c = json_reader__peek(p);
		t = c == 't';
		if (c != 't' && c != 'f')
			return json_reader__skip_value(p, 2);
		if (json_reader__literal(p, t ? "true" : "false"))
			return -1;
		if (key[5] == 'i')
			e->flow_in = t;
		else
			e->flow_out = t;
		return 0;
	}
	if (!strcmp(key, "args")) {
		if (json_reader__peek(p) != '{') {
			e->args_kind = 2;
			return json_reader__skip_value(p, 2);
		}
		e->args_kind = 1;
		return json_reader__each_member(p, args_member, e);
	}
	return json_reader__skip_value(p, 2);
}

static int parse_event(struct json_reader *p, struct ev *e)
{
	memset(e, 0, sizeof(*e));
	json_reader__skip_ws(p);
	e->off = json_reader__offset(p);
	return json_reader__each_member(p, event_member, e);
}

/* ---- what is kept per track ---------------------------------------------------------------- */

struct slice {
	int64_t start, end;
	uint64_t off;
};

struct anchor {
	int64_t ts;
	uint64_t off;
};

struct open_b {
	int64_t ts;
	uint64_t name_hash, off;
	size_t name_len;
};

enum track_flags {
	TRACK_GPU_CAT = 1, /* a slice of cat kernel, memcpy or memset */
	TRACK_STREAM_NAME = 2, /* thread_name "stream S" */
	TRACK_BE_SEEN = 4,
};

struct track {
	int64_t pid, tid;
	struct slice *slices;
	struct anchor *anchors;
	struct open_b *open;
	size_t n_slices, cap_slices, n_anchors, cap_anchors, n_open, cap_open;
	int64_t last_be_ts;
	unsigned int flags;
};

/* (pid, tid) -> index + 1; open addressing, insert only. */
struct track_map {
	uint32_t *slots;
	size_t cap;
};

struct pid_set {
	uint32_t *slots;
	size_t cap, n;
};

/* A flow waiting for its other end; a v2 flow (bind_id) stays for the whole file: its start
 * may bind any number of ends. */
struct flow {
	uint64_t key;
	int64_t ts[2]; /* start, end (v2 before its start: the earliest end) */
	uint64_t off[2];
	uint64_t ends; /* v2: ends seen before the start */
	bool has[2];
	bool v2;
};

/* key -> flow; linear probing with backward-shift deletion (flows complete and go). */
struct flow_map {
	struct flow *slots;
	bool *used;
	size_t cap, n;
};

/*
 * Stacks (the format's "stackFrames" dictionary and the "sf" of events), which may come in
 * either order in the file, are checked at the end from what is kept of them: each frame
 * (its id, its parent's, by hash) and each id events name in sf, once, with the first event
 * naming it. That is per distinct frame, not per event: a trace names its stacks many times.
 */
struct frame {
	uint64_t id, parent; /* hashes, as read_id makes them */
	uint64_t off; /* of its value in stackFrames */
	uint32_t walk; /* check_frames: the walk on it; FRAME_WALKED: done (a root, or a cycle told) */
	bool has_parent, named;
	char id_text[SHORT_KEEP], parent_text[SHORT_KEEP];
};

#define FRAME_WALKED UINT32_MAX

/* An id events name in sf, with the first of them. */
struct frame_ref {
	uint64_t id, off;
	char text[SHORT_KEEP];
};

/* id hash -> index in an array (frames or refs); linear probing, grown at half full. */
struct id_index {
	uint64_t *keys;
	uint32_t *idx1; /* index + 1, 0: empty */
	size_t cap, n;
};

enum check_kind { K_EVENT, K_ORDER, K_OVERLAP, K_NESTING, K_FLOW, K_COUNTER, K_META, K_STACK, K_N };
static const char *const kind_names[K_N] = { "event", "order",	 "stream-overlap", "nesting",
					     "flow",  "counter", "metadata",	   "stack" };

struct check {
	const char *path;
	int fd;
	unsigned long long max_printed;
	bool quiet;
	struct json_reader p;
	struct json_reader describe; /* a second reader, for events named by offset */
	struct track *tracks;
	size_t n_tracks, cap_tracks;
	struct track_map tmap;
	struct pid_set gpu_pids;
	struct flow_map flows;
	struct frame *frames;
	size_t n_frames, cap_frames;
	struct id_index frame_index;
	struct frame_ref *refs;
	size_t n_refs, cap_refs;
	struct id_index ref_index;
	bool frames_seen, frame_ids_long; /* a stackFrames member; one with an id cut (too long) */
	uint64_t violations[K_N];
	uint64_t events, slices, flows_done, counters, gpu_tracks;
	bool saw_events, other_events_set;
	int64_t other_events;
	bool oom;
};

/* Grow *v (of *cap elements of size) to hold one more; false when out of memory. */
static bool grow(void *v, size_t *cap, size_t n, size_t size)
{
	size_t ncap = *cap ? *cap * 2 : 8;
	void *nv;

	if (n < *cap)
		return true;
	nv = realloc(*(void **)v, ncap * size);
	if (!nv)
		return false;
	*(void **)v = nv;
	*cap = ncap;
	return true;
}

/* The index of track (pid, tid), made if new; -1 when out of memory. */
static long track_get(struct check *c, int64_t pid, int64_t tid)
{
	struct track_map *m = &c->tmap;
	size_t i, mask;
	uint32_t v;

	if (m->cap && (c->n_tracks + 1) * 2 > m->cap) {
		/* rehash at half full */
		struct track_map nm = { calloc(m->cap * 2, sizeof(uint32_t)), m->cap * 2 };

		if (!nm.slots)
			return -1;
		for (i = 0; i < m->cap; i++) {
			size_t j;

			if (!m->slots[i])
				continue;
			v = m->slots[i];
			j = xpu_mix64((uint64_t)c->tracks[v - 1].pid * 0x9e3779b97f4a7c15ull ^
				      (uint64_t)c->tracks[v - 1].tid) &
			    (nm.cap - 1);
			while (nm.slots[j])
				j = (j + 1) & (nm.cap - 1);
			nm.slots[j] = v;
		}
		free(m->slots);
		*m = nm;
	}
	if (!m->cap) {
		m->slots = calloc(1024, sizeof(uint32_t));
		if (!m->slots)
			return -1;
		m->cap = 1024;
	}
	mask = m->cap - 1;
	for (i = xpu_mix64((uint64_t)pid * 0x9e3779b97f4a7c15ull ^ (uint64_t)tid) & mask;
	     m->slots[i]; i = (i + 1) & mask) {
		v = m->slots[i];
		if (c->tracks[v - 1].pid == pid && c->tracks[v - 1].tid == tid)
			return (long)v - 1;
	}
	if (!grow(&c->tracks, &c->cap_tracks, c->n_tracks, sizeof(*c->tracks)) ||
	    c->n_tracks >= UINT32_MAX - 1)
		return -1;
	memset(&c->tracks[c->n_tracks], 0, sizeof(*c->tracks));
	c->tracks[c->n_tracks].pid = pid;
	c->tracks[c->n_tracks].tid = tid;
	c->tracks[c->n_tracks].last_be_ts = INT64_MIN;
	m->slots[i] = (uint32_t)++c->n_tracks;
	return (long)c->n_tracks - 1;
}

/* The GPU pseudo-processes: a set of pids (0 marks a free slot). */
static int gpu_pid_add(struct check *c, int64_t pid)
{
	struct pid_set *m = &c->gpu_pids;
	size_t i, mask;

	if (!m->cap || (m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 64, j;
		uint32_t *slots = calloc(ncap, sizeof(uint32_t));

		if (!slots)
			return -ENOMEM;
		for (j = 0; j < m->cap; j++) {
			if (!m->slots[j])
				continue;
			i = xpu_mix64((uint64_t)m->slots[j]) & (ncap - 1);
			while (slots[i])
				i = (i + 1) & (ncap - 1);
			slots[i] = m->slots[j];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = ncap;
	}
	/* pids of the timeline sink's pseudo-processes fit 32 bits; others are not GPU */
	if (pid <= 0 || pid >= UINT32_MAX)
		return 0;
	mask = m->cap - 1;
	for (i = xpu_mix64((uint64_t)pid) & mask; m->slots[i]; i = (i + 1) & mask)
		if (m->slots[i] == (uint32_t)pid)
			return 0;
	m->slots[i] = (uint32_t)pid;
	m->n++;
	return 0;
}

static bool gpu_pid(const struct check *c, int64_t pid)
{
	const struct pid_set *m = &c->gpu_pids;
	size_t i, mask;

	if (!m->cap || pid <= 0 || pid >= UINT32_MAX)
		return false;
	mask = m->cap - 1;
	for (i = xpu_mix64((uint64_t)pid) & mask; m->slots[i]; i = (i + 1) & mask)
		if (m->slots[i] == (uint32_t)pid)
			return true;
	return false;
}

static struct flow *flow_find(struct check *c, uint64_t key, bool make)
{
	struct flow_map *m = &c->flows;
	size_t i, mask;

	if (make && (m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 1024, j;
		struct flow *slots = calloc(ncap, sizeof(*slots));
		bool *used = calloc(ncap, sizeof(*used));

		if (!slots || !used) {
			free(slots);
			free(used);
			return NULL;
		}
		for (j = 0; j < m->cap; j++) {
			if (!m->used[j])
				continue;
			i = xpu_mix64(m->slots[j].key) & (ncap - 1);
			while (used[i])
				i = (i + 1) & (ncap - 1);
			slots[i] = m->slots[j];
			used[i] = true;
		}
		free(m->slots);
		free(m->used);
		m->slots = slots;
		m->used = used;
		m->cap = ncap;
	}
	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = xpu_mix64(key) & mask; m->used[i]; i = (i + 1) & mask)
		if (m->slots[i].key == key)
			return &m->slots[i];
	if (!make)
		return NULL;
	m->used[i] = true;
	memset(&m->slots[i], 0, sizeof(m->slots[i]));
	m->slots[i].key = key;
	m->n++;
	return &m->slots[i];
}

static bool flow_slot_empty(const void *tab, uint32_t slot)
{
	return !((const struct flow_map *)tab)->used[slot];
}

static uint32_t flow_slot_home(const void *tab, uint32_t slot)
{
	return (uint32_t)xpu_mix64(((const struct flow_map *)tab)->slots[slot].key);
}

static void flow_slot_move(void *tab, uint32_t to, uint32_t from)
{
	struct flow_map *m = tab;

	m->slots[to] = m->slots[from];
	m->used[to] = true;
}

static void flow_slot_clear(void *tab, uint32_t slot)
{
	((struct flow_map *)tab)->used[slot] = false;
}

static const struct oatab_ops flow_slot_ops = {
	.empty = flow_slot_empty,
	.home = flow_slot_home,
	.move = flow_slot_move,
	.clear = flow_slot_clear,
};

static void flow_remove(struct check *c, struct flow *f)
{
	struct flow_map *m = &c->flows;

	oatab__delete(m, (uint32_t)(m->cap - 1), (uint32_t)(f - m->slots), &flow_slot_ops);
	m->n--;
}

/* The index of key, or -1; with make >= 0 and the key new, make is stored as its index (-2:
 * out of memory). */
static long id_index__get(struct id_index *m, uint64_t key, long make)
{
	size_t i, j, mask;

	if (make >= 0 && (m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		uint64_t *keys = calloc(ncap, sizeof(*keys));
		uint32_t *idx1 = calloc(ncap, sizeof(*idx1));

		if (!keys || !idx1) {
			free(keys);
			free(idx1);
			return -2;
		}
		for (j = 0; j < m->cap; j++) {
			if (!m->idx1[j])
				continue;
			for (i = xpu_mix64(m->keys[j]) & (ncap - 1); idx1[i];
			     i = (i + 1) & (ncap - 1))
				;
			keys[i] = m->keys[j];
			idx1[i] = m->idx1[j];
		}
		free(m->keys);
		free(m->idx1);
		m->keys = keys;
		m->idx1 = idx1;
		m->cap = ncap;
	}
	if (!m->cap)
		return -1;
	mask = m->cap - 1;
	for (i = xpu_mix64(key) & mask; m->idx1[i]; i = (i + 1) & mask)
		if (m->keys[i] == key)
			return (long)m->idx1[i] - 1;
	if (make < 0)
		return -1;
	m->keys[i] = key;
	m->idx1[i] = (uint32_t)make + 1;
	m->n++;
	return make;
}

/* ---- reporting ----------------------------------------------------------------------------- */

/* A name for printing: quoted, control characters escaped, cut at 60 bytes. */
static void quote(char *out, size_t size, const char *name, size_t full_len)
{
	size_t o = 0, i;

	out[o++] = '"';
	for (i = 0; name[i] && o + 8 < size && i < 60; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch < 0x20 || ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	if (i < full_len && o + 5 < size) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = 0;
}

/* "X \"name\" ts T dur D on (pid, tid)" */
static void describe_ev(const struct ev *e, char *out, size_t size)
{
	char name[128] = "", dur[64] = "", track[64] = "";

	if (e->has_name)
		quote(name, sizeof(name), e->name, e->name_len);
	if (e->has_dur && e->ph[0] == 'X')
		snprintf(dur, sizeof(dur), " dur %s", e->dur_text);
	if (e->has_pid || e->has_tid)
		snprintf(track, sizeof(track), " on (%" PRId64 ", %" PRId64 ")", e->pid, e->tid);
	snprintf(out, size, "%s%s%s%s%s%s%s", e->has_ph ? e->ph : "(no ph)", name[0] ? " " : "",
		 name, e->has_ts ? " ts " : "", e->has_ts ? e->ts_text : "", dur, track);
}

/* The event at byte off, read again. */
static void describe_at(struct check *c, uint64_t off, char *out, size_t size)
{
	struct json_reader *p = &c->describe;
	struct ev e;

	json_reader__seek(p, off);
	if (parse_event(p, &e))
		snprintf(out, size, "the event at byte %" PRIu64, off);
	else
		describe_ev(&e, out, size);
}

__attribute__((format(printf, 4, 5))) static void report(struct check *c, enum check_kind kind,
							 uint64_t off, const char *fmt, ...)
{
	va_list ap;

	c->violations[kind]++;
	if (c->quiet || (c->max_printed && c->violations[kind] > c->max_printed))
		return;
	printf("%s: byte %" PRIu64 ": %s: ", c->path, off, kind_names[kind]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool printing(const struct check *c, enum check_kind kind)
{
	return !c->quiet && (!c->max_printed || c->violations[kind] < c->max_printed);
}

/* ns as microseconds with three decimals, as the file writes them */
static const char *us(char *buf, size_t size, int64_t ns)
{
	snprintf(buf, size, "%s%" PRId64 ".%03" PRId64, ns < 0 ? "-" : "",
		 (ns < 0 ? -(ns / 1000) : ns / 1000), (ns < 0 ? -(ns % 1000) : ns % 1000));
	return buf;
}

/* ---- the checks, event by event ------------------------------------------------------------ */

static void note_oom(struct check *c)
{
	c->oom = true;
}

static void add_slice(struct check *c, long t, int64_t start, int64_t end, uint64_t off)
{
	struct track *tr = &c->tracks[t];

	if (!grow(&tr->slices, &tr->cap_slices, tr->n_slices, sizeof(*tr->slices))) {
		note_oom(c);
		return;
	}
	tr->slices[tr->n_slices++] = (struct slice){ start, end, off };
	c->slices++;
}

static void add_anchor(struct check *c, long t, int64_t ts, uint64_t off)
{
	struct track *tr = &c->tracks[t];

	if (!grow(&tr->anchors, &tr->cap_anchors, tr->n_anchors, sizeof(*tr->anchors))) {
		note_oom(c);
		return;
	}
	tr->anchors[tr->n_anchors++] = (struct anchor){ ts, off };
}

static void flow_order(struct check *c, const struct flow *f, uint64_t end_off, int64_t end_ts)
{
	char a[256], b[256], t1[32], t2[32];

	if (f->ts[0] <= end_ts)
		return;
	if (printing(c, K_FLOW)) {
		describe_at(c, f->off[0], a, sizeof(a));
		describe_at(c, end_off, b, sizeof(b));
	}
	report(c, K_FLOW, f->off[0],
	       "%s: the arrow starts at %s, after its end at %s (%s, byte %" PRIu64 ")", a,
	       us(t1, sizeof(t1), f->ts[0]), us(t2, sizeof(t2), end_ts), b, end_off);
}

/*
 * One end (0 flow_out, 1 flow_in) of the v2 flow with key. Perfetto binds a flow_in to the
 * flow_out of its bind_id and never closes the flow (its JSON importer), so one start may
 * have many ends (a graph's kernels, from their one launch) or none (a call whose GPU work
 * is in another file): only a second start and an end with no start are wrong.
 */
static void flow_bind(struct check *c, const struct ev *e, uint64_t key, int end)
{
	char a[256], b[256];
	struct flow *f = flow_find(c, key, true);

	if (!f) {
		note_oom(c);
		return;
	}
	f->v2 = true;
	if (end && f->has[0]) {
		flow_order(c, f, e->off, e->ts);
		c->flows_done++;
		return;
	}
	if (end) { /* before its start: the earliest end is the one to compare */
		if (!f->has[1] || e->ts < f->ts[1]) {
			f->ts[1] = e->ts;
			f->off[1] = e->off;
		}
		f->has[1] = true;
		f->ends++;
		return;
	}
	if (f->has[0]) {
		if (printing(c, K_FLOW)) {
			describe_ev(e, a, sizeof(a));
			describe_at(c, f->off[0], b, sizeof(b));
		}
		report(c, K_FLOW, e->off,
		       "%s: a second flow_out with this bind_id (the first: %s, byte %" PRIu64 ")",
		       a, b, f->off[0]);
		return;
	}
	f->has[0] = true;
	f->ts[0] = e->ts;
	f->off[0] = e->off;
	if (f->has[1])
		flow_order(c, f, f->off[1], f->ts[1]);
	c->flows_done += f->ends;
	f->ends = 0;
}

/* One end (0 start, 1 end) of the flow with key. */
static void flow_end(struct check *c, const struct ev *e, uint64_t key, int end)
{
	char a[256], b[256], t1[32], t2[32];
	struct flow *f = flow_find(c, key, true);

	if (!f) {
		note_oom(c);
		return;
	}
	if (f->has[end]) {
		if (printing(c, K_FLOW)) {
			describe_ev(e, a, sizeof(a));
			describe_at(c, f->off[end], b, sizeof(b));
		}
		report(c, K_FLOW, e->off,
		       "%s: a second flow %s with this id (the first: %s, byte %" PRIu64 ")", a,
		       end ? "end" : "start", b, f->off[end]);
		return;
	}
	f->has[end] = true;
	f->ts[end] = e->ts;
	f->off[end] = e->off;
	if (!f->has[!end])
		return;
	if (f->ts[0] > f->ts[1]) {
		if (printing(c, K_FLOW)) {
			describe_at(c, f->off[0], a, sizeof(a));
			describe_at(c, f->off[1], b, sizeof(b));
		}
		report(c, K_FLOW, f->off[0],
		       "%s: the arrow starts at %s, after its end at %s (%s, byte %" PRIu64 ")", a,
		       us(t1, sizeof(t1), f->ts[0]), us(t2, sizeof(t2), f->ts[1]), b, f->off[1]);
	}
	c->flows_done++;
	flow_remove(c, f);
}

static uint64_t flow_key(const struct ev *e, uint64_t id_hash, bool v2)
{
	uint64_t parts[4] = { e->cat_hash, e->name_hash, id_hash, v2 };

	if (v2) /* flow_out/flow_in bind slices by bind_id alone */
		parts[0] = parts[1] = 0;
	return xpu_hash_bytes(parts, sizeof(parts));
}

static void on_b(struct check *c, const struct ev *e, long t)
{
	struct track *tr = &c->tracks[t];

	if (!grow(&tr->open, &tr->cap_open, tr->n_open, sizeof(*tr->open))) {
		note_oom(c);
		return;
	}
	tr->open[tr->n_open++] = (struct open_b){ e->ts, e->name_hash, e->off, e->name_len };
}

static void on_e(struct check *c, const struct ev *e, long t)
{
	struct track *tr = &c->tracks[t];
	char a[256], b[256];
	struct open_b *o;

	if (!tr->n_open) {
		if (printing(c, K_NESTING))
			describe_ev(e, a, sizeof(a));
		report(c, K_NESTING, e->off, "%s: E with no B open on its track", a);
		return;
	}
	o = &tr->open[--tr->n_open];
	if (e->has_name && (e->name_hash != o->name_hash || e->name_len != o->name_len)) {
		if (printing(c, K_NESTING)) {
			describe_ev(e, a, sizeof(a));
			describe_at(c, o->off, b, sizeof(b));
		}
		report(c, K_NESTING, e->off,
		       "%s: closes %s (byte %" PRIu64 "), not a B of its name", a, b, o->off);
	}
	if (e->ts >= o->ts) /* else reported as out of order */
		add_slice(c, t, o->ts, e->ts, o->off);
}

static bool gpu_cat(const char *cat)
{
	return !strcmp(cat, "kernel") || !strcmp(cat, "memcpy") || !strcmp(cat, "memset");
}

static void on_metadata(struct check *c, const struct ev *e)
{
	unsigned int device, pid;
	int end = 0;
	long t;

	if (!e->has_args_name || !e->has_pid)
		return;
	if (!strcmp(e->name, "process_name")) {
		/* the timeline sink's GPU pseudo-process: "GPU D (pid N)" exactly */
		if (sscanf(e->args_name, "GPU %u (pid %u)%n", &device, &pid, &end) == 2 &&
		    !e->args_name[end] && gpu_pid_add(c, e->pid))
			note_oom(c);
	} else if (!strcmp(e->name, "thread_name") && e->has_tid &&
		   sscanf(e->args_name, "stream %u%n", &device, &end) == 1 && !e->args_name[end]) {
		t = track_get(c, e->pid, e->tid);
		if (t < 0) {
			note_oom(c);
			return;
		}
		c->tracks[t].flags |= TRACK_STREAM_NAME;
	}
}

/* An event's sf: its id kept once, with the first event that names it. */
static void on_sf(struct check *c, const struct ev *e)
{
	long i = id_index__get(&c->ref_index, e->sf_hash, (long)c->n_refs);

	if (i == -2 ||
	    (i == (long)c->n_refs && !grow(&c->refs, &c->cap_refs, c->n_refs, sizeof(*c->refs)))) {
		note_oom(c);
		return;
	}
	if (i < (long)c->n_refs)
		return;
	c->refs[c->n_refs].id = e->sf_hash;
	c->refs[c->n_refs].off = e->off;
	snprintf(c->refs[c->n_refs].text, sizeof(c->refs[0].text), "%s",
		 e->sf_text[0] ? e->sf_text : "(a long id)");
	c->n_refs++;
}

static void on_event(struct check *c, const struct ev *e)
{
	char a[256], t1[32];
	char ph = e->ph[0];
	long t;

	c->events++;
	if (e->has_sf)
		on_sf(c, e);
	if (e->sf_bad) {
		describe_ev(e, a, sizeof(a));
		report(c, K_STACK, e->off, "%s: sf is not an id (a number or a string)", a);
	}
	if (!e->has_ph || strlen(e->ph) != 1 || !strchr("BEXiICbneSTpFstfPNODMVvRc()", ph)) {
		describe_ev(e, a, sizeof(a));
		report(c, K_EVENT, e->off, "%s: %s", a, e->has_ph ? "unknown ph" : "no ph");
		return;
	}
	if (!e->has_name && ph != 'E') {
		describe_ev(e, a, sizeof(a));
		report(c, K_EVENT, e->off, "%s: no name", a);
	}
	if (!e->has_pid || e->pid_bad || (ph != 'M' && (!e->has_tid || e->tid_bad))) {
		describe_ev(e, a, sizeof(a));
		report(c, K_EVENT, e->off, "%s: %s is not an integer >= 0", a,
		       !e->has_pid || e->pid_bad ? "pid" : "tid");
		return;
	}
	if (ph == 'M') {
		on_metadata(c, e);
		return;
	}
	if (!e->has_ts || e->ts_bad) {
		describe_ev(e, a, sizeof(a));
		report(c, K_EVENT, e->off, "%s: %s", a,
		       e->has_ts ? "ts is not a number >= 0" : "no ts");
		return;
	}
	t = track_get(c, e->pid, e->tid);
	if (t < 0) {
		note_oom(c);
		return;
	}
	switch (ph) {
	case 'X':
		if (!e->has_dur || e->dur_bad) {
			describe_ev(e, a, sizeof(a));
			report(c, K_EVENT, e->off, "%s: X without a dur >= 0", a);
			return;
		}
		if (gpu_cat(e->cat))
			c->tracks[t].flags |= TRACK_GPU_CAT;
		add_slice(c, t, e->ts, e->ts + e->dur, e->off);
		if (e->flow_out && (e->has_bind || e->has_id))
			flow_bind(c, e, flow_key(e, e->has_bind ? e->bind_hash : e->id_hash, true),
				  0);
		if (e->flow_in && (e->has_bind || e->has_id))
			flow_bind(c, e, flow_key(e, e->has_bind ? e->bind_hash : e->id_hash, true),
				  1);
		return;
	case 'B':
	case 'E':
		/* Trace Event Format: duration events of a thread are in time order */
		if (e->ts < c->tracks[t].last_be_ts) {
			describe_ev(e, a, sizeof(a));
			report(c, K_ORDER, e->off,
			       "%s: before the previous B/E of its track (at %s): B and E must be "
			       "written in time order",
			       a, us(t1, sizeof(t1), c->tracks[t].last_be_ts));
		} else {
			c->tracks[t].last_be_ts = e->ts;
		}
		if (ph == 'B')
			on_b(c, e, t);
		else
			on_e(c, e, t);
		return;
	case 's':
	case 'f':
		if (!e->has_id) {
			describe_ev(e, a, sizeof(a));
			report(c, K_FLOW, e->off, "%s: a flow event without an id", a);
			return;
		}
		flow_end(c, e, flow_key(e, e->id_hash, false), ph == 'f');
		/* s binds to the slice around it; f to the one around it only with bp e */
		if (ph == 's' || !strcmp(e->bp, "e"))
			add_anchor(c, t, e->ts, e->off);
		return;
	case 'C':
		c->counters++;
		if (e->args_kind != 1 || !e->args_n || e->args_numeric != e->args_n) {
			describe_ev(e, a, sizeof(a));
			if (e->args_kind != 1 || !e->args_n)
				report(c, K_COUNTER, e->off, "%s: a counter without values", a);
			else
				report(c, K_COUNTER, e->off, "%s: value '%s' is not a number", a,
				       e->args_bad);
		}
		return;
	default:
		return;
	}
}

/* ---- the checks at the end, track by track ------------------------------------------------- */

static int by_start(const void *pa, const void *pb)
{
	const struct slice *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1; /* the longer first: the parent */
	return a->off < b->off ? -1 : a->off > b->off;
}

static int by_ts(const void *pa, const void *pb)
{
	const struct anchor *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->off < b->off ? -1 : a->off > b->off;
}

/* A stream runs one thing at a time. */
static void check_stream(struct check *c, struct track *tr)
{
	const struct slice *prev = NULL, *s;
	char a[256], b[256], t1[32];
	size_t i;

	c->gpu_tracks++;
	for (i = 0; i < tr->n_slices; i++) {
		s = &tr->slices[i];
		if (prev && s->start < prev->end) {
			if (printing(c, K_OVERLAP)) {
				describe_at(c, s->off, a, sizeof(a));
				describe_at(c, prev->off, b, sizeof(b));
			}
			report(c, K_OVERLAP, s->off,
			       "%s: starts before %s (byte %" PRIu64
			       ") ends at %s: work on one GPU "
			       "stream overlaps",
			       a, b, prev->off, us(t1, sizeof(t1), prev->end));
		}
		if (!prev || s->end > prev->end)
			prev = s;
	}
}

/* Slices nest: each one that starts inside another ends inside it. */
static void check_nesting(struct check *c, struct track *tr)
{
	const struct slice **stack = NULL, *s;
	size_t depth = 0, cap = 0, i;
	char a[256], b[256], t1[32], t2[32];

	for (i = 0; i < tr->n_slices; i++) {
		s = &tr->slices[i];
		while (depth && stack[depth - 1]->end <= s->start)
			depth--;
		if (depth && s->end > stack[depth - 1]->end) {
			const struct slice *parent = stack[depth - 1];

			if (printing(c, K_NESTING)) {
				describe_at(c, s->off, a, sizeof(a));
				describe_at(c, parent->off, b, sizeof(b));
			}
			report(c, K_NESTING, s->off,
			       "%s: ends at %s, after its parent %s (byte %" PRIu64 ") ends at %s",
			       a, us(t1, sizeof(t1), s->end), b, parent->off,
			       us(t2, sizeof(t2), parent->end));
		}
		if (!grow(&stack, &cap, depth, sizeof(*stack))) {
			note_oom(c);
			break;
		}
		stack[depth++] = s;
	}
	free(stack);
}

/* Flow ends sit on a slice of their track. */
static void check_anchors(struct check *c, struct track *tr)
{
	int64_t reach = INT64_MIN; /* the latest end of the slices started so far */
	char a[256];
	size_t i, j = 0;

	if (tr->n_anchors) /* qsort wants a pointer even for nothing */
		qsort(tr->anchors, tr->n_anchors, sizeof(*tr->anchors), by_ts);
	for (i = 0; i < tr->n_anchors; i++) {
		for (; j < tr->n_slices && tr->slices[j].start <= tr->anchors[i].ts; j++)
			if (tr->slices[j].end > reach)
				reach = tr->slices[j].end;
		if (reach >= tr->anchors[i].ts)
			continue;
		if (printing(c, K_FLOW))
			describe_at(c, tr->anchors[i].off, a, sizeof(a));
		report(c, K_FLOW, tr->anchors[i].off,
		       "%s: the arrow's end is on no slice of its track", a);
	}
}

/* The end of a flow that has only one. */
static uint64_t lone_end(const struct flow *f)
{
	return f->off[!f->has[0]];
}

static int by_lone_end(const void *pa, const void *pb)
{
	uint64_t a = lone_end(*(const struct flow *const *)pa),
		 b = lone_end(*(const struct flow *const *)pb);

	return a < b ? -1 : a > b;
}

/* Arrows with one end, reported in file order (not the table's, which is the hash's). */
static void check_lone_flows(struct check *c)
{
	const struct flow **lone;
	char a[256];
	size_t i, n = 0;

	if (!c->flows.n)
		return;
	lone = malloc(c->flows.n * sizeof(*lone));
	if (!lone) {
		note_oom(c);
		return;
	}
	for (i = 0; i < c->flows.cap; i++) /* a v2 start bound to nothing is no arrow: fine */
		if (c->flows.used[i] && !(c->flows.slots[i].v2 && c->flows.slots[i].has[0]))
			lone[n++] = &c->flows.slots[i];
	qsort(lone, n, sizeof(*lone), by_lone_end);
	for (i = 0; i < n; i++) {
		if (printing(c, K_FLOW))
			describe_at(c, lone_end(lone[i]), a, sizeof(a));
		report(c, K_FLOW, lone_end(lone[i]), "%s: a flow arrow with only its %s", a,
		       lone[i]->has[0] ? "start (no f with its id)" :
					 "end (no s or flow_out with its id)");
	}
	free(lone);
}

/* The frame of id, or NULL. */
static struct frame *frame_of(struct check *c, uint64_t id)
{
	long i = id_index__get(&c->frame_index, id, -1);

	return i < 0 ? NULL : &c->frames[i];
}

/*
 * Stacks, once the whole file is read: every sf names a frame, every parent is a frame, and
 * following parents from any frame ends at a root. Each frame is walked up once: a walk stops
 * at a frame an earlier walk rooted, or at one this walk reached already (a cycle).
 */
static void check_frames(struct check *c)
{
	struct frame *f, *p;
	char a[256];
	size_t i;

	if (c->frame_ids_long) /* ids cut at 23 bytes are not told apart: nothing to say */
		return;
	for (i = 0; i < c->n_refs; i++) {
		if (frame_of(c, c->refs[i].id))
			continue;
		if (printing(c, K_STACK))
			describe_at(c, c->refs[i].off, a, sizeof(a));
		report(c, K_STACK, c->refs[i].off,
		       "%s: its sf \"%s\" names no frame of stackFrames%s", a, c->refs[i].text,
		       c->frames_seen ? "" : " (the file has no stackFrames)");
	}
	for (i = 0; i < c->n_frames; i++) {
		f = &c->frames[i];
		if (!f->named)
			report(c, K_STACK, f->off, "stackFrames \"%s\": no name", f->id_text);
		if (f->has_parent && !frame_of(c, f->parent))
			report(c, K_STACK, f->off,
			       "stackFrames \"%s\": its parent \"%s\" is not a frame", f->id_text,
			       f->parent_text);
	}
	for (i = 0; i < c->n_frames; i++) {
		for (f = &c->frames[i]; f && f->walk != FRAME_WALKED; f = p) {
			if (f->walk == i + 1) {
				report(c, K_STACK, f->off,
				       "stackFrames \"%s\": its parents lead back to it (a cycle)",
				       f->id_text);
				break;
			}
			f->walk = (uint32_t)i + 1;
			p = f->has_parent ? frame_of(c, f->parent) : NULL;
		}
		for (f = &c->frames[i]; f && f->walk == i + 1; f = p) {
			f->walk = FRAME_WALKED;
			p = f->has_parent ? frame_of(c, f->parent) : NULL;
		}
	}
}

static void finish(struct check *c)
{
	char a[256];
	size_t i, j;

	for (i = 0; i < c->n_tracks; i++) {
		struct track *tr = &c->tracks[i];

		for (j = tr->n_open; j-- > 0;) {
			if (printing(c, K_NESTING))
				describe_at(c, tr->open[j].off, a, sizeof(a));
			report(c, K_NESTING, tr->open[j].off, "%s: B never closed by an E", a);
		}
		if (tr->n_slices)
			qsort(tr->slices, tr->n_slices, sizeof(*tr->slices), by_start);
		if ((tr->flags & (TRACK_GPU_CAT | TRACK_STREAM_NAME)) || gpu_pid(c, tr->pid))
			check_stream(c, tr);
		else
			check_nesting(c, tr);
		check_anchors(c, tr);
	}
	check_lone_flows(c);
	check_frames(c);
	if (c->other_events_set && (uint64_t)c->other_events != c->events)
		report(c, K_META, 0,
		       "otherData.events is %" PRId64 ", the file holds %" PRIu64 " events",
		       c->other_events, c->events);
}

/* ---- the file ------------------------------------------------------------------------------ */

static int event_element(struct json_reader *p, void *arg)
{
	struct check *c = arg;
	uint64_t off;
	struct ev e;

	if (json_reader__peek(p) != '{') {
		off = json_reader__offset(p);
		/* a value first (a syntax error is not a violation), then a violation */
		if (json_reader__skip_value(p, 1))
			return -1;
		c->events++;
		report(c, K_EVENT, off, "event %" PRIu64 ": not an object", c->events);
		return 0;
	}
	if (parse_event(p, &e))
		return -1;
	on_event(c, &e);
	return c->oom ? -ENOMEM : 0;
}

static int parse_events(struct check *c)
{
	c->saw_events = true;
	return json_reader__each_element(&c->p, "traceEvents is not an array",
					 "expected , or ] after an event", event_element, c);
}

static int other_member(struct json_reader *p, const char *key, void *arg)
{
	struct check *c = arg;
	bool present = false, bad = false;
	struct json_num n;

	if (strcmp(key, "events"))
		return json_reader__skip_value(p, 2);
	if (read_num(p, &n, &present, &bad))
		return -1;
	c->other_events_set = !bad && json_num__i64(&n, &c->other_events);
	return 0;
}

static int frame_member(struct json_reader *p, const char *key, void *arg)
{
	struct frame *f = arg;

	if (!strcmp(key, "parent"))
		return read_id(p, &f->has_parent, &f->parent, f->parent_text);
	if (!strcmp(key, "name") && json_reader__peek(p) == '"')
		f->named = true;
	return json_reader__skip_value(p, 3);
}

/* One member of stackFrames: "ID":{"name":...,"parent":"ID"} (other keys skipped). */
static int stack_frame(struct json_reader *p, const char *key, void *arg)
{
	struct check *c = arg;
	struct frame f = { .off = json_reader__offset(p) };
	long i;

	if (!key[0]) { /* an id longer than json_reader keeps: ids cannot be told apart */
		c->frame_ids_long = true;
		return json_reader__skip_value(p, 2);
	}
	f.id = xpu_hash_bytes(key, strlen(key));
	snprintf(f.id_text, sizeof(f.id_text), "%s", key);
	if (json_reader__peek(p) != '{') {
		report(c, K_STACK, f.off, "stackFrames \"%s\" is not an object", key);
		return json_reader__skip_value(p, 2);
	}
	if (json_reader__each_member(p, frame_member, &f))
		return -1;
	i = id_index__get(&c->frame_index, f.id, (long)c->n_frames);
	if (i == -2 || !grow(&c->frames, &c->cap_frames, c->n_frames, sizeof(*c->frames)))
		return -ENOMEM;
	if (i < (long)c->n_frames) {
		report(c, K_STACK, f.off, "stackFrames \"%s\" is there twice", key);
		return 0;
	}
	c->frames[c->n_frames++] = f;
	return 0;
}

static int top_member(struct json_reader *p, const char *key, void *arg)
{
	struct check *c = arg;

	if (!strcmp(key, "traceEvents"))
		return parse_events(c);
	if (!strcmp(key, "stackFrames")) {
		c->frames_seen = true;
		if (json_reader__peek(p) == '{')
			return json_reader__each_member(p, stack_frame, c);
		report(c, K_STACK, json_reader__offset(p), "stackFrames is not an object");
	}
	if (!strcmp(key, "otherData") && json_reader__peek(p) == '{')
		return json_reader__each_member(p, other_member, c);
	return json_reader__skip_value(p, 1);
}

static int parse_file(struct check *c)
{
	struct json_reader *p = &c->p;
	int err;

	json_reader__skip_ws(p);
	if (json_reader__peek(p) == '[') /* the JSON Array Format: events only */
		err = parse_events(c);
	else if (json_reader__peek(p) == '{')
		err = json_reader__each_member(p, top_member, c);
	else
		err = json_reader__fail(p, "not a trace: expected { or [");
	if (err)
		return err;
	if (json_reader__end(p))
		return -1;
	if (!c->saw_events) {
		p->err_off = 0;
		p->err = "not a trace: no traceEvents array";
		return -1;
	}
	return 0;
}

static void check_free(struct check *c)
{
	size_t i;

	for (i = 0; i < c->n_tracks; i++) {
		free(c->tracks[i].slices);
		free(c->tracks[i].anchors);
		free(c->tracks[i].open);
	}
	free(c->tracks);
	free(c->tmap.slots);
	free(c->gpu_pids.slots);
	free(c->flows.slots);
	free(c->flows.used);
	free(c->frames);
	free(c->frame_index.keys);
	free(c->frame_index.idx1);
	free(c->refs);
	free(c->ref_index.keys);
	free(c->ref_index.idx1);
	json_reader__fini(&c->p);
	json_reader__fini(&c->describe);
	if (c->fd >= 0)
		close(c->fd);
}

/* Check one file; returns 0 clean, 1 violations, 111 not readable or not a trace. */
static int check_file(const char *path, unsigned long long max_printed, bool quiet)
{
	struct check c = { .path = path, .max_printed = max_printed, .quiet = quiet };
	uint64_t total = 0;
	struct stat st;
	int code = XPUSUP_EXIT_SYSTEM, err;
	unsigned int k;

	c.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c.fd < 0) {
		fprintf(stderr, "xpusup: unable to check %s: %s\n", path, strerror(errno));
		return XPUSUP_EXIT_SYSTEM;
	}
	if (fstat(c.fd, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "xpusup: unable to check %s: not a regular file\n", path);
		goto out;
	}
	if (json_reader__init_fd(&c.p, c.fd, READ_CHUNK) ||
	    json_reader__init_fd(&c.describe, c.fd, DESCRIBE_CHUNK)) {
		fprintf(stderr, "xpusup: unable to check %s: out of memory\n", path);
		goto out;
	}
	err = parse_file(&c);
	if (err == -ENOMEM || c.oom) {
		fprintf(stderr, "xpusup: unable to check %s: out of memory at byte %" PRIu64 "\n",
			path, json_reader__offset(&c.p));
		goto out;
	}
	if (err) {
		fprintf(stderr, "xpusup: unable to check %s: %s at byte %" PRIu64 "\n", path,
			c.p.err ? c.p.err : "invalid JSON", c.p.err_off);
		goto out;
	}
	finish(&c);
	if (c.oom) {
		fprintf(stderr, "xpusup: unable to check %s: out of memory\n", path);
		goto out;
	}
	for (k = 0; k < K_N; k++)
		total += c.violations[k];
	printf("%s: %" PRIu64 " events, %zu tracks (%" PRIu64 " on GPU streams), %" PRIu64
	       " slices, %" PRIu64 " flows, %" PRIu64 " counter values: ",
	       path, c.events, c.n_tracks, c.gpu_tracks, c.slices, c.flows_done, c.counters);
	if (!total) {
		printf("clean\n");
		code = 0;
		goto out;
	}
	printf("%" PRIu64 " violation%s (", total, total == 1 ? "" : "s");
	for (k = 0, total = 0; k < K_N; k++)
		if (c.violations[k])
			printf("%s%s %" PRIu64, total++ ? ", " : "", kind_names[k],
			       c.violations[k]);
	printf(")\n");
	code = 1;
out:
	fflush(stdout);
	check_free(&c);
	return code;
}

int check_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long max_printed = MAX_PRINTED_DEFAULT;
	int c, code = 0, one;
	bool quiet = false;

	while ((c = getopt_long(argc, argv, "m:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (conf_parse_uint(optarg, 0, UINT32_MAX, &max_printed)) {
				return cli__usage_error("check", "bad --max '%s'", optarg);
			}
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(check_usage, stdout);
			return 0;
		default:
			return cli__usage_error("check", "%s", "bad option");
		}
	}
	if (optind >= argc) {
		return cli__usage_error("check", "%s", "expected TRACE.json");
	}
	for (; optind < argc; optind++) {
		one = check_file(argv[optind], max_printed, quiet);
		/* the worst of the files: 111 over 1 over 0 */
		if (one > code)
			code = one;
	}
	return code;
}
