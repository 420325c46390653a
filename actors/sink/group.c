// SPDX-License-Identifier: MIT
/*
 * kind = group: several formats in one sink process (docs/sinks.md). Each sink process
 * receives every batch over nng and decodes every event; on a small machine the pipeline is
 * CPU-bound and three sinks pay that three times. A group receives and decodes once and hands
 * the same decoded batch to each of its formats, each configured by a [format NAME] section
 * of its own (common/config.h), read exactly as a sink of that kind reads its [sink] section.
 *
 * To the sink driver (sink.c) a group is one format: its tick is complete only when every
 * format's output covers everything received, an error names the format it came from, and
 * its counters are the formats', each named FORMAT.COUNTER. The price is one restart domain:
 * a crash in one format restarts them all.
 *
 * Two lanes: the formats are split by what they cost an event (kind_cost, from
 * bench/fmt_bench) so that the heaviest runs on a helper thread while the others run on the
 * caller's, each on the same decoded batch, which neither changes. group_batch returns when
 * both lanes are done with it (the driver then reuses the batch's memory), so a format only
 * ever runs on one thread at a time and tick, finish and counters, called between batches,
 * see the helper idle. A wake-up costs about 50 us here: a batch of fewer than
 * LANE_MIN_EVENTS events runs whole on the caller's thread, where that costs more than the
 * helper saves.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

/* Counters gathered from the formats before they are fitted into the caller's slots. */
#define GROUP_COUNTERS_ALL (CONF_GROUP_FORMATS_MAX * FMT_COUNTERS_MAX)
#define NAME_LEN XPU_STATUS_COUNTER_NAME_LEN

#define LANE_MIN_EVENTS 256

struct group;

struct group_format {
	const struct group *group;
	const struct fmt_ops *ops;
	unsigned int lane; /* 0 the caller's thread, 1 the helper's */
	const struct conf *conf;
	const struct conf_actor *sec; /* its [format NAME] section */
	void *st;
	bool open; /* st is made: free it */
	__u64 covered; /* events received (this run) when its output was last complete */
	bool failing; /* its last write failed, and none has worked since */
};

/* The helper thread of lane 1. The batch it is given and the counters change hands under mu:
 * the caller's unlock after posting pairs with the helper's lock before it reads the batch,
 * the helper's unlock after done++ with the caller's lock before it returns the batch. */
struct group_helper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	const struct xpu_wire_batch *b;
	const struct xpu_cevent *ev;
	__u64 posted, done;
	bool helper_waits, caller_waits, stop;
};

struct group {
	struct group_format f[CONF_GROUP_FORMATS_MAX];
	unsigned int n;
	struct group_helper *helper; /* NULL: every format on the caller's thread */
	__u64 received; /* events handed to the formats in this run */
	bool told_names, told_hidden;
	/* counters, as the formats name them, then as shown */
	const char *raw[GROUP_COUNTERS_ALL];
	__u64 values[GROUP_COUNTERS_ALL];
	char names[FMT_COUNTERS_MAX][NAME_LEN];
};

/* A format's options: its [format] section, as a sink reads its [sink] section. */
static const char *format_get(void *ctx, const char *key)
{
	const struct group_format *f = ctx;

	return conf_actor__get(f->sec, key);
}

static int format_path(void *ctx, const char *key, char *buf, size_t size)
{
	const struct group_format *f = ctx;

	return conf_actor__path(f->conf, f->sec, key, buf, size);
}

/* fmt_env.sibling: the first format of that kind opened so far in f's group. */
static void *format_sibling(void *ctx, const struct fmt_ops *kind)
{
	const struct group_format *f = ctx;
	const struct group *g = f->group;
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->f[i].open && g->f[i].ops == kind)
			return g->f[i].st;
	return NULL;
}

static void lane__run(struct group *g, unsigned int lane, const struct xpu_wire_batch *b,
		      const struct xpu_cevent *ev)
{
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->f[i].lane == lane)
			g->f[i].ops->batch(g->f[i].st, b, ev);
}

