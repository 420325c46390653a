// SPDX-License-Identifier: MIT
#include "actors/pmu/events.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char pmu_event_forms[] =
	"a generic name (cycles, instructions, cache-references, cache-misses, branches, "
	"branch-misses, bus-cycles, stalled-cycles-frontend, stalled-cycles-backend, ref-cycles, "
	"cpu-clock, task-clock, page-faults, minor-faults, major-faults, context-switches, "
	"cpu-migrations, alignment-faults, emulation-faults), raw rNNNN (hex), or PMU/EVENT/ and "
	"PMU/TERM=VALUE,.../ from " PMU_SYSFS_ROOT;

struct generic {
	const char *name;
	__u32 type;
	__u64 config;
};

/* perf's names and aliases (tools/perf/util/parse-events.c), so a list copied from a perf
 * command line works here. */
static const struct generic generic_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
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

#define N_GENERIC (sizeof(generic_events) / sizeof(generic_events[0]))

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

static enum pmu_event_class class_of(__u32 type)
{
	switch (type) {
	case PERF_TYPE_SOFTWARE:
		return PMU_CLASS_SOFTWARE;
	case PERF_TYPE_HARDWARE:
	case PERF_TYPE_HW_CACHE:
	case PERF_TYPE_RAW:
		return PMU_CLASS_CORE;
	default:
		return PMU_CLASS_OTHER;
	}
}

/* A PMU, event or term name from the config becomes part of a path: letters, digits, '_',
 * '-', '.', not starting with '.', so nothing can climb out of the sysfs tree. */
static bool sysfs_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || s[0] == '.')
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* root/pmu/sub into buf, trailing blanks removed. Returns its length or -errno. */
static int read_sysfs(const char *root, const char *pmu, const char *sub, char *buf, size_t cap)
{
	char path[4096];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s/%s", root, pmu, sub) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return (int)n;
}

/* A term's value as perf writes them: 0x hex or decimal. */
static int parse_value(const char *s, __u64 *out)
{
	unsigned long long v;
	char *end;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)*s) || (base == 10 && !isdigit((unsigned char)*s)))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static __u64 *config_field(struct pmu_event *ev, const char *name, size_t len)
{
	if (len == 6 && !strncmp(name, "config", 6))
		return &ev->config;
	if (len == 7 && !strncmp(name, "config1", 7))
		return &ev->config1;
	if (len == 7 && !strncmp(name, "config2", 7))
		return &ev->config2;
	return NULL;
}

/*
 * Put value into the bits a format file names ("config:0-7,21", "config1:0-63"): its low
 * bits go into the first range, the next ones into the next range. Returns 0, -ERANGE when
 * value has bits left over, -EINVAL for a format the kernel would not write.
 */
static int set_format_bits(struct pmu_event *ev, const char *format, __u64 value)
{
	const char *colon = strchr(format, ':'), *p;
	__u64 *field;

	if (!colon || !(field = config_field(ev, format, (size_t)(colon - format))))
		return -EINVAL;
	p = colon + 1;
	for (;;) {
		unsigned long lo, hi;
		unsigned int width;
		__u64 mask;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			hi = strtoul(p, &end, 10);
		}
		if (lo > hi || hi > 63)
			return -EINVAL;
		width = (unsigned int)(hi - lo + 1);
		mask = width == 64 ? ~0ull : ((1ull << width) - 1);
		*field = (*field & ~(mask << lo)) | ((value & mask) << lo);
		value = width == 64 ? 0 : value >> width;
		if (*end == '\0')
			break;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
	return value ? -ERANGE : 0;
}

struct parse {
	struct pmu_event *ev;
	const char *root;
	char *why;
	size_t why_len;
};

static int apply_terms(struct parse *ps, const char *terms, bool in_alias);

