/* SPDX-License-Identifier: MIT */
/*
 * xpusup-cpu: the CPU source (kind = cpu, docs/cpu.md).
 *
 * Loads profile.bpf.c, opens one sampling perf event per online CPU (cpu-clock, or
 * cycles where the CPU has them) and attaches the sampler to each, attaches the sched
 * tracepoints and, when launch_marker names a file (by default the CUPTI injection library,
 * when it is installed), a uprobe on its xpusup_launch_marker. The target (all, pids, a
 * process tree, a cgroup) is filtered in the kernel. The BPF ring buffer holds finished
 * records (include/xpusup/event.h); this program validates each one and copies it into the
 * shard ring of its pid. Nothing here blocks on a full ring: the shard ring drops and
 * counts, the BPF side counts reservation failures, and both reach the correlators as LOSS
 * records.
 *
 * Exit 100 when this machine cannot run it (no BTF, missing capabilities, an unknown pid or
 * cgroup, a launch_marker without the symbol): a restart would not help.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "actors/actor.h"
#include "actors/cpu/cpu_options.h"
#include "actors/cpu/cpu_python.h"
#include "actors/proctree.h"
#include "actors/cpu/profile.h"
#include "common/paths.h"
#include "common/status.h"
#include "common/topology.h"
#include "profile.skel.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define PROG "xpusup-cpu"
#define MAX_CPUS 1024
#define LOSS_EVERY_NS 1000000000ull /* BPF drop counters become LOSS records this often */
#define ROOM_MS 250 /* a BPF ring buffer should hold this much sampling at full copies */
/* Executable mappings named a second, at most (two syscalls each): a build starting
 * thousands of processes a second under target = all must not turn the source into a reader
 * of /proc. Past it they are counted (modules_skipped) and left to the correlator's reads
 * of the maps. */
#define MAPS_PER_S 1000

_Static_assert((int)CONF_TARGET_ALL == (int)PROFILE_TARGET_ALL &&
		       (int)CONF_TARGET_PIDS == (int)PROFILE_TARGET_PIDS &&
		       (int)CONF_TARGET_TREE == (int)PROFILE_TARGET_TREE &&
		       (int)CONF_TARGET_CGROUP == (int)PROFILE_TARGET_CGROUP,
	       "config target modes are the BPF program's");

/* How user stacks are taken (enum cpu_unwind, docs/cpu.md, "User stacks"). dwarf copies the
 * stack for the correlator's CFI unwinder, which knows x86-64's registers only. */
#if defined(__x86_64__)
#define DWARF_HERE 1
#else
#define DWARF_HERE 0
#endif

/* follow_mmap = raw: profile.bpf.c reads a system call's registers of these two only. */
#if defined(__x86_64__) || defined(__aarch64__)
#define RAW_SYSCALLS_HERE 1
#else
#define RAW_SYSCALLS_HERE 0
#endif

struct cpu_keys {
	unsigned long long hz, ringbuf_kb, wakeup_kb, drain_ms, stack_bytes;
	enum cpu_event event;
	enum cpu_unwind unwind; /* never UNWIND_AUTO once resolve_unwind() has run */
	struct conf_target target;
	int kernel_stacks, user_stacks;
	bool python; /* read Python frames */
	enum cpu_follow_mmap follow_mmap; /* FOLLOW_MMAP_OFF without user stacks */
	char marker[4096]; /* "" when there is no launch_marker */
	bool marker_default; /* not written: the CUPTI library's path, found there */
};

enum counter {
	C_SAMPLES,
	C_LAUNCHES,
	C_EXECS,
	C_FORKS,
	C_EXITS,
	C_RECORDS_OUT,
	C_RING_FULL,
	C_BPF_DROPS,
	C_CORRUPT,
	C_CPUS,
	C_PROBES,
	C_STACK_COPIES,
	C_STACK_COPY_KIB,
	C_STACK_COPY_SHORT,
	C_RING_TOO_BIG,
	C_PY_PROCESSES,
	C_PY_UNSUPPORTED,
	C_PY_STACKS,
	C_PY_FRAMES,
	C_PY_TRUNCATED,
	C_PY_BAD_FRAMES,
	C_PY_NO_THREAD,
	C_PY_THREAD_UNREAD,
	C_MODULES,
	C_MODULES_UNREAD,
	C_MODULES_SKIPPED,
	C_MODULES_BY_NAME,
	C_MMAP_RAW,
	C_N,
};

static const char *const counter_names[C_N] = {
	[C_SAMPLES] = "samples",
	[C_LAUNCHES] = "launches",
	[C_EXECS] = "execs",
	[C_FORKS] = "forks",
	[C_EXITS] = "exits",
	[C_RECORDS_OUT] = "records_out",
	[C_RING_FULL] = "ring_full",
	[C_BPF_DROPS] = "bpf_drops",
	[C_CORRUPT] = "corrupt",
	[C_CPUS] = "cpus",
	[C_PROBES] = "launch_probes",
	[C_STACK_COPIES] = "stack_copies",
	[C_STACK_COPY_KIB] = "stack_copy_kib",
	[C_STACK_COPY_SHORT] = "stack_copy_short",
	[C_RING_TOO_BIG] = "ring_too_big",
	[C_PY_PROCESSES] = "py_processes",
	[C_PY_UNSUPPORTED] = "py_unsupported",
	[C_PY_STACKS] = "py_stacks",
	[C_PY_FRAMES] = "py_frames",
	[C_PY_TRUNCATED] = "py_truncated",
	[C_PY_BAD_FRAMES] = "py_bad_frames",
	[C_PY_NO_THREAD] = "py_no_thread",
	[C_PY_THREAD_UNREAD] = "py_thread_unread",
	[C_MODULES] = "modules",
	[C_MODULES_UNREAD] = "modules_unread",
	[C_MODULES_SKIPPED] = "modules_skipped",
	[C_MODULES_BY_NAME] = "modules_by_name",
	[C_MMAP_RAW] = "mmap_raw",
};

