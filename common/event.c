// SPDX-License-Identifier: MIT
/* Builders and the validator for the record kinds of include/xpusup/event.h. */
#include "xpusup/event.h"

#include <errno.h>
#include <string.h>

static const char *const kind_names[XPU_REC_TYPE_MAX] = {
	[XPU_REC_PAD] = "pad",
	[XPU_REC_CPU_SAMPLE] = "cpu_sample",
	[XPU_REC_LAUNCH] = "launch",
	[XPU_REC_CUDA_API] = "cuda_api",
	[XPU_REC_GPU_KERNEL] = "gpu_kernel",
	[XPU_REC_GPU_MEMCPY] = "gpu_memcpy",
	[XPU_REC_GPU_MEMSET] = "gpu_memset",
	[XPU_REC_GPU_SYNC] = "gpu_sync",
	[XPU_REC_GPU_MEMORY] = "gpu_memory",
	[XPU_REC_PMU_COUNTER] = "pmu_counter",
	[XPU_REC_RANGE] = "range",
	[XPU_REC_PROC_EXEC] = "proc_exec",
	[XPU_REC_PROC_EXIT] = "proc_exit",
	[XPU_REC_CLOCK_SYNC] = "clock_sync",
	[XPU_REC_STRING] = "string",
	[XPU_REC_LOSS] = "loss",
	[XPU_REC_MODULE] = "module",
};

#define FIXED(type)                        \
	{                                  \
		sizeof(type), sizeof(type) \
	}

/* The largest Python stack a CPU_SAMPLE or LAUNCH may carry (XPU_STACK_F_PY). */
#define PY_MAX (sizeof(struct xpu_py_stack) + sizeof(struct xpu_py_frame) * XPU_PY_MAX_FRAMES)

/* Fixed kinds have min == max. Variable kinds are checked exactly in xpu_rec__check(). */
const struct xpu_rec_bounds xpu_rec_bounds[XPU_REC_TYPE_MAX] = {
	[XPU_REC_PAD] = { 8, 0xfffffff8u },
	[XPU_REC_CPU_SAMPLE] = { sizeof(struct xpu_cpu_sample),
				 sizeof(struct xpu_cpu_sample) + 8 * 2 * XPU_MAX_FRAMES + PY_MAX +
					 sizeof(struct xpu_stack_copy) + XPU_STACK_COPY_MAX },
	[XPU_REC_LAUNCH] = { sizeof(struct xpu_launch),
			     sizeof(struct xpu_launch) + 8 * XPU_MAX_FRAMES + PY_MAX +
				     sizeof(struct xpu_stack_copy) + XPU_STACK_COPY_MAX },
	[XPU_REC_CUDA_API] = FIXED(struct xpu_cuda_api),
	[XPU_REC_GPU_KERNEL] = FIXED(struct xpu_gpu_kernel),
	[XPU_REC_GPU_MEMCPY] = FIXED(struct xpu_gpu_memcpy),
	[XPU_REC_GPU_MEMSET] = FIXED(struct xpu_gpu_memset),
	[XPU_REC_GPU_SYNC] = FIXED(struct xpu_gpu_sync),
	[XPU_REC_GPU_MEMORY] = FIXED(struct xpu_gpu_memory),
	[XPU_REC_PMU_COUNTER] = FIXED(struct xpu_pmu_counter),
	[XPU_REC_RANGE] = { sizeof(struct xpu_range),
			    XPU_ROUND_UP8(sizeof(struct xpu_range) + XPU_RANGE_NAME_MAX) },
	[XPU_REC_PROC_EXEC] = { sizeof(struct xpu_proc_exec),
				XPU_ROUND_UP8(sizeof(struct xpu_proc_exec) + XPU_PATH_MAX) },
	[XPU_REC_PROC_EXIT] = FIXED(struct xpu_proc_exit),
	[XPU_REC_CLOCK_SYNC] = FIXED(struct xpu_clock_sync),
	[XPU_REC_STRING] = { sizeof(struct xpu_string),
			     XPU_ROUND_UP8(sizeof(struct xpu_string) + XPU_STRING_MAX) },
	[XPU_REC_LOSS] = FIXED(struct xpu_loss),
	[XPU_REC_MODULE] = { sizeof(struct xpu_module),
			     XPU_ROUND_UP8(sizeof(struct xpu_module) + XPU_PATH_MAX) },
};

