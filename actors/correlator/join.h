/* SPDX-License-Identifier: MIT */
/*
 * The exact join of one correlator shard: CPU-side launch records (LAUNCH from the
 * launch-marker uprobe, CUDA_API from CUPTI) with the GPU activity they caused (GPU_KERNEL,
 * GPU_MEMCPY, GPU_MEMSET, GPU_SYNC) on (pid, correlation id), whatever the arrival order.
 *
 * Single-threaded (a shard owns its state; no locks). Every record goes out as a correlated
 * event through the emit callback, exactly once:
 *   - LAUNCH and CUDA_API at once (they start pending state for their key);
 *   - GPU activity at once when its launch side is known (corr_type EXACT_ID, confidence 1,
 *     links launched_by, the LAUNCH stack attached); otherwise it waits, and goes out when the
 *     launch side arrives, or unmatched (corr_type NONE) when its state expires or is evicted.
 *     With launch_wait_ns, a kernel whose CUDA_API is known but not its LAUNCH (the stack,
 *     through the CPU source's slower ring) waits for the LAUNCH up to that long, then goes
 *     out with the API call alone;
 *   - per thread, RANGE push/pop keep a stack of open ranges: CUDA_API and LAUNCH
 *     get parent_id = the innermost range, root_id = the outermost, an inside_range link
 *     (corr_type NESTING); a pop links `completes` to its push; a GPU record links
 *     inside_range to its launch's range and takes its root. CPU samples come through the
 *     CPU source's ring, often well after the ranges around them closed: with a history of
 *     each thread's last closed ranges they are nested by their own timestamp; one older
 *     than the history goes out un-nested and counted (nest_too_old);
 *   - LAUNCH records of CUDA graph node creation (correlation id XPU_LAUNCH_GRAPH_NODE |
 *     node id) are no join keys: per (pid, node id) their stack is kept, and a graph
 *     kernel (XPU_KERNEL_F_GRAPH), copy or memset (XPU_COPY_F_GRAPH) joined to its graph
 *     launch takes the stack of its node's creation (exact); without one it keeps the
 *     graph launch's stack, corr_type APPROXIMATE, confidence 0.5. Kept for
 *     max_graph_nodes nodes (the newest), dropped after the process's exit grace;
 *   - per (pid, device, stream), the last few activities by start time: a kernel,
 *     copy or memset links same_stream_prev to the one before it on its stream, whatever the
 *     arrival order within that window; overlaps on a stream are counted. Stream state is
 *     dropped after the process's exit grace or stream_idle_ns without activity;
 *   - per process, the last readings of each of its process-scope counters (PMU_COUNTER): a
 *     GPU kernel and a range end (pop, end) get the deltas of up to XPU_WIRE_COUNTERS_MAX of
 *     them over their window, interpolated between readings (docs/correlator.md); dropped
 *     after the process's exit grace;
 *   - a CPU-scope counter reading reaches every shard (the PMU source writes it into every
 *     ring): only shard 0 sends it on, so sinks see each reading once.
 *
 * State is bounded: at most max_pending keys; each expires ttl_ns after it was created,
 * linger_ns after its first match (a CUDA graph launch has many kernels on one correlation
 * id, delivered together), or exit_grace_ns after its process exited, whichever comes
 * first. Expiry costs what expires, not the table size: two FIFO queues ordered by deadline.
 * When full, the oldest key is evicted (its waiting GPU records go out unmatched, counted).
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_JOIN_H
#define XPUSUP_ACTORS_CORRELATOR_JOIN_H

#include <stdbool.h>

#include "common/wire.h"

struct join;

struct join_opts {
	__u64 ttl_ns; /* lifetime of pending state */
	__u64 exit_grace_ns; /* after PROC_EXIT: late GPU records still join within this */
	__u64 linger_ns; /* after a key's first match: its other GPU records (graph) within this */
	__u32 max_pending; /* keys held at once */
	__u32 max_waiting; /* GPU records waiting for their launch, at once */
	__u64 first_id; /* ids given to events: first_id, first_id + 1, ... */
	bool no_exact; /* strategies without correlation_id: no (pid, correlation id) join */
	__u64 time_window_ns; /* timestamp strategy: 0 off; else a GPU record that found no
			       * launch by id takes the latest CUDA_API call of its process that
			       * began at most this long before it (confidence 0.5) */
	__u32 max_streams; /* (pid, device, stream) states held at once; 0: 16384 */
	__u64 stream_idle_ns; /* a stream without activity this long is dropped; 0: 60 s */
	__u32 shard; /* this shard's number: CPU-scope counter readings go out from shard 0 */
	__u32 max_graph_nodes; /* CUDA graph node creation stacks held at once; 0: 65536 */
	__u64 launch_wait_ns; /* 0: a GPU record goes out once either launch side is known; else
			       * a kernel whose CUDA_API came waits this long for its LAUNCH */
	__u64 range_wait_ns; /* 0: a CPU sample goes out at once; else a sample of a process
			      * with ranges waits up to this long for its thread's range records
			      * to reach its time (they come in the program's batches) */
};

