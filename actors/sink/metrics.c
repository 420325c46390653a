// SPDX-License-Identifier: MIT
/*
 * The metrics format (kind metrics): a Prometheus endpoint, GET /metrics in the text
 * exposition format 0.0.4 (docs/fleet.md lists every family and its labels).
 *
 * Two sources of numbers:
 *   - the session's status block: every actor's counters, its restarts and whether it runs,
 *     and (with the session's folder) each ring's fill and losses, as `xpusup status` reads
 *     them. An actor's counter NAME becomes the family xpusup_actor_NAME_total, or
 *     xpusup_actor_NAME for a level (a gauge): the generic mapping below, so a counter an
 *     actor adds later is exported without a change here;
 *   - the events this sink receives, accumulated by the stats format's own code (stats.h:
 *     stats__batch into a struct stats made by stats__init, without its function table), so
 *     that every number is the one stats.json reports for the same events: kernels by name,
 *     copies by kind, CPU samples by process, SM-active by device and process, losses.
 *
 * Bounded cardinality: kernel names get series of their own in order of arrival, up to
 * top_kernels (the accumulator's kernel table is that big), the rest are one series
 * kernel="[other kernels]"; processes likewise up to top_processes, the rest pid="other".
 * A name keeps its series once it has one: a counter's label set must keep counting the same
 * thing, or rate() sees a reset where there was none.
 *
 * The page is rendered at every tick (about every 100 ms) and handed to the HTTP thread
 * (metrics_http.c), which serves the last one: a scrape never waits for the sink's loop, nor
 * the loop for a scrape. SM-active counts the windows still open too (what stop would close),
 * so that the last page of a session that went quiet shows what the final stats.json says.
 */
#include "actors/sink/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/sink/fmt.h"
#include "actors/sink/sink_options.h"
#include "actors/sink/sm_active.h"
#include "actors/sink/stats.h"
#include "common/config.h"
#include "common/mix.h"
#include "common/status.h"
#include "common/topology.h"
#include "common/utf8.h"
#include "shm/ring.h"
#include "xpusup/event.h"

/* One actor counter of the status block, mapped to its family. */
struct gen_row {
	struct metrics_family f;
	const struct xpu_actor_slot *slot;
	__u64 value;
};

#define GEN_ROWS_MAX (XPU_STATUS_MAX_ACTORS * XPU_STATUS_MAX_COUNTERS)

/*
 * A ring of the session (source x shard) as the page reads it: opened once as an observer and
 * kept, rather than opened, mapped and closed at every tick, scraped or not. The supervisor
 * makes every ring before it starts an actor and a restarted source maps the same file again,
 * so the mapping stays valid for the whole session. Still, the page shows what `xpusup
 * status` would open by that name: at most once a second (RING_CHECK_NS) a ring not open is
 * tried again, and an open one's name is looked up (one fstatat) and the ring reopened when
 * the name is gone or names another file. The cost: one descriptor and one read-only mapping
 * per ring, for as long as the format runs.
 */
struct ring_watch {
	char name[96]; /* XPU_RING_NAME_FMT of its source and shard */
	struct ring *r; /* NULL: not open (not made yet, or gone) */
	dev_t dev; /* the file r maps */
	ino_t ino;
	__u64 check_ns; /* the next look at the name */
};

#define RING_CHECK_NS 1000000000ull
#define RINGS_MAX (CONF_MAX_ACTORS * CONF_MAX_SHARDS)

/* The processes with series of their own: an open-addressing set of pids, at most half full,
 * that only grows (up to top_processes). */
struct pid_set {
	__u32 *pid; /* pid + 1; 0: empty */
	__u32 mask, n, max;
};

struct metrics {
	struct stats *st; /* the stats format's accumulator: its own, or a stats format's */
	bool shared; /* st is a stats format's of the same group: not fed nor freed here */
	const struct xpu_status_block *status; /* NULL outside a session */
	const struct fmt_origins *origins; /* a collector's hosts (fmt_env.origins); NULL */
	int dirfd; /* the session's folder, for its rings; -1 without */
	struct ring_watch *rings; /* RINGS_MAX, in the page's order; NULL without dirfd */
	struct metrics_http *http;
	struct pid_set procs;
	struct gen_row *gen; /* GEN_ROWS_MAX */
	struct text page;
	__u64 series, series_last;
	__u64 pages_failed; /* no memory to render or hand over a page: the last one stays */
	__u64 procs_folded; /* processes with CPU samples in pid="other" */
	__u32 top_kernels;
};

