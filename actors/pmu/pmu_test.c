// SPDX-License-Identifier: MIT
/*
 * The pmu source's pure parts and the kernel under them: every event form against a fake
 * sysfs tree (so the test runs on a VM with few PMUs), group plans, scaling with readings
 * built by hand, the group read layout, and real software counters on this process, with
 * inherit as the source opens them for a process tree.
 */
#include "actors/pmu/events.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actors/pmu/scale.h"
#include "tests/tap.h"

static char root[64];

/* root/rel with text, its folders made on the way. */
static void put(const char *rel, const char *text)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		tap_bail("unable to write %s", path);
}

static void make_sysfs(void)
{
	snprintf(root, sizeof(root), "/tmp/pmu_test.XXXXXX");
	if (!mkdtemp(root))
		tap_bail("unable to make a temporary folder");
	/* a core PMU as x86 writes it (type 4 = PERF_TYPE_RAW) */
	put("cpu/type", "4\n");
	put("cpu/format/event", "config:0-7\n");
	put("cpu/format/umask", "config:8-15\n");
	put("cpu/format/edge", "config:18\n");
	put("cpu/format/cmask", "config:24-31\n");
	put("cpu/format/ldlat", "config1:0-15\n");
	put("cpu/format/split", "config:0-3,32-35\n");
	put("cpu/format/frontend", "config2:0-23\n");
	put("cpu/events/cycles", "event=0x3c\n");
	put("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
	put("cpu/events/needs-param", "event=0x10,umask=?\n");
	/* two PMUs of their own: msr (per task and per CPU), power (one CPU per package) */
	put("msr/type", "10\n");
	put("msr/format/event", "config:0-63\n");
	put("msr/events/tsc", "event=0x00\n");
	put("power/type", "9\n");
	put("power/cpumask", "0\n");
	put("power/format/event", "config:0-7\n");
	put("power/events/energy-pkg", "event=0x02\n");
	put("broken/type", "nine\n");
}

static void remove_sysfs(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		tap_diag("unable to remove %s", root);
}

static int parse(struct pmu_event *ev, const char *name)
{
	char why[256];
	int err = pmu_event__parse(ev, name, root, why, sizeof(why));

	if (err)
		tap_diag("%s: %s", name, why);
	return err;
}

static void test_generic(void)
{
	static const struct {
		const char *name;
		__u32 type;
		__u64 config;
	} want[] = {
		{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
		{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
		{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
		{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
		{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
		{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
		{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
		{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
		{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
		{ "stalled-cycles-backend", PERF_TYPE_HARDWARE,
		  PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
		{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
		{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
		{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
		{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
		{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
		{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
		{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
		{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
		{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
		{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
		{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	};
	struct pmu_event ev;
	unsigned int i, bad = 0;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (parse(&ev, want[i].name) || ev.type != want[i].type ||
		    ev.config != want[i].config || strcmp(ev.name, want[i].name) ||
		    ev.cls != (want[i].type == PERF_TYPE_SOFTWARE ? PMU_CLASS_SOFTWARE :
								    PMU_CLASS_CORE)) {
			tap_diag("generic %s: type %u config %llu", want[i].name, ev.type,
				 (unsigned long long)ev.config);
			bad++;
		}
	}
	tap_ok(!bad, "every generic name and alias (%u) gives perf's type and config", i);
}

static void test_raw(void)
{
	struct pmu_event ev;

	tap_ok(!parse(&ev, "r3c") && ev.type == PERF_TYPE_RAW && ev.config == 0x3c &&
		       ev.cls == PMU_CLASS_CORE,
	       "r3c: PERF_TYPE_RAW, config 0x3c, a core event");
	tap_ok(!parse(&ev, "r1A8") && ev.config == 0x1a8, "raw hex digits in either case");
	tap_ok(!parse(&ev, "rffffffffffffffff") && ev.config == ~0ull, "sixteen hex digits");
	tap_ok(pmu_event__parse(&ev, "r", root, NULL, 0) == -EINVAL, "r alone is no event");
	tap_ok(pmu_event__parse(&ev, "r12345678901234567", root, NULL, 0) == -EINVAL,
	       "seventeen hex digits do not fit a config");
	tap_ok(pmu_event__parse(&ev, "rxyz", root, NULL, 0) == -EINVAL, "rxyz is not raw");
}

static void test_sysfs(void)
{
	struct pmu_event ev;
	char why[256];
	bool cpus[8] = { false };

	tap_ok(!parse(&ev, "cpu/cycles/") && ev.type == 4 && ev.config == 0x3c &&
		       ev.cls == PMU_CLASS_CORE && !strcmp(ev.pmu, "cpu"),
	       "cpu/cycles/: the type file and the event's terms");
	tap_ok(!parse(&ev, "cpu/event=0x3c,umask=0x00/") && ev.config == 0x3c,
	       "cpu/event=0x3c,umask=0x00/");
	tap_ok(!parse(&ev, "cpu/event=0xd1,umask=0x20,edge,cmask=2/") &&
		       ev.config == (0xd1 | 0x20 << 8 | 1 << 18 | 2ull << 24),
	       "terms into their bit ranges; a bare format term is 1");
	tap_ok(!parse(&ev, "cpu/mem-loads/") && ev.config == 0x1cd && ev.config1 == 3,
	       "an event whose terms reach config1");
	tap_ok(!parse(&ev, "cpu/split=0xab/") && ev.config == (0xbull | 0xaull << 32),
	       "a split range: low bits in the first range, the next in the second");
	tap_ok(!parse(&ev, "cpu/cycles,cmask=1/") && ev.config == (0x3c | 1ull << 24),
	       "an event and a term together");
	tap_ok(!parse(&ev, "cpu/frontend=0x11/") && ev.config2 == 0x11, "a config2 term");
	tap_ok(!parse(&ev, "cpu/config=0x1234,config1=5,config2=6/") && ev.config == 0x1234 &&
		       ev.config1 == 5 && ev.config2 == 6,
	       "config=, config1=, config2= directly");
	tap_ok(!parse(&ev, "cpu/event=10/") && ev.config == 10, "decimal values");
	tap_ok(!parse(&ev, "msr/tsc/") && ev.type == 10 && ev.config == 0 &&
		       ev.cls == PMU_CLASS_OTHER,
	       "msr/tsc/: another PMU, its own group kind");

	tap_ok(pmu_event__parse(&ev, "nope/cycles/", root, why, sizeof(why)) == -ENOENT &&
		       strstr(why, "no PMU nope"),
	       "an unknown PMU: -ENOENT, and says which (%s)", why);
	tap_ok(pmu_event__parse(&ev, "cpu/nothere/", root, why, sizeof(why)) == -ENOENT &&
		       strstr(why, "nothere"),
	       "an unknown event of a PMU: -ENOENT (%s)", why);
	tap_ok(pmu_event__parse(&ev, "cpu/bogus=1/", root, why, sizeof(why)) == -ENOENT,
	       "an unknown term: -ENOENT (%s)", why);
	tap_ok(pmu_event__parse(&ev, "cpu/event=0x1ff/", root, why, sizeof(why)) == -ERANGE,
	       "a value wider than its bits: -ERANGE (%s)", why);
	tap_ok(pmu_event__parse(&ev, "cpu/needs-param/", root, why, sizeof(why)) == -EINVAL,
	       "an event that needs a parameter (umask=?): -EINVAL (%s)", why);
	tap_ok(pmu_event__parse(&ev, "cpu/event=zz/", root, why, sizeof(why)) == -EINVAL,
	       "a value that is not a number: -EINVAL");
	tap_ok(pmu_event__parse(&ev, "broken/x/", root, why, sizeof(why)) == -EINVAL,
	       "a type file that is not a number: -EINVAL");
	tap_ok(pmu_event__parse(&ev, "cpu/cycles", root, NULL, 0) == -EINVAL &&
		       pmu_event__parse(&ev, "cpu//", root, NULL, 0) == -EINVAL &&
		       pmu_event__parse(&ev, "cpu/cycles/u", root, NULL, 0) == -EINVAL &&
		       pmu_event__parse(&ev, "cpu/a/b/", root, NULL, 0) == -EINVAL,
	       "malformed PMU/EVENT/ forms are rejected");
	tap_ok(pmu_event__parse(&ev, "../cpu/cycles/", root, NULL, 0) == -EINVAL &&
		       pmu_event__parse(&ev, "cpu/../", root, NULL, 0) == -EINVAL &&
		       pmu_event__parse(&ev, "cpu/.hidden/", root, NULL, 0) == -EINVAL,
	       "names that would leave the sysfs tree are rejected");

	tap_eq_u64(pmu_sysfs__cpumask(root, "power", cpus, 8), 1, "power's cpumask: one CPU");
	tap_ok(cpus[0] && !cpus[1], "... CPU 0");
	tap_ok(pmu_sysfs__cpumask(root, "cpu", cpus, 8) == -ENOENT,
	       "a PMU without a cpumask counts everywhere: -ENOENT");
}

static void test_bad_names(void)
{
	static const char *const bad[] = {
		"bogus", "", "cycles:u", "Cycles", "cycles ", "page_faults", "L1-dcache-loads",
	};
	struct pmu_event ev;
	char why[256];
	unsigned int i, wrong = 0;
	char long_name[200];

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (pmu_event__parse(&ev, bad[i], root, why, sizeof(why)) != -EINVAL || !why[0]) {
			tap_diag("'%s' was not rejected with a reason", bad[i]);
			wrong++;
		}
	}
	tap_ok(!wrong, "names in none of the forms: -EINVAL with a reason");
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	tap_ok(pmu_event__parse(&ev, long_name, root, why, sizeof(why)) == -EINVAL,
	       "a name of %zu characters is rejected", sizeof(long_name) - 1);
	tap_ok(strstr(pmu_event_forms, "rNNNN") && strstr(pmu_event_forms, "PMU/EVENT/"),
	       "the accepted forms, for the error message, name all three");
}

static void test_cpulist(void)
{
	bool cpus[16] = { false };

	tap_eq_u64(pmu_cpulist__parse("0-3,8,10-11\n", cpus, 16), 7, "0-3,8,10-11: 7 CPUs");
	tap_ok(cpus[0] && cpus[3] && !cpus[4] && cpus[8] && cpus[11] && !cpus[12],
	       "... the right ones");
	memset(cpus, 0, sizeof(cpus));
	tap_eq_u64(pmu_cpulist__parse("14-20", cpus, 16), 2, "CPUs past max are left out");
	tap_ok(pmu_cpulist__parse("", cpus, 16) == 0, "an empty list: 0");
	tap_ok(pmu_cpulist__parse("3-1", cpus, 16) == -EINVAL &&
		       pmu_cpulist__parse("a", cpus, 16) == -EINVAL &&
		       pmu_cpulist__parse("1-", cpus, 16) == -EINVAL,
	       "malformed lists: -EINVAL");
}

static void test_groups(void)
{
	static const char *const names[] = {
		"task-clock", "cycles",	       "page-faults", "instructions", "cache-misses",
		"msr/tsc/",   "branch-misses", "cs",	      "r3c",
	};
	static const unsigned int want2[] = { 0, 1, 0, 1, 2, 3, 2, 0, 4 };
	static const unsigned int want4[] = { 0, 1, 0, 1, 1, 2, 1, 0, 3 };
	static const unsigned int want1[] = { 0, 1, 0, 2, 3, 4, 5, 0, 6 };
	struct pmu_event evs[9];
	unsigned int group[9], i, n;

	for (i = 0; i < 9; i++)
		if (parse(&evs[i], names[i]))
			tap_bail("unable to parse %s", names[i]);
	n = pmu_groups__plan(evs, 9, 2, group);
	tap_eq_u64(n, 5, "group_size 2: five groups");
	tap_ok(!memcmp(group, want2, sizeof(want2)),
	       "... software together, hardware in pairs in order, msr apart");
	n = pmu_groups__plan(evs, 9, 4, group);
	tap_eq_u64(n, 4, "group_size 4: four groups");
	tap_ok(!memcmp(group, want4, sizeof(want4)), "... core events in chunks of four");
	n = pmu_groups__plan(evs, 9, 1, group);
	tap_eq_u64(n, 7, "group_size 1: every hardware event alone, software still together");
	tap_ok(!memcmp(group, want1, sizeof(want1)), "... in order of their first event");
	n = pmu_groups__plan(evs, 1, 4, group);
	tap_ok(n == 1 && group[0] == 0, "one software event: one group");
	tap_eq_u64(pmu_groups__plan(evs, 0, 4, group), 0, "no events: no groups");
}

static bool near(double a, double b)
{
	double d = a > b ? a - b : b - a;

	return d <= 1e-9 * (b > 0 ? b : -b) + 1e-9;
}

static void test_scaling(void)
{
	struct pmu_count prev = { 1000, 100, 100 }, cur;
	struct pmu_interval iv;
	double s;

	tap_ok(!pmu_scale(1000, 100, 100, &s) && near(s, 1000), "running all the time: as read");
	tap_ok(!pmu_scale(1000, 200, 100, &s) && near(s, 2000), "running half the time: doubled");
	tap_ok(pmu_scale(1000, 200, 0, &s) == -ENODATA && s == 0,
	       "never ran: -ENODATA, no division by zero");
	tap_ok(pmu_scale(1000, 0, 0, &s) == -ENODATA && s == 0,
	       "never enabled: not counted either");
	tap_ok(!pmu_scale(1ull << 62, 3000000000ull, 1000000000ull, &s) &&
		       near(s, 3.0 * (double)(1ull << 62)),
	       "value * enabled past 64 bits: no overflow");

	cur = (struct pmu_count){ 500, 100, 100 };
	tap_ok(!pmu_interval__compute(NULL, &cur, &iv) && iv.delta == 500 && iv.counted &&
		       !iv.multiplexed && near(iv.ratio, 1.0) && near(iv.scaled, 500),
	       "first reading: the interval from opening");
	cur = (struct pmu_count){ 1600, 300, 200 };
	tap_ok(!pmu_interval__compute(&prev, &cur, &iv) && iv.delta == 600 && iv.enabled == 200 &&
		       iv.running == 100 && iv.multiplexed && near(iv.ratio, 2.0) &&
		       near(iv.scaled, 1200),
	       "50 %% running in the interval: the deltas scale by enabled/running of the interval");
	/* cumulatively 1600 * 300 / 200 = 2400; the interval's own ratio differs from it */
	tap_ok(!pmu_scale(cur.value, cur.enabled, cur.running, &s) && near(s, 2400),
	       "the total scales by the cumulative ratio");
	cur = (struct pmu_count){ 1000, 200, 100 };
	tap_ok(pmu_interval__compute(&prev, &cur, &iv) == -ENODATA && !iv.counted &&
		       iv.delta == 0 && iv.enabled == 100 && iv.scaled == 0 && iv.ratio == 0,
	       "not running in the interval: reported as not counted");
	cur = (struct pmu_count){ 10, 5, 5 };
	tap_ok(!pmu_interval__compute(&prev, &cur, &iv) && iv.delta == 10 && iv.enabled == 5,
	       "a counter below the previous reading (a new counter) starts from 0");
	prev = (struct pmu_count){ 0xfffffffffffffff0ull, 100, 100 };
	cur = (struct pmu_count){ 0xffffffffffffffffull, 200, 200 };
	tap_ok(!pmu_interval__compute(&prev, &cur, &iv) && iv.delta == 15,
	       "64-bit totals near the top: the delta is exact");
}

static void test_group_parse(void)
{
	__u64 buf[9] = { 3, 1000, 500, 11, 10, 22, 20, 33, 30 };
	__u64 ids[3] = { 20, 10, 30 };
	struct pmu_count out[3];

	tap_ok(!pmu_group__parse(buf, sizeof(buf), ids, 3, out) && out[0].value == 22 &&
		       out[1].value == 11 && out[2].value == 33 && out[1].enabled == 1000 &&
		       out[2].running == 500,
	       "a group read: values matched by id, the group's times on each");
	tap_ok(pmu_group__parse(buf, sizeof(buf) - 8, ids, 3, out) == -EBADMSG,
	       "a short read: -EBADMSG");
	tap_ok(pmu_group__parse(buf, sizeof(buf), ids, 2, out) == -EBADMSG,
	       "nr is not the group's size: -EBADMSG");
	ids[2] = 99;
	tap_ok(pmu_group__parse(buf, sizeof(buf), ids, 3, out) == -EBADMSG,
	       "an id the read does not hold: -EBADMSG");
	tap_ok(pmu_group__parse(buf, 16, ids, 0, out) == -EBADMSG, "less than a header: -EBADMSG");
	tap_eq_u64(pmu_group__read_size(3), 72, "the read size of three events");
}

/* The three events as pmu.c opens them: one group, times and ids in the read, the leader
 * enabled once the group is whole. */
static int open_group(int pid, bool inherit, int fds[3], __u64 ids[3])
{
	static const char *const names[] = { "task-clock", "page-faults", "context-switches" };
	struct perf_event_attr attr;
	struct pmu_event ev;
	int i;

	for (i = 0; i < 3; i++) {
		if (pmu_event__parse(&ev, names[i], root, NULL, 0))
			return -EINVAL;
		memset(&attr, 0, sizeof(attr));
		pmu_event__attr(&ev, &attr);
		attr.inherit = inherit;
		attr.disabled = !i;
		attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
				   PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
		fds[i] = (int)syscall(SYS_perf_event_open, &attr, pid, -1, i ? fds[0] : -1,
				      PERF_FLAG_FD_CLOEXEC);
		if (fds[i] < 0)
			return -errno;
		if (ioctl(fds[i], PERF_EVENT_IOC_ID, &ids[i]))
			return -errno;
	}
	return ioctl(fds[0], PERF_EVENT_IOC_ENABLE, 0) ? -errno : 0;
}

/* n fresh pages touched (a fault each) and n short sleeps (a switch each). */
static void work(unsigned int n)
{
	long page = sysconf(_SC_PAGESIZE);
	struct timespec ts = { 0, 200000 };
	unsigned int i;
	char *mem;

	mem = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		   0);
	if (mem == MAP_FAILED)
		tap_bail("unable to map %u pages", n);
	for (i = 0; i < n; i++)
		mem[(size_t)page * i] = 1;
	munmap(mem, (size_t)page * n);
	for (i = 0; i < n; i++)
		nanosleep(&ts, NULL);
}

static void test_kernel(void)
{
	enum { N = 64 };
	__u64 buf[9], ids[3];
	struct pmu_count c[3];
	int fds[3] = { -1, -1, -1 }, err, i;
	pid_t child;
	ssize_t n;

	err = open_group(0, false, fds, ids);
	if (err == -EACCES || err == -EPERM) {
		/* CI runs as root: there this must work, so only a user's run skips it */
		tap_ok(geteuid() != 0,
		       "# SKIP software counters need CAP_PERFMON or "
		       "perf_event_paranoid <= 1 (%s)",
		       strerror(-err));
		return;
	}
	tap_ok(!err,
	       "task-clock, page-faults, context-switches open as one group on this process "
	       "(%s)",
	       err ? strerror(-err) : "ok");
	if (err)
		return;
	work(N);
	n = read(fds[0], buf, sizeof(buf));
	tap_ok(n == (ssize_t)sizeof(buf) && !pmu_group__parse(buf, (size_t)n, ids, 3, c),
	       "one read() gets the whole group");
	tap_ok(c[1].value >= N, "page-faults %llu >= %d pages touched",
	       (unsigned long long)c[1].value, N);
	tap_ok(c[2].value >= N, "context-switches %llu >= %d sleeps",
	       (unsigned long long)c[2].value, N);
	tap_ok(c[0].value > 0 && c[0].enabled > 0 && c[0].running == c[0].enabled,
	       "task-clock %llu ns; software counters are never multiplexed (%llu/%llu)",
	       (unsigned long long)c[0].value, (unsigned long long)c[0].running,
	       (unsigned long long)c[0].enabled);
	for (i = 2; i >= 0; i--)
		close(fds[i]);

	/* inherit, as for a process tree: a child's counts join the parent's group */
	err = open_group(0, true, fds, ids);
	tap_ok(!err, "the same group with inherit opens (%s)", err ? strerror(-err) : "ok");
	if (err)
		return;
	child = fork();
	if (child == 0) {
		work(N);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	n = read(fds[0], buf, sizeof(buf));
	tap_ok(n == (ssize_t)sizeof(buf) && !pmu_group__parse(buf, (size_t)n, ids, 3, c),
	       "an inherited group reads as a group on this kernel (%s)",
	       n < 0 ? strerror(errno) : "ok");
	tap_ok(c[1].value >= N && c[2].value >= N,
	       "the child's page faults (%llu) and switches (%llu) count into the parent's",
	       (unsigned long long)c[1].value, (unsigned long long)c[2].value);
	for (i = 2; i >= 0; i--)
		close(fds[i]);
}

int main(void)
{
	make_sysfs();
	test_generic();
	test_raw();
	test_sysfs();
	test_bad_names();
	test_cpulist();
	test_groups();
	test_scaling();
	test_group_parse();
	test_kernel();
	remove_sysfs();
	return tap_done();
}
