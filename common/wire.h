/* SPDX-License-Identifier: MIT */
/*
 * The wire format between correlators and sinks (and remote subscribers): batches of
 * correlated events encoded with MessagePack, one batch per nng message. docs/wire.md is the
 * specification a third party writes a subscriber from; this header is the C side.
 *
 * A correlated event is a raw record (include/xpusup/event.h) plus what the correlator found
 * out about it (seed 001): correlation_id, parent_id, root_id, typed links to other events,
 * how it was correlated and how sure that is.
 *
 * Encoding uses msgpack-c's packer. Decoding does not use msgpack-c's object unpacker, which
 * allocates what a message's headers declare: it is a bounded pull reader over the message
 * bytes that checks every length against both the bytes left and the caller's limits before
 * it touches anything, and never allocates. Strings in decoded events point into the message
 * buffer; stack frames and their names are copied into pools the caller provides.
 */
#ifndef XPUSUP_COMMON_WIRE_H
#define XPUSUP_COMMON_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "xpusup/event.h"

#define XPU_WIRE_VERSION 1
#define XPU_WIRE_LINKS_MAX 4
#define XPU_WIRE_STACK_MAX (2 * XPU_MAX_FRAMES)
#define XPU_WIRE_FRAME_NAME_MAX 4096 /* bytes of one frame's name, its NUL not counted */
#define XPU_WIRE_COUNTERS_MAX 4 /* counters attached to one event */
#define XPU_WIRE_COUNTER_NAME_MAX 256 /* bytes of an attached counter's name */

enum xpu_link_type {
	XPU_LINK_LAUNCHED_BY = 1, /* GPU activity -> the LAUNCH or CUDA_API call that launched it */
	XPU_LINK_INSIDE_RANGE = 2, /* -> the innermost RANGE open on that thread at the time */
	XPU_LINK_COMPLETES = 3, /* an end (range pop, API exit) -> its begin */
	XPU_LINK_SAME_STREAM_PREV = 4, /* GPU activity -> the previous one on its (pid, stream) */
	XPU_LINK_SAMPLED_IN = 5, /* CPU sample -> the CUDA API call it fell inside */
	XPU_LINK_TYPE_MAX,
};

enum xpu_corr_type {
	XPU_CORR_NONE = 0, /* nothing found */
	XPU_CORR_EXACT_ID = 1, /* joined on (pid, correlation id): confidence 1.0 */
	XPU_CORR_TIMESTAMP = 2, /* nearest candidate in time within a window: confidence < 1 */
	XPU_CORR_NESTING = 3, /* parent from per-thread range/API nesting */
	XPU_CORR_APPROXIMATE = 4, /* e.g. graph kernels attributed to the graph's capture stack */
	XPU_CORR_TYPE_MAX,
};

struct xpu_link {
	__u32 type; /* enum xpu_link_type */
	__u32 reserved;
	__u64 target; /* the id of the linked event */
};

/* xpu_cevent.counter_flags */
#define XPU_COUNTERS_F_ESTIMATED (1u << 0) /* a delta reaches past the readings: extrapolated */

/*
 * A counter's change over an event's window (the correlator's `counters` enrich stage,
 * docs/correlator.md): how much of the PMU event `name` the event's process counted between
 * the event's start and its end, scaled for multiplexing.
 */
struct xpu_wire_counter {
	const char *name; /* name_len bytes (1..XPU_WIRE_COUNTER_NAME_MAX), not NUL-terminated */
	__u32 name_len;
	__u32 reserved;
	double delta; /* finite, >= 0 */
};

/*
 * One correlated event. Fields that do not apply to the kind are zero and are not encoded.
 * Which payload fields each kind uses is in docs/wire.md.
 */
struct xpu_cevent {
	__u64 id; /* unique per (producer, session), assigned by the correlator */
	__u16 kind; /* enum xpu_rec_type */
	__u16 flags; /* the record's flags */
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u64 ts_ns; /* start, CLOCK_MONOTONIC */
	__u64 end_ns; /* end of an interval; 0 for an instant */

	__u64 correlation_id;
	__u64 parent_id; /* 0: none */
	__u64 root_id; /* 0: none */
	__u32 corr_type; /* enum xpu_corr_type */
	float confidence; /* 0..1 */
	__u32 n_links;
	struct xpu_link links[XPU_WIRE_LINKS_MAX];

	/* GPU */
	__u32 device;
	__u32 context;
	__u32 stream;
	__u32 graph_id;
	__u64 graph_node_id;
	__s32 grid[3];
	__s32 block[3];
	__u32 registers;
	__u32 shared_mem; /* static + dynamic */

	__u32 api_id; /* CUDA_API, LAUNCH: CUPTI callback id */
	__u32 sub_kind; /* copy kind, sync kind, memory op, range phase, loss cause, pmu scope */
	__u64 bytes; /* memcpy, memset, memory */
	__u64 address; /* memory */
	__u64 value; /* PMU total, LOSS count, PROC_EXIT code, CLOCK_SYNC other clock */
	__u64 delta; /* PMU delta since the previous reading */
	double scale; /* PMU time_enabled / time_running (1.0 unless multiplexed) */