static const char *const counter_names[] = {
	"scrapes",	     "bad_requests",	"not_found",   "bad_methods", "too_large",
	"clients_timed_out", "clients_evicted", "connections", "series",      "kernels_folded",
	"processes_folded",  "pages_failed",	"stats_shared"
};

/* ---- the exposition format ----------------------------------------------------------- */

/*
 * A label value: its bytes as the stats format's JSON spells them (common/json_escape.h), so
 * that a name here is the string a JSON reader gets from stats.json: well-formed UTF-8 kept,
 * a byte outside it written as the character of the same code point (Latin-1, in UTF-8), and
 * the format's three escapes, \\ \" \n. Other control bytes are valid UTF-8 and go as they are.
 */
void metrics__label(struct text *t, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;
	char two[2];

	while (i < n) {
		if (u[i] == '\\' || u[i] == '"') {
			text__bytes(t, "\\", 1);
			text__bytes(t, &s[i++], 1);
		} else if (u[i] == '\n') {
			text__bytes(t, "\\n", 2);
			i++;
		} else if (u[i] < 0x80) {
			for (k = i;
			     k < n && u[k] < 0x80 && u[k] != '\\' && u[k] != '"' && u[k] != '\n';
			     k++)
				;
			text__bytes(t, &s[i], k - i);
			i = k;
		} else if ((k = xpu_utf8_len(u + i, n - i))) {
			text__bytes(t, &s[i], k);
			i += k;
		} else {
			two[0] = (char)(0xc0 | u[i] >> 6);
			two[1] = (char)(0x80 | (u[i] & 0x3f));
			text__bytes(t, two, 2);
			i++;
		}
	}
}

