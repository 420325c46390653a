// SPDX-License-Identifier: MIT
/*
 * The timeline format (kind timeline): Chrome Trace Event JSON (docs/timeline.md), the file
 * Perfetto UI, chrome://tracing and speedscope open:
 *
 *	{"traceEvents":[
 *	{"ph":"X","name":"cudaLaunchKernel","cat":"cuda_api","pid":..,"tid":..,"ts":..,...},
 *	{"ph":"i","name":"launch",...,"args":{...},"sf":12},
 *	...
 *	],
 *	"stackFrames":{
 *	"1":{"name":"main"},
 *	...
 *	"12":{"name":"cudaLaunchKernel","parent":"11"}},
 *	"displayTimeUnit":"ns",
 *	"otherData":{"clock":"CLOCK_MONOTONIC",...}}
 *
 * Timestamps are absolute CLOCK_MONOTONIC in microseconds, written from the integer
 * nanoseconds (never through a double) with the decimals they need (none to three), so they
 * are exact and every file of a boot shares one time axis. CPU work sits on its real (pid, tid) tracks; GPU work on a
 * pseudo-process per (pid, device), "GPU 0 (pid N)", with one thread track per stream; the
 * SM-active % counter of a device on a pseudo-process "GPU 0"; PMU counters as their rate per
 * second between readings, a process's on its process, system-wide ones per CPU on the
 * pseudo-process "system", with an IPC track where instructions and cycles pair up.
 * Pseudo-processes take pids from VPID_BASE up, above any Linux pid (PID_MAX_LIMIT is 2^22).
 *
 * Events are written as they arrive, through out.h, into PATH.partial: memory stays
 * bounded however long the session runs. Only what cannot be written before the end is
 * held: the names of processes, threads and streams (written as metadata by finish, when
 * they are best known), ranges still open, the SM-active windows that kernels may still
 * land in, the recent calls that flow arrows start from, and the frame tree: each distinct
 * stack path is a node once, an event names its stack by its innermost node ("sf"), and the
 * nodes the file's events name are written at the end as the "stackFrames" dictionary
 * (bounded: past FRAMES_MAX nodes a stack is written inline, as an args "stack" array). finish closes the array,
 * adds the metadata and renames the file into place: the file is valid JSON from then on,
 * never before. So a restarted sink (fmt_env.resume) starts a new file, and never says
 * FMT_COMPLETE: the sink counts what the killed run received as lost.
 *
 * Viewers need each track's slices properly nested; lane_of keeps them so whatever the
 * input says. Every flow arrow is written with both its ends, or not at all. Every "sf" names
 * a node the file's stackFrames holds, with every node up to its root.
 *
 * This is the busiest sink (every event becomes about 150 bytes of text), so no event goes
 * through printf: hand-written appenders put integers, exact microseconds and the few
 * doubles (put_double) into t->ev, which emit hands on with its separator in one copy.
 */
#include "actors/sink/fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/sink/clock_sync.h"
#include "actors/sink/derived.h"
#include "actors/sink/launch_map.h"
#include "actors/sink/out.h"
#include "actors/sink/sink_options.h"
#include "actors/sink/sm_active.h"
#include "actors/sink/table_hash.h"
#include "actors/sink/trace_files.h"
#include "actors/sink/trace_ring.h"
#include "common/config.h"
#include "common/hash.h"
#include "common/json_escape.h"
#include "common/mix.h"
#include "common/pyframe.h"
#include "common/wire.h"
#include "xpusup/event.h"

#ifndef XPUSUP_VERSION
#define XPUSUP_VERSION "unknown"
#endif

#define TL_PATH_MAX 4096
/* One JSON event: the longest name escaped (6 bytes per byte at worst) and a full stack, each
 * frame its longest name escaped. Allocated once; touched only as far as events go. */
#define EV_MAX (XPU_STRING_MAX * 6 + XPU_WIRE_STACK_MAX * (XPU_WIRE_FRAME_NAME_MAX * 6 + 32) + 4096)
#define COMM_MAX 16
#define PROCS_MAX 65536
#define THREADS_MAX 131072
#define GPUS_MAX 16384 /* (pid, device) pairs */
#define STREAMS_MAX 65536 /* (pid, device, stream) */
#define DEVICES_MAX 256
#define PMU_TRACKS_MAX 65536 /* (process, counter, CPU or thread) counter tracks */
#define RANGES_MAX 65536 /* pushed ranges not yet popped */
#define SYNCS_MAX 64 /* CLOCK_SYNC readings kept for otherData */
#define VPID_BASE (1u << 30)
/* Overlap lanes of a CPU thread (see lane_of): lane l of thread tid is the track
 * tid + (l << LANE_SHIFT), above every Linux tid (PID_MAX_LIMIT is 2^22). */
#define LANES 8
#define LANE_RECENT 32
#define LANE_SHIFT 22
#define RETRY_NS 1000000000ull /* between attempts to (re)create the file */
/* Bytes before t->ev, for the separator that goes out with an event (emit). */
#define EV_HEAD 2
/* The frame tree behind "stackFrames": nodes, their index (at most half full) and the bytes of
 * their names. A node is about 32 bytes, a name tens: 4 MiB for the nodes when all are used. */
#define FRAMES_MAX 131072
#define FRAME_SLOTS_MASK (2 * FRAMES_MAX - 1)
#define FRAME_NAMES_MAX (16u << 20)
#define STACK_INLINE UINT32_MAX /* stack_node: no room in the tree, the stack goes inline */
#define STACK_MEMO 256 /* stack_node's memo of whole stacks, direct-mapped */
#define STACK_MEMO_FRAMES 24 /* a memo keeps a copy of a stack this deep (struct stack_memo) */
/* begin()'s memo of event heads, direct-mapped (2^HEAD_MEMO_BITS entries); a name longer
 * than HEAD_NAME_MAX or a head longer than HEAD_TEXT is built every time */
#define HEAD_MEMO_BITS 8
#define HEAD_NAME_MAX 120
#define HEAD_TEXT 200
/* gpu_event's memo of a kernel's launch configuration as text, direct-mapped */
#define KCONF_MEMO_BITS 6
#define KCONF_TEXT 160 /* nine integers of at most 11 bytes and their keys: 136 at most */
/* put_us's memo of timestamps' upper digits, direct-mapped: a few, since the times of calls
 * and of the GPU work they launched, interleaved in the stream, are often far apart */
#define US_HI_MEMO_BITS 3
#define US_HI_MEMO (1u << US_HI_MEMO_BITS)
#define HOLD_MAX 4096 /* a flow arrow's start, held until its end joins it in the ring */
#define PENDING_MAX 65536 /* GPU slices waiting for their call's arrow */
/* A snapshot is written over ticks, this much of the ring a tick, so that the sink goes on
 * receiving meanwhile (a big ring at disk speed takes seconds). */
#define SNAP_STEP_BYTES (32ull << 20)
/* Bounds of what a window's close writes after its events (struct win_meta): a track's name
 * event (a name of at most 95 characters, 16 of them a comm that may escape to 6 bytes each,
 * in a metadata event with the widest pid and tid: 245 bytes), a stackFrames entry's bytes
 * besides its frame's text (the separator, two ids of 10 digits, the keys: 48), and the rest
 * of the metadata (write_other: the counters, the clock models, SYNCS_MAX readings). */
#define META_TRACK_BYTES 256
#define META_FRAME_BYTES 48
#define META_OTHER_BYTES (2048 + SINK_CLOCKS_JSON_MAX + SYNCS_MAX * 192)

/*
 * What the close of the current window will add after its events (window_close: the names of
 * every track, the stackFrames entries of the nodes its events name, the metadata), bounded
 * from above and kept as it grows, so that a window is measured against its limit and the cap
 * as it will be on disk: a window of deep stacks seen for the first time holds more bytes of
 * frame names than of events.
 */
struct win_meta {
	__u64 bytes; /* the bound, for the current file */
	__u32 tracks; /* the tracks write_names names: table entries, lanes, the system's */
};

static void win_meta__track(struct win_meta *m)
{
	m->tracks++;
	m->bytes += META_TRACK_BYTES;
}

/* What every window's close adds whatever its events: the track names and the rest. */
static __u64 win_meta__base(const struct win_meta *m)
{
	return (__u64)m->tracks * META_TRACK_BYTES + META_OTHER_BYTES;
}

/* ---- bounded hash tables: open addressing, at most half full, never shrink ---- */

struct tkey {
	__u64 a, b;
	bool used;
};

struct table {
	unsigned char *slots; /* each slot starts with a struct tkey */
	size_t esize;
	__u32 mask, n, max;
	struct tkey *last; /* the entry table__get found last: events come in runs of one key */
	struct win_meta *meta; /* a table of named tracks: each entry counted there, else NULL */
};

static int table__init(struct table *t, size_t esize, __u32 max)
{
	__u32 cap = 16;

	while (cap < 2 * max)
		cap <<= 1;
	t->slots = calloc(cap, esize);
	if (!t->slots)
		return -ENOMEM;
	t->esize = esize;
	t->mask = cap - 1;
	t->max = max;
	return 0;
}

static void *table__slot(const struct table *t, __u32 i)
{
	return t->slots + (size_t)i * t->esize;
}

/* The entry of (a, b); created (zeroed but for its key) when create and there is room;
 * NULL otherwise. */
static void *table__get(struct table *t, __u64 a, __u64 b, bool create)
{
	__u32 i;

	if (t->last && t->last->a == a && t->last->b == b) /* entries never move */
		return t->last;
	i = (__u32)xpu_mix64(a ^ xpu_mix64(b)) & t->mask;
	for (;; i = (i + 1) & t->mask) {
		struct tkey *k = table__slot(t, i);

		if (!k->used) {
			/* at most max entries in 2 * max slots: a lookup always meets a free slot */
			if (!create || t->n >= t->max)
				return NULL;
			k->used = true;
			k->a = a;
			k->b = b;
			t->n++;
			if (t->meta)
				win_meta__track(t->meta);
			return t->last = k;
		}
		if (k->a == a && k->b == b)
			return t->last = k;
	}
}

/* Where an SM-active counter track stands: windows are written in order, and an idle
 * stretch (no window, or a window without this entity) is one 0 at its start. */
struct sm_track {
	__u64 next; /* end of the last window written; 0: none yet */
	__u32 last1; /* the value written last, in 1/1000 %, plus 1; 0: none */
};

struct proc {
	struct tkey k; /* a = pid */
	char comm[COMM_MAX + 1];
	__u8 rank; /* where comm came from: 3 exec, 2 its main thread, 1 another thread */
	__u32 open_ranges;
	struct sm_track sm;
};

/* The last slices written on one lane of a thread, a ring. */
struct lane {
	__u64 s[LANE_RECENT], e[LANE_RECENT];
	__u64 max_e; /* the latest end ever put: a slice starting there is apart from all */
	__u32 n, next;
};

struct thread {
	struct tkey k; /* a = pid, b = tid */
	char comm[COMM_MAX + 1];
	__u32 top; /* innermost open range of the thread: index + 1 in ranges, 0 none */
	__u64 push_newest; /* the latest push among its open ranges, or later; 0: none open */
	struct lane *lane[LANES]; /* made when first used */
};

struct gpu {
	struct tkey k; /* a = pid, b = device */
	__u32 vpid;
	__s64 mem; /* device memory allocated minus freed, bytes */
};

struct stream {
	struct tkey k; /* a = the gpu's vpid, b = stream */
};

struct device {
	struct tkey k; /* a = device */
	__u32 vpid;
	struct sm_track sm;
};

/* A PMU counter track: where its last reading was, and the last interval it wrote, which an
 * instructions track and a cycles track of the same owner pair up on for IPC. */
struct pmu_track {
	struct tkey k; /* a = track pid << 32 | CPU, thread or 0; b = name hash ^ scope */
	__u64 prev_ts; /* the last reading; 0: none yet */
	__u64 start, end; /* the last interval written */
	double count; /* its scaled delta */
};

/* A pushed range waiting for its pop. */
struct open_range {
	__u64 id; /* the push's event id */
	__u64 ts;
	__u64 range_id;
	__u32 producer, pid, tid;
	__u32 below; /* the range it is nested in: index + 1, 0 none */
	__u32 next_free; /* index + 1 */
	char *name;
	__u32 name_len;
	__u8 lane; /* the lane kept for it at its push (lane_of, range_close) */
	bool used;
};

/*
 * A node of the frame tree: a frame (address, kernel or user, name) under its caller's node,
 * so a path from a root is a stack, outermost first, and an event names its whole stack by
 * its innermost frame's node ("sf"). Ids are index + 1; 0 is "no parent".
 */
struct frame_node {
	__u64 ip;
	__u32 parent;
	__u32 name_off; /* in frame_names, NUL-terminated; 0: no name (the arena's first byte) */
	__u32 gen; /* the last file (timeline.gen) with an event that references it or a callee */
	__u16 meta; /* the most bytes of its stackFrames entry (win_meta) */
	bool kernel;
};

/* A whole stack stack_node found: its hash (addresses, kernel frames, names' pointers), its
 * node, and for a stack with names the batch it was seen in (names are one pointer per text
 * within a batch only). */
struct stack_memo {
	__u64 hash, batch;
	__u32 node;
	__u16 n, n_kernel;
	bool named;
	/* the stack itself when it is at most STACK_MEMO_FRAMES deep: a hit is one compare, not
	 * a walk up the tree's nodes (which never change once made) */
	__u64 ip[STACK_MEMO_FRAMES];
};

/* A CUDA API's name, found once (api_name). */
#define API_CACHE 64
struct api_cached {
	__u32 domain, id;
	bool starts_work; /* a launch, copy or memset: its slice gets a flow_out (launch_side) */
	size_t len; /* 0: empty */
	char name[80]; /* the longest in cuda_api_names.h is 54 bytes */
};

struct sync_reading {
	__u32 pid, clock;
	__u64 ref_before, other, ref_after;
};

/* GPU work written before its call came: its slice, for the arrow the call will start. */
struct pending_flow {
	__u64 seq; /* 0: free or taken */
	__u64 correlation_id, ts, pos, prev_seq;
	__u32 pid, vpid, stream, gen;
	__u32 prev; /* the call's slice before this one: index + 1, 0 none */
};

/* A snapshot of the ring being written (mode = ring), and the last one's outcome. */
struct snapshot {
	struct out *o; /* NULL: none in progress */
	char path[TL_PATH_MAX];
	char reason[160];
	__u64 pos, end; /* ring positions still to write */
	__u64 cutoff; /* records stamped before this are older than keep_s: left out */
	__u64 events, skipped; /* written; ring bytes evicted before they could be */
	/* The positions from start on that were not written: evicted under the writer, or
	 * older than the cut. A record that needs one before it (a flow needs its call's
	 * slice) is written only if that one was (snap_unwritten). In order; adjacent ranges
	 * merge. Without memory for more, the last grows over what lies between (arrows are
	 * then left out that could have been kept, never one kept without its call). */
	__u64 start;
	__u64 (*gaps)[2];
	__u32 n_gaps, cap_gaps;
	__u64 orphans; /* flows left out so */
	/* the last outcome, for fmt_ops.snapshot_result: 1 done, -errno failed, 0 taken */
	int result;
	bool result_fresh; /* set since the last tick (the sink reads it after the tick) */
	char result_path[TL_PATH_MAX];
	char result_why[600];
	__u64 result_events, result_bytes;
	/* a trigger that fired while one was written or its outcome not yet read: its reason,
	 * for the tick that starts it ("" none) */
	char deferred[160];
};

/*
 * An event's head, "{" to its tid's value, by what it is made of: ph, cat (a literal: its
 * address stands for its text), pid, tid and name. Most events repeat a few heads (a
 * thread's calls of one API, a stream's kernels of one name), and building one (the name
 * escaped, two integers) was about a fifth of this sink's format time (fmt_bench,
 * 2026-11-27); from the memo it is one hash of the name, one compare and one copy.
 */
struct head_memo {
	__u64 h;
	const char *cat;
	__u32 pid, tid, name_len;
	__u16 len; /* of text; 0: empty */
	__u16 cat_len;
	char ph;
	char name[HEAD_NAME_MAX];
	char text[HEAD_TEXT];
};

/*
 * A kernel's launch configuration as its args say it (",\"context\":..,\"shared_memory\":N"),
 * by the nine integers: a program launches each kernel with one or a few configurations, and
 * the nine appenders were 7 % of the format's instructions (cachegrind of fmt_bench).
 */
struct kconf_memo {
	__u32 key[9]; /* context, grid, block, registers, shared memory */
	__u32 len; /* of text; 0: empty */
	char text[KCONF_TEXT];
};

