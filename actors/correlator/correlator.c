// SPDX-License-Identifier: MIT
/*
 * xpusup-correlator: one shard. Reads the rings of its shard (one per source) in turn, in
 * batches, runs every record through the exact join (join.c) and encodes what comes out into
 * wire batches (common/wire.c). Publishes its counters in the status block.
 *
 * A record's way, in one direction:
 *
 *   ring -> on_record: filter, sample (stage__pass)
 *        -> learn: STRING into the names table; the process's maps and MODULE reports into
 *           the symbolizer (symbols__note); a copied stack unwound into frames (unwind.c);
 *           Python frames merged into the native ones (pystack.c)
 *        -> join (join.c and its engines): the event, its links, the stacks it carries
 *        -> on_event: name the frames (symbols__name, pystack__name), encode, send
 *           (finish_batch)
 *
 * The symbolizer (symbolize.c) is used on both sides of the join, for two different things:
 * before it, only to learn (read maps, take MODULE reports, give the unwinder the CFI of the
 * files mapped); after it, only to name frames. Naming cannot move before the join without
 * changing what goes out:
 *   - a GPU event's stack is attached by the join from state it holds (its LAUNCH's, its
 *     graph node creation's, or a CPU sample's by the timestamp strategy), often long after
 *     the record that carried it; the join would have to hold a name per frame beside every
 *     stack it keeps, and carry them in its events (join.h);
 *   - a frame's name depends on the event that carries it: a CPU sample's innermost frame is
 *     looked up as is, every other frame as a return address (ip - 1), so the user stack of
 *     a sample taken in user space, carried by a GPU event (timestamp strategy), has its
 *     first frame looked up at ip - 1 there and at ip in the sample;
 *   - names come from the maps known when the event goes out: a MODULE report or a map read
 *     again after an exec (or by the symbolizer itself, for a frame outside every mapping
 *     it knows) between a LAUNCH and its kernel names the kernel's frames, not the LAUNCH's.
 *
 * Every batch goes to every sink: one nng PUSH socket per sink, dialled to the sink's PULL
 * endpoint (XPU_SINK_URL_FMT). A slow or absent sink makes sending wait (heartbeating), the
 * shard stops reading, its rings fill and the sources drop and count: loss only ever happens,
 * counted, where the data enters.
 *
 * STRING records fill a (pid, id) -> text table through which kernel, range and counter
 * names resolve.
 *
 * A CPU-scope counter reading reaches every shard (the PMU source writes it into every ring);
 * shard 0 sends it on, the others count it in `filtered` (the join says JOIN_ROUTED), so
 * that sinks see each reading once and the accounting of docs/correlator.md still holds.
 *
 * Restarts (checkpoint.h): the rings are read in hold mode and released only after a
 * checkpoint has recorded how far they were read, the wire sequence number of the batch
 * about to be sent and how many records the join holds. A new incarnation skips to the
 * checkpointed positions, carries the numbering on, and counts the held records and the
 * join state it cannot have (keys, names) as lost: state_lost, keys_lost, names_lost.
 */
#include "actors/actor.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/push.h>
#include <nng/supplemental/util/platform.h>

#include "actors/correlator/checkpoint.h"
#include "actors/correlator/correlator_options.h"
#include "actors/correlator/join.h"
#include "actors/correlator/pystack.h"
#include "actors/correlator/symbolize.h"
#include "actors/correlator/unwind.h"
#include "actors/cpu/cpu_options.h"
#include "actors/inproc/inproc_options.h"
#include "actors/sink/close.h"
#include "common/mix.h"
#include "common/oatab.h"
#include "common/pyframe.h"
#include "common/status.h"
#include "common/topology.h"
#include "common/wire.h"
#include "shm/ring.h"

#define PROG "xpusup-correlator"
#define CONSUME_MAX 1024 /* records per ring per turn: fairness between sources */
#define RING_TURN_NS 2000000ull /* and time per ring per turn, about (turn) */
#define BATCH_LINGER_NS 5000000ull /* the longest a small partial batch waits for more (main) */
#define BATCH_LINGER_MAX 64 /* events: a partial batch of this many goes at once (main) */
#define BATCH_EVENTS 4096 /* events per wire batch */
#define SEND_QUEUE 8 /* batches nng may hold per sink (each at most about 1 MiB) */
/* An idle shard's sleep on a ring: the status is published every 10 ms (main's loop) */
#define IDLE_ONE_RING_NS 10000000ull
#define IDLE_RINGS_NS 2000000ull /* several rings: the longest a ring not slept on waits */
/* a sink that takes nothing this long while the shard runs is dialed again (send_all) */
#define REDIAL_NS 3000000000ull

enum counter {
	C_IN,
	C_MATCHED,
	C_UNMATCHED,
	C_WAITED,
	C_EXPIRED,
	C_EVICTED,
	C_LATE,
	C_PENDING,
	C_EVENTS,
	C_BATCHES,
	C_SEND_WAITS,
	C_NAMES,
	C_NAMES_DROPPED,
	C_NEST_LOST,
	C_TIME_MATCHED,
	C_STATE_LOST,
	C_KEYS_LOST,
	C_NAMES_LOST,
	C_ENCODE_ERRORS,
	C_STREAMS,
	C_STREAMS_DROPPED,
	C_STREAMS_FULL,
	C_STREAM_OVERLAPS,
	C_STREAM_UNORDERED,
	C_NAMES_FREED,
	C_FILTERED,
	C_SAMPLED_OUT,
	C_TIME_MATCHED_SAMPLES,
	C_SAMPLED_IN,
	C_FRAMES,
	C_FRAMES_UNKNOWN,
	C_SYMBOLIZE_NS,
	C_WAITING,
	C_READINGS,
	C_READINGS_DROPPED,
	C_COUNTER_PIDS,
	C_COUNTER_PIDS_EVICTED,
	C_COUNTED,
	C_COUNTED_ESTIMATED,
	C_COUNTERS_ROUTED,
	C_NEST_CLOSED,
	C_NEST_TOO_OLD,
	C_GRAPH_NODE_STACKS,
	C_GRAPH_APPROXIMATE,
	C_GRAPH_NODES,
	C_GRAPH_NODES_EVICTED,
	C_LAUNCH_WAITED,
	C_STACKS_KEPT,
	C_STACKS_TRIMMED,
	C_LAUNCH_WAIT_EXPIRED,
	C_RANGE_WAITED,
	C_RANGE_WAIT_EXPIRED,
	C_RANGE_WAIT_FULL,
	C_UNWOUND,
	C_UNWIND_COMPLETE,
	C_UNWIND_TRUNCATED,
	C_UNWIND_FAILED,
	C_UNWIND_NO_RULE,
	C_UNWIND_BAD_CFI,
	C_UNWIND_LOOP,
	C_UNWIND_FRAMES_CFI,
	C_UNWIND_FRAMES_FP,
	C_UNWIND_NS,
	C_CFI_FILES,
	C_CFI_KIB,
	C_CFI_EVICTED,
	C_MODULES,
	C_MODULE_FRAMES,
	C_PY_STACKS,
	C_PY_NS,
	C_PY_UNMATCHED,
	C_PY_DROPPED,
	C_PY_NO_LAYOUT,
	C_PY_NAMED,
	C_PY_UNNAMED,
	C_PY_CODES_RESOLVED,
	C_PY_CODES_FAILED,
	C_PY_CODES_CACHED,
	C_SINK_REDIALS,
	C_EVENTS_UNSENT,
	C_N,
};