static void put_family(struct text *t, const char *name, const char *type, const char *help)
{
	text__put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A value in ns as seconds, exactly in decimal. */
static void put_seconds(struct text *t, __u64 ns)
{
	text__put(t, " %" PRIu64 ".%09" PRIu64 "\n", (uint64_t)(ns / 1000000000ull),
		  (uint64_t)(ns % 1000000000ull));
}

static void put_u64(struct text *t, __u64 v)
{
	text__put(t, " %" PRIu64 "\n", (uint64_t)v);
}

/* ---- actors and rings (the status block) --------------------------------------------- */

static void put_actor_labels(struct metrics *m, const struct xpu_actor_slot *a)
{
	struct text *t = &m->page;

	text__put(t, "{actor=\"");
	metrics__label(t, a->name, strnlen(a->name, sizeof(a->name)));
	text__put(t, "\",kind=\"");
	metrics__label(t, a->kind, strnlen(a->kind, sizeof(a->kind)));
	text__put(t, "\",role=\"%s\"}", conf_role__name((enum conf_role)a->role));
	m->series++;
}

/*
 * The generic mapping of an actor counter's name to a family (docs/fleet.md):
 * characters outside [a-zA-Z0-9_] become '_'; the first unit word becomes its base unit (ns,
 * us, ms: seconds; kib: bytes; mib, mb: bytes) and the value is scaled to it; a name with a
 * word of a level (below: quantiles, rates, sizes held, names known) is a gauge, xpusup_actor_NAME, any other a counter,
 * xpusup_actor_NAME_total (a trailing "total" word is not doubled).
 */
static const char *const gauge_words[] = { "p50",     "p90",	   "p95",   "p99",	   "per",
					   "latency", "open",	   "held",  "pending",	   "fill",
					   "names",   "functions", "files", "subscribers", "series",
					   "kib",     "mib",	   "mb",    NULL };
static const struct {
	const char *word, *base;
	double scale;
} unit_words[] = {
	{ "ns", "seconds", 1e-9 },  { "us", "seconds", 1e-6 },	   { "ms", "seconds", 1e-3 },
	{ "kib", "bytes", 1024.0 }, { "mib", "bytes", 1048576.0 }, { "mb", "bytes", 1048576.0 },
};

void metrics__family(const char *name, size_t len, struct metrics_family *r)
{
	char word[XPU_STATUS_COUNTER_NAME_LEN + 1], *f = r->name;
	size_t i = 0, k, w, out, cap = sizeof(r->name);
	bool unit_done = false, last_total = false;

	r->scale = 1;
	r->gauge = false;
	out = (size_t)snprintf(f, cap, "xpusup_actor");
	while (i < len && out < cap) {
		for (w = 0; i < len && name[i] != '_' && w < sizeof(word) - 1; i++, w++) {
			char c = name[i];

			word[w] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
						  (c >= '0' && c <= '9') ?
					  c :
					  '_';
		}
		word[w] = 0;
		i++; /* the '_' */
		if (!w)
			continue;
		for (k = 0; gauge_words[k]; k++)
			r->gauge |= !strcmp(word, gauge_words[k]);
		for (k = 0; !unit_done && k < sizeof(unit_words) / sizeof(unit_words[0]); k++) {
			if (strcmp(word, unit_words[k].word))
				continue;
			snprintf(word, sizeof(word), "%s", unit_words[k].base);
			r->scale = unit_words[k].scale;
			unit_done = true;
		}
		last_total = !strcmp(word, "total");
		out += (size_t)snprintf(f + out, cap - out, "_%s", word);
	}
	if (!r->gauge && !last_total && out < cap)
		snprintf(f + out, cap - out, "_total");
}

static int gen_cmp(const void *x, const void *y)
{
	const struct gen_row *p = x, *q = y;
	int c = strcmp(p->f.name, q->f.name);

	return c ? c : (p->slot > q->slot) - (p->slot < q->slot);
}

static void put_actors(struct metrics *m)
{
	const struct xpu_status_block *b = m->status;
	struct text *t = &m->page;
	__u32 n_actors, i, j, n_counters;
	size_t n = 0, r;

	if (!b)
		return;
	n_actors = status_load(&b->hdr.n_actors);
	if (n_actors > XPU_STATUS_MAX_ACTORS)
		n_actors = XPU_STATUS_MAX_ACTORS;
	put_family(t, "xpusup_actor_up", "gauge", "1 when the actor is running and ready, else 0");
	for (i = 0; i < n_actors; i++) {
		if (!b->slots[i].name[0])
			continue;
		text__put(t, "xpusup_actor_up");
		put_actor_labels(m, &b->slots[i]);
		put_u64(t, status_load(&b->slots[i].state) == XPU_ACTOR_RUNNING);
	}
	put_family(t, "xpusup_actor_restarts_total", "counter",
		   "times the supervisor restarted the actor");
	for (i = 0; i < n_actors; i++) {
		if (!b->slots[i].name[0])
			continue;
		text__put(t, "xpusup_actor_restarts_total");
		put_actor_labels(m, &b->slots[i]);
		put_u64(t, status_load(&b->slots[i].restarts));
	}
	for (i = 0; i < n_actors; i++) {
		const struct xpu_actor_slot *a = &b->slots[i];

		if (!a->name[0])
			continue;
		/* pairs with the release in actor__counter: the names below it are written */
		n_counters = __atomic_load_n(&a->n_counters, __ATOMIC_ACQUIRE);
		for (j = 0; j < n_counters && j < XPU_STATUS_MAX_COUNTERS && n < GEN_ROWS_MAX;
		     j++) {
			metrics__family(a->counters[j].name,
					strnlen(a->counters[j].name, sizeof(a->counters[j].name)),
					&m->gen[n].f);
			m->gen[n].slot = a;
			m->gen[n].value = status_load(&a->counters[j].value);
			n++;
		}
	}
	qsort(m->gen, n, sizeof(*m->gen), gen_cmp);
	for (r = 0; r < n; r++) {
		const struct gen_row *g = &m->gen[r];

		/* one actor with two counters of one family (a torn name across a restart, or
		 * two names that map alike): the first is shown, a duplicate series is an error */
		if (r && !strcmp(g->f.name, g[-1].f.name) && g->slot == g[-1].slot)
			continue;
		/* a counter named "restarts" must not open the family above a second time */
		if (!strcmp(g->f.name, "xpusup_actor_restarts_total"))
			continue;
		if (!r || strcmp(g->f.name, g[-1].f.name))
			text__put(t,
				  "# HELP %s an actor's counter, as xpusup status shows it\n"
				  "# TYPE %s %s\n",
				  g->f.name, g->f.name, g->f.gauge ? "gauge" : "counter");
		text__put(t, "%s", g->f.name);
		put_actor_labels(m, g->slot);
		if (g->f.scale == 1)
			put_u64(t, g->value);
		else
			text__put(t, " %.17g\n", (double)g->value * g->f.scale);
	}
}

/* Open w's ring as an observer, and note which file it maps. */
static void ring_watch__open(struct ring_watch *w, int dirfd)
{
	struct stat st;
	int fd;

	fd = openat(dirfd, w->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return; /* not made (yet): nothing to say */
	/* the inode of the file opened, not of the name later: a file renamed over it between
	 * the two would otherwise pass for the one mapped */
	if (!fstat(fd, &st)) {
		w->r = ring__open_fd(fd, RING_OBSERVER);
		w->dev = st.st_dev;
		w->ino = st.st_ino;
	}
	close(fd); /* ring__open_fd keeps a duplicate */
}

static void ring_watch__close(struct ring_watch *w)
{
	ring__close(w->r);
	w->r = NULL;
}

/* The ring named name, from the cache: opened, looked up again or reopened at most once per
 * RING_CHECK_NS. NULL when there is none by that name. */
static struct ring *ring_watch__get(struct ring_watch *w, int dirfd, const char *name, __u64 now)
{
	struct stat st;

	if (strcmp(w->name, name)) { /* another ring in this place: the status block changed */
		ring_watch__close(w);
		snprintf(w->name, sizeof(w->name), "%s", name);
		w->check_ns = 0;
	}
	if (now < w->check_ns)
		return w->r;
	w->check_ns = now + RING_CHECK_NS;
	if (w->r && (fstatat(dirfd, w->name, &st, AT_SYMLINK_NOFOLLOW) || st.st_dev != w->dev ||
		     st.st_ino != w->ino))
		ring_watch__close(w); /* gone or replaced: reopened below if there is one */
	if (!w->r)
		ring_watch__open(w, dirfd);
	return w->r;
}

/* The rings (source x shard), read as `xpusup status` reads them, through m->rings. */
static void put_rings(struct metrics *m)
{
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "xpusup_ring_fill_ratio", "gauge", "the share of the ring's bytes in use" },
		{ "xpusup_ring_capacity_bytes", "gauge", "the ring's size" },
		{ "xpusup_ring_produced_records_total", "counter", "records the source wrote" },
		{ "xpusup_ring_consumed_records_total", "counter", "records the correlator took" },
		{ "xpusup_ring_lost_records_total", "counter",
		  "records the source could not write: cause ring_full or too_big" },
	};
	const struct xpu_status_block *b = m->status;
	struct ring_stats rs[RINGS_MAX];
	const struct xpu_actor_slot *src[RINGS_MAX];
	__u32 shard[RINGS_MAX];
	struct text *t = &m->page;
	__u32 n_actors, shards, i, k, n = 0, w = 0, f, c;
	__u64 now = xpu_now_ns();
	char name[sizeof(m->rings->name)];
	struct ring *r;

	if (!b || !m->rings)
		return;
	n_actors = status_load(&b->hdr.n_actors);
	shards = b->hdr.shards;
	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		if (b->slots[i].role != CONF_ROLE_SOURCE)
			continue;
		for (k = 0; k < shards && w < RINGS_MAX; k++) {
			snprintf(name, sizeof(name), XPU_RING_NAME_FMT, b->slots[i].name, k);
			r = ring_watch__get(&m->rings[w++], m->dirfd, name, now);
			if (!r)
				continue;
			ring__stats(r, &rs[n]);
			src[n] = &b->slots[i];
			shard[n++] = k;
		}
	}
	for (f = 0; n && f < sizeof(fam) / sizeof(fam[0]); f++) {
		put_family(t, fam[f].name, fam[f].type, fam[f].help);
		for (i = 0; i < n; i++) {
			for (c = 0; c < (f == 4 ? 2u : 1u); c++) {
				text__put(t, "%s{source=\"", fam[f].name);
				metrics__label(t, src[i]->name,
					       strnlen(src[i]->name, sizeof(src[i]->name)));
				text__put(t, "\",shard=\"%u\"%s}", shard[i],
					  f < 4 ? "" :
					  c	? ",cause=\"too_big\"" :
						  ",cause=\"ring_full\"");
				m->series++;
				if (f == 0)
					text__put(t, " %.6f\n",
						  rs[i].capacity ?
							  (double)(rs[i].head - rs[i].tail) /
								  (double)rs[i].capacity :
							  0.0);
				else
					put_u64(t, f == 1 ? rs[i].capacity :
						   f == 2 ? rs[i].produced :
						   f == 3 ? rs[i].consumed :
						   c	  ? rs[i].lost_too_big :
							    rs[i].lost_full);
			}
		}
	}
}