static void *helper__main(void *arg)
{
	struct group *g = arg;
	struct group_helper *h = g->helper;
	const struct xpu_wire_batch *b;
	const struct xpu_cevent *ev;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->stop && h->done == h->posted) {
			h->helper_waits = true;
			pthread_cond_wait(&h->work_cv, &h->mu);
		}
		h->helper_waits = false;
		if (h->stop)
			break;
		b = h->b;
		ev = h->ev;
		pthread_mutex_unlock(&h->mu);
		lane__run(g, 1, b, ev);
		pthread_mutex_lock(&h->mu);
		h->done++;
		if (h->caller_waits)
			pthread_cond_signal(&h->done_cv);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static void helper__stop(struct group *g)
{
	struct group_helper *h = g->helper;

	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->work_cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	pthread_cond_destroy(&h->work_cv);
	pthread_cond_destroy(&h->done_cv);
	pthread_mutex_destroy(&h->mu);
	free(h);
	g->helper = NULL;
}

/* What a format costs an event, in ns of this machine's CPU over decoding (bench/fmt_bench,
 * docs/performance.md): only their order matters, to split the formats into two lanes. */
static unsigned int kind_cost(const char *kind)
{
	static const struct {
		const char *kind;
		unsigned int ns;
	} costs[] = { { "timeline", 250 },
		      { "stats", 90 },
		      { "pprof", 55 },
		      { "folded", 25 },
		      { "metrics", 22 } };
	unsigned int i;

	for (i = 0; i < sizeof(costs) / sizeof(costs[0]); i++)
		if (!strcmp(kind, costs[i].kind))
			return costs[i].ns;
	return 50;
}

/*
 * Split the formats into two lanes, each format to the lane with less cost so far, the
 * costliest first; the helper takes the lane that holds the costliest format. With a single
 * format, or where starting the thread fails, every format stays on the caller's thread.
 */
static void lanes__split(struct group *g)
{
	unsigned int cost[2] = { 0, 0 }, done = 0, i, best, c;
	struct group_helper *h;
	bool placed[CONF_GROUP_FORMATS_MAX] = { false };
	int err = -ENOMEM;

	if (g->n < 2 || sink__one_thread())
		return;
	while (done < g->n) {
		best = g->n;
		for (i = 0; i < g->n; i++)
			if (!placed[i] && (best == g->n || kind_cost(g->f[i].ops->kind) >
								   kind_cost(g->f[best].ops->kind)))
				best = i;
		c = kind_cost(g->f[best].ops->kind);
		/* the first (costliest) goes to the helper's lane */
		g->f[best].lane = !done ? 1 : cost[1] < cost[0] ? 1 : 0;
		cost[g->f[best].lane] += c;
		placed[best] = true;
		done++;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		goto one_lane;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->work_cv, NULL);
	pthread_cond_init(&h->done_cv, NULL);
	g->helper = h;
	err = sink__thread_start(&h->thread, helper__main, g, "xpusup-lane");
	if (err) {
		pthread_cond_destroy(&h->work_cv);
		pthread_cond_destroy(&h->done_cv);
		pthread_mutex_destroy(&h->mu);
		free(h);
		g->helper = NULL;
		goto one_lane;
	}
	for (i = 0; i < g->n; i++)
		if (g->f[i].lane)
			fprintf(stderr, "xpusup-group: format '%s' on a helper thread\n",
				g->f[i].sec->name);
	return;
one_lane:
	fprintf(stderr, "xpusup-group: no helper thread (%s): every format on one thread\n",
		strerror(-err));
	for (i = 0; i < g->n; i++)
		g->f[i].lane = 0;
}

static void group_free(void *st)
{
	struct group *g = st;
	unsigned int i;

	helper__stop(g);
	for (i = 0; i < g->n; i++)
		if (g->f[i].open)
			g->f[i].ops->free(g->f[i].st);
	free(g);
}