static const char *const counter_names[C_N] = {
	[C_IN] = "in",
	[C_MATCHED] = "matched",
	[C_UNMATCHED] = "unmatched",
	[C_WAITED] = "waited",
	[C_EXPIRED] = "expired",
	[C_EVICTED] = "evicted",
	[C_LATE] = "late_launch",
	[C_PENDING] = "pending",
	[C_EVENTS] = "events_out",
	[C_BATCHES] = "batches",
	[C_SEND_WAITS] = "send_waits",
	[C_NAMES] = "names",
	[C_NAMES_DROPPED] = "names_dropped",
	[C_NEST_LOST] = "nest_lost",
	[C_TIME_MATCHED] = "time_matched",
	[C_STATE_LOST] = "state_lost",
	[C_KEYS_LOST] = "keys_lost",
	[C_NAMES_LOST] = "names_lost",
	[C_ENCODE_ERRORS] = "encode_errors",
	[C_STREAMS] = "streams",
	[C_STREAMS_DROPPED] = "streams_dropped",
	[C_STREAMS_FULL] = "streams_full",
	[C_STREAM_OVERLAPS] = "stream_overlaps",
	[C_STREAM_UNORDERED] = "stream_unordered",
	[C_NAMES_FREED] = "names_freed",
	[C_FILTERED] = "filtered",
	[C_SAMPLED_OUT] = "sampled_out",
	[C_TIME_MATCHED_SAMPLES] = "time_matched_samples",
	[C_SAMPLED_IN] = "sampled_in",
	[C_FRAMES] = "frames",
	[C_FRAMES_UNKNOWN] = "frames_unknown",
	[C_SYMBOLIZE_NS] = "symbolize_ns_per_frame",
	[C_WAITING] = "waiting",
	[C_READINGS] = "readings",
	[C_READINGS_DROPPED] = "readings_dropped",
	[C_COUNTER_PIDS] = "counter_pids",
	[C_COUNTER_PIDS_EVICTED] = "counter_pids_evicted",
	[C_COUNTED] = "counted",
	[C_COUNTED_ESTIMATED] = "counted_estimated",
	[C_COUNTERS_ROUTED] = "counters_routed",
	[C_NEST_CLOSED] = "nest_closed",
	[C_NEST_TOO_OLD] = "nest_too_old",
	[C_GRAPH_NODE_STACKS] = "graph_node_stacks",
	[C_GRAPH_APPROXIMATE] = "graph_approximate",
	[C_GRAPH_NODES] = "graph_nodes",
	[C_GRAPH_NODES_EVICTED] = "graph_nodes_evicted",
	[C_LAUNCH_WAITED] = "launch_waited",
	[C_STACKS_KEPT] = "stacks_kept",
	[C_STACKS_TRIMMED] = "stacks_trimmed",
	[C_LAUNCH_WAIT_EXPIRED] = "launch_wait_expired",
	[C_RANGE_WAITED] = "range_waited",
	[C_RANGE_WAIT_EXPIRED] = "range_wait_expired",
	[C_RANGE_WAIT_FULL] = "range_wait_full",
	[C_UNWOUND] = "unwind_stacks",
	[C_UNWIND_COMPLETE] = "unwind_ok",
	[C_UNWIND_TRUNCATED] = "unwind_truncated",
	[C_UNWIND_FAILED] = "unwind_failed",
	[C_UNWIND_NO_RULE] = "unwind_failed_no_rule",
	[C_UNWIND_BAD_CFI] = "unwind_failed_bad_cfi",
	[C_UNWIND_LOOP] = "unwind_failed_loop",
	[C_UNWIND_FRAMES_CFI] = "unwind_frames_cfi",
	[C_UNWIND_FRAMES_FP] = "unwind_frames_fp",
	[C_UNWIND_NS] = "unwind_ns_per_stack",
	[C_CFI_FILES] = "cfi_files",
	[C_CFI_KIB] = "cfi_kib",
	[C_CFI_EVICTED] = "cfi_evicted",
	[C_MODULES] = "modules",
	[C_MODULE_FRAMES] = "module_frames",
	[C_PY_STACKS] = "py_stacks_merged",
	[C_PY_NS] = "py_ns_per_merge",
	[C_PY_UNMATCHED] = "py_unmatched",
	[C_PY_DROPPED] = "py_frames_dropped",
	[C_PY_NO_LAYOUT] = "py_no_layout",
	[C_PY_NAMED] = "py_frames_named",
	[C_PY_UNNAMED] = "py_frames_unnamed",
	[C_PY_CODES_RESOLVED] = "py_codes_resolved",
	[C_PY_CODES_FAILED] = "py_codes_failed",
	[C_PY_CODES_CACHED] = "py_codes_cached",
	[C_SINK_REDIALS] = "sink_redials",
	[C_EVENTS_UNSENT] = "events_unsent",
};

_Static_assert(C_N <= XPU_STATUS_MAX_COUNTERS, "the status block has a slot for every counter");

/* The shard's STRING table: (pid, id) -> text, so kernel, range and counter names resolve.
 * Counter names (STRING kind counter) have an id space of their own: the PMU source and the
 * CUPTI library each number their strings per process, and both write for the same pid.
 * Bounded (NAMES_MAX entries; beyond that new names are counted and dropped); a process's
 * names go when its exit grace has passed (join__set_gone). */
#define NAMES_MAX 65536

struct name_entry {
	__u64 id;
	__u32 pid;
	__u16 len; /* at most XPU_STRING_MAX */
	__u16 counter; /* a counter's name: its own id space */
	char *text; /* NULL: empty slot */
};

_Static_assert(XPU_STRING_MAX <= 0xffff, "a name's length fits name_entry.len");

struct names {
	struct name_entry slots[2 * NAMES_MAX];
	__u64 pids[65536 / 64]; /* by pid & 0xffff: may have names (a set bit may be stale) */
	__u32 n;
	__u64 dropped, freed;
};

#define NAMES_MASK (2 * NAMES_MAX - 1)

static __u32 names_home(__u32 pid, __u64 id, __u16 counter)
{
	/* ids are small per-process numbers: pid and kind take the high bits */
	return (__u32)xpu_mix64(id ^ ((__u64)pid << 32 | (__u64)counter << 31)) & NAMES_MASK;
}

static __u32 names_slot(const struct names *t, __u32 pid, __u64 id, __u16 counter)
{
	__u32 i = names_home(pid, id, counter);

	while (t->slots[i].text &&
	       (t->slots[i].pid != pid || t->slots[i].id != id || t->slots[i].counter != counter))
		i = (i + 1) & NAMES_MASK;
	return i;
}

/* The table's slots for common/oatab.h: a slot is empty when it holds no text. */
static bool names_empty(const void *tab, uint32_t slot)
{
	return !((const struct names *)tab)->slots[slot].text;
}

static uint32_t names_slot_home(const void *tab, uint32_t slot)
{
	const struct name_entry *e = &((const struct names *)tab)->slots[slot];

	return names_home(e->pid, e->id, e->counter);
}

static void names_move(void *tab, uint32_t to, uint32_t from)
{
	struct names *t = tab;

	t->slots[to] = t->slots[from];
}

static void names_clear(void *tab, uint32_t slot)
{
	((struct names *)tab)->slots[slot].text = NULL;
}

static const struct oatab_ops names_ops = {
	.empty = names_empty,
	.home = names_slot_home,
	.move = names_move,
	.clear = names_clear,
};

/* The member's text goes; the slot itself is emptied by oatab__delete. */
static void names__free_text(struct names *t, __u32 slot)
{
	free(t->slots[slot].text);
	t->n--;
	t->freed++;
}

/* Drop every name of an exited process (and what the symbolizer knows of it): one
 * oatab__delete_if pass over the table, only for a process that may have names (CUDA
 * processes; they exit rarely). */
static void names__drop_pid(__u32 pid, void *ctx);

static void names__put(struct names *t, const struct xpu_string *str)
{
	__u16 counter = str->kind == XPU_STR_COUNTER;
	struct name_entry *e = &t->slots[names_slot(t, str->hdr.pid, str->id, counter)];
	char *text;

	if (!e->text && t->n >= NAMES_MAX) {
		t->dropped++;
		return;
	}
	text = malloc(str->len ? str->len : 1);
	if (!text) {
		t->dropped++;
		return;
	}
	memcpy(text, str->text, str->len);
	t->pids[(str->hdr.pid & 0xffff) / 64] |= 1ull << (str->hdr.pid % 64);
	if (e->text)
		free(e->text);
	else
		t->n++;
	*e = (struct name_entry){ .id = str->id,
				  .pid = str->hdr.pid,
				  .len = (__u16)str->len,
				  .counter = counter,
				  .text = text };
}