/* ---- a collector's hosts (`xpusup subscribe URL URL...`) ------------------------------- */

static void put_origins(struct metrics *m)
{
	static const struct {
		const char *name, *help;
	} fam[] = {
		{ "xpusup_subscribe_batches_total", "batches received from the host" },
		{ "xpusup_subscribe_events_total", "events received from the host" },
		{ "xpusup_subscribe_missed_events_total",
		  "events of the host lost on the way (sequence gaps)" },
		{ "xpusup_subscribe_rewinds_total",
		  "batches of the host whose sequence went back" },
		{ "xpusup_subscribe_sessions_total",
		  "sessions of the host seen (more than 1: its session restarted)" },
		{ "xpusup_subscribe_clock_moves_total",
		  "realtime clock steps the host announced (its times were mapped anew)" },
	};
	const struct fmt_origins *o = m->origins;
	struct text *t = &m->page;
	unsigned int f, i;

	for (f = 0; o && o->n && f < sizeof(fam) / sizeof(fam[0]); f++) {
		put_family(t, fam[f].name, "counter", fam[f].help);
		for (i = 0; i < o->n; i++) {
			const struct fmt_origin *r = &o->row[i];

			text__put(t, "%s{host=\"", fam[f].name);
			metrics__label(t, r->host, strlen(r->host));
			text__put(t, "\"}");
			m->series++;
			put_u64(t, f == 0 ? r->batches :
				   f == 1 ? r->events :
				   f == 2 ? r->missed :
				   f == 3 ? r->rewinds :
				   f == 4 ? r->sessions :
					    r->clock_moves);
		}
	}
}