/* The kernel side's Python counters (enum profile_py_count), each the counter it feeds. */
static const int py_counter_of[PROFILE_PY_COUNT_MAX] = {
	[PROFILE_PY_STACKS] = C_PY_STACKS,	 [PROFILE_PY_FRAMES] = C_PY_FRAMES,
	[PROFILE_PY_TRUNCATED] = C_PY_TRUNCATED, [PROFILE_PY_BAD_FRAMES] = C_PY_BAD_FRAMES,
	[PROFILE_PY_NO_THREAD] = C_PY_NO_THREAD, [PROFILE_PY_THREAD_UNREAD] = C_PY_THREAD_UNREAD,
};

struct cpu_src {
	struct actor *a;
	struct cpu_keys k;
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	/* the 3 sched tracepoints, the 2 mmap ones, the uprobe, then one per CPU's sampler */
	struct bpf_link *links[MAX_CPUS + 6];
	unsigned int n_links;
	int cgroup_fd;
	struct ring *rings[CONF_MAX_SHARDS];
	__u32 shards;
	int counter[C_N];
	__u64 count[C_N];
	char mmap_why[256]; /* why follow_mmap is not what was asked (choose_exec_map) */
	__u64 drops_reported; /* BPF drops already sent as LOSS */
	__u64 first_drop_ns;
	__u64 next_loss_ns;
	__u64 stack_copy_bytes; /* the sum of the copies' len, shown in KiB */
	const char *event_name; /* what drives sampling, for messages */
	struct cpu_python py; /* the Python processes followed (when k.python) */
	__u64 maps_second_ns; /* when the current second of MAPS_PER_S began (the actor's clock) */
	__u32 maps_in_second;
	bool maps_by_name; /* map_files links cannot be followed here: files by their name */
	__u64 page_bytes;
};

/*
 * The BPF programs' wake-up threshold. wakeup_kb's default (256) is sized for samples of
 * frames alone (0.2 to 2 KiB: hundreds a wake-up, so the actor mostly drains every
 * drain_ms). With stack copies a sample is 9 to 33 KiB, and 256 KiB would wake the actor
 * every 8 to 28 samples: more wake-ups, and samples reaching the correlator sooner than the
 * annotate ranges around them, which then cannot be placed in them (docs/correlator.md). So
 * unless the section says otherwise, copies wake it at a quarter of the ring buffer (at
 * least 256 KiB): about as many samples per wake-up as without copies, with room left.
 */
static __u64 wakeup_bytes(const struct cpu_src *c)
{
	__u64 quarter = c->k.ringbuf_kb * 1024 / 4;

	if (c->k.unwind != UNWIND_DWARF || conf_actor__written(c->a->self, "wakeup_kb"))
		return c->k.wakeup_kb * 1024;
	return quarter > 256 * 1024 ? quarter : 256 * 1024;
}

static int load_keys(struct actor *a, struct cpu_keys *k)
{
	struct cpu_options o;
	int err;

	memset(k, 0, sizeof(*k));
	err = conf_actor__options(a->self, &o, sizeof(o));
	k->hz = o.frequency_hz;
	k->ringbuf_kb = o.ringbuf_kb;
	k->wakeup_kb = o.wakeup_kb;
	k->drain_ms = o.drain_ms;
	k->kernel_stacks = o.kernel_stacks;
	k->user_stacks = o.user_stacks;
	k->target = o.target;
	k->stack_bytes = o.stack_bytes;
	k->event = (enum cpu_event)o.event;
	k->unwind = (enum cpu_unwind)o.unwind;
	k->python = o.python && o.user_stacks;
	/* names are for user frames only */
	k->follow_mmap = o.user_stacks ? (enum cpu_follow_mmap)o.follow_mmap : FOLLOW_MMAP_OFF;
	/* Not written: the CUPTI injection library, the very file `record` and `run` inject
	 * (a uprobe is on an inode), when it is there; when it is not, nothing to attach. */
	if (conf_actor__path(a->conf, a->self, "launch_marker", k->marker, sizeof(k->marker))) {
		k->marker_default = !xpu_cupti_lib(k->marker, sizeof(k->marker));
		if (!k->marker_default)
			k->marker[0] = '\0';
	}
	return err ? -EINVAL : 0;
}

/* Which of the capabilities the programs need this process lacks; "" when none. */
static const char *missing_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	bool bpf, perfmon, admin;

	if (syscall(SYS_capget, &hdr, data))
		return ""; /* unknown: let the load say what it says */
#define HAS(cap) ((data[(cap) / 32].effective >> ((cap) % 32)) & 1)
	bpf = HAS(CAP_BPF);
	perfmon = HAS(CAP_PERFMON);
	admin = HAS(CAP_SYS_ADMIN);
