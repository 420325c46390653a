// SPDX-License-Identifier: MIT
/*
 * Fuzz target for what a correlator shard does with ring records: the record validator
 * (common/event.c) and, for every record it accepts, the join (actors/correlator/join.c and
 * its engines) and the wire encoder and decoder of what the join emits. Ring contents come from other
 * processes (the CUPTI library runs inside the user's program), so a shard must survive any
 * bytes that pass validation. Properties beyond "no crash":
 *   - every accepted record goes out as exactly one event, once the join is flushed;
 *   - every event the join emits encodes (the wire format can carry anything a valid
 *     record becomes) and its batch decodes back to the same number of events;
 *   - the join's held state is empty after the flush.
 *
 * Input: one options byte (bit 0: timestamp strategy on; bits 1-3: enrich stages), then
 * records back to back, each framed by its own header's size; a frame that cannot be a
 * record skips 8 bytes, the way a ring consumer resyncs.
 */
#include <stdlib.h>
#include <string.h>

#include "actors/correlator/join.h"
#include "common/config.h"
#include "common/wire.h"
#include "tests/fuzz/fuzz.h"
#include "xpusup/event.h"

#define BATCH 64

struct out {
	struct xpu_wire_enc *enc;
	struct xpu_cevent *decoded;
	struct xpu_wire_pool pool;
	__u64 events;
	__u64 seq;
};

static void finish(struct out *o)
{
	struct xpu_wire_batch batch;
	__u32 n = xpu_wire_enc__count(o->enc);
	const void *data;
	size_t len;

	if (!n)
		return;
	if (xpu_wire_enc__finish(o->enc, &data, &len))
		abort();
	if (o->pool.text_len < XPU_WIRE_TEXT_MAX(len)) { /* names never make -ENOSPC here */
		free(o->pool.text);
		o->pool.text_len = XPU_WIRE_TEXT_MAX(len);
		o->pool.text = malloc(o->pool.text_len);
		if (!o->pool.text)
			abort();
	}
	if (xpu_wire_decode(data, len, &xpu_wire_default_limits, &batch, o->decoded, BATCH + 64,
			    &o->pool, NULL) ||
	    batch.n_events != n || batch.seq != o->seq)
		abort();
	o->seq += n;
	if (xpu_wire_enc__begin(o->enc, o->seq))
		abort();
}

static void on_event(const struct xpu_cevent *ev, void *ctx)
{
	struct out *o = ctx;

	if (xpu_wire_enc__add(o->enc, ev))
		abort(); /* a valid record became an event the wire cannot carry */
	o->events++;
	if (xpu_wire_enc__count(o->enc) >= BATCH)
		finish(o);
}

static const char *name_of(__u32 pid, __u64 id, __u32 kind, __u32 *len, void *ctx)
{
	(void)pid;
	(void)kind;
	(void)ctx;
	*len = (__u32)(id % 3);
	return id % 3 ? "k<>" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct join_opts opts = { .ttl_ns = 50000,
				  .exit_grace_ns = 20000,
				  .linger_ns = 10000,
				  .max_pending = 16,
				  .max_waiting = 8,
				  .max_streams = 16,
				  .stream_idle_ns = 30000,
				  .first_id = 1 };
	static _Alignas(8) unsigned char rec[XPU_REC_MAX_SIZE];
	struct out o = { 0 };
	struct join_stats st;
	struct join *j;
	__u64 accepted = 0, now = 1000;
	unsigned int enrich;
	size_t off = 1;
	__u32 rsize;

	if (!size)
		return 0;
	opts.time_window_ns = data[0] & 1 ? 100000 : 0;
	enrich = (data[0] >> 1) & CONF_ENRICH_ALL;
	o.enc = xpu_wire_enc__new(1);
	o.decoded = calloc(BATCH + 64, sizeof(*o.decoded));
	j = join__new(&opts, on_event, &o);
	if (!o.enc || !o.decoded || !j || xpu_wire_enc__begin(o.enc, 0) ||
	    xpu_wire_pool__init(&o.pool, (BATCH + 64) * XPU_WIRE_STACK_MAX, 0))
		abort();
	join__set_names(j, name_of);
	while (off + sizeof(struct xpu_rec) <= size) {
		memcpy(&rsize, data + off + 4, sizeof(rsize));
		if (rsize < sizeof(struct xpu_rec) || rsize % 8 || rsize > size - off ||
		    rsize > sizeof(rec)) {
			off += 8;
			continue;
		}
		memcpy(rec, data + off, rsize);
		off += rsize;
		if (xpu_rec__validate(rec, rsize))
			continue;
		accepted++;
		join__record_enrich(j, rec, rsize, now, enrich);
		now += 997;
		if (accepted % 8 == 0)
			join__expire(j, now);
	}
	join__flush(j);
	finish(&o);
	join__stats(j, &st);
	if (o.events != accepted || st.pending || st.waiting)
		abort();
	join__free(j);
	xpu_wire_pool__fini(&o.pool);
	free(o.decoded);
	xpu_wire_enc__free(o.enc);
	return 0;
}