static const char *names__get(__u32 pid, __u64 id, __u32 kind, __u32 *len, void *ctx);

/* Seed 000's composites, per source: filter, then sample, before the join; enrich stages
 * are applied by the join as the source's events go out. */
struct stage {
	unsigned int keep; /* bit per record kind (conf_parse_filter) */
	unsigned int enrich; /* CONF_ENRICH_* */
	__u64 min_dur_ns;
	__u64 sample; /* keep 1 in sample */
	__u64 n_samples, n_readings, n_uncorrelated; /* counters that pick which 1 in sample */
};

struct shard {
	struct actor *a;
	struct names *names;
	struct ring *rings[CONF_MAX_ACTORS];
	__u64 ring_quarter[CONF_MAX_ACTORS]; /* held bytes past which we checkpoint and release */
	struct stage stages[CONF_MAX_ACTORS]; /* of the source of each ring */
	unsigned int n_rings;
	unsigned char *scratch; /* one record, as big as the largest max_record */
	__u32 scratch_len;
	struct checkpoint *ckpt;
	__u64 lost, lost_keys, lost_names, filtered, sampled_out; /* carried across restarts */
	struct join *join;
	struct xpu_wire_enc *enc;
	nng_socket sinks[CONF_MAX_ACTORS];
	const char *sink_names[CONF_MAX_ACTORS]; /* their actors' names, for the URL */
	bool sink_gone[CONF_MAX_ACTORS]; /* stopping: given up on, not waited for again */
	unsigned int n_sinks;
	__u64 redials;
	__u64 stop_by; /* stopping: past this, a sink that cannot take a batch is given up */
	__u64 unsent; /* events a given-up sink was not sent, summed over sinks */
	__u64 seq, events, batches, send_waits, encode_errors, now;
	__u64 batch_since; /* s->now when the batch being encoded got its first event */
	int counters[C_N];
	/* The `symbols` stage: NULL when no source of this shard asks for it. Frames are named
	 * only for processes whose memory map was read (live processes of a source with
	 * `symbols`); others keep their addresses (a replayed or simulated pid is not here). */
	struct symbolizer *sym;
	__u64 *sym_tried, *sym_live; /* bit per pid below PID_BITS */
	__u64 *sym_again; /* read the map again on the next record: the exec's is not complete */
	__u64 *sym_kernel; /* on this host: its kernel frames are named even without a map */
	__u64 frames_unknown;
	/* Copied stacks (XPU_STACK_F_COPY) unwound into ordinary records before the join. */
	unsigned char *unwound; /* one record: a CPU_SAMPLE with every frame */
	bool sym_failed; /* the symbolizer could not be made for the unwinder */
	struct stack_unwind_stats uw;
	/* Python frames (XPU_STACK_F_PY) merged into the native ones before the join */
	struct pystack *py; /* made on the first record with Python frames */
	bool py_failed; /* ... and not again after it could not be */
	unsigned char *merged; /* one record: a CPU_SAMPLE with every frame */
	__u64 ips[XPU_WIRE_STACK_MAX];
	const char *frame_names[XPU_WIRE_STACK_MAX];
};

#define PID_BITS (1u << 22) /* the kernel's largest pid_max */
/* The largest record an unwound copy becomes: a CPU_SAMPLE with every frame. */
#define UNWOUND_MAX (sizeof(struct xpu_cpu_sample) + 8 * 2 * XPU_MAX_FRAMES)

_Static_assert(SYMBOLIZER_NAME_MAX <= XPU_WIRE_FRAME_NAME_MAX, "every interned name fits the wire");

static bool pid_bit(const __u64 *set, __u32 pid)
{
	return pid < PID_BITS && (set[pid / 64] >> (pid % 64)) & 1;
}

static void pid_bit_set(__u64 *set, __u32 pid, bool on)
{
	if (pid >= PID_BITS)
		return;
	if (on)
		set[pid / 64] |= 1ull << (pid % 64);
	else
		set[pid / 64] &= ~(1ull << (pid % 64));
}

/* The kept CPU sample stands for `sample` of them. A weight past 32 bits saturates (1 in 500
 * samples at 99 Hz would weigh 5e9 ns). */
static void sample__reweigh(void *rec, __u64 sample)
{
	struct xpu_cpu_sample *cs = rec;
	__u64 w = (__u64)cs->weight * sample;

	cs->weight = w > 0xffffffffull ? 0xffffffffu : (__u32)w;
}

/* The symbolizer, for the `symbols` stage or for the unwinder: 0 or -ENOMEM (then none). */
static int symbols__open(struct shard *s)
{
	/* elfutils would fetch missing debug info from these servers while the shard waits:
	 * symbols here come from the files on this host only */
	unsetenv("DEBUGINFOD_URLS");
	s->sym = symbolizer__new();
	s->sym_tried = calloc(PID_BITS / 64, sizeof(__u64));
	s->sym_live = calloc(PID_BITS / 64, sizeof(__u64));
	s->sym_again = calloc(PID_BITS / 64, sizeof(__u64));
	s->sym_kernel = calloc(PID_BITS / 64, sizeof(__u64));
	if (s->sym && s->sym_tried && s->sym_live && s->sym_again && s->sym_kernel)
		return 0;
	symbolizer__free(s->sym);
	free(s->sym_tried);
	free(s->sym_live);
	free(s->sym_again);
	free(s->sym_kernel);
	s->sym = NULL;
	s->sym_tried = s->sym_live = s->sym_again = s->sym_kernel = NULL;
	return -ENOMEM;
}

/* A record of a source with `symbols`: read the process's map the first time it is seen, and
 * again after an exec, while it is there to read; a short-lived process keeps its names. */
static void symbols__note(struct shard *s, const struct xpu_rec *h)
{
	/* a fork too: the pid may be a reused one, whose old map would name the new process */
	bool start = h->type == XPU_REC_PROC_EXEC;
	bool exec = start && !(h->flags & XPU_PROC_F_FORK);
	/* not on a MODULE: ld.so's first library after the exec would read the map at once, for
	 * every process of a build under target = all, sampled or not; the MODULE names it */
	bool again = pid_bit(s->sym_again, h->pid) && !start && h->type != XPU_REC_PROC_EXIT &&
		     h->type != XPU_REC_MODULE;
	int err;

	if (!h->pid || (!start && !again && pid_bit(s->sym_tried, h->pid)))
		return;
	/* At exec only the program and the dynamic loader are mapped; the first sample or
	 * launch after it reads the map again, libraries included. If the process has gone by
	 * then, the exec's map stays: its own functions still resolve. */
	if (start)
		symbolizer__exec(s->sym, h->pid, h->ts_ns);
	pid_bit_set(s->sym_again, h->pid, exec);
	pid_bit_set(s->sym_tried, h->pid, true);
	err = symbolizer__capture(s->sym, h->pid);
	if (!err)
		pid_bit_set(s->sym_live, h->pid, true);
	/* -ESRCH: the process is here but has no map: a kernel thread, or one exiting. Its
	 * kernel frames can still be named; a pid that is not on this host (simulated,
	 * replayed) keeps its addresses. */
	if (!err || err == -ESRCH)
		pid_bit_set(s->sym_kernel, h->pid, true);
}

/*
 * Names for ev's frames. Every frame but a sample's innermost one is a return address: the
 * call that made it sits just before, so ip - 1 is looked up (a call at the very end of a
 * function would otherwise be named after the next function). A LAUNCH stack starts with the
 * return address into the launching function, so all of its frames are return addresses.
 */