struct timeline {
	char path[TL_PATH_MAX];
	char cur_path[TL_PATH_MAX]; /* the file being written: path, or the window's */
	__u64 window_ns, lateness_ns;
	int mode; /* enum timeline_mode */
	/* windows (mode = file, window_s): */
	struct trace_windows *windows; /* NULL: one file */
	__u64 rot_ns; /* window_s */
	__u64 max_bytes; /* max_mb */
	__u64 win_limit; /* a window closes early at this size: the cap holds a few */
	__u64 trim_at; /* out__bytes at which older windows must go for the cap */
	__u64 win_opened; /* xpu_now_ns of the current window's start */
	__u64 win_wall; /* its CLOCK_REALTIME start */
	__u64 win_first, win_last; /* the events' time range in the current window */
	bool rotate; /* the current window is full: closed after this event */
	struct win_meta meta; /* what the current window's close will add */
	bool meta_big; /* that alone is over half a window's limit: max_mb is too small */
	/* the flight recorder (mode = ring): */
	struct trace_ring *ring;
	__u64 keep_ns;
	__u64 cur_last; /* the event being handled's last time: what ring records are stamped */
	char *hold; /* a flow's start, waiting for its end (one ring record for both) */
	/* mode = file: a call's slice held for one event, for its LAUNCH's stack (call_takes) */
	struct held_call {
		char *text; /* as t->ev, whose buffer it swaps with: the event but its brace */
		size_t len; /* 0: none held */
		__u64 id, ts, correlation_id, bind;
		__u32 producer, pid, tid, track;
	} call;
	__u64 dep; /* what the record being grouped needs: the launching call's */
	__u64 last_pos; /* the last record emitted: its position + 1 */
	size_t hold_len;
	bool grouping; /* emit holds instead of storing */
	struct snapshot snap;
	__u64 trig_kernel_ns, holdoff_ns, trig_last;
	char trig_mark[XPU_STRING_MAX + 1];
	size_t trig_mark_len;
	__u64 snapshots, snapshot_errors, triggered, snap_busy, snap_lost;
	int win_err; /* a window that could not be closed, shown at the next tick */
	char win_why[600];
	struct out *o; /* NULL while the file cannot be created */
	int werr; /* a write to o failed: the file is broken */
	int open_err;
	char open_why[600];
	__u64 retry_at;
	__u64 in_file; /* events in the current file */
	__u64 ticked; /* in_file at the last tick */
	__u32 gen; /* files opened so far: which one is being written */
	char *ev; /* the event being built, EV_HEAD bytes into its allocation */
	size_t len;
	bool overflow;
	struct table procs, threads, gpus, streams, devices, pmu;
	struct open_range *ranges;
	__u32 free_range; /* index + 1 */
	struct launch_map launches; /* recent launches, where flow arrows start */
	struct pending_flow *pending; /* PENDING_MAX, a FIFO from pend_head */
	__u32 pend_head, pend_n;
	__u64 pend_seq, pend_live; /* the last seq given; slices still waiting */
	struct launch_map pend_index; /* (producer, pid and correlation id) -> newest pending */
	struct sm_active *sm; /* SM-active windows of devices and processes (sm_active.h) */
	__u64 sm_next; /* ordinal of the first closed window not yet written */
	__u64 sm_missed; /* closed windows that left sm_active's ring before they were written */
	__u32 next_vpid, sys_vpid;
	__u64 max_ts;
	struct sync_reading syncs[SYNCS_MAX];
	__u32 n_syncs;
	__u64 syncs_total;
	struct sink_clocks clocks; /* a model per other clock, from every reading */
	char *clocks_json; /* SINK_CLOCKS_JSON_MAX bytes */
	__u64 written, flows, flows_unknown, bytes_done, dropped, ranges_unmatched, full, overlaps;
	__u64 binds; /* the last bind_id given to a call's flow_out */
	struct frame_node *frames; /* FRAMES_MAX */
	__u32 *frame_slots; /* FRAME_SLOTS_MASK + 1 node ids, 0: empty */
	__u32 n_frames;
	char *frame_names; /* FRAME_NAMES_MAX */
	size_t frame_names_len;
	__u64 stacks_inline; /* stacks written inline: the tree was full */
	struct api_cached api_cache[API_CACHE];
	struct stack_memo stack_memo[STACK_MEMO];
	struct head_memo *heads; /* 1 << HEAD_MEMO_BITS */
	struct kconf_memo kconf[1u << KCONF_MEMO_BITS];
	struct us_hi { /* put_us: the microseconds / 10^4 of recent timestamps as text */
		__u64 hi; /* 0: none (put_us takes another way for it) */
		__u32 len;
		char text[20]; /* its digits, len of them */
	} us_hi[US_HI_MEMO];
	__u64 batches; /* batches seen: what a memo of a stack with names is valid for */
	struct thread *last_thread; /* touch's last, in the threads table */
	struct {
		char s[48];
		size_t len;
	} corr_members[XPU_CORR_TYPE_MAX + 1]; /* ,"corr_type":"NAME" of each, ready */
};

static const char *const counter_names[] = {
	"events_written",  "flows",	     "flows_unknown_launch",
	"bytes_written",   "events_dropped", "ranges_unmatched",
	"sm_late_kernels", "tables_full",    "lanes_full",
	"stacks_inline",   "flows_waiting",
};
#define COUNTERS_BASE 11

/* after the base ones: with windows */
static const char *const window_counter_names[] = { "windows_written", "windows_deleted",
						    "window_bytes_deleted", "windows_on_disk" };
/* in mode = ring */
static const char *const ring_counter_names[] = {
	"ring_bytes",	       "ring_events",	    "ring_evicted",
	"ring_expired",	       "snapshots",	    "snapshot_errors",
	"snapshots_triggered", "snapshots_refused", "snapshot_lost_bytes",
};

/* ---- building one event ---- */

/*
 * Events are built with hand-written appenders, never printf: formatting was most of this
 * sink's time (docs/performance.md). Each appender checks the room left in t->ev (EV_MAX,
 * which no event reaches) and marks the event overflowed rather than cut it.
 */
static void put_raw(struct timeline *t, const char *s, size_t n)
{
	if (t->overflow || n >= EV_MAX - t->len) {
		t->overflow = true;
		return;
	}
	memcpy(t->ev + t->len, s, n);
	t->len += n;
}

#define put_lit(t, s) put_raw((t), (s), sizeof(s) - 1)
/* a string literal and its length, for the arguments that take both */
#define LIT(s) (s), (sizeof(s) - 1)

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
				  "31323334353637383940414243444546474849505152535455565758596061"
				  "62636465666768697071727374757677787980818283848586878889909192"
				  "93949596979899";

/* v in decimal, ending at end (at least 20 bytes after the buffer's start); returns its
 * first byte. Two digits a division: a timestamp has 13 or more. */
static char *u64_text(char *end, __u64 v)
{
	char *p = end;

	while (v >= 100) {
		unsigned int d = (unsigned int)(v % 100) * 2;

		v /= 100;
		*--p = digit_pairs[d + 1];
		*--p = digit_pairs[d];
	}
	if (v >= 10) {
		*--p = digit_pairs[v * 2 + 1];
		*--p = digit_pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

static const __u64 pow10_u64[20] = { 1ull,
				     10ull,
				     100ull,
				     1000ull,
				     10000ull,
				     100000ull,
				     1000000ull,
				     10000000ull,
				     100000000ull,
				     1000000000ull,
				     10000000000ull,
				     100000000000ull,
				     1000000000000ull,
				     10000000000000ull,
				     100000000000000ull,
				     1000000000000000ull,
				     10000000000000000ull,
				     100000000000000000ull,
				     1000000000000000000ull,
				     10000000000000000000ull };

/* put_u64's fixed point: 2^57 / 10^k rounded up, k = 2, 4, 6, 8 (index k / 2). For v below
 * 10^9, v times the one of k = its digits less one or two is v / 10^k in the bits from 57 up
 * and the rest of v below them, to 2^-57 of 10^k: each multiplication by 100 then brings
 * the next two digits up (v * 10^k < 2^57 bounds the error; checked for every v below 10^9
 * against u64_text). The digits come from the first down, a multiplication each pair, where
 * the division loop chains a division by 100 a pair. */
#define U64_FIX 57
static const __u64 u64_fix_inv[5] = { 0, (1ull << U64_FIX) / 100 + 1, (1ull << U64_FIX) / 10000 + 1,
				      (1ull << U64_FIX) / 1000000 + 1,
				      (1ull << U64_FIX) / 100000000 + 1 };

/* v in decimal, written in place: its length first (from v's bit length: 1233 / 4096 is just
 * over log10(2), and one comparison, not a loop over the powers of ten), then the digits:
 * below 10^9 (pids, ids, durations) by the fixed point above, from the first; else (a
 * timestamp has 13 or more) from the end back. */
static void put_u64(struct timeline *t, __u64 v)
{
	unsigned int d = (unsigned int)((64 - __builtin_clzll(v | 1)) * 1233) >> 12, i;
	size_t n = d + (v >= pow10_u64[d]);
	char *p;
	__u64 y;

	if (t->overflow || EV_MAX - t->len <= 20) {
		t->overflow = true;
		return;
	}
	n += !n; /* 0 */
	p = t->ev + t->len;
	t->len += n;
	if (n <= 2) {
		if (n == 1)
			*p = (char)('0' + v);
		else
			memcpy(p, digit_pairs + v * 2, 2);
		return;
	}
	if (n > 9) {
		u64_text(p + n, v);
		return;
	}
	i = (unsigned int)(n - 1) / 2; /* pairs after the first digit or two */
	y = v * u64_fix_inv[i];
	if (n & 1) {
		*p++ = (char)('0' + (y >> U64_FIX));
	} else {
		memcpy(p, digit_pairs + (y >> U64_FIX) * 2, 2);
		p += 2;
	}
	for (; i; i--, p += 2) {
		y = (y & ((1ull << U64_FIX) - 1)) * 100;
		memcpy(p, digit_pairs + (y >> U64_FIX) * 2, 2);
	}
}

/* A member of an object: its key, ready (",\"key\":"), and an integer value. */
static void put_member(struct timeline *t, const char *key, size_t key_len, __u64 v)
{
	put_raw(t, key, key_len);
	put_u64(t, v);
}

static void put_s64(struct timeline *t, __s64 v)
{
	if (v < 0)
		put_lit(t, "-");
	put_u64(t, v < 0 ? -(__u64)v : (__u64)v);
}

/* ns as microseconds: the integer part, then as many of the three decimals as are not
 * trailing zeros (none for a whole microsecond). Exact, whatever the magnitude. From 10 ms
 * up, the digits above the last four come from a memo of their text (t->us_hi), made when
 * they are not there: a timestamp (10 digits and more) shares them with the events of the
 * same 10 ms. The memo has a few entries: one was made again for two timestamps in three in
 * a flat-out stream, where calls and the GPU work of calls long before take turns. */
static void put_us(struct timeline *t, __u64 ns)
{
	__u64 us = ns / 1000, hi = us / 10000;
	unsigned int f = (unsigned int)(ns - us * 1000), lo = (unsigned int)(us - hi * 10000);
	char frac[4] = { '.', (char)('0' + f / 100), digit_pairs[f % 100 * 2],
			 digit_pairs[f % 100 * 2 + 1] };
	struct us_hi *m;
	char *p;

	if (!hi) {
		put_u64(t, us);
	} else if (t->overflow || EV_MAX - t->len < sizeof(m->text) + 4) {
		t->overflow = true;
		return;
	} else {
		m = &t->us_hi[(hi * 0x9e3779b97f4a7c15ull) >> (64 - US_HI_MEMO_BITS)];
		if (hi != m->hi) {
			p = u64_text(m->text + sizeof(m->text), hi);
			m->len = (__u32)(m->text + sizeof(m->text) - p);
			memmove(m->text, p, m->len);
			m->hi = hi;
		}
		p = t->ev + t->len;
		memcpy(p, m->text, sizeof(m->text)); /* whole: one fixed-size copy */
		p += m->len;
		memcpy(p, digit_pairs + lo / 100 * 2, 2);
		memcpy(p + 2, digit_pairs + lo % 100 * 2, 2);
		t->len += m->len + 4;
	}
	if (f)
		put_raw(t, frac, f % 10 ? 4 : f % 100 ? 3 : 2);
}

/* 10^k, k >= 0: from a table up to 10^27, the powers exact in long double's 64-bit mantissa
 * (powl's general case was about 2 % of this format's time); powl beyond */
static long double pow10_ld(int k)
{
	static const long double p[28] = { 1e0L,  1e1L,	 1e2L,	1e3L,  1e4L,  1e5L,  1e6L,
					   1e7L,  1e8L,	 1e9L,	1e10L, 1e11L, 1e12L, 1e13L,
					   1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
					   1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L };

	return k < 28 ? p[k] : powl(10, k);
}

/*
 * A finite double with at most sig (1 to 15) significant digits, as %.{sig}g writes it: the
 * value scaled by a power of ten in long double (64 bits of mantissa on x86-64, where the
 * powers up to 10^27 are exact), so the one rounding to sig digits (to even, as glibc's) sees
 * the value to 2^-64 and agrees with printf's but for values within that of a half-way point.
 * Exact integers below 10^sig take a shorter way. Trailing zeros are dropped; an exponent
 * below -4 or from sig up is written as %g writes it ("1.5e+20", "2e-07"). Not finite
 * (callers rule it out): 0.
 */
static void put_double(struct timeline *t, double v, int sig)
{
	char buf[40], dig[20], *p = buf, *d;
	__u64 m, limit = 1;
	long double s;
	int e10, k, nd, i;

	for (i = 0; i < sig; i++)
		limit *= 10;
	if (!isfinite(v) || v == 0) {
		put_lit(t, "0");
		return;
	}
	if (v < 0) {
		*p++ = '-';
		v = -v;
	}
	if (v < (double)limit && v == (double)(__u64)v) {
		d = u64_text(dig + sizeof(dig), (__u64)v);
		memcpy(p, d, (size_t)(dig + sizeof(dig) - d));
		put_raw(t, buf, (size_t)(p - buf) + (size_t)(dig + sizeof(dig) - d));
		return;
	}
	e10 = (int)floor(log10(v));
	for (;;) { /* once, or twice where log10 rounded across a power of ten */
		k = sig - 1 - e10; /* v * 10^k has sig digits before the point */
		s = k >= 0 ? (long double)v * pow10_ld(k) : (long double)v / pow10_ld(-k);
		m = (__u64)rintl(s);
		if (m >= limit)
			e10++;
		else if (m < limit / 10)
			e10--;
		else
			break;
	}
	d = u64_text(dig + sizeof(dig), m);
	nd = sig;
	while (nd > 1 && d[nd - 1] == '0')
		nd--;
	if (e10 < -4 || e10 >= sig) {
		*p++ = d[0];
		if (nd > 1) {
			*p++ = '.';
			memcpy(p, d + 1, (size_t)nd - 1);
			p += nd - 1;
		}
		*p++ = 'e';
		*p++ = e10 < 0 ? '-' : '+';
		e10 = e10 < 0 ? -e10 : e10;
		if (e10 >= 100)
			*p++ = (char)('0' + e10 / 100);
		*p++ = (char)('0' + e10 / 10 % 10);
		*p++ = (char)('0' + e10 % 10);
	} else if (e10 < 0) {
		*p++ = '0';
		*p++ = '.';
		for (i = -1; i > e10; i--)
			*p++ = '0';
		memcpy(p, d, (size_t)nd);
		p += nd;
	} else {
		for (i = 0; i < nd || i <= e10; i++) {
			if (i == e10 + 1)
				*p++ = '.';
			*p++ = i < nd ? d[i] : '0';
		}
	}
	put_raw(t, buf, (size_t)(p - buf));
}

/* A JSON string of n bytes, escaped by common/json_escape.h's rule (the one of stats.json). */
static void put_str(struct timeline *t, const char *s, size_t n)
{
	char *d;

	if (t->overflow || EV_MAX - t->len < XPU_JSON_ESCAPED_MAX(n) + 3) {
		t->overflow = true;
		return;
	}
	d = t->ev + t->len;
	*d++ = '"';
	d += xpu_json_escape(d, XPU_JSON_ESCAPED_MAX(n), s, n, NULL, 0);
	*d++ = '"';
	t->len = (size_t)(d - t->ev);
}

/* A slice's duration: [start, end], nothing before its start. */
static void put_dur(struct timeline *t, __u64 start, __u64 end)
{
	put_lit(t, ",\"dur\":");
	put_us(t, end > start ? end - start : 0);
}

/* Start an event: every event has ph, name, cat (cat_len bytes of a literal, nothing to
 * escape), pid, tid and (but metadata) ts. The head (all but ts) through t->heads. */
static void begin(struct timeline *t, char ph, const char *name, size_t name_len, const char *cat,
		  size_t cat_len, __u32 pid, __u32 tid, __u64 ts)
{
	char head[] = "{\"ph\":\"X\",\"name\":";
	struct head_memo *m = NULL;
	__u64 h;

	t->len = 0;
	t->overflow = false;
	if (t->heads && name_len <= HEAD_NAME_MAX) {
		h = sink_hash_words((__u64)pid << 32 ^ tid ^ (__u64)(unsigned char)ph << 24 ^
					    (__u64)(uintptr_t)cat,
				    name, name_len);
		m = &t->heads[h >> (64 - HEAD_MEMO_BITS)];
		if (m->len && m->h == h && m->pid == pid && m->tid == tid && m->ph == ph &&
		    m->cat == cat && m->cat_len == cat_len && m->name_len == name_len &&
		    !memcmp(m->name, name, name_len)) {
			memcpy(t->ev, m->text, m->len);
			t->len = m->len;
			goto ts;
		}
	}
	head[7] = ph;
	put_raw(t, head, sizeof(head) - 1);
	put_str(t, name, name_len);
	put_lit(t, ",\"cat\":\"");
	put_raw(t, cat, cat_len);
	put_lit(t, "\",\"pid\":");
	put_u64(t, pid);
	put_member(t, LIT(",\"tid\":"), tid);
	if (m && !t->overflow && t->len <= HEAD_TEXT) {
		m->h = h;
		m->cat = cat;
		m->cat_len = (__u16)cat_len;
		m->pid = pid;
		m->tid = tid;
		m->name_len = (__u32)name_len;
		m->ph = ph;
		m->len = (__u16)t->len;
		memcpy(m->name, name, name_len);
		memcpy(m->text, t->ev, t->len);
	}
ts:
	if (ph != 'M') {
		put_lit(t, ",\"ts\":");
		put_us(t, ts);
	}
}

/* mode = ring: the event into the ring, stamped with the last time of what it came from (so
 * a slice that ended lately is kept as long as its end is), or held while grouping (a flow's
 * start: its end joins it in one record, so the two leave the ring together). */
static bool emit_ring(struct timeline *t)
{
	bool ok = true;

	if (t->grouping || t->hold_len) {
		if (t->hold_len + 2 + t->len > HOLD_MAX) {
			t->hold_len = 0;
			t->dropped += 2;
			return false;
		}
		if (t->hold_len) {
			memcpy(t->hold + t->hold_len, ",\n", 2);
			t->hold_len += 2;
		}
		memcpy(t->hold + t->hold_len, t->ev, t->len);
		t->hold_len += t->len;
		if (t->grouping)
			return true;
		ok = !trace_ring__append(t->ring, t->hold, t->hold_len, t->cur_last, t->dep, NULL);
		t->written += ok ? 2 : 0;
		t->dropped += ok ? 0 : 2;
		t->hold_len = 0;
		return ok;
	}
	if (trace_ring__append(t->ring, t->ev, t->len, t->cur_last, 0, &t->last_pos)) {
		t->dropped++;
		return false;
	}
	t->last_pos++; /* + 1: 0 is none */
	t->written++;
	return true;
}

static void window_full(struct timeline *t);

/* Finish the event and append it to the file: the one place events leave. The event is
 * t->ev[0, t->len); the separator from the previous one goes into the EV_HEAD bytes before
 * it, so both leave in one copy. An event that cannot be written (no file, a broken one, or
 * too big, which the bound above rules out) is counted, never cut. Returns whether it was
 * written. */
static bool emit(struct timeline *t)
{
	int err;

	put_lit(t, "}");
	if (t->ring && !t->o && !t->overflow)
		return emit_ring(t);
	if (t->overflow || !t->o || t->werr) {
		t->dropped++;
		return false;
	}
	if (t->in_file) {
		memcpy(t->ev - EV_HEAD, ",\n", EV_HEAD);
		err = out__write(t->o, t->ev - EV_HEAD, t->len + EV_HEAD);
	} else {
		err = out__write(t->o, t->ev, t->len);
	}
	if (err) {
		t->werr = err;
		t->dropped++;
		return false;
	}
	t->in_file++;
	t->written++;
	if (t->windows && out__bytes(t->o) + t->meta.bytes >= t->trim_at)
		window_full(t);
	return true;
}

/* ---- stacks: the frame tree ---- */

/*
 * A frame's text, as the inline stack and the stackFrames dictionary spell it: its function's
 * name when the event has one, else its address in hex; kernel frames carry flamegraph.pl's
 * "_[k]", Python frames (common/pyframe.h) the folded format's "[py] " before their whole
 * name, line included ("[py] train_step (/w/p.py:12)"), or before their code object and line
 * when unnamed ("[py] 0x7f3a12345000 (line 12)"): a timeline shows where each sample was.
 */
static void put_frame(struct timeline *t, __u64 ip, bool kernel, const char *name)
{
	static const char hex[] = "0123456789abcdef";
	char buf[XPU_WIRE_FRAME_NAME_MAX + 48], *p = buf, *q;
	size_t n = name ? strlen(name) : 0;
	bool py = !kernel && xpu_pyframe__is(ip);
	__u64 v = py && !n ? xpu_pyframe__code(ip) : ip;
	char num[20];
	int i;

	if (n > XPU_WIRE_FRAME_NAME_MAX)
		n = XPU_WIRE_FRAME_NAME_MAX;
	if (py) {
		memcpy(p, XPU_PYFRAME_MARK, sizeof(XPU_PYFRAME_MARK) - 1);
		p += sizeof(XPU_PYFRAME_MARK) - 1;
	}
	if (n) {
		memcpy(p, name, n);
		p += n;
	} else {
		*p++ = '0';
		*p++ = 'x';
		for (i = 60; i > 0 && !(v >> i); i -= 4)
			;
		for (; i >= 0; i -= 4)
			*p++ = hex[v >> i & 15];
		if (py) {
			memcpy(p, " (line ", 7);
			p += 7;
			q = u64_text(num + sizeof(num), xpu_pyframe__line(ip));
			memcpy(p, q, (size_t)(num + sizeof(num) - q));
			p += num + sizeof(num) - q;
			*p++ = ')';
		}
	}
	if (kernel) {
		memcpy(p, "_[k]", 4);
		p += 4;
	}
	put_str(t, buf, (size_t)(p - buf));
}

/* The stack as an args member, "stack":[...], innermost first: the form of an event whose
 * stack the frame tree has no room for. */
static void put_stack_inline(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 i, n = (__u32)e->n_kernel + e->n_user;

	put_lit(t, ",\"stack\":[");
	for (i = 0; i < n; i++) {
		if (i)
			put_lit(t, ",");
		put_frame(t, e->stack[i], i < e->n_kernel, e->frames ? e->frames[i] : NULL);
	}
	put_lit(t, "]");
}

/* The most bytes a frame's text (put_frame) takes in a stackFrames entry, quotes included:
 * bytes outside printable ASCII are counted at their escape's 6, well-formed UTF-8 too (kept
 * as it is, it takes less). */
static __u16 frame_meta(__u64 ip, bool kernel, const char *name, size_t n)
{
	size_t i, m = 2 + (kernel ? 4 : 0);

	if (!kernel && xpu_pyframe__is(ip))
		m += sizeof(XPU_PYFRAME_MARK) - 1;
	if (!n)
		m += 2 + 16 + 28; /* 0x and the address; a code object's " (line N)" */
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		m += c >= 0x20 && c < 0x7f ? 1u + (c == '"' || c == '\\') : 6u;
	}
	return (__u16)(m + META_FRAME_BYTES); /* n <= XPU_WIRE_FRAME_NAME_MAX: below 2^16 */
}

/*
 * The node of (parent, ip, kernel, name): found by the hash of (parent, ip, kernel), the name
 * compared whole (an address names different functions in different processes); made when
 * missing and there is room. Returns its id (index + 1), or 0 when the tree is full.
 */
static __u32 frame_node_of(struct timeline *t, __u32 parent, __u64 ip, bool kernel,
			   const char *name)
{
	__u32 i = (__u32)xpu_mix64(ip ^ xpu_mix64((__u64)parent << 1 | kernel)) & FRAME_SLOTS_MASK;
	struct frame_node *f;
	size_t len;
	__u32 id;

	if (!name)
		name = "";
	for (; (id = t->frame_slots[i]); i = (i + 1) & FRAME_SLOTS_MASK) {
		f = &t->frames[id - 1];
		if (f->ip == ip && f->parent == parent && f->kernel == kernel &&
		    (f->name_off ? !strcmp(t->frame_names + f->name_off, name) : !*name))
			return id;
	}
	len = *name ? strnlen(name, XPU_WIRE_FRAME_NAME_MAX) : 0;
	if (t->n_frames == FRAMES_MAX || len >= FRAME_NAMES_MAX - t->frame_names_len)
		return 0;
	f = &t->frames[t->n_frames++];
	*f = (struct frame_node){ .ip = ip,
				  .parent = parent,
				  .kernel = kernel,
				  .meta = frame_meta(ip, kernel, name, len) };
	if (len) { /* "" is the arena's first byte, shared by every unnamed frame */
		f->name_off = (__u32)t->frame_names_len;
		memcpy(t->frame_names + t->frame_names_len, name, len);
		t->frame_names[t->frame_names_len + len] = 0;
		t->frame_names_len += len + 1;
	}
	t->frame_slots[i] = t->n_frames;
	return t->n_frames;
}

/*
 * The frame tree node of e's innermost frame, its callers its ancestors, marked as referenced
 * by the current file (t->gen) for write_stack_frames, with every ancestor not yet marked: a
 * marked node's ancestors are, so a stack seen before in this file costs one compare. 0: no
 * stack; STACK_INLINE: the tree is full (counted), the event carries its stack inline. A
 * stack's frames are looked up, never allocated per event: a node is made once, the first
 * time its path is seen.
 */
/* e's stack is the path from node up to a root: the same addresses, kernel or not. */
static bool stack_is(const struct timeline *t, __u32 node, const struct xpu_cevent *e, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++, node = t->frames[node - 1].parent)
		if (!node || t->frames[node - 1].ip != e->stack[i] ||
		    t->frames[node - 1].kernel != (i < e->n_kernel))
			return false;
	return !node;
}