#undef HAS
	if (admin || (bpf && perfmon))
		return "";
	return !bpf && !perfmon ? "CAP_BPF and CAP_PERFMON" : !bpf ? "CAP_BPF" : "CAP_PERFMON";
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	fprintf(stderr, PROG ": libbpf: ");
	return vfprintf(stderr, fmt, ap);
}

static int perf_event_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -100;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -100;
		fclose(f);
	}
	return v;
}

static int open_sampler(int cpu, unsigned long long hz, bool cycles)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.config = cycles ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = hz,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The online CPUs from /sys/devices/system/cpu/online ("0-3,8"), as a bitmap. */
static int online_cpus(bool *online)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	unsigned int a, b;
	int n = 0, ch;

	if (!f)
		return -errno;
	while (fscanf(f, "%u", &a) == 1) {
		b = a;
		ch = fgetc(f);
		if (ch == '-') {
			if (fscanf(f, "%u", &b) != 1)
				break;
			ch = fgetc(f);
		}
		for (; a <= b && a < MAX_CPUS; a++, n++)
			online[a] = true;
		if (ch != ',')
			break;
	}
	fclose(f);
	return n ? n : -EINVAL;
}

/*
 * One sampling event per online CPU with the sampler attached. auto tries cycles first.
 * Returns 0, or an exit code after saying why.
 */
static int attach_samplers(struct cpu_src *c)
{
	static bool online[MAX_CPUS];
	bool cycles = c->k.event != EV_CPU_CLOCK;
	int cpu, fd, n = 0;

	if (online_cpus(online) < 0)
		return actor__fail(c->a, "unable to read /sys/devices/system/cpu/online");
	for (cpu = 0; cpu < MAX_CPUS; cpu++) {
		if (!online[cpu])
			continue;
		fd = open_sampler(cpu, c->k.hz, cycles);
		if (fd < 0 && cycles && c->k.event == EV_AUTO && !n &&
		    (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV)) {
			cycles = false; /* no hardware cycles counter here (a VM): cpu-clock */
			fd = open_sampler(cpu, c->k.hz, cycles);
		}
		if (fd < 0 && errno == ENODEV)
			continue; /* went offline meanwhile */
		if (fd < 0 && (errno == EACCES || errno == EPERM))
			return actor__fail(
				c->a,
				"unable to open a perf event on CPU %d: %s (needs CAP_PERFMON, "
				"or kernel.perf_event_paranoid <= -1; it is %d)",
				cpu, strerror(errno), perf_event_paranoid());
		if (fd < 0 && cycles && c->k.event == EV_CYCLES &&
		    (errno == ENOENT || errno == EOPNOTSUPP))
			return actor__fail(
				c->a,
				"unable to sample on cycles: this CPU has no cycles event (%s); "
				"use event = cpu-clock or auto",
				strerror(errno));
		if (fd < 0 && errno == EINVAL)
			return actor__fail(
				c->a,
				"unable to sample at %llu Hz: the kernel refuses it (see "
				"/proc/sys/kernel/perf_event_max_sample_rate)",
				c->k.hz);
		if (fd < 0)
			return actor__fail(c->a, "unable to open a perf event on CPU %d: %s", cpu,
					   strerror(errno));
		c->links[c->n_links] =
			bpf_program__attach_perf_event(c->skel->progs.profile_sample, fd);
		if (!c->links[c->n_links]) {
			int err = errno;

			close(fd);
			return actor__fail(c->a, "unable to attach the sampler on CPU %d: %s", cpu,
					   strerror(err));
		}
		/* the link owns fd from here: bpf_link__destroy closes it */
		c->n_links++;
		n++;
	}
	if (!n)
		return actor__fail(c->a, "unable to sample: no online CPU accepted a perf event");
	c->event_name = cycles ? "cycles" : "cpu-clock";
	c->count[C_CPUS] = (__u64)n;
	return 0;
}

/* The uprobe on launch_marker's xpusup_launch_marker, for every process that maps the file
 * (pid -1: the probe is on the file, so processes started later have it too). */
static int attach_marker(struct cpu_src *c)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "xpusup_launch_marker");
	struct bpf_link *l;

	if (!c->k.marker[0])
		return 0;
	/* A default the user did not ask for is not worth failing the source: say why and go
	 * on sampling without launch stacks. */
	if (c->k.marker_default && access(c->k.marker, R_OK)) {
		fprintf(stderr, PROG ": no launch uprobe: %s: %s\n", c->k.marker, strerror(errno));
		c->k.marker[0] = '\0';
		return 0;
	}
	if (access(c->k.marker, R_OK))
		return actor__fail(c->a, "unable to use launch_marker %s: %s", c->k.marker,
				   strerror(errno));
	l = bpf_program__attach_uprobe_opts(c->skel->progs.launch_marker, -1, c->k.marker, 0,
					    &opts);
	if (!l && c->k.marker_default) {
		fprintf(stderr, PROG ": no launch uprobe on %s: %s (no xpusup_launch_marker?)\n",
			c->k.marker, strerror(errno));
		c->k.marker[0] = '\0';
		return 0;
	}
	if (!l)
		return actor__fail(c->a,
				   "unable to put the launch uprobe on %s: %s (does it export "
				   "xpusup_launch_marker?)",
				   c->k.marker, strerror(errno));
	c->links[c->n_links++] = l;
	c->count[C_PROBES] = 1;
	return 0;
}