static void symbols__name(struct shard *s, struct xpu_cevent *ev, bool user)
{
	__u32 n = (__u32)ev->n_kernel + ev->n_user, i, k, nu = 0;
	__u32 exact = ev->kind == XPU_REC_CPU_SAMPLE ? 1 : 0;
	const char *names[XPU_WIRE_STACK_MAX];

	for (i = 0; i < n; i++)
		s->frame_names[i] = NULL; /* no map: the address it is */
	/* Python frames (common/pyframe.h) are no addresses: the symbolizer gets the native
	 * frames only, packed, and its names go back to where they came from */
	for (i = 0, k = 0; i < n; i++) {
		if (i >= ev->n_kernel && xpu_pyframe__is(ev->stack[i]))
			continue;
		s->ips[k++] = ev->stack[i] - (i < exact ? 0 : 1);
		nu += i >= ev->n_kernel;
	}
	symbolizer__stack(s->sym, ev->pid, s->ips, ev->n_kernel, user ? nu : 0, names);
	for (i = 0, k = 0; i < n; i++) {
		if (i >= ev->n_kernel && xpu_pyframe__is(ev->stack[i]))
			continue;
		if (i < ev->n_kernel || user)
			s->frame_names[i] = names[k];
		k++;
	}
	for (i = 0; i < n; i++)
		if (s->frame_names[i] && !strcmp(s->frame_names[i], SYMBOLIZER_UNKNOWN))
			s->frames_unknown++;
	ev->frames = s->frame_names;
}

/* Whether any of ev's user frames is a Python frame. */
static bool has_pyframes(const struct xpu_cevent *ev)
{
	__u32 i;

	for (i = ev->n_kernel; i < (__u32)ev->n_kernel + ev->n_user; i++)
		if (xpu_pyframe__is(ev->stack[i]))
			return true;
	return false;
}

/* The PUSH socket to sink i, dialing its endpoint: a few batches may queue, so a sink busy
 * for a moment does not stop the shard at once (a kill -9 loses what is queued, which the
 * sink counts as a sequence gap); the dial does not wait: nng connects when the sink
 * listens and reconnects after a restart. 0 or the nng error, said. */
static int sink_dial(struct shard *s, unsigned int i)
{
	char url[4300];
	int err;

	snprintf(url, sizeof(url), XPU_SINK_URL_FMT, s->a->dir, s->sink_names[i]);
	err = nng_push0_open(&s->sinks[i]);
	if (!err)
		err = nng_socket_set_int(s->sinks[i], NNG_OPT_SENDBUF, SEND_QUEUE);
	if (!err)
		err = nng_socket_set_ms(s->sinks[i], NNG_OPT_SENDTIMEO, 50);
	if (!err)
		err = nng_dial(s->sinks[i], url, NULL, NNG_FLAG_NONBLOCK);
	if (err)
		fprintf(stderr, PROG ": unable to dial %s: %s\n", url, nng_strerror(err));
	return err;
}

/* When a stopping shard stops waiting for sinks: half the supervisor's patience after the
 * stop began, so that the drain, the join's flush and the close (slow under ASAN) fit in the
 * other half. Set once, at the first call after SIGTERM. */
static __u64 stop_deadline(struct shard *s)
{
	if (!s->stop_by)
		s->stop_by = xpu_now_ns() + (__u64)s->a->self->shutdown_timeout_ms * 500000ull;
	return s->stop_by;
}

/* Stopping, past the deadline: sink i is not waited for again, and this batch (n events) and
 * every later one count as not sent to it (events_unsent; what nng already held for it is lost
 * at the close, uncounted). Said once. */
static void give_up(struct shard *s, unsigned int i, __u32 n)
{
	s->sink_gone[i] = true;
	s->unsent += n;
	fprintf(stderr,
		PROG
		": stopping: gave up on sink %s, which could not take a batch by the stop's deadline\n",
		s->sink_names[i]);
}

/* Send one batch (n events) to every sink, waiting (and beating) while a sink cannot take it.
 *
 * A sink that takes nothing for REDIAL_NS while the shard runs gets a new socket: libnng
 * 1.5.2's dialer can stay disconnected after its sink is killed and restarted (seen in CI:
 * one shard of two never sent again, the other did), and a new dial connects at once. What
 * the old socket held is lost, and the sink counts it as a gap.
 *
 * A stopping shard waits for its sinks until one deadline for the whole stop
 * (stop_deadline): a sink that cannot take a batch after it is given up, and this batch and
 * every later one are counted as unsent to it (events_unsent). A deadline per batch, as
 * before, let a sink that took a batch a second hold the stop for as many seconds as there
 * were batches left, past the supervisor's patience (asan sink_windows in CI, 2026-11). */
static void send_all(struct shard *s, const void *data, size_t len, __u32 n)
{
	unsigned int i;
	__u64 since;
	int rv;

	for (i = 0; i < s->n_sinks; i++) {
		if (s->sink_gone[i]) {
			s->unsent += n;
			continue;
		}
		since = 0;
		/* A blocking send with a timeout: it returns as soon as the sink can take the
		 * batch (polling with sleeps would add a sleep's rounding to every wait). Past
		 * the stop's deadline, a send that cannot go at once gives the sink up: a sink
		 * that takes a batch every 40 ms would never time out. */
		for (;;) {
			bool late = actor__stopping(s->a) && xpu_now_ns() >= stop_deadline(s);
			__u64 now;

			rv = nng_send(s->sinks[i], (void *)data, len, late ? NNG_FLAG_NONBLOCK : 0);
			if (rv != NNG_ETIMEDOUT && !(late && rv == NNG_EAGAIN))
				break;
			now = xpu_now_ns();
			s->send_waits++;
			actor__beat(s->a);
			if (actor__stopping(s->a)) {
				if (late || now >= stop_deadline(s)) {
					give_up(s, i, n);
					break;
				}
			} else if (!since) {
				since = now;
			} else if (now - since > REDIAL_NS) {
				nng_close(s->sinks[i]);
				if (sink_dial(s, i)) {
					s->sink_gone[i] = true;
					s->unsent += n;
					break;
				}
				s->redials++;
				since = now;
			}
		}
		if (rv && rv != NNG_ETIMEDOUT && rv != NNG_EAGAIN)
			fprintf(stderr, PROG ": unable to send to a sink: %s\n", nng_strerror(rv));
	}
}

/* The counter name of the actor in slot (published by it), into *v; false if it has none. */
static bool slot_counter(const struct xpu_actor_slot *slot, const char *name, __u64 *v)
{
	__u32 n = __atomic_load_n(&slot->n_counters, __ATOMIC_ACQUIRE), i;

	for (i = 0; i < n && i < XPU_STATUS_MAX_COUNTERS; i++)
		if (!strncmp(slot->counters[i].name, name, XPU_STATUS_COUNTER_NAME_LEN)) {
			*v = status_load(&slot->counters[i].value);
			return true;
		}
	return false;
}

/*
 * The stop's last batches are still in nng's queues when the shard is done, and closing its
 * sockets loses them (nng 1.x has no linger). A fixed 100 ms wait was too short for a sink
 * that decodes slowly (ASan, a loaded machine: the last 7 046 of 48 006 events lost, half the
 * runs of annotate_test there). So wait, from the status block, until every sink not given
 * up says it received (events_in) at least what the shards say they sent (events_out, each
 * published before its wait): or until a sink's count has not moved for STOP_QUIET_NS (a
 * restarted sink counts from 0 and never catches up; one without the counter is waited for
 * that long), or the stop's deadline, or STOP_WAIT_MAX_NS.
 */
#define STOP_QUIET_NS 300000000ull /* sinks publish their counters every 100 ms */
#define STOP_WAIT_MAX_NS 3000000000ull