/* ---- the events (the stats accumulator's run) ---------------------------------------- */

/* Whether pid has series of its own: yes when it has, or when there is room for it. */
static bool pid_set__admit(struct pid_set *s, __u32 pid)
{
	__u32 i;

	for (i = (__u32)xpu_mix64(pid) & s->mask; s->pid[i]; i = (i + 1) & s->mask)
		if (s->pid[i] == pid + 1)
			return true;
	if (s->n == s->max)
		return false;
	s->pid[i] = pid + 1;
	s->n++;
	return true;
}

/* The kernels past the first top_kernels names, which go under "[other kernels]": none in the
 * format's own accumulator (its table is top_kernels big), the rest of a stats format's. */
static void kernels_past_top(const struct metrics *m, __u64 *count, __u64 *ns)
{
	const struct stats *st = m->st;
	__u32 i;

	*count = st->other.run.count;
	*ns = st->other.run.sum;
	for (i = m->top_kernels; i < st->n_kernels; i++) {
		*count += st->kernels[i]->run.count;
		*ns += st->kernels[i]->run.sum;
	}
}

static void put_kernels(struct metrics *m)
{
	const struct stats *st = m->st;
	struct text *t = &m->page;
	__u32 i, n = st->n_kernels < m->top_kernels ? st->n_kernels : m->top_kernels;
	__u64 other, other_ns;
	int f;

	for (f = 0; f < 2; f++) {
		if (f)
			put_family(
				t, "xpusup_gpu_kernel_seconds_total", "counter",
				"GPU time of the kernels of a name (the sum of their durations)");
		else
			put_family(t, "xpusup_gpu_kernels_total", "counter",
				   "kernels run, by name (the first top_kernels names, the rest "
				   "as [other kernels])");
		kernels_past_top(m, &other, &other_ns);
		for (i = 0; i <= n; i++) {
			const struct kstat *k = i < n ? st->kernels[i] : &st->other;

			if (k == &st->other && !other)
				continue;
			text__put(t, "%s{kernel=\"",
				  f ? "xpusup_gpu_kernel_seconds_total" :
				      "xpusup_gpu_kernels_total");
			if (k == &st->other)
				text__put(t, "[other kernels]");
			else if (!k->len)
				text__put(t, "[unnamed kernel]");
			else
				metrics__label(t, k->name, k->len);
			text__put(t, "\"}");
			m->series++;
			if (f)
				put_seconds(t, k == &st->other ? other_ns : k->run.sum);
			else
				put_u64(t, k == &st->other ? other : k->run.count);
		}
	}
}