struct join_stats {
	__u64 in; /* records offered */
	__u64 matched; /* GPU records joined to their launch side */
	__u64 unmatched; /* GPU records that went out without one */
	__u64 waited; /* GPU records that arrived before their launch side */
	__u64 expired; /* keys removed by TTL or exit grace */
	__u64 evicted; /* keys removed because max_pending (or max_waiting) was reached */
	__u64 late_launch; /* LAUNCH records for a key whose GPU records had already gone out */
	__u64 nest_lost; /* range pushes or pops that could not be nested (depth, table, orphan pop) */
	__u64 time_matched; /* GPU records joined by the timestamp strategy to an API call */
	__u64 time_matched_samples; /* ... to the CPU sample just before (confidence 0.25) */
	__u64 sampled_in; /* CPU samples taken inside a CUDA API call of their thread */
	__u64 streams; /* (pid, device, stream) states held now */
	__u64 streams_dropped; /* stream states dropped: idle, process exit */
	__u64 streams_full; /* GPU records on a stream the table had no room for */
	__u64 stream_overlaps; /* activity that began before the previous one on its stream ended */
	__u64 stream_unordered; /* activity older than the stream's window: no same_stream_prev */
	__u64 pending; /* keys held now */
	__u64 waiting; /* GPU records waiting now */
	__u64 readings; /* process-scope counter readings kept for the counters stage */
	__u64 readings_dropped; /* not kept: counter never ran, past the bounds, or too old */
	__u64 counter_pids; /* processes with counter readings held now */
	__u64 counter_pids_evicted; /* processes whose readings went to make room */
	__u64 counted; /* events that went out with counters */
	__u64 counted_estimated; /* of which some delta was extrapolated */
	__u64 counters_routed; /* CPU-scope readings not sent: shard 0 sends them */
	__u64 nest_closed; /* CPU samples placed in a range that had closed when they came */
	__u64 nest_too_old; /* ... older than their thread's range history: not nested */
	__u64 graph_node_stacks; /* graph GPU work given the stack of its node's creation */
	__u64 graph_approximate; /* graph GPU work left with the graph launch's stack */
	__u64 graph_nodes; /* node creation stacks held now */
	__u64 graph_nodes_evicted; /* node stacks dropped to make room (max_graph_nodes) */
	__u64 launch_waited; /* GPU records held for their LAUNCH after their API call came */
	__u64 launch_wait_expired; /* keys whose LAUNCH did not come within launch_wait_ns */
	__u64 range_waited; /* CPU samples held for their thread's range records */
	__u64 range_wait_expired; /* ... let go at range_wait_ns, the records not there yet */
	__u64 range_wait_full; /* ... let go early: HOLD_MAX samples were held */
	__u64 range_held; /* CPU samples held now */
	__u64 stacks_kept; /* LAUNCH stack blocks kept for reuse now */
	__u64 stacks_trimmed; /* ... given back to malloc, unused for a second or more */
};

typedef void (*join_emit_fn)(const struct xpu_cevent *ev, void *ctx);

/* Called once a process's exit grace has passed (its late records have had their chance):
 * the shard drops what else it keeps per process (names). */
typedef void (*join_gone_fn)(__u32 pid, void *ctx);

/* join__set_gone - be told when a process's exit grace has passed (optional). */
void join__set_gone(struct join *j, join_gone_fn fn);

/* Looks up the text of STRING id of process pid (kernel, range and counter names travel once
 * as STRING records); kind is the XPU_STR_* the record refers to (XPU_STR_KERNEL,
 * XPU_STR_RANGE, XPU_STR_COUNTER). Returns NULL when unknown. The text must stay valid until
 * the emit callback of the event returns. */
typedef const char *(*join_name_fn)(__u32 pid, __u64 id, __u32 kind, __u32 *len, void *ctx);

/* join__set_names - resolve GPU_KERNEL name_id, RANGE name_id and PMU_COUNTER counter_id
 * through fn (optional; without it counters are never attached: they travel by name). */
void join__set_names(struct join *j, join_name_fn fn);

/* join__new - NULL + errno (EINVAL for a zero limit or max_pending over 1 << 24, ENOMEM).
 * Memory is reserved up front
 * (about sizeof(pending entry) * max_pending + a GPU record copy per max_waiting) and
 * touched as it is first used, so a new shard is ready at once. */
struct join *join__new(const struct join_opts *opts, join_emit_fn emit, void *ctx);
void join__free(struct join *j);

/* join__record's return for a CPU-scope counter reading on a shard other than 0: not sent
 * (and no event id taken), because shard 0 sends the same reading. */
#define JOIN_ROUTED 1

/*
 * join__record - take one validated record (xpu_rec__validate passed). now_ns is the
 * shard's clock (CLOCK_MONOTONIC at processing, never decreasing from call to call), which
 * TTLs are measured on. Emits zero or more events before it returns. Returns 0, or
 * JOIN_ROUTED (the record will never go out from this shard: a caller that accounts for
 * every record counts it apart).
 */
int join__record(struct join *j, const void *rec, __u32 size, __u64 now_ns);

/*
 * join__record_enrich - as join__record, with the enrich stages of the record's source
 * (CONF_ENRICH_* bits of common/config.h): NAMES resolves kernel, range and counter names,
 * STACKS attaches the launch stack to GPU activity, STREAMS adds same_stream_prev links,
 * COUNTERS attaches counter deltas to GPU kernels and range ends. Counter readings are kept
 * whatever their own source's stages. join__record is this with every stage.
 */
int join__record_enrich(struct join *j, const void *rec, __u32 size, __u64 now_ns,
			unsigned int enrich);

/* join__expire - remove what expired by now_ns, emitting waiting GPU records unmatched. */
void join__expire(struct join *j, __u64 now_ns);

/* join__flush - expire everything (stop): every waiting GPU record goes out. */
void join__flush(struct join *j);

void join__stats(const struct join *j, struct join_stats *st);

/* The id the next record will get (a restarted shard carries on from its checkpoint). */
__u64 join__next_id(const struct join *j);

/* Bytes of state per pending key (allocated up front for max_pending), not counting a
 * LAUNCH stack (8 bytes a frame, allocated when the LAUNCH arrives), nor the 32 bytes of
 * another queue with launch_wait_ns. */
size_t join__entry_size(void);

#endif /* XPUSUP_ACTORS_CORRELATOR_JOIN_H */
