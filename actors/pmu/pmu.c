/* SPDX-License-Identifier: MIT */
/*
 * xpusup-pmu: the PMU source (kind = pmu, docs/pmu.md).
 *
 * Counts perf events (hardware counters, software events, raw and sysfs PMU events) and
 * reads them every interval_ms: one read() per counter group, one PMU_COUNTER record per
 * event per place counted (a CPU, or a process with its threads and children). Each event is
 * first opened alone to find out whether this machine has it; what it lacks is said once at
 * start and shown in `xpusup status`, and the rest is counted. Only when nothing at all can
 * be counted is that permanent (exit 100).
 *
 * Records carry raw values (unscaled totals, deltas, time enabled and running): consumers
 * scale. Names travel as STRING records, sent to a ring before the first reading that uses
 * them. Process readings go to the shard of their pid; per-CPU readings go to every shard.
 * Nothing here blocks: a full ring drops and counts (ring_full), and the ring itself turns
 * its drops into a LOSS record.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "actors/actor.h"
#include "actors/proctree.h"
#include "actors/pmu/events.h"
#include "actors/pmu/pmu_options.h"
#include "actors/pmu/scale.h"
#include "common/hash.h"
#include "common/status.h"
#include "common/topology.h"
#include "shm/ring.h"
#include "xpusup/event.h"

#define PROG "xpusup-pmu"
#define MAX_EVENTS 64
#define MAX_CPUS 1024
#define READ_FORMAT                                                                            \
	(PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | \
	 PERF_FORMAT_ID)

struct pmu_keys {
	char events[CONF_VALUE_MAX];
	unsigned long long interval_ms, group_size;
	struct conf_target target;
};

enum counter {
	C_READINGS,
	C_RECORDS_OUT,
	C_RING_FULL,
	C_EVENTS_OPEN,
	C_EVENTS_UNSUPPORTED,
	C_GROUPS,
	C_MULTIPLEXED,
	C_READ_ERRORS,
	C_N,
};

static const char *const counter_names[C_N] = {
	[C_READINGS] = "readings",
	[C_RECORDS_OUT] = "records_out",
	[C_RING_FULL] = "ring_full",
	[C_EVENTS_OPEN] = "events_open",
	[C_EVENTS_UNSUPPORTED] = "events_unsupported",
	[C_GROUPS] = "groups",
	[C_MULTIPLEXED] = "multiplexed",
	[C_READ_ERRORS] = "read_errors",
};

/* One event of an open group, on one place. */
struct member {
	unsigned int ev; /* index in pmu_src.evs */
	int fd;
	__u64 id; /* PERF_EVENT_IOC_ID: how the group read names it */
	struct pmu_count last; /* the last good reading: a failed read() leaves it as it was */
};

/* One perf counter group open on one place (a CPU, or one thread of a process). */
struct group {
	unsigned int n;
	struct member *m; /* m[0] is the leader: read() on its fd reads them all */
};

/* Where counting happens and what its records say: scope, pid, cpu. */
struct unit {
	enum xpu_pmu_scope scope;
	__u32 pid; /* PROCESS: the process; CPU: 0 */
	__u32 cpu; /* CPU: the CPU; PROCESS: XPU_PMU_NO_CPU */
	unsigned int first_group, n_groups; /* its groups, contiguous in pmu_src.groups */
	bool names_sent; /* PROCESS: the STRING records are in its shard's ring */
	bool done; /* PROCESS: exited and its final reading sent; its fds are closed */
	struct pmu_count prev[MAX_EVENTS]; /* what the last record said, per event */
};

/* What the counter groups are made of, decided once (pmu_groups__plan). */
struct plan {
	unsigned int n;
	unsigned int ev[MAX_EVENTS];
	bool has_cpumask; /* a PMU that counts on some CPUs only (uncore, package) */
	bool cpumask[MAX_CPUS];
};