static __u32 stack_node(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 i = (__u32)e->n_kernel + e->n_user, n = i, id = 0, up;
	__u64 h = (__u64)e->n_kernel << 32 | n;
	struct stack_memo *m;

	if (!e->stack || !i)
		return 0;
	/* A stack seen lately (a launch's, again on its GPU work) is one hash and a walk up
	 * its path, not a lookup a frame; a memo of one with names holds within its batch,
	 * and the names' pointers are in the hash: one address may name different functions
	 * in different processes. */
	h = sink_hash_words(h, e->stack, (size_t)n * sizeof(*e->stack));
	if (e->frames)
		h = sink_hash_words(h, e->frames, (size_t)n * sizeof(*e->frames));
	h = xpu_mix64(h); /* a hit is checked below: the hash only spreads the stacks */
	m = &t->stack_memo[h % STACK_MEMO];
	if (m->node && m->hash == h && m->n == n && m->n_kernel == e->n_kernel &&
	    m->named == !!e->frames && (!m->named || m->batch == t->batches) &&
	    (n <= STACK_MEMO_FRAMES ? !memcmp(m->ip, e->stack, n * sizeof(*e->stack)) :
				      stack_is(t, m->node, e, n))) {
		id = m->node;
	} else {
		for (i = n; i--;) { /* outermost first: each node is a child of its caller's */
			id = frame_node_of(t, id, e->stack[i], i < e->n_kernel,
					   e->frames ? e->frames[i] : NULL);
			if (!id) {
				t->stacks_inline++;
				return STACK_INLINE;
			}
		}
		*m = (struct stack_memo){ .hash = h,
					  .batch = t->batches,
					  .node = id,
					  .n = (__u16)n,
					  .n_kernel = e->n_kernel,
					  .named = !!e->frames };
		if (n <= STACK_MEMO_FRAMES)
			memcpy(m->ip, e->stack, n * sizeof(*e->stack));
	}
	for (up = id; up && t->frames[up - 1].gen != t->gen; up = t->frames[up - 1].parent) {
		t->frames[up - 1].gen = t->gen;
		t->meta.bytes += t->frames[up - 1].meta;
	}
	return id;
}

/* The args member of a stack the tree could not take (sf STACK_INLINE). */
static void put_stack_args(struct timeline *t, const struct xpu_cevent *e, __u32 sf)
{
	if (sf == STACK_INLINE)
		put_stack_inline(t, e);
}

/* The event's "sf": its stack in the stackFrames dictionary (after the args object). */
static void put_sf(struct timeline *t, __u32 sf)
{
	if (!sf || sf == STACK_INLINE)
		return;
	put_member(t, LIT(",\"sf\":"), sf);
}

/*
 * The "stackFrames" dictionary, a member of the top-level object: every node, id to
 * {"name", "parent"} (the roots have no parent). all: every node of the tree; else exactly
 * the nodes events of the current file (t->gen) reference, with their ancestors (stack_node
 * marks a whole path). Written in id order, so a node comes after its parent.
 */
static void write_stack_frames(struct timeline *t, bool all)
{
	bool first = true;
	__u32 i;

	out__write(t->o, LIT("\"stackFrames\":{"));
	for (i = 0; i < t->n_frames; i++) {
		const struct frame_node *f = &t->frames[i];

		if (!all && f->gen != t->gen)
			continue;
		t->len = 0;
		t->overflow = false;
		put_raw(t, first ? "\n\"" : ",\n\"", first ? 2 : 3);
		first = false;
		put_u64(t, i + 1);
		put_lit(t, "\":{\"name\":");
		put_frame(t, f->ip, f->kernel, f->name_off ? t->frame_names + f->name_off : NULL);
		if (f->parent) {
			put_lit(t, ",\"parent\":\"");
			put_u64(t, f->parent);
			put_lit(t, "\"");
		}
		put_lit(t, "}");
		out__write(t->o, t->ev, t->len);
	}
	out__write(t->o, LIT("},\n"));
}

/* How the correlator joined the event, for a GPU activity's or a call's args; nothing for
 * an event it found nothing for (an outermost call). The confidence only when below 1: an
 * exact join, the usual one, is sure. */
static void put_corr(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 type = e->corr_type < XPU_CORR_TYPE_MAX ? e->corr_type : XPU_CORR_TYPE_MAX;

	if (e->corr_type == XPU_CORR_NONE && e->kind != XPU_REC_GPU_KERNEL &&
	    e->kind != XPU_REC_GPU_MEMCPY && e->kind != XPU_REC_GPU_MEMSET)
		return;
	put_raw(t, t->corr_members[type].s, t->corr_members[type].len);
	if (e->confidence < 1) {
		put_lit(t, ",\"confidence\":");
		put_double(t, (double)e->confidence, 3);
	}
}

/* The counters the correlator attached to a slice (its window's deltas), as args. */
static void put_counters(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 i;

	if (!e->n_counters)
		return;
	put_lit(t, ",\"counters\":{");
	for (i = 0; i < e->n_counters && i < XPU_WIRE_COUNTERS_MAX; i++) {
		if (i)
			put_lit(t, ",");
		put_str(t, e->counters[i].name, e->counters[i].name_len);
		put_lit(t, ":");
		put_double(t, e->counters[i].delta, 15); /* finite: the wire says so */
	}
	put_lit(t, "}");
	if (e->ipc > 0) {
		put_lit(t, ",\"ipc\":");
		put_double(t, e->ipc, 6);
	}
	if (e->counter_flags & XPU_COUNTERS_F_ESTIMATED)
		put_lit(t, ",\"counters_estimated\":true");
}

/* ---- names ---- */

static struct proc *proc_of(struct timeline *t, __u32 pid)
{
	struct proc *p = table__get(&t->procs, pid, 0, true);

	if (!p)
		t->full++;
	return p;
}

static struct thread *thread_of(struct timeline *t, __u32 pid, __u32 tid)
{
	struct thread *th = table__get(&t->threads, pid, tid, true);

	if (!th)
		t->full++;
	return th;
}

/* A pid no real process has, nor any event seen so far. */
static __u32 new_vpid(struct timeline *t)
{
	while (table__get(&t->procs, t->next_vpid, 0, false))
		t->next_vpid++;
	return t->next_vpid++;
}

/* The process track of a CPU-side event: pid 0 (system-wide counters, losses of no
 * process) goes to the pseudo-process "system". */
static __u32 cpu_pid(struct timeline *t, __u32 pid)
{
	if (pid)
		return pid;
	if (!t->sys_vpid) {
		t->sys_vpid = new_vpid(t);
		win_meta__track(&t->meta);
	}
	return t->sys_vpid;
}

static __u32 cpu_tid(__u32 pid, __u32 tid)
{
	return tid ? tid : pid;
}

