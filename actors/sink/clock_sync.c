// SPDX-License-Identifier: MIT
/*
 * The sync metadata of the sinks' files: CLOCK_SYNC events into one clock fit per other clock,
 * the models out as JSON (clock_sync.h, docs/clock.md).
 */
#include "actors/sink/clock_sync.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/appendf.h"
#include "common/clock.h"
#include "common/status.h" /* xpu_now_ns */
#include "xpusup/event.h"

static const char *const clock_names[SINK_CLOCKS_MAX] = { "unknown", "CLOCK_MONOTONIC", "cupti",
							  "CLOCK_REALTIME", "remote" };

const char *sink_clocks__name(unsigned int id)
{
	return id < SINK_CLOCKS_MAX ? clock_names[id] : clock_names[0];
}

int sink_clocks__add(struct sink_clocks *c, const struct xpu_cevent *e)
{
	unsigned int id = e->sub_kind < SINK_CLOCKS_MAX ? e->sub_kind : 0;
	struct clock_sample s = { .ref_before_ns = e->ts_ns,
				  .source_ns = e->value,
				  .ref_after_ns = e->end_ns };

	if (!c->fit[id]) {
		c->fit[id] = clock_fit__new(clock_names[id], NULL);
		if (!c->fit[id]) {
			c->nomem++;
			return -ENOMEM;
		}
	}
	c->readings[id]++;
	if (clock_fit__add(c->fit[id], &s)) {
		c->refused[id]++;
		return -EINVAL;
	}
	return 0;
}

int sink_clocks__json(struct sink_clocks *c, char *buf, size_t size)
{
	/* the exact model of a source that stamps CLOCK_MONOTONIC itself: no flag (it is not
	 * the identity of a clock we know nothing of: its error is known to be 0) */
	struct clock_model same = { .slope = 1.0 };
	char model[1024];
	size_t len = 0;
	unsigned int i, shown = 0;
	int n;

	xpu_appendf(buf, size, &len, "{");
	for (i = 0; i < SINK_CLOCKS_MAX; i++) {
		struct clock_model m;

		if (!c->fit[i])
			continue;
		clock_fit__solve(c->fit[i], &m); /* an error is in m: flags and message */
		n = clock_model__json(&m, model, sizeof(model));
		if (n < 2)
			return -ENOSPC;
		/* the model's object, its closing brace replaced by the sink's own counts */
		xpu_appendf(buf, size, &len, "%s\"%s\":%.*s,\"readings\":%llu,\"refused\":%llu}",
			    shown++ ? "," : "", clock_names[i], n - 1, model, c->readings[i],
			    c->refused[i]);
	}
	if (!shown) {
		/* clock_model__json's object with the sentence as its source, which does not fit
		 * struct clock_model's source: the object starts {"source":"" */
		n = clock_model__json(&same, model, sizeof(model));
		if (n < 13)
			return -ENOSPC;
		xpu_appendf(
			buf, size, &len,
			"\"all\":{\"source\":\"all sources stamp CLOCK_MONOTONIC\"%.*s,\"readings\":0,"
			"\"refused\":0}",
			n - 13, model + 12);
	}
	xpu_appendf(buf, size, &len, "}");
	if (len >= size)
		return -ENOSPC;
	return (int)len;
}

void sink_clocks__free(struct sink_clocks *c)
{
	unsigned int i;

	for (i = 0; i < SINK_CLOCKS_MAX; i++) {
		clock_fit__free(c->fit[i]);
		c->fit[i] = NULL;
	}
}

void sink_clocks__realtime_pair(__u64 *mono, __u64 *real)
{
	__u64 before, after, best = UINT64_MAX;
	struct timespec rt;
	int i;

	for (i = 0; i < 4; i++) {
		before = xpu_now_ns();
		clock_gettime(CLOCK_REALTIME, &rt);
		after = xpu_now_ns();
		if (after - before < best) {
			best = after - before;
			*mono = before + (after - before) / 2;
			*real = (__u64)rt.tv_sec * 1000000000ull + (__u64)rt.tv_nsec;
		}
	}
}