struct pmu_src {
	struct actor *a;
	struct pmu_keys k;
	struct pmu_event evs[MAX_EVENTS];
	unsigned int n_evs;
	int open_err[MAX_EVENTS]; /* 0: counted; else why it could not be opened alone */
	bool counted_ev[MAX_EVENTS]; /* opened somewhere: its name is worth sending */
	__u64 name_id[MAX_EVENTS];
	struct plan plans[MAX_EVENTS];
	unsigned int n_plans;
	bool inherit; /* process scope: children and new threads count into their parent */
	bool singleton_groups; /* the kernel cannot read inherited groups: one event a group */
	int cgroup_fd;
	struct unit *units;
	unsigned int n_units;
	struct group *groups;
	unsigned int n_groups, cap_groups;
	struct ring *rings[CONF_MAX_SHARDS];
	__u32 shards;
	bool cpu_names_sent[CONF_MAX_SHARDS]; /* pid 0's STRING records are in ring i */
	int counter[C_N];
	__u64 count[C_N];
};

static int load_keys(struct actor *a, struct pmu_keys *k)
{
	struct pmu_options o;
	int err;

	memset(k, 0, sizeof(*k));
	err = conf_actor__options(a->self, &o, sizeof(o));
	snprintf(k->events, sizeof(k->events), "%s", o.events ? o.events : "");
	k->interval_ms = o.interval_ms;
	k->group_size = o.group_size;
	k->target = o.target;
	return err ? -EINVAL : 0;
}

/* A stable STRING id per name (FNV-1a), the same after a restart; the top bit keeps it apart
 * from the small sequential ids other producers use for their own names. */
static __u64 name_id_of(const char *name)
{
	__u64 h = xpu_hash_bytes("pmu:", 4);

	return xpu_fnv1a64(h, name, strlen(name)) | 1ull << 63;
}

static int parse_events(struct pmu_src *p)
{
	const char *s = p->k.events;
	char item[PMU_EVENT_NAME_MAX], why[512];
	unsigned int i;
	int r;

	while ((r = conf_list_next(&s, item, sizeof(item))) > 0) {
		if (p->n_evs == MAX_EVENTS)
			return actor__fail(p->a, "unable to use events: more than %d", MAX_EVENTS);
		for (i = 0; i < p->n_evs; i++)
			if (!strcmp(p->evs[i].name, item))
				return actor__fail(p->a, "unable to use events: %s is listed twice",
						   item);
		if (pmu_event__parse(&p->evs[p->n_evs], item, PMU_SYSFS_ROOT, why, sizeof(why)))
			return actor__fail(p->a, "unable to use event '%s': %s; an event is %s",
					   item, why, pmu_event_forms);
		p->name_id[p->n_evs] = name_id_of(item);
		p->n_evs++;
	}
	if (r < 0)
		return actor__fail(
			p->a,
			"unable to use events: an empty item or a name of %d characters or "
			"more in '%s'",
			PMU_EVENT_NAME_MAX, p->k.events);
	if (!p->n_evs)
		return actor__fail(p->a, "unable to use events: the list is empty");
	return 0;
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

static const char *errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "?";
}

/* Why an event did not open, in words, for the start message. */
static void open_reason(const struct pmu_src *p, const struct pmu_event *ev, int err, char *buf,
			size_t len)
{
	static bool cpus[MAX_CPUS];
	const char *name = errname(err);
	bool per_cpu = p->k.target.mode == CONF_TARGET_ALL ||
		       p->k.target.mode == CONF_TARGET_CGROUP;

	switch (err) {
	case EACCES:
	case EPERM:
		/* counting the kernel too: per CPU needs paranoid <= 0, per process <= 1 */
		snprintf(buf, len, "needs CAP_PERFMON or perf_event_paranoid <= %d (is %d): %s",
			 per_cpu ? 0 : 1, perf_event_paranoid(), name);
		return;
	case ENOENT:
	case EOPNOTSUPP:
		snprintf(buf, len, "not supported on this CPU/VM: %s", name);
		return;
	case EINVAL:
		if (!per_cpu && pmu_sysfs__cpumask(PMU_SYSFS_ROOT, ev->pmu, cpus, MAX_CPUS) >= 0)
			snprintf(buf, len, "a system-wide PMU, for target = all or cgroup: %s",
				 name);
		else
			snprintf(buf, len, "rejected by the kernel: %s", name);
		return;
	case ENODEV:
		snprintf(buf, len, "no such counter on this CPU: %s", name);
		return;
	case EBUSY:
		snprintf(buf, len, "in exclusive use by another program: %s", name);
		return;
	case EMFILE:
	case ENFILE:
		snprintf(buf, len, "too many open files: %s", name);
		return;
	default:
		snprintf(buf, len, "%s: %s", strerror(err), name);
		return;
	}
}