static void wait_sinks(struct shard *s)
{
	const struct xpu_status_block *st = s->a->status;
	__u64 start = xpu_now_ns(), until = start + STOP_WAIT_MAX_NS, last[CONF_MAX_ACTORS] = { 0 };
	__u64 moved = start, now, sent, got;
	__u32 k, n = status_load(&st->hdr.n_actors);
	unsigned int i;
	bool behind, changed;

	if (until > stop_deadline(s))
		until = stop_deadline(s);
	if (n > XPU_STATUS_MAX_ACTORS)
		n = XPU_STATUS_MAX_ACTORS;
	for (;;) {
		sent = 0;
		for (k = 0; k < n; k++)
			if (status_load(&st->slots[k].role) == CONF_ROLE_CORRELATOR &&
			    slot_counter(&st->slots[k], "events_out", &got))
				sent += got;
		behind = changed = false;
		for (i = 0; i < s->n_sinks; i++) {
			bool known = false;

			if (s->sink_gone[i])
				continue;
			for (k = 0; k < n && !known; k++)
				if (!strncmp(st->slots[k].name, s->sink_names[i],
					     XPU_STATUS_NAME_LEN))
					known = slot_counter(&st->slots[k], "events_in", &got);
			if (!known || got < sent)
				behind = true;
			if (known && i < CONF_MAX_ACTORS && got != last[i]) {
				last[i] = got;
				changed = true;
			}
		}
		now = xpu_now_ns();
		if (changed)
			moved = now;
		if (!behind || now >= until || now - moved >= STOP_QUIET_NS)
			return;
		actor__beat(s->a);
		nng_msleep(10);
	}
}

static void checkpoint(struct shard *s, __u64 seq_next)
{
	struct xpu_ckpt_slot c = { 0 };
	struct join_stats st;
	unsigned int i;

	join__stats(s->join, &st);
	c.seq_next = seq_next;
	c.next_id = join__next_id(s->join);
	c.held = st.waiting + st.range_held; /* GPU records and CPU samples the join holds */
	c.held_keys = st.pending;
	c.held_names = s->names->n;
	c.lost = s->lost;
	c.lost_keys = s->lost_keys;
	c.lost_names = s->lost_names;
	c.filtered = s->filtered;
	c.sampled_out = s->sampled_out;
	for (i = 0; i < s->n_rings; i++)
		c.pos[i] = ring__read_pos(s->rings[i]);
	checkpoint__commit(s->ckpt, &c);
}

/*
 * Checkpoint, send, release, in that order: a kill before the checkpoint re-reads what the
 * batch came from; a kill after it loses the batch in transit, which the sinks see as a
 * sequence gap of exactly its events; the rings are released only once a checkpoint covers
 * what was read. Runs at record boundaries or inside the join's emit callback: the join
 * keeps its held count exact whenever it emits (join.c).
 */
static void finish_batch(struct shard *s)
{
	__u32 n = xpu_wire_enc__count(s->enc);
	const void *data = NULL;
	size_t len = 0;
	unsigned int i;
	bool read = false;

	for (i = 0; i < s->n_rings && !read; i++)
		read = ring__unreleased(s->rings[i]) != 0;
	if (!n && !read)
		return;
	/* A batch that cannot be encoded still takes its numbers: the sinks count its events
	 * as lost. */
	if (n && xpu_wire_enc__finish(s->enc, &data, &len))
		data = NULL;
	checkpoint(s, s->seq + n);
	if (data) {
		send_all(s, data, len, n);
		s->batches++;
	}
	for (i = 0; i < s->n_rings; i++)
		ring__release(s->rings[i]);
	/* the batch is out: no name of a code object is in use */
	if (s->py)
		pystack__collect(s->py);
	s->seq += n;
	xpu_wire_enc__begin(s->enc, s->seq);
}

/* The join's emit callback, the last stages: name the frames, encode, send a full batch. */
static void on_event(const struct xpu_cevent *ev, void *ctx)
{
	struct shard *s = ctx;
	struct xpu_cevent named;

	if (ev->stack && ev->n_kernel + ev->n_user && !ev->frames &&
	    ev->n_kernel + ev->n_user <= XPU_WIRE_STACK_MAX) {
		/* the pid sets exist with the symbolizer only */
		bool user = s->sym && (pid_bit(s->sym_live, ev->pid) || ev->pid >= PID_BITS);
		bool sym = s->sym && (user || (ev->n_kernel && pid_bit(s->sym_kernel, ev->pid)));
		bool py = s->py && has_pyframes(ev);

		if (sym || py) {
			named = *ev;
			if (sym) {
				symbols__name(s, &named, user);
			} else {
				memset(s->frame_names, 0,
				       sizeof(s->frame_names[0]) * XPU_WIRE_STACK_MAX);
				named.frames = s->frame_names;
			}
			if (py)
				pystack__name(s->py, ev->pid, ev->stack,
					      (__u32)ev->n_kernel + ev->n_user, s->frame_names);
			ev = &named;
		}
	}

	if (xpu_wire_enc__add(s->enc, ev) == 0)
		s->events++;
	else
		s->encode_errors++; /* an event the format cannot carry: lost, counted */
	if (xpu_wire_enc__count(s->enc) == 1)
		s->batch_since = s->now;
	if (xpu_wire_enc__count(s->enc) >= BATCH_EVENTS)
		finish_batch(s);
}

static bool names_of_pid(void *tab, uint32_t slot, void *ctx)
{
	struct names *t = tab;

	if (t->slots[slot].pid != *(const __u32 *)ctx)
		return false;
	names__free_text(t, slot);
	return true;
}

static void names__drop_pid(__u32 pid, void *ctx)
{
	struct shard *s = ctx;
	struct names *t = s->names;

	if (s->py)
		pystack__drop_pid(s->py, pid);
	if (s->sym) {
		symbolizer__forget(s->sym, pid);
		pid_bit_set(s->sym_tried, pid, false);
		pid_bit_set(s->sym_live, pid, false);
		pid_bit_set(s->sym_again, pid, false);
		pid_bit_set(s->sym_kernel, pid, false);
	}

	if (!(t->pids[(pid & 0xffff) / 64] & 1ull << (pid % 64)) || !t->n)
		return;
	oatab__delete_if(t, NAMES_MASK, &names_ops, names_of_pid, &pid);
}

static const char *names__get(__u32 pid, __u64 id, __u32 kind, __u32 *len, void *ctx)
{
	const struct shard *s = ctx;
	const struct name_entry *e =
		&s->names->slots[names_slot(s->names, pid, id, kind == XPU_STR_COUNTER)];

	*len = e->text ? e->len : 0;
	return e->text;
}

static __u64 key_mix(__u32 pid, __u64 corr)
{
	return xpu_mix64(corr * 0x9e3779b97f4a7c15ull ^ ((__u64)pid << 32));
}

/* Every GPU activity kind starts start_ns, end_ns, correlation_id after the header (join.c
 * asserts the offsets). */
static const struct xpu_gpu_sync *gpu_part(const void *rec)
{
	return rec;
}

/*
 * filter, then sample: whether the record goes on to the join. Sampling keeps 1 in N CPU
 * samples (the kept one weighs N, so flame graph totals stay right) and counter readings,
 * and 1 in N launches by a hash of (pid, correlation id), the same in every shard and
 * source, so a kept launch keeps its API call and its GPU work. Ranges, CUDA graph node
 * creations and control records are never sampled: nesting, the stacks of every later
 * launch of a node, and cleanup need all of them.
 */