static int add_target(struct cpu_src *c, __u32 pid)
{
	__u8 one = 1;

	return bpf_map__update_elem(c->skel->maps.targets, &pid, sizeof(pid), &one, sizeof(one),
				    BPF_ANY);
}

static int add_target_fn(__u32 pid, void *ctx)
{
	add_target(ctx, pid); /* a full map is counted by the kernel side's forks alike */
	return 0;
}

/* Tree mode: the root and the descendants it already has (forks from now on are followed in
 * the kernel). */
static int add_tree(struct cpu_src *c, __u32 root)
{
	int err = add_target(c, root);

	if (err)
		return err;
	return proctree__walk(root, add_target_fn, c);
}

static int set_target(struct cpu_src *c)
{
	struct conf_target *t = &c->k.target;
	unsigned int i;
	char why[160];

	if (proctree__resolve(t, why, sizeof(why)))
		return actor__fail(c->a, "%s", why);
	switch (t->mode) {
	case CONF_TARGET_PIDS:
		for (i = 0; i < t->n_pids; i++)
			if (add_target(c, t->pids[i]))
				return actor__fail(c->a, "unable to add pid %u to the targets: %s",
						   t->pids[i], strerror(errno));
		return 0;
	case CONF_TARGET_TREE:
		if (add_tree(c, t->pids[0]))
			return actor__fail(c->a, "unable to add pid %u to the targets: %s",
					   t->pids[0], strerror(errno));
		return 0;
	case CONF_TARGET_CGROUP: {
		__u32 zero = 0;

		c->cgroup_fd = open(t->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c->cgroup_fd < 0)
			return actor__fail(c->a, "unable to open cgroup %s: %s", t->cgroup,
					   strerror(errno));
		if (bpf_map__update_elem(c->skel->maps.cgroup_map, &zero, sizeof(zero),
					 &c->cgroup_fd, sizeof(c->cgroup_fd), BPF_ANY))
			return actor__fail(c->a,
					   "unable to use cgroup %s: %s (a cgroup v2 folder?)",
					   t->cgroup, strerror(errno));
		return 0;
	}
	case CONF_TARGET_ALL:
		return 0;
	}
	return 0;
}

/* A record with a stack copy: counted, and its len summed; a copy shorter than stack_bytes
 * ended at the top of the stack (or at a page never touched), which is no loss. */
static void count_copy(struct cpu_src *c, const struct xpu_rec *h)
{
	const struct xpu_stack_copy *sc = xpu_stack_copy__of(h);

	if (!sc)
		return;
	c->count[C_STACK_COPIES]++;
	c->stack_copy_bytes += sc->len;
	c->count[C_STACK_COPY_KIB] = c->stack_copy_bytes / 1024;
	if (sc->len < c->k.stack_bytes)
		c->count[C_STACK_COPY_SHORT]++;
}

/* Into the shard ring of the record's pid. Both kinds of drop are counted by the ring too,
 * and reach the correlator as LOSS. */
static void send(struct cpu_src *c, const struct xpu_rec *h, __u32 size)
{
	int err = ring__write(c->rings[xpu_shard_of(h->pid, c->shards)], h, size);

	if (err == -E2BIG)
		c->count[C_RING_TOO_BIG]++;
	else if (err)
		c->count[C_RING_FULL]++;
	else
		c->count[C_RECORDS_OUT]++;
}

/*
 * A file mapped executable (PROFILE_REC_MAP) goes on as MODULE, named from
 * /proc/PID/map_files/START-END, in the ring's order: before any sample taken in it, so the
 * correlator knows the file before it meets its frames. Unread (counted) when the process or
 * the mapping is gone by now, when the range is not one mapping (a library mapped whole with
 * its code first, then mapped over in parts), when it is no regular file, or, without
 * CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), when the file was replaced since (below): the
 * correlator then reads the maps again on a miss, as without this record.
 */