/* One TERM, TERM=VALUE or event NAME of a pmu/.../ form. */
static int apply_term(struct parse *ps, const char *term, size_t len, bool in_alias)
{
	const char *eq = memchr(term, '=', len);
	size_t key_len = eq ? (size_t)(eq - term) : len;
	char key[PMU_NAME_MAX], text[256], format[256], sub[PMU_NAME_MAX + 16];
	__u64 value = 1, *field;
	int err;

	if (key_len >= sizeof(key) || !sysfs_name_ok(term, key_len)) {
		say(ps->why, ps->why_len, "bad term '%.*s'", (int)len, term);
		return -EINVAL;
	}
	memcpy(key, term, key_len);
	key[key_len] = '\0';
	if (eq) {
		size_t vlen = len - key_len - 1;

		if (vlen >= sizeof(text)) {
			say(ps->why, ps->why_len, "value of %s too long", key);
			return -EINVAL;
		}
		memcpy(text, eq + 1, vlen);
		text[vlen] = '\0';
		if (parse_value(text, &value)) {
			/* sysfs aliases write "?" where perf wants a parameter from the user */
			say(ps->why, ps->why_len, "%s=%s is not a number (0x hex or decimal)", key,
			    text);
			return -EINVAL;
		}
	}
	if ((field = config_field(ps->ev, key, key_len))) {
		*field = value;
		return 0;
	}
	if (!eq && !in_alias) {
		/* a named event of this PMU: its file holds the terms it stands for */
		snprintf(sub, sizeof(sub), "events/%s", key);
		err = read_sysfs(ps->root, ps->ev->pmu, sub, text, sizeof(text));
		if (err >= 0)
			return apply_terms(ps, text, true);
	}
	snprintf(sub, sizeof(sub), "format/%s", key);
	err = read_sysfs(ps->root, ps->ev->pmu, sub, format, sizeof(format));
	if (err < 0) {
		say(ps->why, ps->why_len, "PMU %s has no %s %s (see %s/%s/%s)", ps->ev->pmu,
		    eq || in_alias ? "term" : "event or term", key, ps->root, ps->ev->pmu,
		    eq || in_alias ? "format" : "events");
		return -ENOENT;
	}
	err = set_format_bits(ps->ev, format, value);
	if (err == -ERANGE)
		say(ps->why, ps->why_len, "%s=0x%llx does not fit %s's bits (%s)", key,
		    (unsigned long long)value, key, format);
	else if (err)
		say(ps->why, ps->why_len, "%s/%s/format/%s is not understood: '%s'", ps->root,
		    ps->ev->pmu, key, format);
	return err;
}