static int open_event(const struct pmu_src *p, const struct pmu_event *ev, int pid, int cpu,
		      int group_fd, bool disabled)
{
	struct perf_event_attr attr = { 0 };
	unsigned long flags = PERF_FLAG_FD_CLOEXEC;

	pmu_event__attr(ev, &attr);
	attr.read_format = READ_FORMAT;
	attr.inherit = p->inherit;
	attr.disabled = disabled;
	if (p->cgroup_fd >= 0) {
		pid = p->cgroup_fd;
		flags |= PERF_FLAG_PID_CGROUP;
	}
	return (int)syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, flags);
}

static int online_cpus(bool *online)
{
	char text[4096];
	ssize_t n;
	int fd;

	fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	text[n] = '\0';
	return pmu_cpulist__parse(text, online, MAX_CPUS);
}

/* A process that has exited: gone from /proc, or a zombie waiting for its parent. */
static bool process_gone(__u32 pid)
{
	char path[64], buf[512], *s;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	s = strrchr(buf, ')');
	return !s || s[1] != ' ' || s[2] == 'Z' || s[2] == 'X';
}

static int add_unit(struct pmu_src *p, enum xpu_pmu_scope scope, __u32 pid, __u32 cpu)
{
	struct unit *grown;

	if (!(p->n_units & (p->n_units + 1))) { /* at 0, 1, 3, 7, ...: double */
		grown = realloc(p->units, (2 * (size_t)p->n_units + 2) * sizeof(*p->units));
		if (!grown)
			return -ENOMEM;
		p->units = grown;
	}
	memset(&p->units[p->n_units], 0, sizeof(p->units[0]));
	p->units[p->n_units].scope = scope;
	p->units[p->n_units].pid = pid;
	p->units[p->n_units].cpu = cpu;
	p->n_units++;
	return 0;
}

/* Tree: the root and the descendants it already has (actors/proctree.c), one unit each;
 * later forks are counted into their parent's counters by inherit. */
static int add_tree_unit(__u32 pid, void *ctx)
{
	return add_unit(ctx, XPU_PMU_SCOPE_PROCESS, pid, XPU_PMU_NO_CPU);
}

static int add_tree(struct pmu_src *p, __u32 root)
{
	int err = add_unit(p, XPU_PMU_SCOPE_PROCESS, root, XPU_PMU_NO_CPU);

	if (err)
		return err;
	return proctree__walk(root, add_tree_unit, p);
}