static void on_map(struct cpu_src *c, const struct profile_map *m)
{
	_Alignas(8) unsigned char rec[sizeof(struct xpu_module) + XPU_PATH_MAX + 8];
	char link[64], path[XPU_PATH_MAX + 16];
	__u64 end, now = xpu_now_ns();
	struct stat st;
	bool deleted;
	ssize_t len;
	int size;

	/* by the actor's clock: the records' times (at the mmap's entry) come in the order of
	 * its exit, a little out of order */
	if (now - c->maps_second_ns >= 1000000000ull) {
		c->maps_second_ns = now;
		c->maps_in_second = 0;
	}
	if (c->maps_in_second >= MAPS_PER_S) {
		c->count[C_MODULES_SKIPPED]++;
		return;
	}
	c->maps_in_second++;
	end = m->start + (m->len + c->page_bytes - 1) / c->page_bytes * c->page_bytes;
	snprintf(link, sizeof(link), "/proc/%u/map_files/%llx-%llx", m->hdr.pid,
		 (unsigned long long)m->start, (unsigned long long)end);
	/* reading the link asks only the ptrace check of the process (EACCES for one we may
	 * not look into: that one stays unread) */
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0) {
		c->count[C_MODULES_UNREAD]++;
		return;
	}
	path[len] = '\0';
	/* a file replaced since it was mapped (a package upgraded under a running job) */
	deleted = len > 10 && !strcmp(path + len - 10, " (deleted)");
	if (deleted)
		path[len -= 10] = '\0';
	/* a memfd (a JIT's code) is no file of use */
	if (!strncmp(path, "/memfd:", 7)) {
		c->count[C_MODULES_UNREAD]++;
		return;
	}
	/* Following the link (the mapped file itself, even if replaced) needs CAP_SYS_ADMIN or
	 * CAP_CHECKPOINT_RESTORE, where reading it does not: a source given CAP_BPF and
	 * CAP_PERFMON only. That check is the same for every process: once refused, the file
	 * is taken by its name, unless it was replaced since (the symbolizer checks device and
	 * inode against the file it opens by that name anyway). Said once. */
	if (!c->maps_by_name && stat(link, &st)) {
		if (errno != EPERM) {
			c->count[C_MODULES_UNREAD]++;
			return;
		}
		fprintf(stderr,
			PROG ": /proc/PID/map_files cannot be followed (%s: needs CAP_SYS_ADMIN or "
			     "CAP_CHECKPOINT_RESTORE): libraries loaded later are found by their "
			     "name, and not at all once replaced on disk\n",
			strerror(errno));
		c->maps_by_name = true;
	}
	if (c->maps_by_name) {
		if (deleted || stat(path, &st)) {
			c->count[C_MODULES_UNREAD]++;
			return;
		}
		c->count[C_MODULES_BY_NAME]++;
	}
	/* a mapped file that is no ELF file (/dev/zero, a device) is of no use */
	if (!S_ISREG(st.st_mode)) {
		c->count[C_MODULES_UNREAD]++;
		return;
	}
	size = xpu_module__build(rec, sizeof(rec), m->hdr.ts_ns, m->hdr.pid, m->hdr.tid, m->start,
				 end, m->pgoff, (__u64)st.st_dev, (__u64)st.st_ino, path,
				 (size_t)len);
	if (size < 0) {
		c->count[C_MODULES_UNREAD]++; /* longer than XPU_PATH_MAX, or not absolute */
		return;
	}
	c->count[C_MODULES]++;
	send(c, (const struct xpu_rec *)rec, (__u32)size);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct cpu_src *c = ctx;
	const struct xpu_rec *h = data;

	/* ours alone, not a ring kind: checked by its exact size */
	if (size >= sizeof(*h) && h->type == PROFILE_REC_MAP) {
		if (size == sizeof(struct profile_map) && h->size == size)
			on_map(c, data);
		else
			c->count[C_CORRUPT]++;
		return 0;
	}
	/* Written by our own program, but checked like any producer's: a record that is not
	 * well formed is counted and skipped, never passed on. */
	if (xpu_rec__check(data, size)) {
		c->count[C_CORRUPT]++;
		return 0;
	}
	switch (h->type) {
	case XPU_REC_CPU_SAMPLE:
		c->count[C_SAMPLES]++;
		break;
	case XPU_REC_LAUNCH:
		c->count[C_LAUNCHES]++;
		break;
	case XPU_REC_PROC_EXEC:
		c->count[h->flags & XPU_PROC_F_FORK ? C_FORKS : C_EXECS]++;
		/* a new image: is it an interpreter? (a fork's child has its parent's entry) */
		if (c->k.python && !(h->flags & XPU_PROC_F_FORK))
			cpu_python__watch(&c->py, h->pid, xpu_now_ns());
		break;
	case XPU_REC_PROC_EXIT:
		c->count[C_EXITS]++;
		break;
	default:
		break;
	}
	count_copy(c, h);
	send(c, h, (__u32)size);
	return 0;
}

/* The sum over the CPUs of a per-CPU __u64 counter map's entry key into *total: 0, or -1
 * when it cannot be read (*total unchanged). */
static int percpu_sum(struct bpf_map *map, __u32 key, __u64 *total)
{
	static __u64 per_cpu[MAX_CPUS];
	int ncpu = libbpf_num_possible_cpus(), i;
	__u64 sum = 0;

	if (ncpu <= 0 || ncpu > MAX_CPUS ||
	    bpf_map__lookup_elem(map, &key, sizeof(key), per_cpu, sizeof(__u64) * (size_t)ncpu, 0))
		return -1;
	for (i = 0; i < ncpu; i++)
		sum += per_cpu[i];
	*total = sum;
	return 0;
}

static __u64 bpf_drops(struct cpu_src *c)
{
	__u64 total = 0, one;
	bool read = false;
	__u32 why;

	for (why = 0; why < PROFILE_DROP_MAX; why++) {
		if (!percpu_sum(c->skel->maps.drops, why, &one)) {
			total += one;
			read = true;
		}
	}
	/* nothing read: the last total stands (a smaller one would look like drops undone) */
	return read ? total : c->count[C_BPF_DROPS];
}

/* BPF-side drops since the last report travel as one LOSS record (cause bpf_reserve) to the
 * shard of pid 0: they belong to no process in particular. */
static void report_drops(struct cpu_src *c, __u64 now)
{
	_Alignas(8) unsigned char rec[sizeof(struct xpu_loss)];
	__u64 total = bpf_drops(c);

	c->count[C_BPF_DROPS] = total;
	if (total == c->drops_reported)
		return;
	if (!c->first_drop_ns)
		c->first_drop_ns = now;
	if (xpu_loss__build(rec, sizeof(rec), now, 0, XPU_LOSS_BPF_RESERVE,
			    total - c->drops_reported, c->first_drop_ns) < 0)
		return;
	if (!ring__write(c->rings[xpu_shard_of(0, c->shards)], rec, sizeof(rec))) {
		c->drops_reported = total;
		c->first_drop_ns = 0;
	}
}

