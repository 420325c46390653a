/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity records -> ring records (include/xpusup/event.h), the part of the injection
 * library that needs no GPU: it reads the CUDA 13 activity structs (CUpti_ActivityKernel10,
 * CUpti_ActivityMemcpy6, ...) and hands each finished record to a put function, so the test
 * feeds it constructed structs and compares the bytes with golden files (cupti/testdata/).
 *
 * Names travel once: the first kernel of a name is preceded by a STRING record (kind
 * XPU_STR_KERNEL, ids 1, 2, ... per process, top bit clear: the annotate library numbers its
 * own names with the top bit set). CUDA graphs: an instantiated graph's nodes are clones;
 * conv__node_cloned tells which original each clone came from, and a graph kernel's
 * graph_node_id is the original's id (the one the launch marker saw at node creation).
 *
 * Not thread-safe: the library calls it under its producer lock.
 */
#ifndef XPUSUP_CUPTI_CONVERT_H
#define XPUSUP_CUPTI_CONVERT_H

#include <cupti_activity.h>
#include <errno.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

/* Receives each converted record (size bytes, a multiple of 8). Returns 0 or -errno (the
 * record was dropped: counted by the caller, conversion goes on). */
typedef int (*conv_put_fn)(void *ctx, const void *rec, __u32 size);

struct conv;

struct conv_stats {
	__u64 activities; /* activity records offered */
	__u64 records; /* ring records produced (STRING included) */
	__u64 put_failed; /* of which the put function refused */
	__u64 kernels, copies, memsets, syncs, api_calls, memory, overheads, ranges;
	__u64 external; /* external correlation records: counted, not carried (docs/cupti.md) */
	__u64 overheads_short; /* buffer requests and flushes under OVERHEAD_BUFFER_MIN_NS: not sent */
	__u64 other; /* activity kinds this library does not convert */
	__u64 strings; /* STRING records sent */
	__u64 names_uncached; /* names sent again because the name table was full */
	__u64 names_cut; /* names longer than XPU_STRING_MAX, cut */
	__u64 clones; /* graph node clones known */
	__u64 incomplete; /* kernels, copies and memsets without their times: not sent */
};

/* conv__new - NULL + errno (ENOMEM). pid goes into GPU records, which carry no thread. */
struct conv *conv__new(__u32 pid, conv_put_fn put, void *ctx);
void conv__free(struct conv *c);

/*
 * conv__activity - convert one activity record. Kinds: KERNEL, CONCURRENT_KERNEL, MEMCPY,
 * MEMCPY2, MEMSET, SYNCHRONIZATION, RUNTIME, DRIVER, MEMORY2, OVERHEAD (a RANGE start/end
 * pair in domain "cupti overhead"), EXTERNAL_CORRELATION (counted only). Returns the number
 * of records produced (0 for kinds not carried), or -errno from the put function.
 */
int conv__activity(struct conv *c, const CUpti_Activity *a);

/* conv__range - an NVTX event (phase enum xpu_range_phase) as a RANGE record with
 * XPU_RANGE_F_NVTX; name may be NULL (a pop or an end). domain_id 0 is NVTX's default domain,
 * others are ids given by conv__domain. */
int conv__range(struct conv *c, __u64 ts_ns, __u32 tid, __u32 phase, __u64 range_id,
		__u64 domain_id, const char *name);

/* conv__domain - the id of an NVTX domain (a handle's value), its name sent once as a STRING
 * of kind XPU_STR_DOMAIN. Returns the id, or 0 when it could not be sent. */
__u64 conv__domain(struct conv *c, __u64 handle, const char *name, __u64 ts_ns);

/* conv__node_cloned - clone_id was cloned from orig_id (graph instantiation, or a clone of a
 * clone): kernels of clone_id report the original's id. -ENOMEM when the table is full. */
int conv__node_cloned(struct conv *c, __u64 clone_id, __u64 orig_id);

/* conv__node_origin - the original node id of node_id (itself when it is no known clone). */
__u64 conv__node_origin(const struct conv *c, __u64 node_id);

/* The launch APIs (CUPTI callback ids) the library marks: kernel launches, cooperative
 * launches and graph launches, runtime and driver. */
extern const __u32 conv_runtime_launches[];
extern const __u32 conv_driver_launches[];
extern const size_t conv_n_runtime_launches, conv_n_driver_launches;