static void put_volumes(struct metrics *m)
{
	static const char *const names[] = { "xpusup_gpu_memcpy_total",
					     "xpusup_gpu_memcpy_bytes_total",
					     "xpusup_gpu_memcpy_seconds_total" };
	static const char *const helps[] = { "copies, by kind", "bytes copied, by kind",
					     "GPU time of the copies, by kind" };
	const struct period *p = &m->st->run;
	struct text *t = &m->page;
	__u32 i, f;

	for (f = 0; f < 3; f++) {
		put_family(t, names[f], "counter", helps[f]);
		for (i = 0; i < COPY_SLOTS; i++) {
			if (!p->copy[i].count)
				continue;
			text__put(t, "%s{kind=\"%s\"}", names[f], stats_copy_names[i]);
			m->series++;
			if (f == 2)
				put_seconds(t, p->copy[i].ns);
			else
				put_u64(t, f ? p->copy[i].bytes : p->copy[i].count);
		}
	}
	put_family(t, "xpusup_gpu_memset_total", "counter", "memsets");
	text__put(t, "xpusup_gpu_memset_total");
	put_u64(t, p->memset.count);
	put_family(t, "xpusup_gpu_memset_bytes_total", "counter", "bytes set");
	text__put(t, "xpusup_gpu_memset_bytes_total");
	put_u64(t, p->memset.bytes);
	m->series += 2;
}

static void put_events(struct metrics *m)
{
	const struct period *p = &m->st->run;
	struct text *t = &m->page;
	__u64 lost;
	__u32 i;

	put_family(t, "xpusup_events_total", "counter", "events this sink received, by kind");
	for (i = 0; i < XPU_REC_TYPE_MAX; i++) {
		if (!p->by_kind[i])
			continue;
		text__put(t, "xpusup_events_total{kind=\"%s\"}", xpu_rec_type__name(i));
		put_u64(t, p->by_kind[i]);
		m->series++;
	}
	put_family(t, "xpusup_records_lost_total", "counter",
		   "records lost before the correlator joined them, by cause and stage (LOSS "
		   "records)");
	for (i = 1; i <= XPU_LOSS_CAUSE_MAX; i++) {
		lost = p->lost_by_cause[i % XPU_LOSS_CAUSE_MAX];
		if (!lost)
			continue;
		text__put(t, "xpusup_records_lost_total{cause=\"%s\",stage=\"%s\"}",
			  xpu_loss_cause__name(i % XPU_LOSS_CAUSE_MAX),
			  stats_loss_stage(i % XPU_LOSS_CAUSE_MAX));
		put_u64(t, lost);
		m->series++;
	}
}

/* CPU samples by process: the admitted ones, then the rest as pid="other". */
static void put_cpu(struct metrics *m)
{
	const struct cpu *c = &m->st->cpu;
	struct text *t = &m->page;
	struct cpu_time other = c->other_proc.run;
	__u32 i;
	int f;

	m->procs_folded = 0;
	for (i = 0; c->procs && i <= c->proc_mask; i++)
		if (c->procs[i].used && !pid_set__admit(&m->procs, c->procs[i].pid)) {
			other.samples += c->procs[i].run.samples;
			other.ns += c->procs[i].run.ns;
			m->procs_folded++;
		}
	put_family(t, "xpusup_process_info", "gauge",
		   "1 for each process with CPU samples: its command name (the latest seen)");
	for (i = 0; c->procs && i <= c->proc_mask; i++) {
		if (!c->procs[i].used || !pid_set__admit(&m->procs, c->procs[i].pid))
			continue;
		text__put(t, "xpusup_process_info{pid=\"%u\",comm=\"", c->procs[i].pid);
		metrics__label(t, c->procs[i].comm, strlen(c->procs[i].comm));
		text__put(t, "\"} 1\n");
		m->series++;
	}
	for (f = 0; f < 2; f++) {
		const char *name = f ? "xpusup_cpu_sampled_seconds_total" :
				       "xpusup_cpu_samples_total";

		put_family(t, name, "counter",
			   f ? "CPU time the samples stand for (the sum of their periods), by "
			       "process" :
			       "CPU samples, by process");
		for (i = 0; c->procs && i <= c->proc_mask; i++) {
			if (!c->procs[i].used || !pid_set__admit(&m->procs, c->procs[i].pid))
				continue;
			text__put(t, "%s{pid=\"%u\"}", name, c->procs[i].pid);
			m->series++;
			if (f)
				put_seconds(t, c->procs[i].run.ns);
			else
				put_u64(t, c->procs[i].run.samples);
		}
		if (!other.samples)
			continue;
		text__put(t, "%s{pid=\"other\"}", name);
		m->series++;
		if (f)
			put_seconds(t, other.ns);
		else
			put_u64(t, other.samples);
	}
}