/* The kernel side's Python counters, summed over the CPUs. */
static void python_counts(struct cpu_src *c)
{
	__u32 which;

	for (which = 0; which < PROFILE_PY_COUNT_MAX; which++)
		percpu_sum(c->skel->maps.py_counts, which, &c->count[py_counter_of[which]]);
	c->count[C_PY_PROCESSES] = c->py.st.processes;
	c->count[C_PY_UNSUPPORTED] = c->py.st.unsupported;
}

static void publish(struct cpu_src *c)
{
	__u64 now = xpu_now_ns();
	unsigned int i;

	if (now >= c->next_loss_ns) {
		report_drops(c, now);
		c->next_loss_ns = now + LOSS_EVERY_NS;
		if (c->k.python)
			python_counts(c);
	}
	for (i = 0; i < c->shards; i++)
		ring__flush(c->rings[i]);
	for (i = 0; i < C_N; i++)
		actor__count(c->a, c->counter[i], c->count[i]);
}

/* auto becomes dwarf where the correlator can unwind a copy (x86-64), else fp. Returns 0, or
 * an exit code after saying why when dwarf was asked for where it cannot run. */
static int resolve_unwind(struct cpu_src *c)
{
	if (c->k.unwind == UNWIND_DWARF && !DWARF_HERE)
		return actor__fail(
			c->a,
			"unable to unwind with dwarf: stack copies are unwound on x86-64 only, "
			"this build is not (use unwind = fp or auto)");
	if (c->k.unwind == UNWIND_AUTO && !DWARF_HERE)
		fprintf(stderr, PROG ": unwind = auto: stack copies are unwound on x86-64 only; "
				     "walking frame pointers\n");
	if (c->k.unwind == UNWIND_AUTO)
		c->k.unwind = DWARF_HERE ? UNWIND_DWARF : UNWIND_FP;
	return 0;
}

/*
 * follow_mmap (docs/cpu.md, "Libraries loaded later"): without it a library loaded later is
 * named after the correlator's next read of the maps. The mmap syscall's own tracepoints are
 * found through tracefs; where it is not mounted (a container, a minimal VM) the raw syscall
 * tracepoint, found by name in the kernel's BTF, does the same with a check at every system
 * call. Before the load: auto becomes tracepoint or raw, and a way that cannot work here
 * becomes off (said in c->mmap_why), so that only a program that can load is loaded.
 */
