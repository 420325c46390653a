// SPDX-License-Identifier: MIT
/*
 * xpusup-replay: a source that replays a file of ring records (for example captured CUPTI
 * output, or a test's hand-made scenario) into the rings of the correlator shards, each
 * process's records to the shard that owns its pid.
 *
 * speed = full: as fast as the rings take it, waiting for room (nothing is dropped);
 * speed = original: each record when as much time has passed since the first one as its
 * timestamp says, dropping (and counting) when a ring is full, like a live source.
 *
 * The file is untrusted input: every record is framed and validated (xpu_rec__validate)
 * before it goes anywhere. A record that fails is counted; since a bad size leaves no way to
 * find the next record, replay stops there, having sent everything before it.
 */
#include "actors/actor.h"
#include "actors/replay/replay_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/topology.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define PROG "xpusup-replay"

struct replay {
	struct actor *a;
	struct ring *rings[CONF_MAX_SHARDS];
	__u32 shards;
	bool original;
	__u64 records, dropped, corrupt, bytes;
	int c_records, c_dropped, c_corrupt, c_done;
};

static void put(struct replay *r, const void *rec, __u32 size)
{
	__u32 shard = xpu_shard_of(((const struct xpu_rec *)rec)->pid, r->shards);
	struct ring *ring = r->rings[shard];
	unsigned int step = 0;
	void *p;

	if (!r->original) {
		while (!(p = ring__try_reserve(ring, size))) {
			if (errno != EAGAIN || actor__stopping(r->a)) {
				r->dropped++;
				return;
			}
			ring__flush(ring);
			actor__wait_room(r->a, &step);
		}
	} else if (!(p = ring__reserve(ring, size))) {
		r->dropped++;
		return;
	}
	memcpy(p, rec, size);
	ring__commit(ring);
	r->records++;
	r->bytes += size;
}

static void publish(struct replay *r, bool done)
{
	__u32 i;

	for (i = 0; i < r->shards; i++)
		ring__flush(r->rings[i]);
	actor__count(r->a, r->c_records, r->records);
	actor__count(r->a, r->c_dropped, r->dropped);
	actor__count(r->a, r->c_corrupt, r->corrupt);
	actor__count(r->a, r->c_done, done);
}

/* Returns 0 at the end of the file, -EBADMSG at a record that cannot be framed. */
static int replay_file(struct replay *r, FILE *f, const char *shown)
{
	static _Alignas(8) unsigned char rec[XPU_REC_MAX_SIZE];
	struct xpu_rec *h = (struct xpu_rec *)rec;
	__u64 first_ts = 0, start = xpu_now_ns(), offset = sizeof(struct xpu_replay_hdr), n = 0;
	size_t got;

	for (;; n++) {
		got = fread(rec, 1, sizeof(*h), f);
		if (got == 0)
			return 0;
		if (got < sizeof(*h) || h->size < sizeof(*h) || h->size > XPU_REC_MAX_SIZE ||
		    h->size % XPU_REC_ALIGN ||
		    fread(rec + sizeof(*h), 1, h->size - sizeof(*h), f) != h->size - sizeof(*h))
			goto corrupt;
		if (xpu_rec__validate(rec, h->size))
			goto corrupt;
		if (r->original) {
			__u64 due;

			if (!first_ts)
				first_ts = h->ts_ns;
			due = start + (h->ts_ns > first_ts ? h->ts_ns - first_ts : 0);
			while (xpu_now_ns() < due && !actor__stopping(r->a)) {
				__u64 left_ms = (due - xpu_now_ns()) / 1000000 + 1;

				publish(r, false);
				actor__sleep_ms(r->a, left_ms > 10 ? 10 : (unsigned int)left_ms);
			}
		}
		if (actor__stopping(r->a))
			return 0;
		put(r, rec, h->size);
		offset += h->size;
		if (n % 256 == 255) {
			publish(r, false);
			actor__beat(r->a);
		}
	}
corrupt:
	r->corrupt++;
	fprintf(stderr,
		PROG ": %s: record %llu at offset %llu is not a valid record: stopping there\n",
		shown, (unsigned long long)n, (unsigned long long)offset);
	return -EBADMSG;
}

int main(int argc, char **argv)
{
	struct replay r = { 0 };
	struct xpu_replay_hdr fh;
	struct replay_options o;
	const char *path = NULL;
	char path_buf[4096];
	char shown[4400];
	int code = ACTOR_EXIT_PERMANENT, err;
	struct actor a;
	FILE *f = NULL;
	__u32 i;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	r.a = &a;
	if (!conf_actor__path(a.conf, a.self, "path", path_buf, sizeof(path_buf)))
		path = path_buf;
	r.original = !conf_actor__options(a.self, &o, sizeof(o)) && o.speed == REPLAY_ORIGINAL;
	r.shards = a.conf->shards;
	if (!path) {
		fprintf(stderr, PROG ": unable to start [%s]: the key 'path' is required\n",
			a.self->section);
		goto out;
	}
	/* conf_actor__path took a relative name from the configuration file's folder */
	snprintf(shown, sizeof(shown), "%s", path);
	f = fopen(shown, "rb");
	if (!f) {
		fprintf(stderr, PROG ": unable to open %s: %s\n", shown, strerror(errno));
		goto out;
	}
	if (fread(&fh, sizeof(fh), 1, f) != 1 || fh.magic != XPU_REPLAY_MAGIC) {
		fprintf(stderr, PROG ": unable to replay %s: not an xpusup replay file\n", shown);
		goto out;
	}
	if (fh.event_abi != XPU_EVENT_ABI) {
		/* the layouts differ (include/xpusup/event.h says how): nothing can be read */
		fprintf(stderr,
			PROG ": unable to replay %s: its records are of event ABI %u, this xpusup "
			     "reads ABI %u (docs/events.md)\n",
			shown, fh.event_abi, XPU_EVENT_ABI);
		goto out;
	}
	if ((err = actor__open_rings(&a, r.rings))) {
		code = actor__rings_exit(err);
		goto out;
	}
	r.c_records = actor__counter(&a, "records_out");
	r.c_dropped = actor__counter(&a, "records_dropped");
	r.c_corrupt = actor__counter(&a, "corrupt");
	r.c_done = actor__counter(&a, "done");
	actor__ready(&a);

	replay_file(&r, f, shown);
	publish(&r, true);
	/* Done: stay (a source that exits would be restarted and replay again) until stopped. */
	while (!actor__stopping(&a))
		actor__sleep_ms(&a, 100);
	code = 0;
out:
	if (f)
		fclose(f);
	for (i = 0; i < CONF_MAX_SHARDS; i++)
		ring__close(r.rings[i]);
	actor__fini(&a);
	return code;
}