static bool stage__pass(struct shard *s, struct stage *st, void *rec)
{
	struct xpu_rec *h = rec;
	__u64 corr = 0, dur = ~0ull;

	switch (h->type) {
	case XPU_REC_CUDA_API:
		corr = ((const struct xpu_cuda_api *)rec)->correlation_id;
		dur = ((const struct xpu_cuda_api *)rec)->end_ns - h->ts_ns;
		break;
	case XPU_REC_LAUNCH:
		corr = ((const struct xpu_launch *)rec)->correlation_id;
		break;
	case XPU_REC_GPU_KERNEL:
	case XPU_REC_GPU_MEMCPY:
	case XPU_REC_GPU_MEMSET:
	case XPU_REC_GPU_SYNC:
		corr = gpu_part(rec)->correlation_id;
		dur = gpu_part(rec)->end_ns - gpu_part(rec)->start_ns;
		break;
	default:
		break;
	}
	if (!(st->keep & 1u << h->type) || (dur != ~0ull && dur < st->min_dur_ns)) {
		s->filtered++;
		return false;
	}
	if (st->sample == 1)
		return true;
	switch (h->type) {
	case XPU_REC_CPU_SAMPLE:
		if (st->n_samples++ % st->sample)
			break;
		sample__reweigh(rec, st->sample);
		return true;
	case XPU_REC_PMU_COUNTER:
		if (st->n_readings++ % st->sample)
			break;
		return true;
	case XPU_REC_LAUNCH:
		if (corr & XPU_LAUNCH_GRAPH_NODE)
			return true;
		/* fall through */
	case XPU_REC_CUDA_API:
	case XPU_REC_GPU_KERNEL:
	case XPU_REC_GPU_MEMCPY:
	case XPU_REC_GPU_MEMSET:
	case XPU_REC_GPU_SYNC:
		if (corr ? key_mix(h->pid, corr) % st->sample : st->n_uncorrelated++ % st->sample)
			break;
		return true;
	default:
		return true;
	}
	s->sampled_out++;
	return false;
}

/* The stages before the join: filter and sample, learn (names, maps, modules), unwind. */
static void on_record(struct shard *s, struct stage *st, void *rec, __u32 size)
{
	const struct xpu_rec *h = rec;
	const struct xpu_py_stack *py = NULL;
	int n;

	if (!stage__pass(s, st, rec))
		return;
	if (h->type == XPU_REC_STRING)
		names__put(s->names, rec);
	if (s->sym && (st->enrich & CONF_ENRICH_SYMBOLS))
		symbols__note(s, rec);
	/* A mapping a process reported (the CUPTI library's loaded images) or was seen to make
	 * (the cpu source's mmap tracepoints): for the symbolizer, never an event. Without
	 * symbols there is nothing to tell. */
	if (h->type == XPU_REC_MODULE) {
		const struct xpu_module *m = rec;
		char path[XPU_PATH_MAX + 1];

		if (s->sym && (st->enrich & CONF_ENRICH_SYMBOLS)) {
			memcpy(path, m->path, m->path_len);
			path[m->path_len] = '\0';
			/* its user frames can be named now, even if its maps never could be read */
			if (!symbolizer__module(s->sym, h->pid, h->ts_ns, m->start, m->end,
						m->pgoff, m->dev, m->ino, path))
				pid_bit_set(s->sym_live, h->pid, true);
		}
		return;
	}
	/* a new image, or a pid used again: its interpreter is another one */
	if (h->type == XPU_REC_PROC_EXEC && s->py)
		pystack__drop_pid(s->py, h->pid);
	/* the Python frames as they came: the unwound record below has no room for them */
	if (h->flags & XPU_STACK_F_PY)
		py = xpu_py_stack__of(h);
	/* After the maps were read (a process's first record may be this one): the walk
	 * needs its files. */
	if (h->flags & XPU_STACK_F_COPY &&
	    (h->type == XPU_REC_CPU_SAMPLE || h->type == XPU_REC_LAUNCH)) {
		/* one try: a failed allocation is not repeated for every record after it */
		if (!s->sym && !s->sym_failed && symbols__open(s))
			s->sym_failed = true; /* frame pointers only, counted in no_maps */
		n = stack_unwind__record(s->sym, rec, s->unwound, UNWOUND_MAX, &s->uw);
		if (n < 0)
			return; /* cannot happen for a validated record: the buffer fits any */
		rec = s->unwound;
		size = (__u32)n;
	}
	if (py) {
		/* one try, as for the symbolizer */
		if (!s->py && !s->py_failed && !(s->py = pystack__new()))
			s->py_failed = true; /* native frames only */
		n = pystack__merge(s->py, rec, py, s->merged, UNWOUND_MAX);
		if (n < 0)
			return; /* cannot happen for a validated record: the buffer fits any */
		rec = s->merged;
		size = (__u32)n;
	}
	if (join__record_enrich(s->join, rec, size, s->now, st->enrich) == JOIN_ROUTED)
		s->filtered++; /* shard 0 sends it: never an event here */
}

static void publish_unwind(struct shard *s, __u64 *v)
{
	const struct stack_unwind_stats *u = &s->uw;
	struct symbolizer_stats ss = { 0 };

	if (s->sym)
		symbolizer__stats(s->sym, &ss);
	v[C_UNWOUND] = u->stacks;
	v[C_UNWIND_COMPLETE] = u->ends[UNWIND_END_OUTERMOST];
	v[C_UNWIND_TRUNCATED] = u->ends[UNWIND_END_MAX_FRAMES] + u->ends[UNWIND_END_STACK];
	v[C_UNWIND_NO_RULE] = u->ends[UNWIND_END_NO_RULE];
	v[C_UNWIND_BAD_CFI] = u->ends[UNWIND_END_BAD_CFI];
	v[C_UNWIND_LOOP] = u->ends[UNWIND_END_LOOP];
	v[C_UNWIND_FAILED] = v[C_UNWIND_NO_RULE] + v[C_UNWIND_BAD_CFI] + v[C_UNWIND_LOOP];
	v[C_UNWIND_FRAMES_CFI] = u->frames_cfi;
	v[C_UNWIND_FRAMES_FP] = u->frames_fp;
	v[C_UNWIND_NS] = u->stacks ? u->ns / u->stacks : 0;
	v[C_CFI_FILES] = ss.cfi_files;
	v[C_CFI_KIB] = ss.cfi_bytes / 1024;
	v[C_CFI_EVICTED] = ss.cfi_evicted;
	v[C_MODULES] = ss.modules;
	v[C_MODULE_FRAMES] = ss.module_frames;
}

static void publish_python(struct shard *s, __u64 *v)
{
	struct pystack_stats p = { 0 };

	if (s->py)
		pystack__stats(s->py, &p);
	v[C_PY_STACKS] = p.stacks;
	v[C_PY_NS] = p.stacks ? p.ns / p.stacks : 0;
	v[C_PY_UNMATCHED] = p.unmatched;
	v[C_PY_DROPPED] = p.dropped;
	v[C_PY_NO_LAYOUT] = p.no_layout;
	v[C_PY_NAMED] = p.named;
	v[C_PY_UNNAMED] = p.unnamed;
	v[C_PY_CODES_RESOLVED] = p.codes.resolved;
	v[C_PY_CODES_FAILED] = p.codes.failed;
	v[C_PY_CODES_CACHED] = p.codes.cached;
	v[C_SINK_REDIALS] = s->redials;
}