	/* name: kernel, range, counter, process comm, string text (not NUL-terminated) */
	const char *name;
	__u32 name_len;
	/* stack: CPU sample frames, or the launch stack a GPU activity was joined to;
	 * n_kernel kernel frames first, then n_user user frames, innermost first */
	__u16 n_kernel;
	__u16 n_user;
	const __u64 *stack;
	/* frames: the functions' names, parallel to stack (n_kernel + n_user entries), each
	 * NUL-terminated and at most XPU_WIRE_FRAME_NAME_MAX bytes; NULL (or "") for a frame
	 * without a name; frames NULL: no names at all. The encoder writes each name once per
	 * batch, recognising repeats by pointer first (give every occurrence of a name the same
	 * pointer: intern them), then by content. */
	const char *const *frames;

	/* Counters over the event's window (a GPU kernel's [ts_ns, end_ns]; a range end's from
	 * its begin to it), as name does (decoded: the names point into the message). */
	__u32 n_counters;
	__u32 counter_flags; /* XPU_COUNTERS_F_* */
	struct xpu_wire_counter counters[XPU_WIRE_COUNTERS_MAX];
	double ipc; /* instructions / cycles over the window; 0: not derived */
};

/* ---- encoder ---- */

struct xpu_wire_enc;

/* xpu_wire_enc__new - an encoder for producer (a correlator shard's id). NULL + errno. */
struct xpu_wire_enc *xpu_wire_enc__new(__u32 producer);
void xpu_wire_enc__free(struct xpu_wire_enc *enc);

/*
 * Batch calling order: begin(seq), add() per event, finish() -> the message bytes, valid
 * until the next begin(), add() or free(). Sequence numbers are the caller's: the number of
 * events the producer sent before this batch, so a receiver counts lost events exactly.
 * Return 0, -EINVAL (an event the format cannot carry: unknown kind, more links than
 * XPU_WIRE_LINKS_MAX, stack over XPU_WIRE_STACK_MAX, name over XPU_STRING_MAX, a frame name
 * over XPU_WIRE_FRAME_NAME_MAX, more than XPU_WIRE_COUNTERS_MAX counters, a counter name
 * empty or over XPU_WIRE_COUNTER_NAME_MAX, a counter delta or ipc negative or not finite),
 * -ENOMEM. A rejected event leaves the batch as it was.
 * add() copies what it needs of the event, frame names included; but it knows a frame name
 * it has seen in this batch by its pointer, so a pointer must stand for the same text from
 * begin() to finish() (an interned name does).
 */
int xpu_wire_enc__begin(struct xpu_wire_enc *enc, __u64 seq);
int xpu_wire_enc__add(struct xpu_wire_enc *enc, const struct xpu_cevent *ev);
int xpu_wire_enc__finish(struct xpu_wire_enc *enc, const void **data, size_t *len);

/* Events added since begin(), and bytes so far (the frame names that finish() will append
 * included): for "send when big enough" policies. */
__u32 xpu_wire_enc__count(const struct xpu_wire_enc *enc);
size_t xpu_wire_enc__size(const struct xpu_wire_enc *enc);

/*
 * The origin of a batch (docs/wire.md, "Origin"): optional batch keys that a publish sink adds
 * to every batch it hands on, so that a subscriber of several hosts knows whose each batch is,
 * which session of that host it comes from, and how that host's CLOCK_MONOTONIC (the events'
 * time) relates to its CLOCK_REALTIME. Correlators never write them.
 */
#define XPU_WIRE_HOST_MAX 64 /* bytes of a host name (HOST_NAME_MAX) */

struct xpu_wire_origin {
	/* host_len bytes (1..XPU_WIRE_HOST_MAX, each printable ASCII 0x21..0x7e), not
	 * NUL-terminated; NULL and 0 when the batch has no "host" (decoded: points into the
	 * message) */
	const char *host;
	__u32 host_len;
	__u32 reserved;
	__u64 session; /* identifies the host's session (the realtime ns it started); 0: none */
	/* CLOCK_MONOTONIC and CLOCK_REALTIME read together on the host; both 0: none */
	__u64 clock_mono_ns, clock_real_ns;
};

/* xpu_wire_origin__valid - a host name as "host" must be: 1..XPU_WIRE_HOST_MAX bytes, each
 * printable ASCII other than the space. */
bool xpu_wire_origin__valid_host(const char *host, size_t len);

/* xpu_wire_origin__bound - the most bytes xpu_wire_origin__add adds to any message for o. */
size_t xpu_wire_origin__bound(const struct xpu_wire_origin *o);

/*
 * xpu_wire_origin__add - the batch msg (len bytes, as a correlator encoded it: a map) copied
 * into out (room bytes; len + xpu_wire_origin__bound(o) always suffices) with o's keys added
 * to its map: "host" (when o->host), "session" (when not 0) and "clock" (when either reading
 * is not 0), after the batch's own entries. The map header grows in place (fixmap to map16
 * when it must). Returns 0 and *out_len, -EINVAL when msg does not start with a map header or
 * o->host is not a valid host, -ENOSPC when room is too small. msg is not decoded: a batch that
 * already holds these keys would then hold them twice (a decoder rejects that).
 */