_Static_assert(XPU_REC_MAX_SIZE == sizeof(struct xpu_cpu_sample) + 8 * 2 * XPU_MAX_FRAMES + PY_MAX +
					   sizeof(struct xpu_stack_copy) + XPU_STACK_COPY_MAX,
	       "XPU_REC_MAX_SIZE is the largest CPU_SAMPLE");
_Static_assert(XPU_REC_MAX_SIZE >= XPU_ROUND_UP8(sizeof(struct xpu_string) + XPU_STRING_MAX) &&
		       XPU_REC_MAX_SIZE >= sizeof(struct xpu_launch) + 8 * XPU_MAX_FRAMES + PY_MAX +
						   sizeof(struct xpu_stack_copy) +
						   XPU_STACK_COPY_MAX,
	       "XPU_REC_MAX_SIZE is the largest kind");

__u32 xpu_rec_type__min_size(__u32 type)
{
	return type < XPU_REC_TYPE_MAX ? xpu_rec_bounds[type].min_size : 0;
}

__u32 xpu_rec_type__max_size(__u32 type)
{
	return type < XPU_REC_TYPE_MAX ? xpu_rec_bounds[type].max_size : 0;
}

const char *xpu_rec_type__name(__u32 type)
{
	if (type < XPU_REC_TYPE_MAX && kind_names[type])
		return kind_names[type];
	return "unknown";
}

const char *xpu_loss_cause__name(__u32 cause)
{
	static const char *const names[XPU_LOSS_CAUSE_MAX] = {
		[XPU_LOSS_RING_FULL] = "ring_full",	[XPU_LOSS_TOO_BIG] = "too_big",
		[XPU_LOSS_BPF_RESERVE] = "bpf_reserve", [XPU_LOSS_CUPTI] = "cupti",
		[XPU_LOSS_EVICTED] = "evicted",		[XPU_LOSS_CORRUPT] = "corrupt",
	};

	if (cause < XPU_LOSS_CAUSE_MAX && names[cause])
		return names[cause];
	return "unknown";
}

void xpu_rec__init(void *rec, __u16 type, __u32 size, __u64 ts_ns, __u32 pid, __u32 tid)
{
	struct xpu_rec *hdr = rec;

	memset(rec, 0, size);
	hdr->type = type;
	hdr->size = size;
	hdr->ts_ns = ts_ns;
	hdr->pid = pid;
	hdr->tid = tid;
}

int xpu_rec__validate(const void *buf, size_t len)
{
	return xpu_rec__check(buf, len);
}

static void copy_comm(char dst[XPU_COMM_LEN], const char *comm)
{
	if (comm)
		strncpy(dst, comm, XPU_COMM_LEN - 1);
}

int xpu_string__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u64 id,
		      __u32 kind, const char *text, size_t len)
{
	struct xpu_string *s = buf;
	__u32 size;

	if (len > XPU_STRING_MAX)
		return -EINVAL;
	size = xpu_string__size((__u32)len);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(s, XPU_REC_STRING, size, ts_ns, pid, tid);
	s->id = id;
	s->kind = kind;
	s->len = (__u32)len;
	memcpy(s->text, text, len);
	return (int)size;
}

int xpu_range__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 phase,
		     __u64 range_id, __u64 name_id, __u64 domain_id, const char *name, size_t len)
{
	struct xpu_range *r = buf;
	__u32 size;

	if (len > XPU_RANGE_NAME_MAX || phase < XPU_RANGE_PUSH || phase > XPU_RANGE_MARK)
		return -EINVAL;
	size = xpu_range__size((__u32)len);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(r, XPU_REC_RANGE, size, ts_ns, pid, tid);
	r->range_id = range_id;
	r->name_id = name_id;
	r->domain_id = domain_id;
	r->phase = phase;
	r->name_len = (__u32)len;
	if (len)
		memcpy(r->name, name, len);
	return (int)size;
}