/* The units of the target: per CPU (all, cgroup) or per process (pid, tree, command). */
static int set_target(struct pmu_src *p)
{
	static bool online[MAX_CPUS];
	struct conf_target *t = &p->k.target;
	unsigned int i;
	char why[160];

	if (proctree__resolve(t, why, sizeof(why)))
		return actor__fail(p->a, "%s", why);
	switch (t->mode) {
	case CONF_TARGET_PIDS:
		p->inherit = true;
		for (i = 0; i < t->n_pids; i++)
			if (add_unit(p, XPU_PMU_SCOPE_PROCESS, t->pids[i], XPU_PMU_NO_CPU))
				return actor__fail(p->a, "unable to follow pid %u: out of memory",
						   t->pids[i]);
		return 0;
	case CONF_TARGET_TREE:
		p->inherit = true;
		if (add_tree(p, t->pids[0]))
			return actor__fail(p->a, "unable to follow pid %u: out of memory",
					   t->pids[0]);
		return 0;
	case CONF_TARGET_CGROUP:
		p->cgroup_fd = open(t->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (p->cgroup_fd < 0)
			return actor__fail(p->a, "unable to open cgroup %s: %s", t->cgroup,
					   strerror(errno));
		break;
	case CONF_TARGET_ALL:
		break;
	}
	if (online_cpus(online) <= 0)
		return actor__fail(p->a, "unable to read /sys/devices/system/cpu/online");
	for (i = 0; i < MAX_CPUS; i++)
		if (online[i] && add_unit(p, XPU_PMU_SCOPE_CPU, 0, i))
			return actor__fail(p->a, "unable to count on CPU %u: out of memory", i);
	return 0;
}

/* Where an event is tried alone: the first unit, or for a PMU with a cpumask its first CPU. */
static int probe_event(struct pmu_src *p, const struct pmu_event *ev)
{
	static bool mask[MAX_CPUS];
	const struct unit *u = &p->units[0];
	int cpu = u->scope == XPU_PMU_SCOPE_CPU ? (int)u->cpu : -1, fd, i;

	if (u->scope == XPU_PMU_SCOPE_CPU) {
		memset(mask, 0, sizeof(mask));
		if (pmu_sysfs__cpumask(PMU_SYSFS_ROOT, ev->pmu, mask, MAX_CPUS) > 0)
			for (i = 0; i < MAX_CPUS; i++)
				if (mask[i]) {
					cpu = i;
					break;
				}
	}
	fd = open_event(p, ev, u->scope == XPU_PMU_SCOPE_PROCESS ? (int)u->pid : -1, cpu, -1,
			false);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Can the kernel read a group of inherited counters? Kernels that sum the children into a
 * group read can (6.18 does: pmu_test checks it); one that answers EINVAL gets every
 * inherited event in a group of its own. Tried with two software events on the first target.
 */
static bool inherited_groups_work(struct pmu_src *p)
{
	struct pmu_event clock = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK };
	struct pmu_event faults = { .type = PERF_TYPE_SOFTWARE,
				    .config = PERF_COUNT_SW_PAGE_FAULTS };
	__u64 buf[3 + 2 * 2];
	int leader, sibling, pid = (int)p->units[0].pid;
	bool ok;

	leader = open_event(p, &clock, pid, -1, -1, false);
	if (leader < 0)
		return true; /* nothing learned: the events' own opening will say why */
	sibling = open_event(p, &faults, pid, -1, leader, false);
	ok = sibling >= 0 && read(leader, buf, sizeof(buf)) == (ssize_t)sizeof(buf);
	if (sibling >= 0)
		close(sibling);
	close(leader);
	return ok;
}

/* Open each event alone, then plan the groups of those that opened. */
static void classify(struct pmu_src *p)
{
	static struct pmu_event usable[MAX_EVENTS];
	unsigned int idx[MAX_EVENTS], group[MAX_EVENTS], n = 0, i, g;

	for (i = 0; i < p->n_evs; i++) {
		p->open_err[i] = -probe_event(p, &p->evs[i]);
		if (p->open_err[i]) {
			p->count[C_EVENTS_UNSUPPORTED]++;
			continue;
		}
		usable[n] = p->evs[i];
		idx[n++] = i;
	}
	p->count[C_EVENTS_OPEN] = n;
	if (p->inherit && n)
		p->singleton_groups = !inherited_groups_work(p);
	if (p->singleton_groups) {
		for (i = 0; i < n; i++)
			group[i] = i;
		p->n_plans = n;
	} else {
		p->n_plans = pmu_groups__plan(usable, n, (unsigned int)p->k.group_size, group);
	}
	for (g = 0; g < p->n_plans; g++) {
		struct plan *pl = &p->plans[g];

		memset(pl, 0, sizeof(*pl));
		for (i = 0; i < n; i++)
			if (group[i] == g)
				pl->ev[pl->n++] = idx[i];
		pl->has_cpumask = pmu_sysfs__cpumask(PMU_SYSFS_ROOT, p->evs[pl->ev[0]].pmu,
						     pl->cpumask, MAX_CPUS) >= 0;
	}
}

static struct group *new_group(struct pmu_src *p, unsigned int n)
{
	struct group *g;

	if (p->n_groups == p->cap_groups) {
		unsigned int cap = p->cap_groups ? 2 * p->cap_groups : 64;
		struct group *grown = realloc(p->groups, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		p->groups = grown;
		p->cap_groups = cap;
	}
	g = &p->groups[p->n_groups];
	g->n = 0;
	g->m = calloc(n, sizeof(*g->m));
	if (!g->m)
		return NULL;
	p->n_groups++;
	return g;
}

static void group__close(struct group *g)
{
	unsigned int i;

	/* siblings first: a sibling whose leader is closed goes on counting on its own */
	for (i = g->n; i-- > 0;)
		close(g->m[i].fd);
	free(g->m);
	g->m = NULL;
	g->n = 0;
}

static int member__add(struct group *g, unsigned int ev, int fd)
{
	__u64 id;

	if (ioctl(fd, PERF_EVENT_IOC_ID, &id))
		return -errno;
	g->m[g->n].ev = ev;
	g->m[g->n].fd = fd;
	g->m[g->n].id = id;
	g->n++;
	return 0;
}

/*
 * The events of one plan, as a group on one place (pid or thread, cpu). The first event
 * that opens leads; a sibling the kernel will not add to the group (it would never fit the
 * counters together) gets a group of its own. An event that does not open at all here (a
 * CPU its PMU does not cover) is not counted here. Returns 0, -ESRCH when the thread is gone,
 * -ENOMEM.
 *
 * The leader opens disabled and is enabled once the group is whole. A sibling added to a
 * group that already counts is not scheduled in until the task next switches in when its PMU
 * is not the leader's (page-faults under a task-clock leader read 0 on 6.18 until the first
 * context switch); enabling the leader schedules the whole group at once, as perf stat does.
 */
static int open_plan(struct pmu_src *p, const unsigned int *evs, unsigned int n, int pid, int cpu)
{
	unsigned int left[MAX_EVENTS], n_left = 0, i;
	struct group *g = NULL;
	int fd, err;

	for (i = 0; i < n; i++) {
		fd = open_event(p, &p->evs[evs[i]], pid, cpu, g ? g->m[0].fd : -1, !g);
		if (fd < 0 && errno == ESRCH) {
			if (g) { /* the thread went meanwhile: nothing to count */
				group__close(g);
				p->n_groups--;
			}
			return -ESRCH;
		}
		if (fd < 0) {
			if (g)
				left[n_left++] = evs[i];
			continue;
		}
		if (!g && !(g = new_group(p, n))) {
			close(fd);
			return -ENOMEM;
		}
		if (member__add(g, evs[i], fd)) {
			close(fd);
			if (!g->n) {
				free(g->m);
				p->n_groups--;
				g = NULL;
			}
		}
	}
	if (g && ioctl(g->m[0].fd, PERF_EVENT_IOC_ENABLE, 0)) {
		err = -errno;
		group__close(g);
		p->n_groups--;
		return err == -ESRCH ? err : 0;
	}
	/* after the group is complete: new_group may move the groups array */
	for (i = 0; i < n_left; i++)
		if ((err = open_plan(p, &left[i], 1, pid, cpu)))
			return err;
	return 0;
}

/* The threads of a process, from /proc/PID/task, into *tids (the caller frees). */
static int threads_of(__u32 pid, __u32 **tids, unsigned int *n)
{
	char path[64];
	struct dirent *de;
	unsigned int cap = 0;
	__u32 *list = NULL;
	DIR *d;

	*n = 0;
	*tids = NULL;
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long tid = strtoul(de->d_name, NULL, 10);

		if (!tid)
			continue;
		if (*n == cap) {
			__u32 *grown = realloc(list, (cap = cap ? 2 * cap : 16) * sizeof(*list));

			if (!grown) {
				closedir(d);
				free(list);
				return -ENOMEM;
			}
			list = grown;
		}
		list[(*n)++] = (__u32)tid;
	}
	closedir(d);
	*tids = list;
	return 0;
}

/* Every plan on each thread the process has now. Returns 0 or -ENOMEM. */
static int open_process(struct pmu_src *p, const struct unit *un)
{
	unsigned int g, t, n_tids;
	__u32 *tids;
	int err = 0;

	if (threads_of(un->pid, &tids, &n_tids))
		return 0; /* exited meanwhile: nothing to count */
	for (t = 0; t < n_tids && err != -ENOMEM; t++) {
		for (g = 0; g < p->n_plans; g++) {
			err = open_plan(p, p->plans[g].ev, p->plans[g].n, (int)tids[t], -1);
			if (err)
				break; /* -ESRCH: the thread is gone, nothing to count */
		}
	}
	free(tids);
	return err == -ENOMEM ? err : 0;
}

/* Every plan on one CPU; a PMU with a cpumask only on its CPUs. Returns 0 or -ENOMEM. */
static int open_cpu(struct pmu_src *p, const struct unit *un)
{
	unsigned int g;

	for (g = 0; g < p->n_plans; g++) {
		if (p->plans[g].has_cpumask && !p->plans[g].cpumask[un->cpu])
			continue;
		if (open_plan(p, p->plans[g].ev, p->plans[g].n, -1, (int)un->cpu) == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Every plan on every unit. A process is counted on each thread it has now, inherit on: the
 * threads and children made later count into the thread that made them, and a unit's
 * reading is the sum over its threads (as perf stat -p sums). Returns 0 or an exit code.
 */
static int open_units(struct pmu_src *p)
{
	unsigned int u, g, i;
	int err = 0;

	for (u = 0; u < p->n_units && !err; u++) {
		struct unit *un = &p->units[u];

		un->first_group = p->n_groups;
		err = un->scope == XPU_PMU_SCOPE_PROCESS ? open_process(p, un) : open_cpu(p, un);
		un->n_groups = p->n_groups - un->first_group;
		un->done = !un->n_groups && un->scope == XPU_PMU_SCOPE_PROCESS;
		for (g = un->first_group; g < p->n_groups; g++)
			for (i = 0; i < p->groups[g].n; i++)
				p->counted_ev[p->groups[g].m[i].ev] = true;
	}
	if (err == -ENOMEM)
		return actor__fail(p->a, "unable to open counters: out of memory");
	p->count[C_GROUPS] = p->n_groups;
	return 0;
}

#define ADD(buf, cap, len, ...)                                                               \
	do {                                                                                  \
		if ((len) < (cap))                                                            \
			(len) += (size_t)snprintf((buf) + (len), (cap) - (len), __VA_ARGS__); \
	} while (0)

/*
 * The events that did not open, those with one reason together: "cycles, instructions (not
 * supported on this CPU/VM: ENOENT), ..." into buf, or with brief the errno name alone as
 * the reason (for the status line). Returns the length it wanted, as snprintf does.
 */
static size_t unavailable_list(const struct pmu_src *p, char *buf, size_t cap, bool brief)
{
	char reason[256], other[256];
	bool done[MAX_EVENTS] = { false };
	unsigned int i, j;
	size_t n = 0;

	buf[0] = '\0';
	for (i = 0; i < p->n_evs; i++) {
		if (!p->open_err[i] || done[i])
			continue;
		open_reason(p, &p->evs[i], p->open_err[i], reason, sizeof(reason));
		ADD(buf, cap, n, "%s", n ? ", " : "");
		for (j = i; j < p->n_evs; j++) {
			if (!p->open_err[j] || done[j])
				continue;
			open_reason(p, &p->evs[j], p->open_err[j], other, sizeof(other));
			if (strcmp(reason, other))
				continue;
			done[j] = true;
			ADD(buf, cap, n, "%s%s", j == i ? "" : ", ", p->evs[j].name);
		}
		ADD(buf, cap, n, " (%s)", brief ? errname(p->open_err[i]) : reason);
	}
	return n;
}

/* The start message and the status line: what is counted, and what is not and why. */
static void report_start(struct pmu_src *p)
{
	char msg[4096], problem[XPU_STATUS_PROBLEM_LEN], list[2048];
	unsigned int i, cpus = 0, procs = 0;
	size_t n = 0, m;
	bool first = true;

	for (i = 0; i < p->n_units; i++)
		p->units[i].scope == XPU_PMU_SCOPE_CPU ? cpus++ : procs++;
	ADD(msg, sizeof(msg), n, "counting ");
	for (i = 0; i < p->n_evs; i++) {
		if (p->open_err[i])
			continue;
		ADD(msg, sizeof(msg), n, "%s%s", first ? "" : ", ", p->evs[i].name);
		first = false;
	}
	if (cpus)
		ADD(msg, sizeof(msg), n, " per CPU on %u CPUs%s", cpus,
		    p->cgroup_fd >= 0 ? " (one cgroup)" : "");
	else
		ADD(msg, sizeof(msg), n, " on %u process%s (children included)", procs,
		    procs == 1 ? "" : "es");
	ADD(msg, sizeof(msg), n, ", every %llu ms, %u counter group%s per %s (%u open)%s",
	    p->k.interval_ms, p->n_plans, p->n_plans == 1 ? "" : "s", cpus ? "CPU" : "thread",
	    p->n_groups,
	    p->singleton_groups ? ", one event each: this kernel cannot read inherited groups" :
				  "");
	if (unavailable_list(p, list, sizeof(list), false))
		ADD(msg, sizeof(msg), n, "; not available here: %s", list);
	fprintf(stderr, PROG ": %s\n", msg);
	if (!p->count[C_EVENTS_UNSUPPORTED])
		return;
	/* what fits of it in the status line; the whole list is in the session log */
	strcpy(problem, "not available: ");
	m = strlen(problem);
	if (m + unavailable_list(p, problem + m, sizeof(problem) - m, true) >= sizeof(problem))
		memcpy(problem + sizeof(problem) - 4, "...", 4);
	/* not actor__problem: it would print the list a second time */
	status__set_problem(p->a->slot, problem, xpu_now_ns());
}

#undef ADD

/* One record into one shard's ring, or dropped and counted. True when it went in. */
static bool put(struct pmu_src *p, __u32 shard, const void *rec, __u32 size)
{
	if (ring__write(p->rings[shard], rec, size)) {
		p->count[C_RING_FULL]++;
		return false;
	}
	p->count[C_RECORDS_OUT]++;
	return true;
}

/* The STRING records of every counted event, for pid, into one shard's ring. True when all
 * went in: readings that refer to them may follow. */
static bool send_names(struct pmu_src *p, __u32 pid, __u32 shard, __u64 now)
{
	__u64 rec[XPU_ROUND_UP8(sizeof(struct xpu_string) + PMU_EVENT_NAME_MAX) / 8];
	unsigned int i;
	bool ok = true;
	int size;

	for (i = 0; i < p->n_evs; i++) {
		if (!p->counted_ev[i])
			continue;
		size = xpu_string__build(rec, sizeof(rec), now, pid, pid, p->name_id[i],
					 XPU_STR_COUNTER, p->evs[i].name, strlen(p->evs[i].name));
		if (size > 0 && !put(p, shard, rec, (__u32)size))
			ok = false;
	}
	return ok;
}

/* One unit's records for this reading: to its pid's shard, or for a CPU to every shard. */
static void emit(struct pmu_src *p, struct unit *u, const struct pmu_count *cur,
		 const bool *counted, __u64 now)
{
	struct xpu_pmu_counter rec;
	struct pmu_interval iv;
	__u32 s, first = 0, last = p->shards;
	unsigned int e;

	if (u->scope == XPU_PMU_SCOPE_PROCESS) {
		first = xpu_shard_of(u->pid, p->shards);
		last = first + 1;
	}
	for (s = first; s < last; s++) {
		bool *sent = u->scope == XPU_PMU_SCOPE_CPU ? &p->cpu_names_sent[s] : &u->names_sent;

		if (!*sent && !(*sent = send_names(p, u->pid, s, now))) {
			/* a reading whose name did not get through would be nameless: it waits
			 * for the names, and counts as lost meanwhile */
			for (e = 0; e < p->n_evs; e++)
				p->count[C_RING_FULL] += counted[e];
			continue;
		}
		for (e = 0; e < p->n_evs; e++) {
			if (!counted[e])
				continue;
			pmu_interval__compute(&u->prev[e], &cur[e], &iv);
			xpu_rec__init(&rec, XPU_REC_PMU_COUNTER, sizeof(rec), now, u->pid, u->pid);
			rec.counter_id = p->name_id[e];
			rec.value = cur[e].value;
			rec.delta = iv.delta;
			rec.time_enabled = cur[e].enabled;
			rec.time_running = cur[e].running;
			rec.cpu = u->cpu;
			rec.scope = u->scope;
			put(p, s, &rec, sizeof(rec));
		}
	}
	for (e = 0; e < p->n_evs; e++)
		if (counted[e])
			u->prev[e] = cur[e];
}

/* One read() per group, summed per unit (a process's threads), then its records. */
static void read_unit(struct pmu_src *p, struct unit *u)
{
	static __u64 buf[3 + 2 * MAX_EVENTS];
	static struct pmu_count got[MAX_EVENTS];
	struct pmu_count cur[MAX_EVENTS] = { 0 };
	bool counted[MAX_EVENTS] = { false };
	bool gone = u->scope == XPU_PMU_SCOPE_PROCESS && process_gone(u->pid), advanced = false;
	unsigned int g, i;
	__u64 ids[MAX_EVENTS];
	ssize_t n;

	if (u->done)
		return;
	for (g = u->first_group; g < u->first_group + u->n_groups; g++) {
		struct group *gr = &p->groups[g];

		for (i = 0; i < gr->n; i++)
			ids[i] = gr->m[i].id;
		n = read(gr->m[0].fd, buf, pmu_group__read_size(gr->n));
		if (n <= 0 || pmu_group__parse(buf, (size_t)n, ids, gr->n, got)) {
			p->count[C_READ_ERRORS]++; /* the last good reading stands in */
		} else {
			p->count[C_READINGS]++;
			/* multiplexed in this interval: ran for less of it than it was enabled */
			if (got[0].running - gr->m[0].last.running <
			    got[0].enabled - gr->m[0].last.enabled)
				p->count[C_MULTIPLEXED]++;
			advanced |= got[0].enabled != gr->m[0].last.enabled;
			for (i = 0; i < gr->n; i++)
				gr->m[i].last = got[i];
		}
		for (i = 0; i < gr->n; i++) {
			struct pmu_count *c = &cur[gr->m[i].ev];

			c->value += gr->m[i].last.value;
			c->enabled += gr->m[i].last.enabled;
			c->running += gr->m[i].last.running;
			counted[gr->m[i].ev] = true;
		}
	}
	emit(p, u, cur, counted, xpu_now_ns());
	/* Gone before this read, and nothing enabled since the last: no child it passed its
	 * counters on to lives either. This reading was the final one. */
	if (gone && !advanced) {
		for (g = u->first_group; g < u->first_group + u->n_groups; g++)
			group__close(&p->groups[g]);
		p->count[C_GROUPS] -= u->n_groups;
		u->done = true;
	}
}

static void publish(struct pmu_src *p)
{
	unsigned int i;

	for (i = 0; i < p->shards; i++)
		ring__flush(p->rings[i]);
	for (i = 0; i < C_N; i++)
		actor__count(p->a, p->counter[i], p->count[i]);
}

static void read_all(struct pmu_src *p)
{
	unsigned int u;

	for (u = 0; u < p->n_units; u++)
		read_unit(p, &p->units[u]);
	publish(p);
}

/* Many CPUs times many events, or a big process tree, need more than 1024 descriptors. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct pmu_src p = { .cgroup_fd = -1 };
	int code = ACTOR_EXIT_PERMANENT, err;
	__u64 next, now, interval_ns;
	struct actor a;
	unsigned int i;

	if (actor__init(&a, argc, argv, PROG))
		return ACTOR_EXIT_PERMANENT;
	p.a = &a;
	if (load_keys(&a, &p.k)) {
		fprintf(stderr, PROG ": unable to read configuration: bad value in [%s]\n",
			a.self->section);
		goto out;
	}
	p.shards = a.conf->shards;
	if ((err = actor__open_rings(&a, p.rings))) {
		code = actor__rings_exit(err);
		goto out;
	}
	for (i = 0; i < C_N; i++)
		p.counter[i] = actor__counter(&a, counter_names[i]);
	if ((code = parse_events(&p)) || (code = set_target(&p)))
		goto out;
	raise_fd_limit();
	classify(&p);
	if (!p.count[C_EVENTS_OPEN]) {
		char list[2048];

		unavailable_list(&p, list, sizeof(list), false);
		code = actor__fail(p.a, "unable to count: none of the events opens here: %s", list);
		goto out;
	}
	if ((code = open_units(&p)))
		goto out;
	if (!p.n_groups) {
		code = actor__fail(p.a,
				   "unable to count: no counter opened on the target (exited?)");
		goto out;
	}
	report_start(&p);
	publish(&p);
	actor__ready(&a);

	interval_ns = p.k.interval_ms * 1000000ull;
	next = xpu_now_ns() + interval_ns;
	while (!actor__stopping(&a)) {
		now = xpu_now_ns();
		if (now < next) {
			actor__sleep_ms(&a, (unsigned int)((next - now + 999999) / 1000000));
			continue;
		}
		read_all(&p);
		/* a late wake-up does not bring a burst of readings: the next is one interval on */
		next = next + interval_ns > now ? next + interval_ns : now + interval_ns;
		actor__beat(&a);
	}
	/* SIGTERM: the last reading, so the totals cover the session up to its stop. */
	read_all(&p);
	code = 0;
out:
	for (i = 0; i < p.n_groups; i++)
		group__close(&p.groups[i]);
	free(p.groups);
	free(p.units);
	if (p.cgroup_fd >= 0)
		close(p.cgroup_fd);
	for (i = 0; i < CONF_MAX_SHARDS; i++)
		ring__close(p.rings[i]);
	actor__fini(&a);
	return code;
}
