// SPDX-License-Identifier: MIT
#include "actors/pmu/scale.h"

#include <errno.h>
#include <string.h>

int pmu_scale(__u64 value, __u64 enabled, __u64 running, double *scaled)
{
	if (!running) {
		*scaled = 0;
		return -ENODATA;
	}
	/* In double: value * enabled overflows 64 bits long before the estimate stops being
	 * useful, and 53 bits of precision are far finer than multiplexing's own error. */
	*scaled = running >= enabled ? (double)value : (double)value * enabled / running;
	return 0;
}

int pmu_interval__compute(const struct pmu_count *prev, const struct pmu_count *cur,
			  struct pmu_interval *out)
{
	static const struct pmu_count zero;

	if (!prev || cur->value < prev->value || cur->enabled < prev->enabled ||
	    cur->running < prev->running)
		prev = &zero;
	memset(out, 0, sizeof(*out));
	out->delta = cur->value - prev->value;
	out->enabled = cur->enabled - prev->enabled;
	out->running = cur->running - prev->running;
	if (pmu_scale(out->delta, out->enabled, out->running, &out->scaled))
		return -ENODATA;
	out->counted = true;
	out->multiplexed = out->running < out->enabled;
	out->ratio = out->multiplexed ? (double)out->enabled / (double)out->running : 1.0;
	return 0;
}

int pmu_group__parse(const void *buf, size_t len, const __u64 *ids, unsigned int n,
		     struct pmu_count *out)
{
	const __u64 *w = buf;
	unsigned int i, j;
	__u64 nr;

	if (len < 3 * sizeof(__u64))
		return -EBADMSG;
	nr = w[0];
	if (nr != n || len < pmu_group__read_size(n))
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		/* the kernel lists the leader, then siblings in the order they were opened:
		 * look there first, search only if it ever differs */
		j = i;
		if (w[3 + 2 * j + 1] != ids[i])
			for (j = 0; j < n && w[3 + 2 * j + 1] != ids[i]; j++)
				;
		if (j == n)
			return -EBADMSG;
		out[i].value = w[3 + 2 * j];
		out[i].enabled = w[1];
		out[i].running = w[2];
	}
	return 0;
}