static void choose_exec_map(struct cpu_src *c)
{
	static const char *const where[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	enum cpu_follow_mmap *mode = &c->k.follow_mmap;
	char path[96];
	unsigned int i;
	int err = -ENOENT;

	c->mmap_why[0] = '\0';
	if (*mode == FOLLOW_MMAP_OFF)
		return;
	if (*mode != FOLLOW_MMAP_RAW) {
		/* where libbpf looks for their ids */
		for (i = 0; i < 2 && err; i++) {
			snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_mmap", where[i]);
			err = access(path, F_OK) ? -errno : 0;
		}
		if (!err) {
			*mode = FOLLOW_MMAP_TRACEPOINT;
			return;
		}
		snprintf(c->mmap_why, sizeof(c->mmap_why),
			 "no mmap tracepoints in tracefs (%s; is it mounted?)", strerror(-err));
		if (*mode == FOLLOW_MMAP_TRACEPOINT) {
			*mode = FOLLOW_MMAP_OFF;
			return;
		}
	}
	err = RAW_SYSCALLS_HERE ? libbpf_find_vmlinux_btf_id("sys_exit", BPF_TRACE_RAW_TP) :
				  -EOPNOTSUPP;
	if (err >= 0) {
		*mode = FOLLOW_MMAP_RAW;
		return;
	}
	snprintf(c->mmap_why + strlen(c->mmap_why), sizeof(c->mmap_why) - strlen(c->mmap_why),
		 "%sno raw sys_exit tracepoint (%s)", c->mmap_why[0] ? "; " : "", strerror(-err));
	*mode = FOLLOW_MMAP_OFF;
}

/* Open, configure and load the programs. Returns 0 or an exit code after saying why. */
static int load(struct cpu_src *c)
{
	int err, ncpu = libbpf_num_possible_cpus();
	const char *caps;

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return actor__fail(c->a,
				   "unable to load the CPU sampler: no kernel BTF "
				   "(/sys/kernel/btf/vmlinux; needs CONFIG_DEBUG_INFO_BTF=y)");
	caps = missing_caps();
	if (*caps)
		return actor__fail(
			c->a,
			"unable to load the CPU sampler: lacks %s (run as root, or setcap "
			"cap_bpf,cap_perfmon+ep)",
			caps);
	c->skel = profile_bpf__open();
	if (!c->skel)
		return actor__fail(c->a, "unable to open the BPF programs: %s", strerror(errno));
	c->skel->rodata->target_mode = (__u32)c->k.target.mode;
	c->skel->rodata->sample_weight = (__u32)(1000000000ull / c->k.hz);
	c->skel->rodata->kernel_stacks = c->k.kernel_stacks;
	c->skel->rodata->user_stacks = c->k.user_stacks;
	c->skel->rodata->wakeup_bytes = wakeup_bytes(c);
	c->skel->rodata->stack_copy_bytes = c->k.unwind == UNWIND_DWARF ? (__u32)c->k.stack_bytes :
									  0;
	c->skel->rodata->python_frames = c->k.python;
	bpf_map__set_max_entries(c->skel->maps.events, (__u32)(c->k.ringbuf_kb * 1024));
	/* one scratch buffer per CPU, indexed by bpf_get_smp_processor_id() */
	if (ncpu <= 0)
		return actor__fail(c->a, "unable to count the possible CPUs: %s", strerror(-ncpu));
	bpf_map__set_max_entries(c->skel->maps.sample_scratch, (__u32)ncpu);
	bpf_map__set_max_entries(c->skel->maps.launch_scratch, (__u32)ncpu);
	if (!c->k.marker[0])
		bpf_program__set_autoload(c->skel->progs.launch_marker, false);
	c->page_bytes = (__u64)sysconf(_SC_PAGESIZE);
	choose_exec_map(c);
	if (c->k.follow_mmap != FOLLOW_MMAP_TRACEPOINT) {
		bpf_program__set_autoload(c->skel->progs.exec_map_enter, false);
		bpf_program__set_autoload(c->skel->progs.exec_map_exit, false);
	}
	if (c->k.follow_mmap != FOLLOW_MMAP_RAW)
		bpf_program__set_autoload(c->skel->progs.exec_map_raw, false);
	err = profile_bpf__load(c->skel);
	if (err == -EPERM || err == -EACCES)
		return actor__fail(c->a,
				   "unable to load the BPF programs: %s (needs CAP_BPF and "
				   "CAP_PERFMON, or root)",
				   strerror(-err));
	if (err)
		return actor__fail(c->a, "unable to load the BPF programs: %s", strerror(-err));
	cpu_python__init(&c->py, c->skel->maps.py_procs, c->a->slot);
	return 0;
}

static int watch_python_fn(__u32 pid, void *ctx)
{
	cpu_python__watch(ctx, pid, xpu_now_ns());
	return 0;
}

/* The processes of the target that run already: any of them may be an interpreter (those
 * started later are looked at on their exec). */
static void watch_python(struct cpu_src *c)
{
	const struct conf_target *t = &c->k.target;
	unsigned int i;

	if (!c->k.python)
		return;
	switch (t->mode) {
	case CONF_TARGET_PIDS:
		for (i = 0; i < t->n_pids; i++)
			watch_python_fn(t->pids[i], &c->py);
		break;
	case CONF_TARGET_TREE:
		watch_python_fn(t->pids[0], &c->py);
		proctree__walk(t->pids[0], watch_python_fn, &c->py);
		break;
	default:
		cpu_python__watch_all(&c->py, xpu_now_ns());
		break;
	}
	cpu_python__tick(&c->py, xpu_now_ns());
}

/* Attach the n mmap programs of progs: 0, or -errno with none of them attached. */
static int attach_all(struct cpu_src *c, struct bpf_program *const *progs, unsigned int n)
{
	unsigned int i, first = c->n_links;
	int err;

	if (!bpf_program__autoload(progs[0]))
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++) {
		c->links[c->n_links] = bpf_program__attach(progs[i]);
		if (!c->links[c->n_links]) {
			err = -errno;
			while (c->n_links > first)
				bpf_link__destroy(c->links[--c->n_links]);
			return err;
		}
		c->n_links++;
	}
	return 0;
}

/* Attach what choose_exec_map chose; it and a failure are said in the log. */
static void attach_exec_map(struct cpu_src *c)
{
	struct bpf_program *const tracepoints[] = { c->skel->progs.exec_map_enter,
						    c->skel->progs.exec_map_exit };
	int err = 0;

	if (c->k.follow_mmap == FOLLOW_MMAP_TRACEPOINT)
		err = attach_all(c, tracepoints, 2);
	else if (c->k.follow_mmap == FOLLOW_MMAP_RAW)
		err = attach_all(c, &c->skel->progs.exec_map_raw, 1);
	if (err) {
		snprintf(c->mmap_why + strlen(c->mmap_why),
			 sizeof(c->mmap_why) - strlen(c->mmap_why), "%sthe %s: %s",
			 c->mmap_why[0] ? "; " : "",
			 c->k.follow_mmap == FOLLOW_MMAP_RAW ? "raw sys_exit tracepoint" :
							       "mmap tracepoints",
			 strerror(-err));
		c->k.follow_mmap = FOLLOW_MMAP_OFF;
	}
	c->count[C_MMAP_RAW] = c->k.follow_mmap == FOLLOW_MMAP_RAW;
	if (c->k.follow_mmap == FOLLOW_MMAP_RAW && c->mmap_why[0])
		fprintf(stderr, PROG ": %s: following mmap through the raw syscall tracepoint\n",
			c->mmap_why);
	else if (c->k.follow_mmap == FOLLOW_MMAP_OFF && c->mmap_why[0])
		fprintf(stderr,
			PROG ": unable to follow mmap (%s): libraries loaded later are named after "
			     "the next read of the maps\n",
			c->mmap_why);
}