/* The API calls that only ask for state (the current device, the last error, an attribute, a
 * function's address or name) and that the library does not record unless api_queries = yes:
 * in PyTorch's training loop (tests/cuda/torch_loop.py, on an H200) they were 93 % of the
 * API records, cudaGetDevice alone 57 %. None launches, copies, synchronises or allocates. */
extern const __u32 conv_runtime_queries[];
extern const __u32 conv_driver_queries[];
extern const size_t conv_n_runtime_queries, conv_n_driver_queries;

/* conv__api_name - the API's name from the CUPTI headers (actors/sink/cuda_api_names.h), or
 * NULL for an id they do not name. */
const char *conv__api_name(bool driver, __u32 cbid);

/* conv__is_transfer - whether cbid (of the driver API when driver, else the runtime API) copies
 * or sets device memory: by its name in the CUPTI headers (actors/sink/cuda_api_names.h),
 * cudaMemcpy*, cudaMemset*, cuMemcpy*, cuMemset*. The library records the stack of these calls
 * as of launches, so a copy or a memset sits under the code that asked for it. */
bool conv__is_transfer(bool driver, __u32 cbid);

/* conv__transfers - the callback ids of conv__is_transfer's APIs, of one API, into ids (max
 * of them). Returns how many there are (more than max: the rest did not fit). */
size_t conv__transfers(bool driver, __u32 *ids, size_t max);

/* conv__is_launch - whether cbid (of the driver API when driver, else the runtime API) is one
 * of the launch APIs above. */
bool conv__is_launch(bool driver, __u32 cbid);

/*
 * A set of callback ids of both APIs, a bit an id: the launches and transfers whose stacks
 * are taken (conv__stack_apis), or those of them whose callbacks CUPTI accepted. Ids run to
 * CUPTI_RUNTIME_TRACE_CBID_SIZE (523) and CUPTI_DRIVER_TRACE_CBID_SIZE (807) in CUDA 13; a
 * later id past CONV_API_IDS is never in a set (conv_api_set__add says -ERANGE).
 */
#define CONV_API_IDS 2048

struct conv_api_set {
	__u64 bits[2][CONV_API_IDS / 64]; /* [0] runtime, [1] driver */
};

static inline bool conv_api_set__has(const struct conv_api_set *s, bool driver, __u32 cbid)
{
	return cbid < CONV_API_IDS && (s->bits[driver][cbid / 64] >> (cbid % 64) & 1);
}

static inline int conv_api_set__add(struct conv_api_set *s, bool driver, __u32 cbid)
{
	if (cbid >= CONV_API_IDS)
		return -ERANGE;
	s->bits[driver][cbid / 64] |= 1ull << (cbid % 64);
	return 0;
}

/* conv__stack_apis - s: every launch (conv__is_launch) and transfer (conv__is_transfer) id. */
void conv__stack_apis(struct conv_api_set *s);

/* conv__set_launch_marked - the library calls the launch marker (launch_stacks) on every
 * launch and transfer API: their CUDA_API records get XPU_API_F_LAUNCH_MARKED, so the
 * correlator knows a LAUNCH record with the stack is on its way through the cpu source.
 * conv__set_marked: on the APIs of ids only (those whose callbacks CUPTI accepted: a call
 * whose marker never runs must not be waited for); NULL: none. */
void conv__set_launch_marked(struct conv *c, bool on);
void conv__set_marked(struct conv *c, const struct conv_api_set *ids);

/* conv__context - context_id belongs to device_id (synchronization records carry no device). */
void conv__context(struct conv *c, __u32 context_id, __u32 device_id);

/* conv__loss - a LOSS record: count records lost for cause since first_ns. */
int conv__loss(struct conv *c, __u64 ts_ns, __u32 cause, __u64 count, __u64 first_ns);

/* conv__clock_sync - a CLOCK_SYNC record: CUPTI's timestamp read between two readings of
 * CLOCK_MONOTONIC, so a consumer can check (or, without the timestamp callback, model) the
 * relation of the two clocks. */
int conv__clock_sync(struct conv *c, __u64 before_ns, __u64 cupti_ns, __u64 after_ns);

void conv__stats(const struct conv *c, struct conv_stats *st);

#endif /* XPUSUP_CUPTI_CONVERT_H */