/* Learn a process's and a thread's name from an event that carries a comm. */
static void learn_comm(struct timeline *t, const struct xpu_cevent *e, __u8 rank)
{
	__u32 n = e->name_len < COMM_MAX ? e->name_len : COMM_MAX;
	struct thread *th;
	struct proc *p;

	if (!e->pid || !n)
		return;
	p = proc_of(t, e->pid);
	if (p && rank >= p->rank) {
		memcpy(p->comm, e->name, n);
		p->comm[n] = 0;
		p->rank = rank;
	}
	if (e->tid && (th = thread_of(t, e->pid, e->tid))) {
		memcpy(th->comm, e->name, n);
		th->comm[n] = 0;
	}
}

/* The thread (pid, tid) when it is the one last touched: events come in runs of one thread. */
static struct thread *thread_cached(struct timeline *t, __u32 pid, __u32 tid)
{
	struct thread *th = t->last_thread;

	return th && th->k.a == pid && th->k.b == tid ? th : NULL;
}

/* Every CPU-side track gets its names at finish: make sure it is known. */
static void touch(struct timeline *t, __u32 pid, __u32 tid)
{
	struct thread *th;

	if (!pid || thread_cached(t, pid, cpu_tid(pid, tid)))
		return;
	/* remembered once its process and it are in the tables: entries never move */
	if (proc_of(t, pid) && (th = thread_of(t, pid, cpu_tid(pid, tid))))
		t->last_thread = th;
}

/* [s, e] nests with every slice the lane holds: inside it, around it, or apart. */
static bool lane_fits(const struct lane *l, __u64 s, __u64 e)
{
	__u32 i, k;

	if (s >= l->max_e) /* the usual: a thread's next call starts after the last ended */
		return true;
	/* newest first: a slice that does not fit mostly overlaps the one just before it */
	for (i = l->n, k = l->next; i--;) {
		k = (k ? k : LANE_RECENT) - 1;
		if (!(e <= l->s[k] || s >= l->e[k] || (s <= l->s[k] && l->e[k] <= e) ||
		      (l->s[k] <= s && e <= l->e[k])))
			return false;
	}
	return true;
}

/* Whether [s, e] starts before an open range of the thread that keeps lane i, and ends after
 * that range's push: the range, written when it ends, would overlap it without nesting. */
static bool lane_straddles_push(const struct timeline *t, const struct thread *th, __u32 i, __u64 s,
				__u64 e)
{
	const struct open_range *r;
	__u32 k;

	if (s >= th->push_newest) /* the usual: every open range was pushed before it began */
		return false;
	for (k = th->top; k; k = r->below) {
		r = &t->ranges[k - 1];
		if (r->lane == i && s < r->ts && e > r->ts)
			return true;
	}
	return false;
}

/* Remember [s, e] as the newest slice of lane l. */
static void lane_put(struct lane *l, __u64 s, __u64 e)
{
	l->s[l->next] = s;
	l->e[l->next] = e;
	if (e > l->max_e)
		l->max_e = e;
	l->next = (l->next + 1) % LANE_RECENT;
	if (l->n < LANE_RECENT)
		l->n++;
}

/*
 * The track of a slice [s, e] on a CPU thread. Viewers need the slices of a track properly
 * nested (Perfetto drops, speedscope mis-stacks the others). A thread's calls and ranges
 * nest in a real program, but an input can say otherwise (the synthetic source stamps a
 * thread's calls closer than they last; two sources' clocks can disagree by a little): a
 * slice that partially overlaps one of the last LANE_RECENT written on the thread's track,
 * or starts before the push of a range still open on it and ends after, goes to the first
 * overlap lane where it nests, a track of its own beside the thread's. Overlapping slices
 * arrive close together (one source's ring, in order), so the recent slices are the ones to
 * check; with every lane taken the slice stays on the last one, and is counted.
 */
static __u32 lane_of(struct timeline *t, __u32 pid, __u32 tid, __u64 s, __u64 e)
{
	struct thread *th = thread_cached(t, pid, tid);
	struct lane *l = NULL;
	__u32 i;

	if (!th && !(th = table__get(&t->threads, pid, tid, false)))
		return tid;
	for (i = 0; i < LANES; i++) {
		l = th->lane[i];
		if (!l) {
			if (!(l = th->lane[i] = calloc(1, sizeof(*l)))) {
				t->full++; /* unchecked, on the last lane there is */
				return tid + ((i ? i - 1 : 0) << LANE_SHIFT);
			}
			win_meta__track(&t->meta);
		}
		if (lane_fits(l, s, e) && !lane_straddles_push(t, th, i, s, e))
			break;
	}
	if (i == LANES) {
		i = LANES - 1;
		t->overlaps++;
	}
	lane_put(l, s, e);
	return tid + (i << LANE_SHIFT);
}

/* The lane a range pushed at ts keeps (open_range.lane): the first where no recent slice is
 * under way at ts. Its end is not known yet, and may never be (a pop lost): keeping its lane
 * from the start lets a range that is closed late, without its pop, be placed where nothing
 * it overlaps can have gone since (range_close), however many slices came in between. */
static __u8 lane_for_push(struct timeline *t, struct thread *th, __u64 ts)
{
	const struct lane *l;
	__u32 i, k;

	for (i = 0; i < LANES; i++) {
		l = th->lane[i];
		if (!l || ts >= l->max_e)
			return (__u8)i;
		for (k = 0; k < l->n && !(l->s[k] < ts && l->e[k] > ts); k++)
			;
		if (k == l->n)
			return (__u8)i;
	}
	t->overlaps++; /* every lane busy at the push: the last one, counted (lanes_full) */
	return LANES - 1;
}

static struct gpu *gpu_of(struct timeline *t, __u32 pid, __u32 device)
{
	struct gpu *g = table__get(&t->gpus, pid, device, true);

	if (!g) {
		t->full++;
		return NULL;
	}
	if (!g->vpid)
		g->vpid = new_vpid(t);
	return g;
}

static struct device *device_of(struct timeline *t, __u32 device)
{
	struct device *d = table__get(&t->devices, device, 0, true);

	if (!d) {
		t->full++;
		return NULL;
	}
	if (!d->vpid)
		d->vpid = new_vpid(t);
	return d;
}

#include "actors/sink/cuda_api.h"

/*
 * The API's name from the CUPTI headers' callback ids (cuda_api_names.h); an id a later CUDA
 * added is named by number ("cuda runtime 9999"). A program calls few APIs: the last names
 * found stay in a small direct-mapped cache, so an event costs no search nor strlen.
 */
static const struct api_cached *api_name(struct timeline *t, __u32 domain, __u32 id)
{
	struct api_cached *c = &t->api_cache[(id * 2 + (domain == XPU_API_DRIVER)) % API_CACHE];
	const char *found;
	char num[20], *p;
	size_t n;

	if (c->len && c->domain == domain && c->id == id)
		return c;
	found = cuda_api__name(domain, id);
	c->domain = domain;
	c->id = id;
	c->starts_work = false;
	if (found) {
		static const char *const work[] = { "cudaLaunch",      "cuLaunch",     "cudaMemcpy",
						    "cuMemcpy",	       "cudaMemset",   "cuMemset",
						    "cudaGraphLaunch", "cuGraphLaunch" };
		unsigned int i;

		c->len = strnlen(found, sizeof(c->name));
		memcpy(c->name, found, c->len);
		for (i = 0; i < sizeof(work) / sizeof(work[0]); i++)
			c->starts_work |= !strncmp(c->name, work[i], strlen(work[i]));
		return c;
	}
	n = domain == XPU_API_DRIVER ? sizeof("cuda driver ") - 1 : sizeof("cuda runtime ") - 1;
	memcpy(c->name, domain == XPU_API_DRIVER ? "cuda driver " : "cuda runtime ", n);
	p = u64_text(num + sizeof(num), id);
	memcpy(c->name + n, p, (size_t)(num + sizeof(num) - p));
	c->len = n + (size_t)(num + sizeof(num) - p);
	return c;
}

/* A copy's kind (HtoD, ...): its name "memcpy HtoD" is the kind after 7 bytes. */
static const char *copy_kind_name(__u32 k, size_t *len)
{
	static const char *const names[] = { "memcpy unknown", "memcpy HtoD", "memcpy DtoH",
					     "memcpy HtoA",    "memcpy AtoH", "memcpy AtoA",
					     "memcpy AtoD",    "memcpy DtoA", "memcpy DtoD",
					     "memcpy HtoH",    "memcpy PtoP" };

	static const unsigned char lens[] = { 14, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11 };

	if (k >= sizeof(names) / sizeof(names[0]))
		k = 0;
	*len = lens[k];
	return names[k];
}

static const char *sync_kind_name(__u32 k, size_t *len)
{
	static const char *const names[] = { "sync", "event sync", "stream wait event",
					     "stream sync", "context sync" };
	static const unsigned char lens[] = { 4, 10, 17, 11, 12 };

	if (k >= sizeof(names) / sizeof(names[0]))
		k = 0;
	*len = lens[k];
	return names[k];
}