static void publish(struct shard *s)
{
	struct join_stats st;
	__u64 v[C_N];
	int i;

	join__stats(s->join, &st);
	v[C_IN] = st.in;
	v[C_MATCHED] = st.matched;
	v[C_UNMATCHED] = st.unmatched;
	v[C_WAITED] = st.waited;
	v[C_EXPIRED] = st.expired;
	v[C_EVICTED] = st.evicted;
	v[C_LATE] = st.late_launch;
	v[C_PENDING] = st.pending;
	v[C_EVENTS] = s->events;
	v[C_BATCHES] = s->batches;
	v[C_SEND_WAITS] = s->send_waits;
	v[C_EVENTS_UNSENT] = s->unsent;
	v[C_NAMES] = s->names->n;
	v[C_NAMES_DROPPED] = s->names->dropped;
	v[C_NEST_LOST] = st.nest_lost;
	v[C_TIME_MATCHED] = st.time_matched;
	v[C_STATE_LOST] = s->lost;
	v[C_KEYS_LOST] = s->lost_keys;
	v[C_NAMES_LOST] = s->lost_names;
	v[C_ENCODE_ERRORS] = s->encode_errors;
	v[C_STREAMS] = st.streams;
	v[C_STREAMS_DROPPED] = st.streams_dropped;
	v[C_STREAMS_FULL] = st.streams_full;
	v[C_STREAM_OVERLAPS] = st.stream_overlaps;
	v[C_STREAM_UNORDERED] = st.stream_unordered;
	v[C_NAMES_FREED] = s->names->freed;
	v[C_FILTERED] = s->filtered;
	v[C_SAMPLED_OUT] = s->sampled_out;
	v[C_TIME_MATCHED_SAMPLES] = st.time_matched_samples;
	v[C_SAMPLED_IN] = st.sampled_in;
	v[C_WAITING] = st.waiting;
	v[C_READINGS] = st.readings;
	v[C_READINGS_DROPPED] = st.readings_dropped;
	v[C_COUNTER_PIDS] = st.counter_pids;
	v[C_COUNTER_PIDS_EVICTED] = st.counter_pids_evicted;
	v[C_COUNTED] = st.counted;
	v[C_COUNTED_ESTIMATED] = st.counted_estimated;
	v[C_COUNTERS_ROUTED] = st.counters_routed;
	v[C_NEST_CLOSED] = st.nest_closed;
	v[C_NEST_TOO_OLD] = st.nest_too_old;
	v[C_GRAPH_NODE_STACKS] = st.graph_node_stacks;
	v[C_GRAPH_APPROXIMATE] = st.graph_approximate;
	v[C_GRAPH_NODES] = st.graph_nodes;
	v[C_GRAPH_NODES_EVICTED] = st.graph_nodes_evicted;
	v[C_LAUNCH_WAITED] = st.launch_waited;
	v[C_STACKS_KEPT] = st.stacks_kept;
	v[C_STACKS_TRIMMED] = st.stacks_trimmed;
	v[C_LAUNCH_WAIT_EXPIRED] = st.launch_wait_expired;
	v[C_RANGE_WAITED] = st.range_waited;
	v[C_RANGE_WAIT_EXPIRED] = st.range_wait_expired;
	v[C_RANGE_WAIT_FULL] = st.range_wait_full;
	v[C_FRAMES] = v[C_FRAMES_UNKNOWN] = v[C_SYMBOLIZE_NS] = 0;
	if (s->sym) {
		struct symbolizer_stats ss;

		symbolizer__stats(s->sym, &ss);
		v[C_FRAMES] = ss.frames;
		v[C_FRAMES_UNKNOWN] = s->frames_unknown;
		v[C_SYMBOLIZE_NS] = ss.frames ? ss.resolve_ns / ss.frames : 0;
	}
	publish_unwind(s, v);
	publish_python(s, v);
	for (i = 0; i < C_N; i++)
		actor__count(s->a, s->counters[i], v[i]);
}

/* Read ring r up to pos, where the last checkpoint says the previous incarnation got to:
 * what lies before it has gone out (or is counted lost) already. */
static void ring_skip_to(struct shard *s, struct ring *r, __u64 pos)
{
	__u64 skipped = 0;

	while (ring__read_pos(r) < pos && ring__read(r, s->scratch, s->scratch_len) > 0)
		skipped++;
	if (ring__read_pos(r) != pos)
		fprintf(stderr,
			PROG ": ring position %llu is not the checkpoint's %llu; going on from "
			     "there\n",
			(unsigned long long)ring__read_pos(r), (unsigned long long)pos);
	ring__release(r);
}

/* Pick up where the previous incarnation of this shard checkpointed, if there was one. */
static int resume(struct shard *s, unsigned int shard, __u64 *first_id)
{
	struct xpu_ckpt_slot last;
	unsigned int i;
	int valid, err;

	err = checkpoint__open(s->a->dirfd, shard, s->n_rings, &s->ckpt, &last, &valid);
	if (err) {
		fprintf(stderr, PROG ": unable to open the checkpoint: %s\n", strerror(-err));
		return err;
	}
	if (!valid)
		return 0;
	for (i = 0; i < s->n_rings; i++)
		ring_skip_to(s, s->rings[i], last.pos[i]);
	s->seq = last.seq_next;
	if (last.next_id)
		*first_id = last.next_id;
	s->lost = last.lost + last.held;
	s->lost_keys = last.lost_keys + last.held_keys;
	s->lost_names = last.lost_names + last.held_names;
	s->filtered = last.filtered;
	s->sampled_out = last.sampled_out;
	fprintf(stderr,
		PROG ": resumed from the checkpoint at event %llu; lost with the previous run's "
		     "state: %llu held GPU records, %llu pending launches, %llu names\n",
		(unsigned long long)s->seq, (unsigned long long)last.held,
		(unsigned long long)last.held_keys, (unsigned long long)last.held_names);
	return 0;
}

/* The source's stage keys, as the loader validated them (absent ones took defaults). */
static void stage__load(struct stage *st, const struct conf_actor *src)
{
	*st = (struct stage){ .keep = src->filter,
			      .enrich = src->enrich,
			      .sample = src->sample,
			      .min_dur_ns = src->min_duration_us * 1000 };
}

/*
 * How long a kernel whose CUDA_API came waits for its LAUNCH (join_opts.launch_wait_ns): only
 * when a LAUNCH can come late, that is from a `cpu` source's launch-marker uprobe, which a
 * cupti source asks for with launch_stacks = marker. With `inproc` (the default) the library
 * writes each LAUNCH into its own ring before the kernel's activity, so it is never late;
 * with `no` there is none to wait for. A marker LAUNCH waits in the CPU source's BPF ring up
 * to its drain_ms, and the CUPTI library's activity may come sooner: the longest drain_ms
 * plus slack_ms (launch_slack_ms, 100 by default) for the rings and the shard's turns; a
 * loaded machine, where the cpu source runs late, trades latency for stacks with more.
 */
static __u64 launch_wait_ns(const struct conf *conf, unsigned long long slack_ms)
{
	unsigned long long longest = 0;
	bool cpu = false, marker = false;
	struct inproc_options gpu;
	struct cpu_options c;
	unsigned int i;

	for (i = 0; i < conf->n_actors; i++) {
		const struct conf_actor *src = &conf->actors[i];

		if (src->role != CONF_ROLE_SOURCE)
			continue;
		if (src->schema == &cupti_conf_kind &&
		    !conf_actor__options(src, &gpu, sizeof(gpu)) &&
		    gpu.launch_stacks == LAUNCH_STACKS_MARKER)
			marker = true;
		if (src->schema != &cpu_conf_kind || conf_actor__options(src, &c, sizeof(c)))
			continue;
		cpu = true;
		if (c.drain_ms > longest)
			longest = c.drain_ms;
	}
	return cpu && marker ? (longest + slack_ms) * 1000000ull : 0;
}

