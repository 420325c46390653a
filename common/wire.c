// SPDX-License-Identifier: MIT
/*
 * The parts of common/wire.h that both ends share: the default decoder limits, sequence
 * accounting for receivers, and the names of link and correlation types.
 *
 * The codec itself is split by seam: common/wire_fields.h is the table of the event map's
 * fields that both directions are generated from, common/wire_enc.c the encoder,
 * common/wire_dec.c the decoder, built on the bounded MessagePack reader of
 * common/msgpack_reader.h. docs/wire.md is the specification they implement.
 */
#include "common/wire.h"

#include <stdbool.h>

const struct xpu_wire_limits xpu_wire_default_limits = {
	.max_message = 64u << 20,
	.max_events = 1u << 20,
	.max_depth = 5,
};

void xpu_wire_seq__batch(struct xpu_wire_seq *t, const struct xpu_wire_batch *b)
{
	__u32 p = b->producer & 255;

	if (t->seen[p] && b->seq > t->next[p])
		t->missed += b->seq - t->next[p];
	else if (t->seen[p] && b->seq < t->next[p])
		t->rewinds++;
	t->seen[p] = true;
	t->next[p] = b->seq + b->n_events;
}

const char *xpu_link_type__name(__u32 type)
{
	static const char *const names[XPU_LINK_TYPE_MAX] = {
		[XPU_LINK_LAUNCHED_BY] = "launched_by",
		[XPU_LINK_INSIDE_RANGE] = "inside_range",
		[XPU_LINK_COMPLETES] = "completes",
		[XPU_LINK_SAME_STREAM_PREV] = "same_stream_prev",
		[XPU_LINK_SAMPLED_IN] = "sampled_in",
	};

	if (type < XPU_LINK_TYPE_MAX && names[type])
		return names[type];
	return "unknown";
}

const char *xpu_corr_type__name(__u32 type)
{
	static const char *const names[XPU_CORR_TYPE_MAX] = {
		[XPU_CORR_NONE] = "none",
		[XPU_CORR_EXACT_ID] = "exact_id",
		[XPU_CORR_TIMESTAMP] = "timestamp",
		[XPU_CORR_NESTING] = "nesting",
		[XPU_CORR_APPROXIMATE] = "approximate",
	};

	if (type < XPU_CORR_TYPE_MAX && names[type])
		return names[type];
	return "unknown";
}