/*
 * SM-active as stats.json has it at stop: busy time per device and process over every window,
 * the open ones included, and its share of the events' span (first to last event time).
 */
static void put_sm_active(struct metrics *m)
{
	const struct stats *st = m->st;
	const struct period *p = &st->run;
	struct text *t = &m->page;
	__u64 span = p->first_ns && p->last_ns > p->first_ns ? p->last_ns - p->first_ns : 0;
	__u64 busy, other = 0;
	__u32 i, n = sm_active__n_totals(st->sm);
	int proc, f;

	for (proc = 0; proc < 2; proc++) {
		for (f = 0; f < 2; f++) {
			const char *name = proc ? (f ? "xpusup_process_sm_active_ratio" :
						       "xpusup_process_sm_busy_seconds_total") :
						  (f ? "xpusup_gpu_sm_active_ratio" :
						       "xpusup_gpu_sm_busy_seconds_total");

			put_family(t, name, f ? "gauge" : "counter",
				   f ? "the share of the events' span during which at least one "
				       "kernel ran (stats.json sm_active active_pct / 100)" :
				       "time during which at least one kernel ran (kernels that "
				       "overlap count once)");
			other = 0;
			for (i = 0; i < n; i++) {
				const struct sm_total *e = sm_active__total(st->sm, i);

				if (SM_IS_PROCESS(e->key) != proc)
					continue;
				busy = e->busy_ns + sm_active__open_busy_ns(st->sm, i);
				if (proc && !pid_set__admit(&m->procs, SM_ID(e->key))) {
					other += busy;
					continue;
				}
				text__put(t, "%s{%s=\"%u\"}", name, proc ? "pid" : "device",
					  SM_ID(e->key));
				m->series++;
				if (f)
					text__put(t, " %.9f\n",
						  span ? (double)busy / (double)span : 0.0);
				else
					put_seconds(t, busy);
			}
			if (other && !f) { /* a share of pid="other" would be a sum, not a share */
				text__put(t, "%s{pid=\"other\"}", name);
				m->series++;
				put_seconds(t, other);
			}
		}
	}
}

static void render(struct metrics *m)
{
	struct text *t = &m->page;

	t->len = 0;
	t->failed = false;
	m->series = 0;
	put_actors(m);
	put_rings(m);
	put_origins(m);
	put_events(m);
	put_kernels(m);
	put_volumes(m);
	put_cpu(m);
	put_sm_active(m);
	if (t->failed || metrics_http__publish(m->http, t->p, t->len)) {
		m->pages_failed++;
		return;
	}
	m->series_last = m->series;
}

/* ---- fmt_ops ------------------------------------------------------------------------- */

static void metrics_batch(void *state, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct metrics *m = state;

	if (!m->shared) /* else the stats format takes them, into the same accumulator */
		stats__batch(m->st, b, ev);
}

static int metrics_tick(void *state, __u64 now_ns, char *why, size_t why_len)
{
	struct metrics *m = state;

	(void)now_ns;
	(void)why;
	(void)why_len;
	stats__merge(m->st);
	render(m);
	/* nothing is written: a restarted metrics sink starts over, as a stats sink does */
	return FMT_IDLE;
}

static int metrics_finish(void *state, char *why, size_t why_len)
{
	struct metrics *m = state;

	(void)why;
	(void)why_len;
	sm_active__close(m->st->sm, true);
	stats__merge(m->st);
	render(m);
	return 0;
}

static void metrics_free(void *state)
{
	struct metrics *m = state;
	unsigned int i;

	if (!m)
		return;
	metrics_http__stop(m->http);
	if (!m->shared)
		stats__free(m->st);
	for (i = 0; m->rings && i < RINGS_MAX; i++)
		ring_watch__close(&m->rings[i]);
	free(m->rings);
	if (m->dirfd >= 0)
		close(m->dirfd);
	free(m->procs.pid);
	free(m->gen);
	text__free(&m->page);
	free(m);
}