int xpu_proc_exec__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 ppid,
			 const char *comm, const char *path, size_t path_len, __u16 flags)
{
	struct xpu_proc_exec *e = buf;
	__u32 size;

	if (path_len > XPU_PATH_MAX)
		return -EINVAL;
	size = xpu_proc_exec__size((__u32)path_len);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(e, XPU_REC_PROC_EXEC, size, ts_ns, pid, tid);
	e->hdr.flags = flags;
	e->ppid = ppid;
	e->path_len = (__u32)path_len;
	copy_comm(e->comm, comm);
	if (path_len)
		memcpy(e->path, path, path_len);
	return (int)size;
}

int xpu_module__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u64 start,
		      __u64 end, __u64 pgoff, __u64 dev, __u64 ino, const char *path,
		      size_t path_len)
{
	struct xpu_module *m = buf;
	__u32 size;

	if (!path_len || path_len > XPU_PATH_MAX || !xpu_module__path_ok(path, (__u32)path_len) ||
	    start >= end)
		return -EINVAL;
	size = xpu_module__size((__u32)path_len);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(m, XPU_REC_MODULE, size, ts_ns, pid, tid);
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->dev = dev;
	m->ino = ino;
	m->path_len = (__u32)path_len;
	memcpy(m->path, path, path_len);
	return (int)size;
}

int xpu_cpu_sample__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid, __u32 cpu,
			  __u32 weight, const char *comm, const __u64 *kernel_ips, __u32 n_kernel,
			  const __u64 *user_ips, __u32 n_user)
{
	struct xpu_cpu_sample *s = buf;
	__u32 size;

	if (n_kernel > XPU_MAX_FRAMES || n_user > XPU_MAX_FRAMES)
		return -EINVAL;
	size = xpu_cpu_sample__size(n_kernel, n_user);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(s, XPU_REC_CPU_SAMPLE, size, ts_ns, pid, tid);
	s->cpu = cpu;
	s->weight = weight;
	s->n_kernel = (__u16)n_kernel;
	s->n_user = (__u16)n_user;
	copy_comm(s->comm, comm);
	if (n_kernel)
		memcpy(s->ips, kernel_ips, 8u * n_kernel);
	if (n_user)
		memcpy(s->ips + n_kernel, user_ips, 8u * n_user);
	return (int)size;
}

int xpu_launch__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 tid,
		      __u64 correlation_id, __u32 api_id, const __u64 *user_ips, __u32 n_user)
{
	struct xpu_launch *l = buf;
	__u32 size;

	if (n_user > XPU_MAX_FRAMES)
		return -EINVAL;
	size = xpu_launch__size(n_user);
	if (cap < size)
		return -ENOSPC;
	xpu_rec__init(l, XPU_REC_LAUNCH, size, ts_ns, pid, tid);
	l->correlation_id = correlation_id;
	l->api_id = api_id;
	l->n_user = (__u16)n_user;
	if (n_user)
		memcpy(l->ips, user_ips, 8u * n_user);
	return (int)size;
}

int xpu_loss__build(void *buf, size_t cap, __u64 ts_ns, __u32 pid, __u32 cause, __u64 count,
		    __u64 first_ns)
{
	struct xpu_loss *l = buf;

	if (cause == 0 || cause >= XPU_LOSS_CAUSE_MAX)
		return -EINVAL;
	if (cap < sizeof(*l))
		return -ENOSPC;
	xpu_rec__init(l, XPU_REC_LOSS, sizeof(*l), ts_ns, pid, 0);
	l->cause = cause;
	l->count = count;
	l->first_ns = first_ns;
	return (int)sizeof(*l);
}