static int apply_terms(struct parse *ps, const char *terms, bool in_alias)
{
	const char *p = terms, *comma;
	int err;

	if (!*p) {
		say(ps->why, ps->why_len, "no event between the slashes");
		return -EINVAL;
	}
	for (;;) {
		comma = strchr(p, ',');
		err = apply_term(ps, p, comma ? (size_t)(comma - p) : strlen(p), in_alias);
		if (err)
			return err;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/* PMU/TERMS/: the PMU's type from sysfs, then its terms in order (a later one wins). */
static int parse_sysfs(struct parse *ps, const char *name)
{
	const char *slash = strchr(name, '/'), *terms_end;
	size_t pmu_len = (size_t)(slash - name), len = strlen(name);
	char text[64], terms[PMU_EVENT_NAME_MAX];
	__u64 type;
	int err;

	terms_end = name + len - 1;
	if (len < 4 || *terms_end != '/' || terms_end == slash ||
	    memchr(slash + 1, '/', (size_t)(terms_end - slash - 1))) {
		say(ps->why, ps->why_len, "write a PMU event as PMU/EVENT/ or PMU/TERM=VALUE,.../");
		return -EINVAL;
	}
	if (pmu_len >= sizeof(ps->ev->pmu) || !sysfs_name_ok(name, pmu_len)) {
		say(ps->why, ps->why_len, "bad PMU name '%.*s'", (int)pmu_len, name);
		return -EINVAL;
	}
	memcpy(ps->ev->pmu, name, pmu_len);
	ps->ev->pmu[pmu_len] = '\0';
	err = read_sysfs(ps->root, ps->ev->pmu, "type", text, sizeof(text));
	if (err < 0) {
		say(ps->why, ps->why_len, "no PMU %s here (%s/%s/type: %s)", ps->ev->pmu, ps->root,
		    ps->ev->pmu, strerror(-err));
		return -ENOENT;
	}
	if (parse_value(text, &type) || type > 0xffffffffu) {
		say(ps->why, ps->why_len, "%s/%s/type is not a number: '%s'", ps->root, ps->ev->pmu,
		    text);
		return -EINVAL;
	}
	ps->ev->type = (__u32)type;
	ps->ev->cls = class_of(ps->ev->type);
	memcpy(terms, slash + 1, (size_t)(terms_end - slash - 1));
	terms[terms_end - slash - 1] = '\0';
	return apply_terms(ps, terms, false);
}

int pmu_event__parse(struct pmu_event *ev, const char *name, const char *sysfs_root, char *why,
		     size_t why_len)
{
	struct parse ps = { .ev = ev, .root = sysfs_root, .why = why, .why_len = why_len };
	size_t len = strlen(name), i;
	__u64 raw;

	memset(ev, 0, sizeof(*ev));
	if (why_len)
		why[0] = '\0';
	if (!len || len >= sizeof(ev->name)) {
		say(why, why_len, "an event name is 1 to %d characters", PMU_EVENT_NAME_MAX - 1);
		return -EINVAL;
	}
	memcpy(ev->name, name, len + 1);
	for (i = 0; i < N_GENERIC; i++) {
		if (!strcmp(name, generic_events[i].name)) {
			ev->type = generic_events[i].type;
			ev->config = generic_events[i].config;
			ev->cls = class_of(ev->type);
			return 0;
		}
	}
	if (name[0] == 'r' && len >= 2 && len <= 17 &&
	    strspn(name + 1, "0123456789abcdefABCDEF") == len - 1) {
		raw = strtoull(name + 1, NULL, 16);
		ev->type = PERF_TYPE_RAW;
		ev->config = raw;
		ev->cls = PMU_CLASS_CORE;
		return 0;
	}
	if (strchr(name, '/'))
		return parse_sysfs(&ps, name);
	say(why, why_len, "unknown event");
	return -EINVAL;
}

void pmu_event__attr(const struct pmu_event *ev, struct perf_event_attr *attr)
{
	attr->size = sizeof(*attr);
	attr->type = ev->type;
	attr->config = ev->config;
	attr->config1 = ev->config1;
	attr->config2 = ev->config2;
}

static bool same_group_kind(const struct pmu_event *a, const struct pmu_event *b)
{
	return a->cls == b->cls && (a->cls != PMU_CLASS_OTHER || a->type == b->type);
}

unsigned int pmu_groups__plan(const struct pmu_event *evs, unsigned int n, unsigned int group_size,
			      unsigned int *group)
{
	unsigned int n_groups = 0, i, j, members;
	int software = -1, last;

	if (!group_size)
		group_size = 1;
	for (i = 0; i < n; i++) {
		if (evs[i].cls == PMU_CLASS_SOFTWARE) {
			if (software < 0)
				software = (int)n_groups++;
			group[i] = (unsigned int)software;
			continue;
		}
		/* the newest group of this kind, if it has room; n is a few dozen at most */
		last = -1;
		for (j = 0; j < i; j++)
			if (evs[j].cls != PMU_CLASS_SOFTWARE && same_group_kind(&evs[i], &evs[j]))
				last = (int)group[j];
		members = 0;
		for (j = 0; last >= 0 && j < i; j++)
			members += group[j] == (unsigned int)last;
		if (last >= 0 && members < group_size)
			group[i] = (unsigned int)last;
		else
			group[i] = n_groups++;
	}
	return n_groups;
}

int pmu_cpulist__parse(const char *s, bool *cpus, unsigned int max)
{
	unsigned long a, b, c;
	int n = 0;
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	while (*s && !isspace((unsigned char)*s)) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		a = strtoul(s, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		if (a > b)
			return -EINVAL;
		for (c = a; c <= b && c < max; c++, n++)
			cpus[c] = true;
		if (*end == ',')
			end++;
		else if (*end && !isspace((unsigned char)*end))
			return -EINVAL;
		s = end;
	}
	return n;
}

int pmu_sysfs__cpumask(const char *sysfs_root, const char *pmu, bool *cpus, unsigned int max)
{
	char text[4096];
	int err;

	if (!pmu[0])
		return -ENOENT;
	err = read_sysfs(sysfs_root, pmu, "cpumask", text, sizeof(text));
	if (err < 0)
		return -ENOENT;
	return pmu_cpulist__parse(text, cpus, max);
}