static int open_shard(struct shard *s, struct actor *a)
{
	struct correlator_options c;
	struct join_opts o = { 0 };
	char name[4300];
	unsigned int i;
	int err = 0;

	if (conf_actor__options(a->self, &c, sizeof(c))) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a->self->section);
		return -EINVAL;
	}
	o.ttl_ns = c.ttl_ms * 1000000ull;
	o.linger_ns = c.linger_ms * 1000000ull;
	o.exit_grace_ns = c.exit_grace_ms * 1000000ull;
	o.max_pending = (__u32)c.max_pending;
	o.max_waiting = (__u32)c.max_waiting;
	o.max_streams = (__u32)c.max_streams;
	o.stream_idle_ns = c.stream_idle_ms * 1000000ull;
	/* ids unique across shards: the shard number in the top byte */
	o.first_id = ((__u64)a->self->shard << 56) + 1;
	o.shard = a->self->shard;
	o.launch_wait_ns = launch_wait_ns(a->conf, c.launch_slack_ms);
	if (o.launch_wait_ns >= o.ttl_ns && !a->self->shard)
		/* the join lets GPU work go at its TTL, waiting or not: say so at each start of
		 * shard 0, in the log and in `xpusup status`, which record shows (the config
		 * cannot: the wait sums keys of two sections, and counts only in marker mode).
		 * Within the 120 bytes a status problem has. */
		actor__problem(a,
			       "launch-stack wait (drain_ms + launch_slack_ms = %llu ms) cut to "
			       "ttl_ms (%llu ms): lower the slack or raise ttl_ms",
			       (unsigned long long)(o.launch_wait_ns / 1000000),
			       (unsigned long long)c.ttl_ms);
	o.range_wait_ns = c.range_wait_ms * 1000000ull;
	o.no_exact = !c.strategies.exact;
	o.time_window_ns = c.strategies.window_ms * 1000000ull;
	for (i = 0; i < a->conf->n_actors; i++) {
		struct ring_stats rs;

		if (a->conf->actors[i].role != CONF_ROLE_SOURCE)
			continue;
		snprintf(name, sizeof(name), XPU_RING_NAME_FMT, a->conf->actors[i].name,
			 a->self->shard);
		s->rings[s->n_rings] = ring__open(a->dirfd, name, RING_CONSUMER);
		if (!s->rings[s->n_rings]) {
			fprintf(stderr, PROG ": unable to open ring %s: %s\n", name,
				strerror(errno));
			return -errno;
		}
		stage__load(&s->stages[s->n_rings], &a->conf->actors[i]);
		ring__hold(s->rings[s->n_rings], true);
		ring__stats(s->rings[s->n_rings], &rs);
		s->ring_quarter[s->n_rings] = rs.capacity / 4;
		if (rs.max_record > s->scratch_len)
			s->scratch_len = rs.max_record;
		s->n_rings++;
	}
	for (i = 0; i < s->n_rings; i++) {
		if (!(s->stages[i].enrich & CONF_ENRICH_SYMBOLS) || s->sym)
			continue;
		err = symbols__open(s);
		if (err)
			return err;
	}
	s->unwound = aligned_alloc(8, UNWOUND_MAX);
	s->merged = aligned_alloc(8, UNWOUND_MAX);
	if (!s->unwound || !s->merged)
		return -ENOMEM;
	s->scratch = aligned_alloc(8, s->scratch_len ? s->scratch_len : 8);
	s->names = calloc(1, sizeof(*s->names));
	if (!s->scratch || !s->names)
		return -ENOMEM;
	err = resume(s, a->self->shard, &o.first_id);
	if (err)
		return err;
	s->join = join__new(&o, on_event, s);
	s->enc = xpu_wire_enc__new(a->self->shard);
	if (!s->join || !s->enc || xpu_wire_enc__begin(s->enc, s->seq))
		return -ENOMEM;
	join__set_names(s->join, names__get);
	join__set_gone(s->join, names__drop_pid);
	checkpoint(s, s->seq); /* what was lost is counted once, whatever happens next */
	for (i = 0; i < a->conf->n_actors; i++) {
		if (a->conf->actors[i].role != CONF_ROLE_SINK)
			continue;
		s->sink_names[s->n_sinks] = a->conf->actors[i].name;
		if (sink_dial(s, s->n_sinks))
			return -EIO;
		s->n_sinks++;
	}
	for (i = 0; i < C_N; i++)
		s->counters[i] = actor__counter(a, counter_names[i]);
	return 0;
}

static void shard__close(struct shard *s)
{
	unsigned int i;

	for (i = 0; i < s->n_rings; i++)
		ring__close(s->rings[i]);
	/* bounded, all together: a push socket with a full queue at exit */
	sockets__close_within(s->sinks, s->n_sinks, 1000, PROG);
	join__free(s->join);
	xpu_wire_enc__free(s->enc);
	checkpoint__close(s->ckpt);
	free(s->scratch);
	free(s->unwound);
	free(s->merged);
	pystack__free(s->py);
	symbolizer__free(s->sym);
	free(s->sym_tried);
	free(s->sym_live);
	free(s->sym_again);
	free(s->sym_kernel);
	if (s->names)
		for (i = 0; i < 2 * NAMES_MAX; i++)
			free(s->names->slots[i].text);
	free(s->names);
}

/* One turn over every ring, up to CONSUME_MAX records from each, and for at most about
 * RING_TURN_NS on each: a source whose records are slow to take (the first samples of a
 * process load its symbols and unwind tables: milliseconds each) must not keep the others'
 * waiting, which the join may need first (a program's range pushes, before the samples taken
 * inside them). Returns the records read. */
static __u64 turn(struct shard *s)
{
	__u64 total = 0, until;
	unsigned int i, n;
	int size;

	s->now = xpu_now_ns();
	for (i = 0; i < s->n_rings; i++) {
		until = s->now + RING_TURN_NS;
		for (n = 0; n < CONSUME_MAX; n++) {
			size = ring__read(s->rings[i], s->scratch, s->scratch_len);
			if (size <= 0)
				break;
			on_record(s, &s->stages[i], s->scratch, (__u32)size);
			/* Held space must go back before the producer runs short of it. */
			if (ring__unreleased(s->rings[i]) > s->ring_quarter[i])
				finish_batch(s);
			/* the clock every few records: a vDSO call, not a syscall */
			if (n % 16 == 15 && (s->now = xpu_now_ns()) > until) {
				n++;
				break;
			}
		}
		total += n;
	}
	join__expire(s->join, s->now);
	return total;
}

int main(int argc, char **argv)
{
	struct shard s = { 0 };
	struct actor a;
	__u64 last_publish = 0;
	unsigned int idle_ring = 0;
	int err;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	s.a = &a;
	err = open_shard(&s, &a);
	if (err) {
		shard__close(&s);
		actor__fini(&a);
		return err == -EINVAL ? ACTOR_EXIT_PERMANENT : ACTOR_EXIT_RESTART;
	}
	actor__ready(&a);
	while (!actor__stopping(&a)) {
		if (!turn(&s)) {
			/* Nothing anywhere: a partial batch goes out, but a small one (a trickle of
			 * records, a storm of short processes under target = all, made a message,
			 * and the sink's and nng's wake-ups, about every record) only once its first
			 * event has waited BATCH_LINGER_NS: a shard that catches up under load still
			 * sends at once (latency, and the ring space the batch holds). We sleep on
			 * one ring at a time (a producer's flush wakes us). With one ring that wake is all
			 * there is to wait for: the sleep is as long as the status may wait
			 * (IDLE_ONE_RING_NS); with more, a ring not slept on waits for the turn, so
			 * turns are short (IDLE_RINGS_NS); either way no longer than the partial
			 * batch may still wait. An idle shard woke 500 times a second, 1.7 % of a
			 * CPU here (docs/performance.md). */
			__u64 wait = s.n_rings == 1 ? IDLE_ONE_RING_NS : IDLE_RINGS_NS;

			if (xpu_wire_enc__count(s.enc) &&
			    xpu_wire_enc__count(s.enc) < BATCH_LINGER_MAX &&
			    s.now - s.batch_since < BATCH_LINGER_NS) {
				if (BATCH_LINGER_NS - (s.now - s.batch_since) < wait)
					wait = BATCH_LINGER_NS - (s.now - s.batch_since);
			} else {
				finish_batch(&s);
			}
			if (s.n_rings)
				ring__wait(s.rings[idle_ring++ % s.n_rings], wait);
			else
				actor__sleep_ms(&a, 10);
		}
		if (s.now - last_publish > 10000000) {
			publish(&s);
			last_publish = s.now;
		}
		actor__beat(&a);
	}
	/* SIGTERM: the sources have stopped (they stop first); drain what they left. */
	stop_deadline(&s);
	while (turn(&s))
		;
	join__flush(s.join);
	finish_batch(&s);
	publish(&s);
	if (s.unsent) /* the status goes with the session: the log keeps the count */
		fprintf(stderr,
			PROG
			": %llu events not sent to sinks given up at the stop (events_unsent)\n",
			(unsigned long long)s.unsent);
	if (s.n_sinks)
		wait_sinks(&s);
	shard__close(&s);
	actor__fini(&a);
	return 0;
}