int xpu_wire_origin__add(const void *msg, size_t len, const struct xpu_wire_origin *o, void *out,
			 size_t room, size_t *out_len);

/* ---- decoder ---- */

struct xpu_wire_batch {
	__u32 version;
	__u32 producer;
	__u64 seq;
	__u32 n_events; /* events decoded into the caller's array */
	struct xpu_wire_origin origin; /* zero when the batch has none of its keys */
};

struct xpu_wire_limits {
	size_t max_message; /* bytes; larger messages are rejected unread */
	__u32 max_events; /* per batch */
	__u32 max_depth; /* nesting of arrays and maps, the batch itself included */
};

/* The deepest nesting xpu_wire_decode() will follow whatever limits->max_depth says (a
 * larger max_depth is treated as this): the reader skips unknown values with one counter per
 * level in a fixed array on its stack instead of recursing, so this bounds that array. */
#define XPU_WIRE_DEPTH_MAX 32

/* Defaults: 64 MiB, 1 << 20 events, depth 5 (batch map, events array, event map, links
 * array, link pair; counters array, counter pair). */
extern const struct xpu_wire_limits xpu_wire_default_limits;

struct xpu_wire_error {
	size_t offset; /* where in the message decoding stopped */
	const char *reason; /* static text, e.g. "string longer than the message" */
};

/*
 * Where xpu_wire_decode() copies what cannot point into the message: the stack frames of all
 * events of a batch and their names. Any pointer may be NULL with its length 0 (no room).
 */
struct xpu_wire_pool {
	__u64 *stack; /* stack_len entries: the frames of every event, one event after another */
	__u32 stack_len;
	/* names, parallel to stack (stack_len entries); NULL: names not wanted (still checked) */
	const char **frames;
	/* the batch's distinct names, copied NUL-terminated, and a 4-byte index entry per
	 * name: a name of n bytes takes n + 5 bytes; XPU_WIRE_TEXT_MAX(len) always suffices */
	char *text;
	size_t text_len;
};

/* text that always suffices for a message of len bytes (each name costs the message at least
 * one byte more than its length): for a receiver that must never see -ENOSPC for names. */
#define XPU_WIRE_TEXT_MAX(len) (4 * (size_t)(len) + 3)

/*
 * xpu_wire_pool__init - allocate pool's three arrays, zeroed (calloc: the pages are touched
 * as they are used). For receivers; the decoder itself never allocates. 0 or -ENOMEM (then
 * nothing is left allocated). xpu_wire_pool__fini frees them; it accepts a zeroed pool.
 */
int xpu_wire_pool__init(struct xpu_wire_pool *pool, __u32 stack_len, size_t text_len);
void xpu_wire_pool__fini(struct xpu_wire_pool *pool);

/*
 * xpu_wire_decode - decode one message (one batch).
 *
 * events has room for max_events events; pool (NULL: no room) takes the stacks of all events
 * and their names. Decoded event names point into buf, which must outlive the events; frame
 * names point into pool->text, valid until the pool is used again. Unknown map keys are
 * skipped (forward compatibility), within the depth limit.
 *
 * Returns 0; -EBADMSG for malformed input (not MessagePack, wrong shape, a value of the wrong
 * type, a length past the end, over a limit, a frame name index past the symbol table), with
 * *err filled when err is not NULL; -ENOSPC when events, pool->stack or pool->text is too
 * small for a well-formed batch (the whole batch is checked first; batch->n_events then says
 * how many events it holds, and *err says which room ran out; events without room for their
 * stack have stack and frames NULL, and when the text ran out every frames is NULL). Never
 * allocates; never reads outside [buf, buf + len).
 */
int xpu_wire_decode(const void *buf, size_t len, const struct xpu_wire_limits *limits,
		    struct xpu_wire_batch *batch, struct xpu_cevent *events, __u32 max_events,
		    const struct xpu_wire_pool *pool, struct xpu_wire_error *err);

/*
 * Per-producer sequence accounting for a receiver (docs/wire.md, "Sequence numbers and
 * gaps"): seq counts events, so a gap is the exact number of events lost on the way.
 * Zero-initialise; xpu_wire_seq__batch accounts one decoded batch.
 */
struct xpu_wire_seq {
	__u64 next[256]; /* by producer & 255 */
	bool seen[256];
	__u64 missed; /* events lost on the way */
	__u64 rewinds; /* batches that went back */
};

void xpu_wire_seq__batch(struct xpu_wire_seq *t, const struct xpu_wire_batch *b);

/* Names for docs, JSON and messages: "launched_by", "exact_id"; "unknown" otherwise. */
const char *xpu_link_type__name(__u32 type);
const char *xpu_corr_type__name(__u32 type);

#endif /* XPUSUP_COMMON_WIRE_H */