static int attach(struct cpu_src *c)
{
	struct bpf_program *tracepoints[] = { c->skel->progs.proc_exec, c->skel->progs.proc_fork,
					      c->skel->progs.proc_exit };
	unsigned int i;
	int code;

	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), on_record, c, NULL);
	if (!c->rb)
		return actor__fail(c->a, "unable to read the BPF ring buffer: %s", strerror(errno));
	/* process events first, so a process seen in a sample has had its exec recorded, and
	 * before the target's tree is read from /proc: a fork in between is then either
	 * followed by proc_fork or found by the scan (adding a pid twice is harmless) */
	for (i = 0; i < 3; i++) {
		c->links[c->n_links] = bpf_program__attach(tracepoints[i]);
		if (!c->links[c->n_links])
			return actor__fail(c->a, "unable to attach the sched tracepoints: %s",
					   strerror(errno));
		c->n_links++;
	}
	attach_exec_map(c);
	if ((code = set_target(c)))
		return code;
	if ((code = attach_marker(c)))
		return code;
	return attach_samplers(c);
}

/*
 * Says at start, once, what the sizes configured cannot hold, and goes on: a stack copy makes
 * a sample up to 33 KiB, ten to thirty times one without.
 *   - a shard ring takes records up to its max_record (a quarter of ring_kib, at most
 *     XPU_REC_MAX_SIZE): larger ones are dropped and counted (ring_too_big, LOSS too_big);
 *   - the BPF ring buffer is the slack for an actor that is late: holding less than ROOM_MS
 *     of samples with full copies on every CPU, a short stall loses samples (bpf_drops).
 */
static void check_room(struct cpu_src *c)
{
	__u64 largest = xpu_cpu_sample__size(XPU_MAX_FRAMES, XPU_MAX_FRAMES), full, ms, kib;
	bool dwarf = c->k.unwind == UNWIND_DWARF;
	struct ring_stats st;

	if (dwarf)
		largest = xpu_cpu_sample__size(XPU_MAX_FRAMES, 0) +
			  xpu_stack_copy__size((__u32)c->k.stack_bytes);
	if (c->k.python)
		largest += xpu_py_stack__size(XPU_PY_MAX_FRAMES);
	ring__stats(c->rings[0], &st);
	for (kib = 4; kib * 1024 / 4 < largest; kib *= 2)
		;
	if (st.max_record < largest)
		fprintf(stderr,
			PROG ": the shard rings take records of up to %u bytes (ring_kib = %u), "
			     "samples reach %llu: larger ones are dropped (ring_too_big); "
			     "ring_kib = %llu takes them all\n",
			st.max_record, c->a->conf->ring_kib, (unsigned long long)largest,
			(unsigned long long)kib);
	if (!dwarf)
		return;
	full = xpu_cpu_sample__size(0, 0) + xpu_stack_copy__size((__u32)c->k.stack_bytes);
	ms = c->k.ringbuf_kb * 1024 * 1000 / (c->count[C_CPUS] * c->k.hz * full);
	if (ms < ROOM_MS)
		fprintf(stderr,
			PROG ": ringbuf_kb = %llu holds %llu ms of samples with full stack copies "
			     "on %llu CPUs at %llu Hz: raise it if bpf_drops grows\n",
			c->k.ringbuf_kb, (unsigned long long)ms,
			(unsigned long long)c->count[C_CPUS], c->k.hz);
}

int main(int argc, char **argv)
{
	struct cpu_src c = { .cgroup_fd = -1 };
	int code = ACTOR_EXIT_PERMANENT, err;
	struct actor a;
	unsigned int i;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	c.a = &a;
	libbpf_set_print(libbpf_print);
	if (load_keys(&a, &c.k)) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a.self->section);
		goto out;
	}
	c.shards = a.conf->shards;
	if ((err = actor__open_rings(&a, c.rings))) {
		code = actor__rings_exit(err);
		goto out;
	}
	for (i = 0; i < C_N; i++)
		c.counter[i] = actor__counter(&a, counter_names[i]);
	if ((code = resolve_unwind(&c)) || (code = load(&c)) || (code = attach(&c)))
		goto out;
	fprintf(stderr, PROG ": sampling %s at %llu Hz on %llu CPUs, user stacks: %s%s%s%s\n",
		c.event_name, c.k.hz, (unsigned long long)c.count[C_CPUS],
		!c.k.user_stacks	   ? "none" :
		c.k.unwind == UNWIND_DWARF ? "copied (dwarf)" :
					     "frame pointers (fp)",
		c.k.python ? " with Python frames" : "", c.k.marker[0] ? "; launch uprobe on " : "",
		c.k.marker);
	check_room(&c);
	watch_python(&c);
	actor__ready(&a);

	while (!actor__stopping(&a)) {
		/* Wake-ups are batched in the kernel (wakeup_kb): the timeout is what bounds a
		 * record's wait, and a poll that times out has consumed nothing yet. */
		ring_buffer__poll(c.rb, (int)c.k.drain_ms);
		ring_buffer__consume(c.rb);
		if (c.k.python)
			cpu_python__tick(&c.py, xpu_now_ns());
		publish(&c);
		actor__beat(&a);
	}
	/* SIGTERM: stop sampling, then pass on what the kernel still holds. */
	for (i = 0; i < c.n_links; i++) {
		bpf_link__destroy(c.links[i]);
		c.links[i] = NULL;
	}
	ring_buffer__consume(c.rb);
	c.next_loss_ns = 0;
	publish(&c);
	code = 0;
out:
	for (i = 0; i < c.n_links; i++)
		bpf_link__destroy(c.links[i]);
	ring_buffer__free(c.rb);
	profile_bpf__destroy(c.skel);
	if (c.cgroup_fd >= 0)
		close(c.cgroup_fd);
	for (i = 0; i < CONF_MAX_SHARDS; i++)
		ring__close(c.rings[i]);
	actor__fini(&a);
	return code;
}