/* Open the format named name (the loader checked that it is a [format] section) as g->f[i]. */
static int group__open_format(struct group *g, const struct fmt_env *env, const char *name,
			      unsigned int i, char *why, size_t why_len)
{
	struct group_format *f = &g->f[i];
	char inner[512] = "";
	struct fmt_env fenv;
	int err;

	f->group = g;
	f->conf = env->conf;
	f->sec = conf__find_format(env->conf, name);
	f->ops = f->sec ? fmt__find(f->sec->kind) : NULL;
	if (!f->sec || !f->ops || !f->ops->batch || f->ops->raw || f->ops == &fmt_group) {
		snprintf(why, why_len, "format '%s': %s", name,
			 f->sec ? "its kind cannot run in a group" : "no [format] section");
		return -EINVAL;
	}
	fenv = (struct fmt_env){ .ctx = f,
				 .get = format_get,
				 .path = format_path,
				 .resume = env->resume,
				 .status = env->status,
				 .session_dir = env->session_dir,
				 .conf = env->conf,
				 .sibling = format_sibling };
	err = f->ops->open(&f->st, &fenv, inner, sizeof(inner));
	if (err) {
		snprintf(why, why_len, "format '%s': %s", name, inner);
		return err;
	}
	f->open = true;
	return 0;
}

static int group_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	const char *list = env->get(env->ctx, "formats");
	const struct conf_actor *sec;
	struct group *g;
	char name[CONF_NAME_MAX];
	unsigned int i;
	int r = 0, err = 0, pass;

	if (!env->conf || !list) {
		snprintf(why, why_len,
			 "a group runs the [format] sections of a pipeline.conf: it is a session's "
			 "sink only");
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	/* Two passes: the stats formats first, whose accumulator a metrics format of the group
	 * reads (fmt_env.sibling), whatever the list's order; then the others. Each keeps its
	 * place in the list (the order of ticks and of the counters in status). */
	for (pass = 0; !err && pass < 2; pass++) {
		list = env->get(env->ctx, "formats");
		for (i = 0; !err && (r = conf_list_next(&list, name, sizeof(name))) > 0; i++) {
			if (i == CONF_GROUP_FORMATS_MAX) {
				snprintf(why, why_len, "more than %d formats",
					 CONF_GROUP_FORMATS_MAX);
				err = -EINVAL;
				break;
			}
			if (i >= g->n)
				g->n = i + 1;
			sec = conf__find_format(env->conf, name);
			if ((sec && !strcmp(sec->kind, "stats")) == !pass)
				err = group__open_format(g, env, name, i, why, why_len);
		}
	}
	if (!err && (r < 0 || !g->n)) {
		snprintf(why, why_len, "bad formats: expected a list of [format] section names");
		err = -EINVAL;
	}
	if (err) {
		group_free(g);
		return err;
	}
	lanes__split(g);
	*out = g;
	return 0;
}

static void group_batch(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct group *g = st;
	struct group_helper *h = g->helper;

	g->received += b->n_events;
	if (!h || b->n_events < LANE_MIN_EVENTS) {
		lane__run(g, 0, b, ev);
		lane__run(g, 1, b, ev);
		return;
	}
	pthread_mutex_lock(&h->mu);
	h->b = b;
	h->ev = ev;
	h->posted++;
	if (h->helper_waits)
		pthread_cond_signal(&h->work_cv);
	pthread_mutex_unlock(&h->mu);
	lane__run(g, 0, b, ev);
	pthread_mutex_lock(&h->mu);
	while (h->done != h->posted) {
		h->caller_waits = true;
		pthread_cond_wait(&h->done_cv, &h->mu);
	}
	h->caller_waits = false;
	pthread_mutex_unlock(&h->mu);
}

/* "format 'NAME': what it said", after what is in why already. */
static void why__add(char *why, size_t why_len, const struct group_format *f, const char *inner,
		     int err)
{
	size_t used = strlen(why);

	if (used + 1 < why_len)
		snprintf(why + used, why_len - used, "%sformat '%s': %s", used ? "; " : "",
			 f->sec->name, inner[0] ? inner : strerror(-err));
}

/*
 * Every format ticks. The group's output is complete only when each format's is, over all
 * the events so far: a restart then loses nothing that any format had not written. A failure
 * is reported when it happens (with the format's name) and stays shown until that format
 * writes again, even while the others write.
 */
