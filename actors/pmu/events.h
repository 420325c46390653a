/* SPDX-License-Identifier: MIT */
/*
 * The pmu source's event names (docs/pmu.md, "Event forms") and the counter groups they are
 * opened in. Pure parsing, plus reads of the sysfs PMU tree; nothing here opens an event.
 *
 * Calling order: pmu_event__parse() once per name of the `events` list, then
 * pmu_groups__plan() over the events that opened alone (pmu.c classifies them first), then
 * pmu_event__attr() for each event as it is opened in its group.
 */
#ifndef XPUSUP_ACTORS_PMU_EVENTS_H
#define XPUSUP_ACTORS_PMU_EVENTS_H

#include <linux/perf_event.h>
#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

/* Where the kernel lists its PMUs; a parameter everywhere so tests can use a fake tree. */
#define PMU_SYSFS_ROOT "/sys/bus/event_source/devices"

#define PMU_EVENT_NAME_MAX 128
#define PMU_NAME_MAX 64

/* What an event may share a counter group with (the kernel's rule: one hardware PMU per
 * group, software events anywhere). */
enum pmu_event_class {
	PMU_CLASS_SOFTWARE = 0, /* PERF_TYPE_SOFTWARE: always counting, one group for all */
	PMU_CLASS_CORE = 1, /* the CPU's counters: generic hardware, raw rNNNN, cpu/.../ */
	PMU_CLASS_OTHER = 2, /* another sysfs PMU (msr, power, uncore): groups of its own type */
};

struct pmu_event {
	char name[PMU_EVENT_NAME_MAX]; /* as the user wrote it: the STRING the records refer to */
	char pmu[PMU_NAME_MAX]; /* sysfs PMU of the pmu/event/ form; "" for the other forms */
	__u32 type; /* perf_event_attr.type */
	__u64 config, config1, config2;
	enum pmu_event_class cls;
};

/*
 * pmu_event__parse - turn one name of the `events` list into ev.
 *
 * Forms: a generic hardware or software name ("cycles", "page-faults", ...), raw "rNNNN"
 * (1 to 16 hex digits, PERF_TYPE_RAW), or "PMU/TERMS/" read from sysfs_root/PMU: its type
 * file, events/NAME for a named event, format/TERM for the bits a term sets. TERMS is a comma
 * list of NAME (an event of that PMU, or a format term set to 1), TERM=VALUE (decimal or 0x
 * hex) or config=/config1=/config2=VALUE.
 *
 * Returns 0; -EINVAL when name is in none of the forms, -ENOENT when the PMU, its event or a
 * term is not in sysfs_root, -ERANGE when a value does not fit its term's bits. On error,
 * why (why_len bytes, may be 0) says what is wrong in words; ev is then undefined.
 */
int pmu_event__parse(struct pmu_event *ev, const char *name, const char *sysfs_root, char *why,
		     size_t why_len);

/* What pmu_event__parse accepts, in one line for error messages. */
extern const char pmu_event_forms[];

/* pmu_event__attr - set attr's type, config, config1, config2 and size from ev. */
void pmu_event__attr(const struct pmu_event *ev, struct perf_event_attr *attr);

/*
 * pmu_groups__plan - which counter group each of the n events goes in: every software event
 * in one group (they are never multiplexed, and one read() gets them all), the others in
 * groups of at most group_size events of one PMU type, in the order given. group[i] gets the
 * group of evs[i]; groups are numbered from 0 in order of their first event, and the first
 * event of a group is its leader. Returns the number of groups.
 */
unsigned int pmu_groups__plan(const struct pmu_event *evs, unsigned int n, unsigned int group_size,
			      unsigned int *group);

/*
 * pmu_cpulist__parse - a kernel CPU list ("0-3,8,10-11\n") into cpus[0..max): true for each
 * listed CPU below max (the others are left as they are). Returns how many were set, or
 * -EINVAL for a malformed list.
 */
int pmu_cpulist__parse(const char *s, bool *cpus, unsigned int max);

/*
 * pmu_sysfs__cpumask - the CPUs a sysfs PMU counts on (its cpumask file: uncore and package
 * PMUs count system-wide on one CPU per package), into cpus as pmu_cpulist__parse does.
 * Returns the count, or -ENOENT when the PMU has no cpumask (it counts on every CPU).
 */
int pmu_sysfs__cpumask(const char *sysfs_root, const char *pmu, bool *cpus, unsigned int max);

#endif /* XPUSUP_ACTORS_PMU_EVENTS_H */