static const char *clock_name(__u32 c)
{
	static const char *const names[] = { "unknown", "CLOCK_MONOTONIC", "cupti",
					     "CLOCK_REALTIME", "remote" };

	return c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

/* ---- flows: launches ---- */

/* tid: the track the event went to (its thread's, or an overlap lane); gen: its file; pos: in
 * the ring its record's position + 1, in a file the bind_id of its flow_out (0: none). */
static void launches__add(struct timeline *t, __u32 producer, __u64 id, __u64 ts, __u32 pid,
			  __u32 tid, bool written, __u64 bind)
{
	struct recent_launch *l = launch_map__put(&t->launches, producer, id);
	__u32 gen = written ? t->gen : 0;

	l->ts = ts;
	l->pid = pid;
	l->tid = tid;
	l->gen = gen;
	l->kind = XPU_REC_CUDA_API;
	l->pos = !written ? 0 : t->ring ? t->last_pos : bind;
}

/* The arrow from the launching call to the GPU activity: "s" at the call's start on its
 * thread, "f" binding to the activity's slice ("bp":"e": the slice enclosing ts). Written
 * together, so every flow in the file has both ends. */
/* An arrow: "s" at the call's start on its thread, "f" binding to the GPU slice enclosing ts
 * ("bp":"e"), written together, so every flow in the file has both ends. In the ring both
 * are one record, which needs the record of the end written before (dep): the call's, or
 * for an arrow written when its call came last, the GPU slice's. */
static void write_flow(struct timeline *t, __u32 pid, __u32 tid, __u64 ts, __u32 vpid, __u32 stream,
		       __u64 gpu_ts, __u64 dep)
{
	t->flows++;
	t->grouping = true;
	t->dep = dep;
	begin(t, 's', LIT("launch"), LIT("launch"), cpu_pid(t, pid), tid, ts);
	put_member(t, LIT(",\"id\":"), t->flows);
	emit(t);
	t->grouping = false;
	begin(t, 'f', LIT("launch"), LIT("launch"), vpid, stream, gpu_ts);
	put_lit(t, ",\"bp\":\"e\",\"id\":");
	put_u64(t, t->flows);
	emit(t);
	t->dep = 0;
}

/* The key of a GPU slice waiting for its call: the call and its GPU work share CUPTI's
 * correlation id within a process. */
static __u64 pending_key(__u32 pid, __u64 correlation_id)
{
	return xpu_mix64(correlation_id ^ ((__u64)pid << 40));
}

/* GPU work whose call has not come yet (CUPTI delivers API and GPU records in separate
 * buffers, in either order): kept, a few per call (a graph launch has many kernels), until
 * the call comes (pending_resolve) or it is pushed out (then counted unknown). */
static void pending_add(struct timeline *t, __u32 producer, const struct xpu_cevent *e, __u32 vpid)
{
	struct recent_launch *idx;
	struct pending_flow *p;
	__u32 k;

	if (!t->pending || !e->correlation_id) {
		t->flows_unknown++;
		return;
	}
	k = (t->pend_head + t->pend_n) % PENDING_MAX;
	if (t->pend_n == PENDING_MAX) { /* the oldest goes */
		if (t->pending[t->pend_head].seq) {
			t->flows_unknown++;
			t->pend_live--;
		}
		t->pend_head = (t->pend_head + 1) % PENDING_MAX;
		t->pend_n--;
	}
	idx = launch_map__put(&t->pend_index, producer, pending_key(e->pid, e->correlation_id));
	p = &t->pending[k];
	*p = (struct pending_flow){ .pid = e->pid,
				    .correlation_id = e->correlation_id,
				    .vpid = vpid,
				    .stream = e->stream,
				    .ts = e->ts_ns,
				    .gen = t->gen,
				    .pos = t->last_pos,
				    .seq = ++t->pend_seq };
	/* the index names the newest of the call's slices; each names the one before */
	if (idx->kind == 1 && idx->id == pending_key(e->pid, e->correlation_id)) {
		p->prev = idx->tid;
		p->prev_seq = idx->ts;
	}
	idx->kind = 1;
	idx->tid = k + 1;
	idx->ts = p->seq;
	t->pend_n++;
	t->pend_live++;
}

/* A call came (pid, correlation_id, its slice at ts on track tid): the arrows to its GPU work
 * that came first (those still in this file). */
static void pending_resolve(struct timeline *t, __u32 producer, __u32 pid, __u64 correlation_id,
			    __u64 ts, __u32 tid)
{
	const struct recent_launch *idx;
	__u32 i, guard = 0;
	__u64 seq;

	if (!t->pending || !t->pend_live || !correlation_id)
		return;
	idx = launch_map__find(&t->pend_index, producer, pending_key(pid, correlation_id));
	if (!idx || idx->kind != 1)
		return;
	for (i = idx->tid, seq = idx->ts; i && guard++ < PENDING_MAX;) {
		struct pending_flow *p = &t->pending[i - 1];

		if (p->seq != seq || p->pid != pid || p->correlation_id != correlation_id)
			break; /* pushed out, or taken already */
		p->seq = 0;
		t->pend_live--;
		if (p->gen == t->gen)
			write_flow(t, pid, tid, ts, p->vpid, p->stream, p->ts, p->pos);
		else
			t->flows_unknown++; /* its slice is in an earlier window */
		seq = p->prev_seq;
		i = p->prev;
	}
}

/* The call GPU activity e was launched by, when its slice is in this file; *linked: e names
 * one at all. */
static const struct recent_launch *launched_by(struct timeline *t, __u32 producer,
					       const struct xpu_cevent *e, bool *linked)
{
	const struct recent_launch *l;
	__u32 i;

	*linked = false;
	for (i = 0; i < e->n_links && i < XPU_WIRE_LINKS_MAX; i++) {
		if (e->links[i].type != XPU_LINK_LAUNCHED_BY)
			continue;
		*linked = true;
		l = launch_map__find(&t->launches, producer, e->links[i].target);
		/* Only an API call in this file: an arrow must start on a slice, and a LAUNCH
		 * is an instant whose thread track may hold no slice around it (its call can
		 * sit on an overlap track, or be unknown). */
		if (l && l->gen == t->gen && l->kind == XPU_REC_CUDA_API)
			return l;
	}
	return NULL;
}

/* The arrow from the launching call to the GPU activity e just written, as "s" and "f"
 * events: now when the call came first, else when it comes (pending_add). */
static void flow(struct timeline *t, __u32 producer, const struct xpu_cevent *e, __u32 vpid,
		 const struct recent_launch *from, bool linked)
{
	if (!linked)
		return;
	if (!from) {
		pending_add(t, producer, e, vpid);
		return;
	}
	write_flow(t, from->pid, from->tid, from->ts, vpid, e->stream, e->ts_ns, from->pos);
}

/* ---- SM active % ---- */

/* The counter is written only when it changes: a counter holds its value until the next. */
static void sm_write(struct timeline *t, struct sm_track *k, __u32 pid, __u64 ts, __u32 milli)
{
	__u64 keep;

	if (milli + 1 == k->last1)
		return;
	k->last1 = milli + 1;
	keep = t->cur_last;
	t->cur_last = ts; /* in the ring, its own time: written late, it is no younger */
	begin(t, 'C', LIT("SM active"), LIT("gpu"), pid, pid, ts);
	put_lit(t, ",\"args\":{\"%\":");
	put_us(t, milli); /* thousandths of a percent, as put_us writes ns in us */
	put_lit(t, "}");
	emit(t);
	t->cur_last = keep;
}

/* The track of an sm_active entity: a device's pseudo-process, or the process itself. */
static struct sm_track *sm_track_of(struct timeline *t, __u64 key, __u32 *pid)
{
	struct device *d;
	struct proc *p;

	if (SM_IS_PROCESS(key)) {
		p = table__get(&t->procs, SM_ID(key), 0, false);
		*pid = SM_ID(key);
		return p ? &p->sm : NULL;
	}
	d = table__get(&t->devices, SM_ID(key), 0, false);
	*pid = d ? d->vpid : 0;
	return d ? &d->sm : NULL;
}

/* Write the windows sm_active closed since the last call, oldest first. */
static void sm_drain(struct timeline *t)
{
	__u32 kept = sm_active__windows_kept(t->sm), i, k, pid;
	const struct sm_window *w;
	struct sm_track *tr;
	__u64 first, busy;

	if (!kept)
		return;
	first = sm_active__window(t->sm, 0)->ordinal;
	if (t->sm_next < first) { /* more windows closed at once than the ring keeps */
		t->sm_missed += first - t->sm_next;
		t->sm_next = first;
	}
	for (i = (__u32)(t->sm_next - first); i < kept; i++) {
		w = sm_active__window(t->sm, i);
		for (k = 0; k < w->n; k++) {
			tr = sm_track_of(t, w->e[k].key, &pid);
			if (!tr)
				continue;
			if (tr->next && tr->next < w->start_ns)
				sm_write(t, tr, pid, tr->next, 0);
			busy = w->e[k].busy_ns;
			sm_write(t, tr, pid, w->start_ns,
				 (__u32)(busy >= t->window_ns ? 100000 :
								busy * 100000 / t->window_ns));
			tr->next = w->start_ns + t->window_ns;
		}
		t->sm_next = w->ordinal + 1;
	}
}

static void sm_kernel(struct timeline *t, const struct xpu_cevent *e)
{
	struct device *d = device_of(t, e->device);

	if (e->end_ns <= e->ts_ns || !d)
		return;
	/* errors are counted inside sm_active (sm_counts): the counter goes on without it */
	sm_active__add(t->sm, SM_DEVICE(e->device), e->ts_ns, e->end_ns);
	if (e->pid && proc_of(t, e->pid))
		sm_active__add(t->sm, SM_PROCESS(e->pid), e->ts_ns, e->end_ns);
	sm_active__close(t->sm, false);
	sm_drain(t);
}

/* ---- ranges ---- */

static struct open_range *range_at(struct timeline *t, __u32 idx1)
{
	return idx1 ? &t->ranges[idx1 - 1] : NULL;
}

static void range_push(struct timeline *t, __u32 producer, const struct xpu_cevent *e)
{
	struct thread *th;
	struct open_range *r;
	__u32 idx1 = t->free_range;
	struct proc *p;

	if (!e->pid) /* a range belongs to a thread: of no process, it is dropped */
		return;
	th = thread_of(t, e->pid, cpu_tid(e->pid, e->tid));
	p = proc_of(t, e->pid);
	if (!th || !p)
		return;
	if (!idx1) {
		t->full++;
		return;
	}
	r = &t->ranges[idx1 - 1];
	r->name = malloc(e->name_len ? e->name_len : 1);
	if (!r->name) {
		t->full++;
		return;
	}
	t->free_range = r->next_free;
	if (e->name_len) /* a range without a name has none: memcpy must not get NULL */
		memcpy(r->name, e->name, e->name_len);
	r->name_len = e->name_len;
	r->id = e->id;
	r->ts = e->ts_ns;
	r->range_id = e->correlation_id;
	r->producer = producer;
	r->pid = e->pid;
	r->tid = cpu_tid(e->pid, e->tid);
	r->below = th->top;
	r->lane = lane_for_push(t, th, e->ts_ns);
	r->used = true;
	th->top = idx1;
	if (e->ts_ns > th->push_newest)
		th->push_newest = e->ts_ns;
	p->open_ranges++;
}

/*
 * Write a range as one complete event, [push, end], and forget it. closer: the pop, whose
 * counters go with the slice; NULL for a range that never ended (its pop lost, or not yet
 * come when its thread ended or the session stopped). A range that ended goes on the lane it
 * kept at its push where it fits there, else is placed as any slice (lane_of). One that did
 * not goes on its kept lane, and lasts at least to the latest end on that lane: no slice
 * written after its push could take that lane while under way at its push
 * (lane_straddles_push), so every one of those nests inside it, however many there were (the
 * last LANE_RECENT alone missed a call long before, seen after kill -9). A slice written
 * before the push and older than the last LANE_RECENT is not seen (lane_for_push), as
 * everywhere else here.
 */
static void range_close(struct timeline *t, struct thread *th, __u32 idx1, __u64 end,
			const struct xpu_cevent *closer)
{
	bool unfinished = !closer;
	struct open_range *r = range_at(t, idx1);
	struct proc *p = table__get(&t->procs, r->pid, 0, false);
	__u32 *link = &th->top, track;
	struct lane *l;

	while (*link != idx1) /* usually the innermost; a pop may skip lost ones */
		link = &range_at(t, *link)->below;
	*link = r->below;
	if (!th->top)
		th->push_newest = 0;
	if (end < r->ts)
		end = r->ts;
	l = th->lane[r->lane];
	if (!unfinished && l && lane_fits(l, r->ts, end) &&
	    !lane_straddles_push(t, th, r->lane, r->ts, end)) {
		lane_put(l, r->ts, end); /* its own lane, where it fits: the usual */
		track = r->tid + ((__u32)r->lane << LANE_SHIFT);
	} else if (!unfinished) {
		track = lane_of(t, r->pid, r->tid, r->ts, end);
	} else {
		if (!l) {
			if (!(l = th->lane[r->lane] = calloc(1, sizeof(*l))))
				t->full++;
			else
				win_meta__track(&t->meta);
		}
		if (l && l->max_e > end)
			end = l->max_e;
		if (l)
			lane_put(l, r->ts, end);
		track = r->tid + ((__u32)r->lane << LANE_SHIFT);
	}
	begin(t, 'X', r->name_len ? r->name : "range", r->name_len ? r->name_len : 5, LIT("range"),
	      r->pid, track, r->ts);
	put_dur(t, r->ts, end);
	put_lit(t, ",\"args\":{\"range_id\":");
	put_u64(t, r->range_id);
	if (unfinished)
		put_lit(t, ",\"unfinished\":true");
	if (closer)
		put_counters(t, closer);
	put_lit(t, "}");
	emit(t);
	if (p && p->open_ranges)
		p->open_ranges--;
	free(r->name);
	*r = (struct open_range){ .next_free = t->free_range };
	t->free_range = idx1;
}

/* A pop closes the push its completes link names, or without one the innermost range. */
static void range_pop(struct timeline *t, const struct xpu_cevent *e)
{
	struct thread *th = table__get(&t->threads, e->pid, cpu_tid(e->pid, e->tid), false);
	__u32 idx1, i;
	__u64 push = 0;

	for (i = 0; i < e->n_links && i < XPU_WIRE_LINKS_MAX; i++)
		if (e->links[i].type == XPU_LINK_COMPLETES)
			push = e->links[i].target;
	idx1 = th ? th->top : 0;
	while (push && idx1 && t->ranges[idx1 - 1].id != push)
		idx1 = t->ranges[idx1 - 1].below;
	if (!idx1) {
		t->ranges_unmatched++; /* pushed before the sink started, or lost */
		return;
	}
	range_close(t, th, idx1, e->ts_ns, e);
}

/* A thread (tid != pid) or a whole process ended: its open ranges end with it. */
static void ranges_exit(struct timeline *t, __u32 pid, __u32 tid, __u64 ts)
{
	struct proc *p = table__get(&t->procs, pid, 0, false);
	struct thread *th;
	__u32 i;

	if (!p || !p->open_ranges)
		return;
	for (i = 0; i < RANGES_MAX && p->open_ranges; i++) {
		struct open_range *r = &t->ranges[i];

		if (!r->used || r->pid != pid || (tid != pid && r->tid != tid))
			continue;
		th = table__get(&t->threads, pid, r->tid, false);
		if (th)
			range_close(t, th, i + 1, ts, NULL);
	}
}

static void range_event(struct timeline *t, __u32 producer, const struct xpu_cevent *e)
{
	__u32 pid = cpu_pid(t, e->pid), tid = cpu_tid(pid, e->tid);
	const char *name = e->name_len ? e->name : "range";
	size_t name_len = e->name_len ? e->name_len : 5;

	switch (e->sub_kind) {
	case XPU_RANGE_PUSH:
		range_push(t, producer, e);
		break;
	case XPU_RANGE_POP:
		range_pop(t, e);
		break;
	case XPU_RANGE_START:
	case XPU_RANGE_END:
		/* may cross threads: an async slice, paired by the viewer on (cat, id) */
		begin(t, e->sub_kind == XPU_RANGE_START ? 'b' : 'e', name, name_len, LIT("range"),
		      pid, tid, e->ts_ns);
		put_member(t, LIT(",\"id\":"), e->correlation_id);
		if (e->n_counters) { /* an end's counters, from its start: the viewer merges args */
			put_lit(t, ",\"args\":{\"counted\":true");
			put_counters(t, e);
			put_lit(t, "}");
		}
		emit(t);
		break;
	case XPU_RANGE_MARK:
		begin(t, 'i', name, name_len, LIT("range"), pid, tid, e->ts_ns);
		put_lit(t, ",\"s\":\"t\"");
		emit(t);
		break;
	default:
		break;
	}
}

/* ---- one event ---- */

/* A kernel's grid or block: [x,y,z]. */
static void put_dim3(struct timeline *t, const __s32 v[3])
{
	put_lit(t, "[");
	put_s64(t, v[0]);
	put_lit(t, ",");
	put_s64(t, v[1]);
	put_lit(t, ",");
	put_s64(t, v[2]);
	put_lit(t, "]");
}

/* A kernel's context and launch configuration, members of its args: from t->kconf when the
 * same nine integers came lately. */
static void put_kconf(struct timeline *t, const struct xpu_cevent *e)
{
	const __u32 key[9] = { e->context,	   (__u32)e->grid[0],  (__u32)e->grid[1],
			       (__u32)e->grid[2],  (__u32)e->block[0], (__u32)e->block[1],
			       (__u32)e->block[2], e->registers,       e->shared_mem };
	/* the hash's best bits are its top */
	struct kconf_memo *m =
		&t->kconf[sink_hash_words(0, key, sizeof(key)) >> (64 - KCONF_MEMO_BITS)];
	size_t start = t->len;

	if (m->len && !memcmp(m->key, key, sizeof(key))) {
		put_raw(t, m->text, m->len);
		return;
	}
	put_member(t, LIT(",\"context\":"), e->context);
	put_lit(t, ",\"grid\":");
	put_dim3(t, e->grid);
	put_lit(t, ",\"block\":");
	put_dim3(t, e->block);
	put_member(t, LIT(",\"registers\":"), e->registers);
	put_member(t, LIT(",\"shared_memory\":"), e->shared_mem);
	if (!t->overflow && t->len - start <= KCONF_TEXT) {
		memcpy(m->key, key, sizeof(key));
		m->len = (__u32)(t->len - start);
		memcpy(m->text, t->ev + start, m->len);
	}
}

/* A GPU activity on its stream's track: the track names the device ("GPU D (pid N)") and the
 * stream ("stream S", the tid), so its args do not repeat them. */
static void gpu_event(struct timeline *t, __u32 producer, const struct xpu_cevent *e)
{
	struct gpu *g = gpu_of(t, e->pid, e->device);
	const struct recent_launch *from;
	const char *n = "";
	size_t len = 0;
	bool linked;
	__u64 bind;
	__u32 sf;

	if (!g)
		return;
	if (!table__get(&t->streams, g->vpid, e->stream, true))
		t->full++;
	sf = stack_node(t, e);
	if (e->kind == XPU_REC_GPU_KERNEL) {
		n = e->name_len ? e->name : "kernel";
		len = e->name_len ? e->name_len : 6;
		begin(t, 'X', n, len, LIT("kernel"), g->vpid, e->stream, e->ts_ns);
	} else if (e->kind == XPU_REC_GPU_MEMCPY) {
		n = copy_kind_name(e->sub_kind, &len);
		begin(t, 'X', n, len, LIT("memcpy"), g->vpid, e->stream, e->ts_ns);
	} else {
		begin(t, 'X', LIT("memset"), LIT("memset"), g->vpid, e->stream, e->ts_ns);
	}
	put_dur(t, e->ts_ns, e->end_ns);
	put_member(t, LIT(",\"args\":{\"correlation_id\":"), e->correlation_id);
	if (e->kind == XPU_REC_GPU_KERNEL)
		put_kconf(t, e);
	/* a graph's kernel, copy or memset node */
	if (e->graph_id || e->graph_node_id) {
		put_member(t, LIT(",\"graph\":"), e->graph_id);
		put_member(t, LIT(",\"graph_node\":"), e->graph_node_id);
	}
	if (e->kind != XPU_REC_GPU_KERNEL) {
		put_member(t, LIT(",\"context\":"), e->context);
		put_member(t, LIT(",\"bytes\":"), e->bytes);
		if (e->kind == XPU_REC_GPU_MEMCPY) {
			put_lit(t, ",\"copy_kind\":\"");
			put_raw(t, n + 7, len - 7); /* after "memcpy " */
			if (e->flags & XPU_COPY_F_ASYNC)
				put_lit(t, "\",\"async\":true");
			else
				put_lit(t, "\",\"async\":false");
		} else {
			put_member(t, LIT(",\"value\":"), e->value);
		}
	}
	put_corr(t, e);
	put_counters(t, e);
	put_stack_args(t, e, sf);
	put_lit(t, "}");
	put_sf(t, sf);
	from = launched_by(t, producer, e, &linked);
	bind = from && !t->ring ? from->pos : 0;
	if (bind) { /* the call's slice has its flow_out: the arrow is two members, no events */
		put_member(t, LIT(",\"bind_id\":"), bind);
		put_lit(t, ",\"flow_in\":true");
	}
	if (emit(t)) { /* an arrow needs both its slices in the file */
		if (bind)
			t->flows++;
		else
			flow(t, producer, e, g->vpid, from, linked);
	}
	if (e->kind == XPU_REC_GPU_KERNEL)
		sm_kernel(t, e);
}

static void cpu_sample(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 pid = cpu_pid(t, e->pid), sf;

	learn_comm(t, e, e->tid == e->pid ? 2 : 1);
	touch(t, e->pid, e->tid);
	sf = stack_node(t, e);
	begin(t, 'i', LIT("cpu sample"), LIT("cpu"), pid, cpu_tid(pid, e->tid), e->ts_ns);
	put_lit(t, ",\"s\":\"t\",\"args\":{\"cpu\":");
	put_u64(t, e->cpu);
	put_member(t, LIT(",\"weight\":"), e->value);
	put_stack_args(t, e, sf);
	put_lit(t, "}");
	put_sf(t, sf);
	emit(t);
}

/* The start of a call's or a launch's args, both having them. */
static void put_call_ids(struct timeline *t, const struct xpu_cevent *e)
{
	put_lit(t, ",\"args\":{\"correlation_id\":");
	put_u64(t, e->correlation_id);
	put_member(t, LIT(",\"api_id\":"), e->api_id);
}

/*
 * mode = file: a call's slice waits one event for its LAUNCH, the launch marker's stack of
 * the same call, which comes next when the correlator sends them in time order (the marker
 * fires inside the call): the slice then names the stack ("sf") and the LAUNCH instant, the
 * same call's time, thread and ids once more, is not written: a launch is two events, not
 * three. Anything else that comes next, a batch's end or a window's, writes the call as it is
 * first (call_flush), before anything can look for it (an arrow to its GPU work).
 */
/* Write the held call, its text in t->ev, and remember it for its arrows. */
static void call_emit(struct timeline *t)
{
	struct held_call *h = &t->call;
	bool written;

	h->len = 0;
	written = emit(t);
	launches__add(t, h->producer, h->id, h->ts, h->pid, h->track, written, h->bind);
	if (written)
		pending_resolve(t, h->producer, h->pid, h->correlation_id, h->ts, h->track);
}

/* The held call's text back into t->ev: the two buffers swap, where a copy each way cost
 * about 55 instructions a call (callgrind of fmt_bench) */
static void call_take_back(struct timeline *t)
{
	char *ev = t->ev;

	t->ev = t->call.text;
	t->call.text = ev;
	t->len = t->call.len;
	t->overflow = false;
}

static void call_flush(struct timeline *t)
{
	if (!t->call.len)
		return;
	call_take_back(t);
	call_emit(t);
}

/* The LAUNCH e, of stack node sf, belongs to the call held: its stack on the call's slice,
 * and nothing more to write. False: not its call, or a stack the tree cannot take (written
 * inline as an arg of its own instant). */
static bool call_takes(struct timeline *t, const struct xpu_cevent *e, __u32 sf)
{
	struct held_call *h = &t->call;

	if (!h->len || e->pid != h->pid || e->tid != h->tid || !e->correlation_id ||
	    e->correlation_id != h->correlation_id || sf == STACK_INLINE)
		return false;
	call_take_back(t);
	put_sf(t, sf);
	call_emit(t);
	return true;
}

/* A call (CUDA_API) is remembered for the arrows from it to its GPU work; a LAUNCH, an
 * instant no arrow starts from (flow), is not. */
static void launch_side(struct timeline *t, __u32 producer, const struct xpu_cevent *e)
{
	__u32 pid = cpu_pid(t, e->pid), tid = cpu_tid(pid, e->tid), sf = 0;
	const struct api_cached *n;
	__u64 bind = 0;
	bool written;

	if (e->kind == XPU_REC_LAUNCH) {
		/* its stack once, whether it goes on its call's slice or its own instant */
		sf = stack_node(t, e);
		if (call_takes(t, e, sf))
			return;
	}
	call_flush(t);
	touch(t, e->pid, e->tid);
	if (e->kind == XPU_REC_LAUNCH) {
		begin(t, 'i', LIT("launch"), LIT("launch"), pid, tid, e->ts_ns);
		put_lit(t, ",\"s\":\"t\"");
		put_call_ids(t, e);
		put_stack_args(t, e, sf);
		put_lit(t, "}");
		put_sf(t, sf);
		emit(t);
		return;
	}
	n = api_name(t, e->sub_kind, e->api_id);
	tid = lane_of(t, pid, tid, e->ts_ns, e->end_ns > e->ts_ns ? e->end_ns : e->ts_ns);
	begin(t, 'X', n->name, n->len, LIT("cuda_api"), pid, tid, e->ts_ns);
	put_dur(t, e->ts_ns, e->end_ns);
	put_call_ids(t, e); /* the name says the domain: cuda* runtime, cu* driver */
	put_corr(t, e);
	put_lit(t, "}");
	if (!t->ring && n->starts_work) { /* where its GPU work's arrows start (gpu_event) */
		bind = ++t->binds;
		put_member(t, LIT(",\"bind_id\":"), bind);
		put_lit(t, ",\"flow_out\":true");
	}
	if (t->call.text && !t->overflow) { /* for its LAUNCH: held, and t->ev a fresh buffer */
		char *ev = t->call.text;

		t->call = (struct held_call){ .text = t->ev,
					      .len = t->len,
					      .id = e->id,
					      .ts = e->ts_ns,
					      .correlation_id = e->correlation_id,
					      .bind = bind,
					      .producer = producer,
					      .pid = e->pid,
					      .tid = e->tid,
					      .track = tid };
		t->ev = ev;
		return;
	}
	written = emit(t);
	launches__add(t, producer, e->id, e->ts_ns, e->pid, tid, written, bind);
	if (written)
		pending_resolve(t, producer, e->pid, e->correlation_id, e->ts_ns, tid);
}

static void gpu_sync(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 pid = cpu_pid(t, e->pid);
	size_t len;
	const char *n = sync_kind_name(e->sub_kind, &len);

	/* on the thread that waited: that is where the time went */
	touch(t, e->pid, e->tid);
	begin(t, 'X', n, len, LIT("sync"), pid,
	      lane_of(t, pid, cpu_tid(pid, e->tid), e->ts_ns,
		      e->end_ns > e->ts_ns ? e->end_ns : e->ts_ns),
	      e->ts_ns);
	put_dur(t, e->ts_ns, e->end_ns);
	put_member(t, LIT(",\"args\":{\"correlation_id\":"), e->correlation_id);
	put_member(t, LIT(",\"device\":"), e->device);
	put_member(t, LIT(",\"stream\":"), e->stream);
	put_lit(t, "}");
	emit(t);
}

static void gpu_memory(struct timeline *t, const struct xpu_cevent *e)
{
	struct gpu *g = gpu_of(t, e->pid, e->device);

	if (!g)
		return;
	/* mem stays in [0, INT64_MAX] whatever bytes says: no signed overflow */
	if (e->sub_kind == XPU_MEM_ALLOC)
		g->mem = e->bytes > (__u64)(INT64_MAX - g->mem) ? INT64_MAX :
								  g->mem + (__s64)e->bytes;
	else if (e->sub_kind == XPU_MEM_FREE)
		g->mem = (__u64)g->mem > e->bytes ? g->mem - (__s64)e->bytes : 0;
	begin(t, 'C', LIT("device memory"), LIT("gpu"), g->vpid, g->vpid, e->ts_ns);
	put_lit(t, ",\"args\":{\"bytes\":");
	put_s64(t, g->mem);
	put_lit(t, "}");
	emit(t);
}

static __u64 pmu_hash(const char *name, __u32 len, __u32 scope)
{
	return xpu_hash_bytes(name, len) ^ scope;
}

/* The last interval of the same owner's counter `other` (scope and owner key as tr's),
 * when it is tr's: the same readings, within an eighth of the interval. */
static const struct pmu_track *pmu_pair(struct timeline *t, const struct pmu_track *tr, __u32 scope,
					const char *const *others)
{
	__u64 slack = (tr->end - tr->start) / 8;
	const struct pmu_track *o;

	for (; *others; others++) {
		o = table__get(&t->pmu, tr->k.a, pmu_hash(*others, (__u32)strlen(*others), scope),
			       false);
		if (o && o->end && o->end + slack >= tr->end && o->end <= tr->end + slack &&
		    o->start + slack >= tr->start && o->start <= tr->start + slack)
			return o;
	}
	return NULL;
}

/*
 * A counter reading becomes the counter's rate per second over the interval since the
 * previous reading of its track, written at that reading's time: a Chrome counter holds its
 * value until the next one, so the rate covers the interval it was measured over. The
 * first reading of a track only starts it. The delta is scaled by time_enabled /
 * time_running (a multiplexed counter stands for its whole period); a counter that did not
 * run (scale 0) or a product that is not finite gives no point.
 */
static void pmu_counter(struct timeline *t, const struct xpu_cevent *e)
{
	char name[XPU_STRING_MAX + 32], suffix[32], num[20], *d;
	__u32 pid = cpu_pid(t, e->pid), owner = 0;
	const struct pmu_track *pair = NULL;
	double count, insn_count = 0, cycles_count = 0;
	struct pmu_track *tr;
	size_t n, sn = 0;

	/* Chrome counters belong to a process: a CPU's or a thread's says which in its name */
	touch(t, e->pid, e->tid);
	if (e->sub_kind == XPU_PMU_SCOPE_CPU && e->cpu != XPU_PMU_NO_CPU) {
		owner = e->cpu;
		memcpy(suffix, " cpu", sn = 4);
	} else if (e->sub_kind == XPU_PMU_SCOPE_THREAD) {
		owner = e->tid;
		memcpy(suffix, " tid ", sn = 5);
	}
	if (sn) {
		d = u64_text(num + sizeof(num), owner);
		memcpy(suffix + sn, d, (size_t)(num + sizeof(num) - d));
		sn += (size_t)(num + sizeof(num) - d);
	}
	tr = table__get(&t->pmu, (__u64)pid << 32 | owner,
			pmu_hash(e->name, e->name_len, e->sub_kind), true);
	if (!tr) {
		t->full++;
		return;
	}
	if (e->ts_ns <= tr->prev_ts)
		return; /* the same reading again, or one out of order: no interval */
	if (!tr->prev_ts || !(e->scale > 0) || !isfinite(count = (double)e->delta * e->scale)) {
		tr->prev_ts = e->ts_ns;
		return;
	}
	n = e->name_len ? (e->name_len < XPU_STRING_MAX ? e->name_len : XPU_STRING_MAX) : 7;
	memcpy(name, e->name_len ? e->name : "counter", n);
	memcpy(name + n, suffix, sn);
	begin(t, 'C', name, n + sn, LIT("pmu"), pid, pid, tr->prev_ts);
	put_lit(t, ",\"args\":{\"/s\":");
	put_double(t, count * 1e9 / (double)(e->ts_ns - tr->prev_ts), 15);
	put_lit(t, "}");
	emit(t);
	tr->start = tr->prev_ts;
	tr->end = tr->prev_ts = e->ts_ns;
	tr->count = count;
	/* IPC once both of the pair have the interval: when the second of them comes */
	if (derived__is(e->name, e->name_len, derived_instructions)) {
		pair = pmu_pair(t, tr, e->sub_kind, derived_cycles);
		insn_count = tr->count;
		cycles_count = pair ? pair->count : 0;
	} else if (derived__is(e->name, e->name_len, derived_cycles)) {
		pair = pmu_pair(t, tr, e->sub_kind, derived_instructions);
		insn_count = pair ? pair->count : 0;
		cycles_count = tr->count;
	}
	if (!pair || !(cycles_count > 0))
		return;
	memcpy(name, "IPC", 3);
	memcpy(name + 3, suffix, sn);
	begin(t, 'C', name, 3 + sn, LIT("pmu"), pid, pid, tr->start);
	put_lit(t, ",\"args\":{\"insn/cycle\":");
	put_double(t, insn_count / cycles_count, 6);
	put_lit(t, "}");
	emit(t);
}

static void process_event(struct timeline *t, const struct xpu_cevent *e)
{
	__u32 pid = cpu_pid(t, e->pid);
	bool exit = e->kind == XPU_REC_PROC_EXIT;

	touch(t, e->pid, e->tid);
	learn_comm(t, e, exit ? 1 : 3);
	if (exit && e->pid)
		ranges_exit(t, e->pid, cpu_tid(e->pid, e->tid), e->ts_ns);
	/* "exit", "exec" and "fork": four letters each */
	begin(t, 'i',
	      exit			 ? "exit" :
	      e->flags & XPU_PROC_F_FORK ? "fork" :
					   "exec",
	      4, LIT("process"), pid, cpu_tid(pid, e->tid), e->ts_ns);
	put_lit(t, ",\"s\":\"p\"");
	if (exit) {
		put_lit(t, ",\"args\":{\"status\":");
		put_s64(t, (__s64)e->value);
		put_lit(t, "}");
	}
	emit(t);
}

static void loss(struct timeline *t, const struct xpu_cevent *e)
{
	const char *cause = xpu_loss_cause__name(e->sub_kind);
	size_t n = strnlen(cause, 56);
	__u32 pid = cpu_pid(t, e->pid);
	char name[64] = "loss: ";

	memcpy(name + 6, cause, n); /* a loss is rare: strlen is fine */
	begin(t, 'i', name, 6 + n, LIT("loss"), pid, cpu_tid(pid, e->tid), e->ts_ns);
	put_lit(t, ",\"s\":\"g\",\"args\":{\"records\":");
	put_u64(t, e->value);
	put_lit(t, "}");
	emit(t);
}

static void clock_sync(struct timeline *t, const struct xpu_cevent *e)
{
	t->syncs_total++;
	sink_clocks__add(&t->clocks, e); /* a bad bracket is counted there */
	if (t->n_syncs == SYNCS_MAX)
		return;
	t->syncs[t->n_syncs++] = (struct sync_reading){ .pid = e->pid,
							.clock = e->sub_kind,
							.ref_before = e->ts_ns,
							.other = e->value,
							.ref_after = e->end_ns };
}

static void trigger_check(struct timeline *t, const struct xpu_cevent *e);
static void window_rotate(struct timeline *t);

/* The slots an event's turn will read, LAUNCH_MAP_PREFETCH_AHEAD events before it: a call's
 * own in the launches (its put) and in the pending index (pending_resolve's find, which for
 * most calls finds nothing, and is a miss of its own in an index of megabytes: a fifth of this
 * format's time in fmt_bench on a capture with holes, where slices wait), a GPU activity's
 * launching call's. */
static void prefetch_event(const struct timeline *t, __u32 producer, const struct xpu_cevent *e)
{
	launch_map__prefetch_event(&t->launches, producer, e, false);
	if (e->kind == XPU_REC_CUDA_API && t->pend_live && e->correlation_id)
		launch_map__prefetch(&t->pend_index, producer,
				     pending_key(e->pid, e->correlation_id));
}

static void timeline_batch(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct timeline *t = st;
	__u32 i;

	t->batches++; /* a new batch: new pointers for its names (stack_node's memo) */
	for (i = 0; i < b->n_events; i++) {
		const struct xpu_cevent *e = &ev[i];
		__u64 last = e->end_ns > e->ts_ns ? e->end_ns : e->ts_ns;

		if (i + LAUNCH_MAP_PREFETCH_AHEAD < b->n_events) /* its slot is a cache miss */
			prefetch_event(t, b->producer, &ev[i + LAUNCH_MAP_PREFETCH_AHEAD]);
		if (e->kind != XPU_REC_CLOCK_SYNC && last > t->max_ts)
			t->max_ts = last;
		t->cur_last = last;
		if (t->windows && e->kind != XPU_REC_CLOCK_SYNC) {
			if (!t->win_first || e->ts_ns < t->win_first)
				t->win_first = e->ts_ns;
			if (last > t->win_last)
				t->win_last = last;
		}
		if (t->call.len && e->kind != XPU_REC_LAUNCH && e->kind != XPU_REC_CUDA_API)
			call_flush(
				t); /* (launch_side: the LAUNCH it waits for, or a call after it) */
		switch (e->kind) {
		case XPU_REC_CPU_SAMPLE:
			cpu_sample(t, e);
			break;
		case XPU_REC_LAUNCH:
		case XPU_REC_CUDA_API:
			launch_side(t, b->producer, e);
			break;
		case XPU_REC_GPU_KERNEL:
		case XPU_REC_GPU_MEMCPY:
		case XPU_REC_GPU_MEMSET:
			gpu_event(t, b->producer, e);
			break;
		case XPU_REC_GPU_SYNC:
			gpu_sync(t, e);
			break;
		case XPU_REC_GPU_MEMORY:
			gpu_memory(t, e);
			break;
		case XPU_REC_PMU_COUNTER:
			pmu_counter(t, e);
			break;
		case XPU_REC_RANGE:
			range_event(t, b->producer, e);
			break;
		case XPU_REC_PROC_EXEC:
		case XPU_REC_PROC_EXIT:
			process_event(t, e);
			break;
		case XPU_REC_CLOCK_SYNC:
			clock_sync(t, e);
			break;
		case XPU_REC_LOSS:
			loss(t, e);
			break;
		default: /* STRING: the correlator already put names where they are used */
			break;
		}
		if (t->ring && (t->trig_kernel_ns || t->trig_mark_len))
			trigger_check(t, e);
		if (t->rotate) { /* between events: a window never splits one, nor a flow */
			call_flush(t);
			window_rotate(t);
		}
	}
	call_flush(t); /* nothing is held past its batch: ticks, finish and windows see none */
}

/* ---- the file ---- */

static const char trace_head[] = "{\"traceEvents\":[\n";

/* Open the file events go to: path, or with windows a new window's. */
static int file_open(struct timeline *t)
{
	int err;

	if (t->windows) {
		err = trace_windows__name(t->windows, t->cur_path, sizeof(t->cur_path),
					  &t->win_wall);
		if (err) {
			snprintf(t->open_why, sizeof(t->open_why), "%.500s: name too long",
				 t->path);
			return t->open_err = err;
		}
		t->win_opened = xpu_now_ns();
		t->win_first = t->win_last = 0;
		t->rotate = false;
	}
	err = out__open(&t->o, t->cur_path, t->open_why, sizeof(t->open_why));
	t->open_err = err;
	if (err)
		return err;
	t->in_file = 0;
	t->gen++; /* no node is named by this file's events yet: only the tracks and the rest */
	t->meta.bytes = win_meta__base(&t->meta);
	t->werr = out__write(t->o, trace_head, sizeof(trace_head) - 1);
	if (t->windows) /* what is on disk, this window included, stays under the cap */
		window_full(t);
	return 0;
}

/* The metadata event that names a process's track (thread false) or a thread's. */
static void name_track(struct timeline *t, bool thread, __u32 pid, __u32 tid, const char *name,
		       int n)
{
	if (thread)
		begin(t, 'M', LIT("thread_name"), LIT("__metadata"), pid, tid, 0);
	else
		begin(t, 'M', LIT("process_name"), LIT("__metadata"), pid, tid, 0);
	put_lit(t, ",\"args\":{\"name\":");
	put_str(t, name, n < 0 ? 0 : (size_t)n);
	put_lit(t, "}");
	emit(t);
}

/* What only the end of the session can say: ranges never popped, the last SM-active windows
 * and where each track went idle after them. */
static void close_all(struct timeline *t)
{
	__u32 i;

	/* GPU work whose call never came: no arrow */
	for (i = 0; t->pending && i < t->pend_n; i++)
		t->flows_unknown += t->pending[(t->pend_head + i) % PENDING_MAX].seq != 0;
	t->pend_n = 0;
	t->pend_live = 0;
	/* what closes now is stamped now in the ring, not at the last event received (a
	 * source lagging more than keep_s would leave it out of the stop's snapshot) */
	t->cur_last = t->max_ts;

	for (i = 0; i < RANGES_MAX; i++) {
		struct open_range *r = &t->ranges[i];
		struct thread *th;

		if (r->used && (th = table__get(&t->threads, r->pid, r->tid, false)))
			range_close(t, th, i + 1, t->max_ts, NULL);
	}
	/* every window still open, whatever may come late: there is no later */
	sm_active__close(t->sm, true);
	sm_drain(t);
	for (i = 0; i <= t->devices.mask; i++) {
		struct device *d = table__slot(&t->devices, i);

		if (d->k.used && d->sm.next) /* after its last window, the device is idle */
			sm_write(t, &d->sm, d->vpid, d->sm.next, 0);
	}
	for (i = 0; i <= t->procs.mask; i++) {
		struct proc *p = table__slot(&t->procs, i);

		if (p->k.used && p->sm.next)
			sm_write(t, &p->sm, (__u32)p->k.a, p->sm.next, 0);
	}
}

/* The names of every track known so far: each file (the one trace, each window, each
 * snapshot) says them all, so that it reads on its own. */
static void write_names(struct timeline *t)
{
	char name[96];
	__u32 i, l;
	int n;

	for (i = 0; i <= t->devices.mask; i++) {
		struct device *d = table__slot(&t->devices, i);

		if (!d->k.used)
			continue;
		n = snprintf(name, sizeof(name), "GPU %" PRIu64, (uint64_t)d->k.a);
		name_track(t, false, d->vpid, d->vpid, name, n);
	}
	for (i = 0; i <= t->procs.mask; i++) {
		struct proc *p = table__slot(&t->procs, i);

		if (!p->k.used)
			continue;
		n = p->comm[0] ? snprintf(name, sizeof(name), "%s", p->comm) :
				 snprintf(name, sizeof(name), "pid %" PRIu64, (uint64_t)p->k.a);
		name_track(t, false, (__u32)p->k.a, (__u32)p->k.a, name, n);
	}
	for (i = 0; i <= t->threads.mask; i++) {
		struct thread *th = table__slot(&t->threads, i);

		if (!th->k.used)
			continue;
		n = th->comm[0] ? snprintf(name, sizeof(name), "%s", th->comm) :
				  snprintf(name, sizeof(name), "tid %" PRIu64, (uint64_t)th->k.b);
		name_track(t, true, (__u32)th->k.a, (__u32)th->k.b, name, n);
		for (l = 1; l < LANES && th->lane[l]; l++) {
			n = snprintf(name, sizeof(name), "%s%s%" PRIu64 " (overlap %u)",
				     th->comm[0] ? th->comm : "", th->comm[0] ? " " : "tid ",
				     (uint64_t)th->k.b, l);
			name_track(t, true, (__u32)th->k.a, (__u32)th->k.b + (l << LANE_SHIFT),
				   name, n);
		}
	}
	for (i = 0; i <= t->gpus.mask; i++) {
		struct gpu *g = table__slot(&t->gpus, i);

		if (!g->k.used)
			continue;
		n = snprintf(name, sizeof(name), "GPU %" PRIu64 " (pid %" PRIu64 ")",
			     (uint64_t)g->k.b, (uint64_t)g->k.a);
		name_track(t, false, g->vpid, g->vpid, name, n);
	}
	for (i = 0; i <= t->streams.mask; i++) {
		struct stream *s = table__slot(&t->streams, i);

		if (!s->k.used)
			continue;
		n = snprintf(name, sizeof(name), "stream %" PRIu64, (uint64_t)s->k.b);
		name_track(t, true, (__u32)s->k.a, (__u32)s->k.b, name, n);
	}
	if (t->sys_vpid) {
		name_track(t, false, t->sys_vpid, t->sys_vpid, "system", 6);
	}
}

/* The end of the array and the sync metadata (docs/clock.md): the clock and its readings. */
static void write_other(struct timeline *t)
{
	struct sm_counts c;
	__u32 i;

	if (t->werr)
		return;
	sm_active__counts(t->sm, &c);
	out__write(t->o, LIT("\n],\n"));
	/* a snapshot of the ring holds events of any time: every node; a file or a window, the
	 * nodes of its own events */
	write_stack_frames(t, t->ring != NULL);
	out__printf(t->o,
		    "\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"xpusup "
		    "timeline sink\",\"xpusup_version\":\"%s\",\"clock\":\"CLOCK_MONOTONIC\","
		    "\"ts_unit\":\"us since boot (CLOCK_MONOTONIC), ns precision\","
		    "\"events\":%" PRIu64 ",\"flows\":%" PRIu64 ",\"flows_unknown_launch\":%" PRIu64
		    ",\"events_dropped\":%" PRIu64 ",\"ranges_unmatched\":%" PRIu64
		    ",\"stacks_inline\":%" PRIu64,
		    XPUSUP_VERSION, (uint64_t)t->in_file, (uint64_t)t->flows,
		    (uint64_t)t->flows_unknown, (uint64_t)t->dropped, (uint64_t)t->ranges_unmatched,
		    (uint64_t)t->stacks_inline);
	out__printf(t->o,
		    ",\"sm_active\":{\"window_ns\":%" PRIu64 ",\"lateness_ns\":%" PRIu64
		    ",\"late_kernels\":%" PRIu64 ",\"late_ns\":%" PRIu64
		    ",\"forced_windows\":%" PRIu64 ",\"filled_ns\":%" PRIu64
		    ",\"windows_not_written\":%" PRIu64 "}",
		    (uint64_t)t->window_ns, (uint64_t)t->lateness_ns, (uint64_t)c.late,
		    (uint64_t)c.late_ns, (uint64_t)c.forced, (uint64_t)c.filled_ns,
		    (uint64_t)t->sm_missed);
	/* the models (docs/clock.md) from every reading, then the first SYNCS_MAX readings */
	if (sink_clocks__json(&t->clocks, t->clocks_json, SINK_CLOCKS_JSON_MAX) > 0) {
		out__printf(t->o, ",\"clock_sync\":");
		out__write(t->o, t->clocks_json, strlen(t->clocks_json));
	}
	out__printf(t->o, ",\"clock_sync_readings\":%" PRIu64 ",\"clock_sync_samples\":[",
		    (uint64_t)t->syncs_total);
	for (i = 0; i < t->n_syncs; i++) {
		const struct sync_reading *s = &t->syncs[i];

		out__printf(t->o,
			    "%s{\"pid\":%u,\"clock\":\"%s\",\"ref_before_ns\":%" PRIu64
			    ",\"other_ns\":%" PRIu64 ",\"ref_after_ns\":%" PRIu64 "}",
			    i ? "," : "", s->pid, clock_name(s->clock), (uint64_t)s->ref_before,
			    (uint64_t)s->other, (uint64_t)s->ref_after);
	}
	out__printf(t->o, "]}}\n");
}

/* ---- windows (mode = file, window_s) ---- */

/* The current window reached a size where something must give: at its limit it is closed
 * after the event in hand; with a cap, the oldest windows go so that what is on disk, this
 * window as its close will leave it included, stays under it. The size counts what the close
 * will add (t->meta), and reserve is room for the event in hand past the limit. Called from
 * emit as the window passes trim_at, so the check costs nothing per event. */
static void window_full(struct timeline *t)
{
	__u64 base = win_meta__base(&t->meta);
	__u64 cur = (t->o ? out__bytes(t->o) : 0) + t->meta.bytes, reserve = t->max_bytes / 16;
	__u64 listed, limit = t->win_limit;

	/* Where the track names alone fill half a window, a window an event would follow: a
	 * window then closes when its own bytes fill half the limit, and may pass the cap */
	t->meta_big = t->max_bytes && base >= t->win_limit / 2;
	if (t->meta_big)
		limit = base + t->win_limit / 2;
	if (cur >= limit)
		t->rotate = true;
	t->trim_at = limit;
	if (!t->max_bytes)
		return;
	trace_windows__trim(t->windows, cur + reserve);
	listed = trace_windows__listed_bytes(t->windows);
	if (t->max_bytes > listed + reserve && t->max_bytes - listed - reserve < t->trim_at)
		t->trim_at = t->max_bytes - listed - reserve;
	if (t->trim_at <= cur) { /* nothing left to delete but the newest: look again later */
		t->trim_at = cur + (1u << 20);
		/* and close at the window's limit, not up to 1 MiB past it */
		if (cur < limit && t->trim_at > limit)
			t->trim_at = limit;
	}
}

/* Whether this sink (its run, or the run before its restart) has closed a window: the index
 * may also list an earlier session's. */
static bool window_written(const struct timeline *t)
{
	__u64 written, deleted, bytes;

	trace_windows__counts(t->windows, &written, &deleted, &bytes);
	return written > 0;
}

/* Close the current window: the names of every track and the metadata, renamed into place
 * and listed in the index. last: the session ends; a session that never filled a window
 * leaves path itself, one trace as without windows. */
static int window_close(struct timeline *t, bool last, char *why, size_t why_len)
{
	struct trace_window w = { .start_ns = t->win_wall,
				  .first_ts = t->win_first,
				  .last_ts = t->win_last };
	struct timespec now;
	int err;

	write_names(t);
	write_other(t);
	w.events = t->in_file;
	w.bytes = out__bytes(t->o);
	t->bytes_done += w.bytes;
	err = out__commit(t->o, why, why_len);
	t->o = NULL;
	if (err) { /* the window is gone with what it held */
		t->dropped += w.events;
		return err;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	w.end_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	if (last && !window_written(t)) { /* adopted windows of another run are not ours */
		if (!rename(t->cur_path, t->path))
			return 0;
		err = -errno;
		snprintf(why, why_len, "unable to rename %s to %s: %s", t->cur_path, t->path,
			 strerror(errno));
		return err;
	}
	return trace_windows__add(t->windows, t->cur_path, &w, why, why_len);
}

/* The next window, between two events. A failure shows at the next tick, which also tries
 * to open the file again. */
static void window_rotate(struct timeline *t)
{
	int err;

	t->rotate = false;
	if (!t->o || t->werr)
		return;
	err = window_close(t, false, t->win_why, sizeof(t->win_why));
	if (err)
		t->win_err = err;
	file_open(t);
}

/* ---- the flight recorder (mode = ring) ---- */

/* The rest of a snapshot: the names of every track and the metadata, then into place. */
static void snap_finish(struct timeline *t)
{
	struct snapshot *sn = &t->snap;
	__u64 bytes;
	int err;

	t->o = sn->o; /* emit writes to the file while t->o is set */
	t->in_file = sn->events;
	t->werr = 0;
	write_names(t);
	write_other(t);
	bytes = out__bytes(t->o);
	err = out__commit(t->o, sn->result_why, sizeof(sn->result_why));
	t->o = NULL;
	sn->o = NULL;
	snprintf(sn->result_path, sizeof(sn->result_path), "%s", sn->path);
	sn->result_fresh = true;
	if (err) {
		sn->result = err;
		t->snapshot_errors++;
		return;
	}
	sn->result = 1;
	sn->result_events = t->in_file;
	sn->result_bytes = bytes;
	t->bytes_done += bytes;
	t->snapshots++;
	snprintf(sn->result_why, sizeof(sn->result_why),
		 "%" PRIu64 " events, %" PRIu64 " bytes%s%s; %" PRIu64
		 " ring bytes evicted while it was written, %" PRIu64
		 " flow arrows left out with their call",
		 (uint64_t)t->in_file, (uint64_t)bytes, sn->reason[0] ? ", " : "", sn->reason,
		 (uint64_t)sn->skipped, (uint64_t)sn->orphans);
	t->snap_lost += sn->skipped;
	t->in_file = 0;
}

/* Positions [from, to) of the snapshot were not written. */
static void snap_gap(struct snapshot *sn, __u64 from, __u64 to)
{
	if (sn->n_gaps && sn->gaps[sn->n_gaps - 1][1] >= from) {
		sn->gaps[sn->n_gaps - 1][1] = to;
		return;
	}
	if (sn->n_gaps == sn->cap_gaps) {
		__u32 cap = sn->cap_gaps ? 2 * sn->cap_gaps : 64;
		__u64(*g)[2] = realloc(sn->gaps, cap * sizeof(*g));

		if (!g) {
			if (sn->n_gaps) /* no room: the last covers this one too */
				sn->gaps[sn->n_gaps - 1][1] = to;
			else
				sn->start = to; /* none yet: the start moves past it */
			return;
		}
		sn->gaps = g;
		sn->cap_gaps = cap;
	}
	sn->gaps[sn->n_gaps][0] = from;
	sn->gaps[sn->n_gaps++][1] = to;
}

/* Whether the record at pos, which the writer has passed, is not in the snapshot: the gaps
 * are in order, so a binary search for the last one starting at or before pos. */
static bool snap_unwritten(const struct snapshot *sn, __u64 pos)
{
	__u32 lo = 0, hi = sn->n_gaps, mid;

	if (pos < sn->start)
		return true;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (sn->gaps[mid][0] <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pos < sn->gaps[lo - 1][1];
}

/* Write up to budget bytes of the ring into the snapshot in progress; finish it at the end. */
static void snap_step(struct timeline *t, __u64 budget)
{
	struct snapshot *sn = &t->snap;
	struct trace_ring_rec rec;
	__u64 done = 0;

	if (!sn->o)
		return;
	while (done < budget) {
		__u64 skipped = sn->skipped, at = sn->pos;

		if (trace_ring__next(t->ring, &sn->pos, sn->end, &rec, &sn->skipped)) {
			snap_finish(t);
			return;
		}
		if (sn->skipped != skipped) { /* evicted under the writer */
			snap_gap(sn, at, rec.pos);
			at = rec.pos;
		}
		if (rec.ts < sn->cutoff) {
			snap_gap(sn, at, sn->pos);
			continue;
		}
		/* an arrow with its call's slice (or the GPU slice that came first), or not at
		 * all: that record is before this one, and the writer knows whether it wrote it */
		if (rec.dep && snap_unwritten(sn, rec.dep - 1)) {
			/* no gap: an arrow's record is no record's dep (the ring gives
			 * grouped records no position to name) */
			sn->orphans++;
			continue;
		}
		out__write(sn->o, sn->events ? ",\n" : "", sn->events ? 2 : 0);
		out__write(sn->o, rec.text, rec.len);
		/* a flow's two ends share a record: the only one with a line break inside */
		sn->events += memchr(rec.text, '\n', rec.len) ? 2 : 1;
		done += rec.len;
	}
}

/* Start a snapshot into path (NULL: PATHSTEM-snapshot-UTC.json beside path) of what the ring
 * holds now, its last keep_s before the newest event. */
static int snap_start(struct timeline *t, const char *path, const char *reason, char *why,
		      size_t why_len)
{
	struct snapshot *sn = &t->snap;
	char name[TL_PATH_MAX];
	__u64 wall;
	int err;

	if (!t->ring) {
		snprintf(why, why_len,
			 "snapshots are for mode = ring: this sink writes its trace as "
			 "events come");
		return -ENOTSUP;
	}
	if (sn->o) {
		t->snap_busy++;
		snprintf(why, why_len,
			 "a snapshot is being written to %s (%" PRIu64 " events so far): ask "
			 "again when it is done",
			 sn->path, (uint64_t)sn->events);
		return -EBUSY;
	}
	if (!path) {
		err = trace_files__stamped(t->path, "snapshot-", name, sizeof(name), &wall);
		if (err) {
			snprintf(why, why_len, "%s: name too long", t->path);
			return err;
		}
		path = name;
	}
	if (strlen(path) >= sizeof(sn->path)) {
		snprintf(why, why_len, "snapshot path too long");
		return -ENAMETOOLONG;
	}
	err = out__open(&sn->o, path, why, why_len);
	if (err) {
		t->snapshot_errors++;
		return err;
	}
	snprintf(sn->path, sizeof(sn->path), "%s", path);
	snprintf(sn->reason, sizeof(sn->reason), "%s", reason ? reason : "");
	sn->pos = trace_ring__head(t->ring);
	sn->end = trace_ring__tail(t->ring);
	sn->cutoff = t->max_ts > t->keep_ns ? t->max_ts - t->keep_ns : 0;
	sn->events = sn->skipped = sn->orphans = 0;
	sn->start = sn->pos;
	sn->n_gaps = 0;
	out__write(sn->o, trace_head, sizeof(trace_head) - 1);
	/* a first part now: new events evict from the head, where the writer starts */
	snap_step(t, SNAP_STEP_BYTES);
	return 0;
}

/* A trigger's snapshot: started (maybe written already; its outcome comes with
 * snapshot_result), or its failure as that outcome. */
static void trigger_start(struct timeline *t, const char *reason)
{
	char why[600];
	int err;

	err = snap_start(t, NULL, reason, why, sizeof(why));
	if (!err)
		return;
	t->snap.result = err;
	t->snap.result_fresh = true;
	snprintf(t->snap.result_path, sizeof(t->snap.result_path), "%s", t->path);
	snprintf(t->snap.result_why, sizeof(t->snap.result_why), "%s", why);
}

/* A trigger of the config (trigger_kernel_us, trigger_mark) fired by e: a snapshot, unless
 * the last trigger was less than trigger_holdoff_s ago; while one is being written, or its
 * outcome is not yet read, at the next tick after. */
static void trigger_check(struct timeline *t, const struct xpu_cevent *e)
{
	char reason[160];
	__u64 now;

	if (e->kind == XPU_REC_GPU_KERNEL && t->trig_kernel_ns && e->end_ns > e->ts_ns &&
	    e->end_ns - e->ts_ns > t->trig_kernel_ns)
		snprintf(reason, sizeof(reason), "trigger: kernel %.*s ran %" PRIu64 " us",
			 (int)(e->name_len < 80 ? e->name_len : 80), e->name_len ? e->name : "",
			 (uint64_t)((e->end_ns - e->ts_ns) / 1000));
	else if (e->kind == XPU_REC_RANGE && e->sub_kind != XPU_RANGE_POP &&
		 e->sub_kind != XPU_RANGE_END && t->trig_mark_len &&
		 e->name_len == t->trig_mark_len && !memcmp(e->name, t->trig_mark, e->name_len))
		snprintf(reason, sizeof(reason), "trigger: mark %.*s",
			 (int)(e->name_len < 80 ? e->name_len : 80), e->name);
	else
		return;
	now = xpu_now_ns();
	if (t->trig_last && now - t->trig_last < t->holdoff_ns)
		return;
	t->trig_last = now;
	t->triggered++;
	/* A snapshot being written, or one whose outcome the sink has not read yet (it reads
	 * after the tick): this one waits for a tick (trigger_start), so that it holds this
	 * event and that outcome still reaches whoever asked for it. */
	if (t->snap.o || t->snap.result) {
		snprintf(t->snap.deferred, sizeof(t->snap.deferred), "%s", reason);
		return;
	}
	trigger_start(t, reason);
}

static int ring_tick(struct timeline *t, char *why, size_t why_len)
{
	struct snapshot *sn = &t->snap;
	bool stale;

	/* age alone does not take what a snapshot being written still has to write: only
	 * room does (max_mb bounds the ring either way) */
	if (t->max_ts > t->keep_ns)
		trace_ring__expire(t->ring, sn->o && sn->cutoff < t->max_ts - t->keep_ns ?
						    sn->cutoff :
						    t->max_ts - t->keep_ns);
	if (sn->o)
		snap_step(t, SNAP_STEP_BYTES);
	/* an outcome left unread a whole tick has no reader (a group, `xpusup subscribe`):
	 * it no longer holds a trigger back */
	stale = sn->result && !sn->result_fresh;
	sn->result_fresh = false;
	if (sn->deferred[0] && !sn->o && (!sn->result || stale)) {
		char reason[sizeof(sn->deferred)];

		memcpy(reason, sn->deferred, sizeof(reason));
		sn->deferred[0] = 0;
		trigger_start(t, reason);
	}
	return FMT_IDLE;
}

static int timeline_snapshot(void *st, const char *path, char *why, size_t why_len)
{
	return snap_start(st, path, NULL, why, why_len);
}

static int timeline_snapshot_result(void *st, char *path, size_t path_len, char *why,
				    size_t why_len)
{
	struct snapshot *sn = &((struct timeline *)st)->snap;
	int r = sn->result;

	if (!r)
		return 0;
	sn->result = 0;
	snprintf(path, path_len, "%s", sn->result_path);
	snprintf(why, why_len, "%s", sn->result_why);
	return r;
}

/* ---- the format's operations ---- */

static int timeline_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct timeline *t = st;
	bool rotated = false;
	int err;

	if (t->ring)
		return ring_tick(t, why, why_len);
	if (t->o && t->werr) {
		/* a file that missed a write is broken for good: drop it and start a new one,
		 * so that the file at stop is whole, with what came after */
		snprintf(why, why_len, "%s: the trace starts again, %" PRIu64 " events lost",
			 out__error(t->o), (uint64_t)t->in_file);
		t->dropped += t->in_file;
		t->bytes_done += out__bytes(t->o);
		out__abort(t->o);
		t->o = NULL;
		err = t->werr;
		t->werr = 0;
		t->retry_at = now_ns + RETRY_NS;
		t->open_err = err;
		snprintf(t->open_why, sizeof(t->open_why), "%s", why);
		return err;
	}
	if (!t->o) {
		if (now_ns >= t->retry_at) {
			t->retry_at = now_ns + RETRY_NS;
			if (!file_open(t)) {
				t->ticked = 0;
				return FMT_WROTE; /* the file is there again: the problem is over */
			}
		}
		snprintf(why, why_len, "%s", t->open_why);
		return t->open_err ? t->open_err : -EIO;
	}
	if (t->win_err) { /* a window that could not be closed: shown once, then the next */
		err = t->win_err;
		t->win_err = 0;
		snprintf(why, why_len, "%s", t->win_why);
		return err;
	}
	/* time for the next window; an empty one goes on (no file of nothing) */
	if (t->windows && t->in_file && now_ns - t->win_opened >= t->rot_ns) {
		window_rotate(t);
		if (t->win_err)
			return timeline_tick(st, now_ns, why, why_len);
		t->ticked = 0;
		rotated = true;
	}
	/* shown while it lasts, as a file that cannot be opened is: trim tries again as the
	 * window grows, and each window's close writes the index again */
	if (t->windows && (err = trace_windows__error(t->windows, why, why_len)))
		return err;
	if (t->meta_big) {
		snprintf(why, why_len,
			 "max_mb = %" PRIu64 " is too small for %u tracks: their names and the "
			 "metadata take up to %" PRIu64 " KiB of every window, over half of a "
			 "window's %" PRIu64 " KiB, so windows may pass the cap",
			 (uint64_t)(t->max_bytes >> 20), t->meta.tracks,
			 (uint64_t)(win_meta__base(&t->meta) >> 10),
			 (uint64_t)(t->win_limit >> 10));
		return -EFBIG;
	}
	if (rotated)
		return FMT_WROTE;
	/* never FMT_COMPLETE: the file is whole only after finish, so a sink killed and
	 * restarted loses (and its accounting counts) what the killed run received */
	if (t->in_file == t->ticked)
		return FMT_IDLE;
	t->ticked = t->in_file;
	return FMT_WROTE;
}

/* mode = ring at stop: the snapshot in progress finished, then the ring into path. The
 * outcome of an earlier snapshot not yet read stays for snapshot_result (the sink reads it
 * after finish, for whoever asked); the stop's own is said by the sink's exit. */
static int ring_finish(struct timeline *t, char *why, size_t why_len)
{
	struct snapshot *sn = &t->snap;
	char path[sizeof(sn->result_path)], said[sizeof(sn->result_why)];
	int earlier, err;

	if (sn->o) /* the one in progress first: what stop closes must not push it out */
		snap_step(t, ~0ull);
	close_all(t); /* into the ring: they end now */
	earlier = sn->result;
	memcpy(path, sn->result_path, sizeof(path));
	memcpy(said, sn->result_why, sizeof(said));
	sn->deferred[0] = 0; /* a trigger still waiting: the stop's snapshot holds it */
	err = snap_start(t, t->path, "at stop", why, why_len);
	if (!err) {
		snap_step(t, ~0ull);
		if (sn->result < 0) {
			err = sn->result;
			snprintf(why, why_len, "%s", sn->result_why);
		}
	}
	sn->result = earlier;
	memcpy(sn->result_path, path, sizeof(path));
	memcpy(sn->result_why, said, sizeof(said));
	return err;
}

static int timeline_finish(void *st, char *why, size_t why_len)
{
	struct timeline *t = st;
	int err;

	if (t->ring)
		return ring_finish(t, why, why_len);
	if (!t->o && file_open(t)) {
		snprintf(why, why_len, "%s", t->open_why);
		return t->open_err;
	}
	close_all(t);
	if (t->windows) {
		if (!t->in_file && window_written(t)) {
			out__abort(t->o); /* nothing since the last window: no empty file */
			t->o = NULL;
			return 0;
		}
		return window_close(t, true, why, why_len);
	}
	write_names(t);
	write_other(t);
	t->bytes_done += out__bytes(t->o);
	err = out__commit(t->o, why, why_len);
	t->o = NULL;
	return err;
}

static void timeline_free(void *st)
{
	struct timeline *t = st;
	__u32 i, l;

	if (!t)
		return;
	out__abort(t->o);
	if (t->snap.o != t->o)
		out__abort(t->snap.o);
	free(t->snap.gaps);
	sm_active__free(t->sm);
	for (i = 0; t->ranges && i < RANGES_MAX; i++)
		free(t->ranges[i].name);
	for (i = 0; t->threads.slots && i <= t->threads.mask; i++) {
		struct thread *th = table__slot(&t->threads, i);

		for (l = 0; th->k.used && l < LANES; l++)
			free(th->lane[l]);
	}
	free(t->ranges);
	free(t->heads);
	launch_map__free(&t->launches);
	launch_map__free(&t->pend_index);
	free(t->pending);
	free(t->procs.slots);
	free(t->threads.slots);
	free(t->gpus.slots);
	free(t->streams.slots);
	free(t->devices.slots);
	free(t->pmu.slots);
	if (t->ev)
		free(t->ev - EV_HEAD);
	free(t->frames);
	free(t->frame_slots);
	free(t->frame_names);
	free(t->clocks_json);
	free(t->hold);
	if (t->call.text)
		free(t->call.text - EV_HEAD);
	trace_ring__free(t->ring);
	trace_windows__free(t->windows);
	sink_clocks__free(&t->clocks);
	free(t);
}

static unsigned int timeline_counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	struct timeline *t = st;
	struct sm_counts c;
	struct trace_ring_counts r;
	const char *const *more = NULL;
	__u64 v[COUNTERS_BASE + 9];
	unsigned int i, n = COUNTERS_BASE;

	sm_active__counts(t->sm, &c);
	v[0] = t->written;
	v[1] = t->flows;
	v[2] = t->flows_unknown;
	v[3] = t->bytes_done + (t->o ? out__bytes(t->o) : 0);
	v[4] = t->dropped;
	v[5] = t->ranges_unmatched;
	v[6] = c.late;
	v[7] = t->full;
	v[8] = t->overlaps;
	v[9] = t->stacks_inline;
	v[10] = t->pend_live;
	if (t->windows) {
		more = window_counter_names;
		trace_windows__counts(t->windows, &v[n], &v[n + 1], &v[n + 2]);
		v[n + 3] = trace_windows__count(t->windows);
		n += 4;
	} else if (t->ring) {
		more = ring_counter_names;
		trace_ring__counts(t->ring, &r);
		v[n] = r.bytes;
		v[n + 1] = r.records;
		v[n + 2] = r.evicted;
		v[n + 3] = r.expired;
		v[n + 4] = t->snapshots;
		v[n + 5] = t->snapshot_errors;
		v[n + 6] = t->triggered;
		v[n + 7] = t->snap_busy;
		v[n + 8] = t->snap_lost;
		n += 9;
	}
	for (i = 0; i < n && i < max; i++) {
		names[i] = i < COUNTERS_BASE ? counter_names[i] : more[i - COUNTERS_BASE];
		values[i] = v[i];
	}
	return i;
}

static int timeline_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct timeline *t = calloc(1, sizeof(*t));
	struct timeline_options o;
	__u32 i;
	int err;

	if (!t)
		return -ENOMEM;
	err = env->path(env->ctx, "path", t->path, sizeof(t->path));
	if (err) {
		snprintf(why, why_len, "no output file: set 'path'");
		err = -EINVAL;
		goto fail;
	}
	err = conf_kind__options(&timeline_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (err)
		goto fail;
	t->window_ns = o.sm_window_ms * 1000000ull;
	t->lateness_ns = o.sm_lateness_ms * 1000000ull;
	t->mode = o.mode;
	snprintf(t->cur_path, sizeof(t->cur_path), "%s", t->path);
	err = launch_map__init(&t->launches, (__u32)o.max_launches);
	if (!err)
		err = launch_map__init(&t->pend_index, PENDING_MAX);
	if (!err && !(t->pending = calloc(PENDING_MAX, sizeof(*t->pending))))
		err = -ENOMEM;
	if (!err)
		err = table__init(&t->procs, sizeof(struct proc), PROCS_MAX);
	if (!err)
		err = table__init(&t->threads, sizeof(struct thread), THREADS_MAX);
	if (!err)
		err = table__init(&t->gpus, sizeof(struct gpu), GPUS_MAX);
	if (!err)
		err = table__init(&t->streams, sizeof(struct stream), STREAMS_MAX);
	if (!err)
		err = table__init(&t->devices, sizeof(struct device), DEVICES_MAX);
	if (!err)
		err = table__init(&t->pmu, sizeof(struct pmu_track), PMU_TRACKS_MAX);
	t->procs.meta = t->threads.meta = t->gpus.meta = &t->meta; /* write_names names them */
	t->streams.meta = t->devices.meta = &t->meta;
	if (!err && o.mode == TIMELINE_RING) {
		err = trace_ring__new(&t->ring, (o.max_mb ? o.max_mb : TIMELINE_RING_MB_DEFAULT)
							<< 20);
		t->hold = malloc(HOLD_MAX);
		if (!t->hold)
			err = -ENOMEM;
		t->keep_ns = o.keep_s * 1000000000ull;
		t->trig_kernel_ns = o.trigger_kernel_us * 1000ull;
		t->holdoff_ns = o.trigger_holdoff_s * 1000000000ull;
		if (o.trigger_mark) {
			t->trig_mark_len = strlen(o.trigger_mark);
			if (t->trig_mark_len >= sizeof(t->trig_mark))
				t->trig_mark_len = sizeof(t->trig_mark) - 1; /* never matches */
			memcpy(t->trig_mark, o.trigger_mark, t->trig_mark_len);
		}
		t->gen = 1; /* one "file" for flows: the ring */
	} else if (!err) {
		/* as big as t->ev, and like it touched only as far as events go */
		t->call.text = malloc(EV_HEAD + EV_MAX);
		if (t->call.text)
			t->call.text += EV_HEAD;
		else
			err = -ENOMEM;
	}
	t->ranges = calloc(RANGES_MAX, sizeof(*t->ranges));
	t->heads = calloc(1u << HEAD_MEMO_BITS, sizeof(*t->heads));
	t->ev = malloc(EV_HEAD + EV_MAX);
	if (t->ev)
		t->ev += EV_HEAD;
	/* the frame tree's memory is touched only as far as it is used */
	t->frames = malloc(FRAMES_MAX * sizeof(*t->frames));
	t->frame_slots = calloc(FRAME_SLOTS_MASK + 1, sizeof(*t->frame_slots));
	t->frame_names = malloc(FRAME_NAMES_MAX);
	t->clocks_json = malloc(SINK_CLOCKS_JSON_MAX);
	t->sm = sm_active__new(t->window_ns, t->lateness_ns);
	if (err || !t->ranges || !t->heads || !t->ev || !t->frames || !t->frame_slots ||
	    !t->frame_names || !t->clocks_json || !t->sm) {
		snprintf(why, why_len, "out of memory");
		err = -ENOMEM;
		goto fail;
	}
	if (o.mode == TIMELINE_FILE && o.window_s) {
		t->rot_ns = o.window_s * 1000000000ull;
		t->max_bytes = o.max_mb << 20;
		t->win_limit = t->max_bytes ? t->max_bytes / 4 : ~0ull;
		t->trim_at = t->win_limit;
		err = trace_windows__open(&t->windows, t->path, t->max_bytes, env->resume, why,
					  why_len);
		if (err)
			goto fail;
		if (trace_windows__partials_removed(t->windows))
			fprintf(stderr,
				"timeline %s: deleted %u unfinished window(s) a killed run "
				"left\n",
				t->path, trace_windows__partials_removed(t->windows));
	}
	for (i = 0; i < RANGES_MAX; i++)
		t->ranges[i].next_free = i + 2 <= RANGES_MAX ? i + 2 : 0;
	t->free_range = 1;
	t->next_vpid = VPID_BASE;
	t->frame_names[0] = 0; /* the name of every unnamed frame */
	t->frame_names_len = 1;
	for (i = 0; i <= XPU_CORR_TYPE_MAX; i++) { /* the names are short identifiers */
		int n = snprintf(t->corr_members[i].s, sizeof(t->corr_members[i].s),
				 ",\"corr_type\":\"%s\"", xpu_corr_type__name(i));

		t->corr_members[i].len =
			n > 0 && (size_t)n < sizeof(t->corr_members[i].s) ? (size_t)n : 0;
	}
	/* A file that cannot be created yet (a read-only folder) is not a reason to stop:
	 * the first tick says so and tries again. */
	if (!t->ring)
		file_open(t);
	*out = t;
	return 0;
fail:
	timeline_free(t);
	return err;
}

const struct fmt_ops fmt_timeline = {
	.kind = "timeline",
	.open = timeline_open,
	.batch = timeline_batch,
	.tick = timeline_tick,
	.finish = timeline_finish,
	.free = timeline_free,
	.counters = timeline_counters,
	.snapshot = timeline_snapshot,
	.snapshot_result = timeline_snapshot_result,
};