static int group_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct group *g = st;
	bool wrote = false, complete = true, failing = false;
	char inner[512];
	unsigned int i;
	int r, err = 0;

	why[0] = 0;
	for (i = 0; i < g->n; i++) {
		struct group_format *f = &g->f[i];

		if (f->ops->tick) {
			inner[0] = 0;
			r = f->ops->tick(f->st, now_ns, inner, sizeof(inner));
			if (r < 0) {
				why__add(why, why_len, f, inner, r);
				err = err ? err : r;
				f->failing = true;
			} else if (r != FMT_IDLE) {
				wrote = true;
				f->failing = false;
			}
			if (r == FMT_COMPLETE)
				f->covered = g->received;
		}
		complete = complete && f->covered == g->received;
		failing = failing || f->failing;
	}
	if (err)
		return err;
	if (failing)
		return FMT_IDLE; /* the problem shown stays until its format writes */
	if (complete && wrote)
		return FMT_COMPLETE;
	return wrote ? FMT_WROTE : FMT_IDLE;
}

/* Every format writes its final output, whichever failed before it. */
static int group_finish(void *st, char *why, size_t why_len)
{
	struct group *g = st;
	char inner[512];
	unsigned int i;
	int r, err = 0;

	why[0] = 0;
	for (i = 0; i < g->n; i++) {
		inner[0] = 0;
		r = g->f[i].ops->finish(g->f[i].st, inner, sizeof(inner));
		if (r) {
			why__add(why, why_len, &g->f[i], inner, r);
			err = err ? err : r;
		}
	}
	return err;
}

/*
 * FORMAT.COUNTER into out, in the status block's NAME_LEN - 1 characters: a longer name keeps
 * the counter's name whole and cuts the format's (at least one letter of it is kept; only then
 * is the counter's name cut). Returns whether it was shortened.
 */
static bool counter__name(char out[NAME_LEN], const char *format, const char *counter)
{
	size_t fl = strlen(format), cl = strlen(counter), room = NAME_LEN - 1;
	bool cut = fl + 1 + cl > room;

	if (cut)
		fl = cl + 2 <= room ? room - 1 - cl : 1;
	if (cl > room - 1 - fl)
		cl = room - 1 - fl;
	memcpy(out, format, fl);
	out[fl] = '.';
	memcpy(out + fl + 1, counter, cl);
	out[fl + 1 + cl] = 0;
	return cut;
}

/*
 * Every format's counters, each FORMAT.COUNTER. What does not fit in max is said: the last
 * slot becomes counters_hidden (how many are not shown), and the log names them once, as it
 * names the counters whose names had to be shortened.
 */
static unsigned int group_counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	struct group *g = st;
	char said[1024];
	unsigned int i, k, total = 0, shown;
	size_t used = 0;

	if (max > FMT_COUNTERS_MAX)
		max = FMT_COUNTERS_MAX;
	if (!max)
		return 0;
	for (i = 0; i < g->n; i++) {
		unsigned int n0 = total, n = 0;

		if (g->f[i].ops->counters)
			n = g->f[i].ops->counters(g->f[i].st, g->raw + total, g->values + total,
						  FMT_COUNTERS_MAX);
		for (total += n; n0 < total && n0 < max; n0++)
			if (counter__name(g->names[n0], g->f[i].sec->name, g->raw[n0]) &&
			    !g->told_names && used < sizeof(said))
				used += (size_t)snprintf(said + used, sizeof(said) - used,
							 " %s (%s.%s)", g->names[n0],
							 g->f[i].sec->name, g->raw[n0]);
	}
	if (used && !g->told_names)
		fprintf(stderr,
			"xpusup-group: status counter names hold %d characters; shown shortened:%s\n",
			NAME_LEN - 1, said);
	g->told_names = true;
	shown = total > max ? max - 1 : total;
	for (k = 0; k < shown; k++) {
		names[k] = g->names[k];
		values[k] = g->values[k];
	}
	if (total <= max)
		return shown;
	names[shown] = "counters_hidden";
	values[shown] = total - shown;
	if (!g->told_hidden)
		fprintf(stderr,
			"xpusup-group: %u counters of its formats do not fit in status (at most "
			"%u): counters_hidden counts them, from %s on\n",
			total - shown, max - 1, g->names[shown]);
	g->told_hidden = true;
	return shown + 1;
}

const struct fmt_ops fmt_group = {
	.kind = "group",
	.open = group_open,
	.batch = group_batch,
	.tick = group_tick,
	.finish = group_finish,
	.free = group_free,
	.counters = group_counters,
};