static unsigned int metrics_counters(void *state, const char **names, __u64 *values,
				     unsigned int max)
{
	struct metrics *m = state;
	struct metrics_http_counts c;
	__u64 v[sizeof(counter_names) / sizeof(counter_names[0])];
	__u64 other, other_ns;
	unsigned int i;

	metrics_http__counts(m->http, &c);
	v[0] = c.scrapes;
	v[1] = c.bad_requests;
	v[2] = c.not_found;
	v[3] = c.bad_methods;
	v[4] = c.too_large;
	v[5] = c.timed_out;
	v[6] = c.evicted;
	v[7] = c.accepted;
	v[8] = m->series_last;
	/* kernels counted under "[other kernels]" (each one, not names), as of the last merge */
	kernels_past_top(m, &other, &other_ns);
	v[9] = other;
	v[10] = m->procs_folded;
	v[11] = m->pages_failed;
	v[12] = m->shared;
	for (i = 0; i < sizeof(v) / sizeof(v[0]) && i < max; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	return i;
}

static int metrics_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct metrics_options o;
	int err;

	if (!m)
		return -ENOMEM;
	m->dirfd = -1;
	err = conf_kind__options(&metrics_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (err) {
		err = -EINVAL;
		goto fail;
	}
	m->status = env->status;
	m->origins = env->origins;
	m->top_kernels = (__u32)o.top_kernels;
	m->procs.max = (__u32)o.top_processes;
	for (m->procs.mask = 16; m->procs.mask < 2 * m->procs.max; m->procs.mask <<= 1)
		;
	m->procs.pid = calloc(m->procs.mask--, sizeof(*m->procs.pid));
	m->gen = calloc(GEN_ROWS_MAX, sizeof(*m->gen));
	/* In a group with a stats format of the same windows, its accumulator is read: the
	 * same numbers (stats.json's), accumulated once (docs/fleet.md) */
	m->st = env->sibling ? env->sibling(env->ctx, &fmt_stats) : NULL;
	m->shared = m->st &&
		    stats__can_share(m->st, o.window_ms * 1000000ull, o.lateness_ms * 1000000ull);
	if (!m->shared)
		m->st = calloc(1, sizeof(*m->st));
	if (!m->procs.pid || !m->gen || !m->st) {
		err = -ENOMEM;
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	if (!m->shared) {
		m->st->status = env->status;
		/* the kernel table is the top_kernels: a name past it is counted in other */
		/* no quantiles nor queue delays on the page: counts and sums only, no launch map */
		m->st->counts_only = true;
		err = stats__init(m->st, o.window_ms * 1000000ull, o.lateness_ms * 1000000ull,
				  m->top_kernels, 0);
		if (err) {
			snprintf(why, why_len, "out of memory");
			goto fail;
		}
	} else {
		fprintf(stderr,
			"xpusup-metrics: reads the accumulator of the group's stats format (the same "
			"windows): its numbers, accumulated once\n");
	}
	if (env->session_dir)
		m->dirfd = open(env->session_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->dirfd >= 0 && m->status) {
		m->rings = calloc(RINGS_MAX, sizeof(*m->rings));
		if (!m->rings) {
			err = -ENOMEM;
			snprintf(why, why_len, "out of memory");
			goto fail;
		}
	}
	m->http = metrics_http__start(&o.listen, (unsigned int)o.max_clients,
				      o.timeout_ms * 1000000ull, why, why_len);
	if (!m->http) {
		err = -errno;
		goto fail;
	}
	if (!o.listen.loopback)
		fprintf(stderr,
			"xpusup-metrics: listening on %s, not a loopback address: whoever reaches "
			"it reads the metrics\n",
			o.listen.text);
	render(m); /* a scrape before the first tick gets a page */
	*out = m;
	return 0;
fail:
	metrics_free(m);
	return err;
}

const struct fmt_ops fmt_metrics = {
	.kind = "metrics",
	.open = metrics_open,
	.batch = metrics_batch,
	.tick = metrics_tick,
	.finish = metrics_finish,
	.free = metrics_free,
	.counters = metrics_counters,
};
