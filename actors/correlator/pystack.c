// SPDX-License-Identifier: MIT
/* Python frames merged into native stacks: contract in pystack.h. */
#include "actors/correlator/pystack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/mix.h"
#include "common/status.h"
#include "common/pyframe.h"

#define LAYOUT_SLOTS 1024 /* processes whose interpreter is kept; a collision reads again */
#define CODES_MAX 65536 /* code objects kept, over every process */
#define RETRY_NS 1000000000ull /* a process whose interpreter could not be read, again */

enum layout_state { LAYOUT_EMPTY = 0, LAYOUT_OK, LAYOUT_FAILED };

struct layout_slot {
	__u32 pid;
	__u32 state; /* enum layout_state */
	__u64 retry_ns; /* LAYOUT_FAILED: not before */
	struct py_layout *l; /* allocated on first use, reused by the slot's next process */
};

struct pystack {
	struct py_codes *codes;
	struct layout_slot slots[LAYOUT_SLOTS];
	struct pystack_stats st;
	__u64 cached_max; /* the most code objects held at once */
};

struct pystack *pystack__new(void)
{
	struct pystack *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->codes = py_codes__new(CODES_MAX);
	if (!ps->codes) {
		free(ps);
		return NULL;
	}
	return ps;
}

void pystack__free(struct pystack *ps)
{
	unsigned int i;

	if (!ps)
		return;
	for (i = 0; i < LAYOUT_SLOTS; i++)
		free(ps->slots[i].l);
	py_codes__free(ps->codes);
	free(ps);
}

static struct layout_slot *slot_of(struct pystack *ps, __u32 pid)
{
	return &ps->slots[xpu_mix64(pid) % LAYOUT_SLOTS];
}

/* pid's interpreter, read from the process the first time (and again when the record says
 * another version: an exec the drop has not caught up with); NULL when it cannot be read. */
static const struct py_layout *layout_of(struct pystack *ps, __u32 pid, __u32 version)
{
	struct layout_slot *s = slot_of(ps, pid);
	__u64 now;

	if (s->pid == pid && s->state == LAYOUT_OK && s->l->version == version)
		return s->l;
	now = xpu_now_ns();
	if (s->pid == pid && s->state == LAYOUT_FAILED && now < s->retry_ns)
		return NULL;
	if (!s->l && !(s->l = malloc(sizeof(*s->l))))
		return NULL;
	s->pid = pid;
	s->state = py_layout__detect(pid, s->l, NULL, 0) || s->l->version != version ?
			   LAYOUT_FAILED :
			   LAYOUT_OK;
	s->retry_ns = now + RETRY_NS;
	return s->state == LAYOUT_OK ? s->l : NULL;
}

void pystack__drop_pid(struct pystack *ps, __u32 pid)
{
	struct layout_slot *s = slot_of(ps, pid);

	if (s->pid == pid)
		s->state = LAYOUT_EMPTY;
	py_codes__drop_pid(ps->codes, pid);
}

void pystack__collect(struct pystack *ps)
{
	py_codes__collect(ps->codes);
}

/* One Python frame on its way into a stack: its address (0: left out) and whether it is the
 * outermost of its eval activation. */
struct pyf {
	__u64 ip;
	bool entry;
};

/* The record's Python frames as frame addresses, innermost first, each with its line. */
static void py_frames(struct pystack *ps, __u32 pid, const struct xpu_py_stack *py, struct pyf *out)
{
	const struct xpu_py_frame *f = (const struct xpu_py_frame *)(py + 1);
	const struct py_layout *l = layout_of(ps, pid, py->version);
	__u32 i, line;
	int err;

	if (!l)
		ps->st.no_layout++;
	for (i = 0; i < py->n; i++) {
		line = 0;
		err = l ? py_codes__line(ps->codes, pid, l, f[i].code, f[i].lasti, &line) : 0;
		/* not a code object: a frame being torn down, or a program that wrote over
		 * it; never a guessed name */
		out[i].ip = err == -EINVAL ? 0 : xpu_pyframe__ip(f[i].code, err ? 0 : line);
		out[i].entry = f[i].flags & XPU_PY_FRAME_F_ENTRY;
		if (!out[i].ip)
			ps->st.dropped++;
	}
}

/* Appends the Python frames of the activation that starts at *next (up to its entry frame, or
 * the last one) to ips at *n (room for cap); *next moves past it. */
static void put_activation(const struct pyf *pf, __u32 npf, __u32 *next, __u64 *ips, __u32 *n,
			   __u32 cap, __u64 *dropped)
{
	__u32 i;

	for (i = *next; i < npf; i++) {
		if (pf[i].ip) {
			if (*n < cap)
				ips[(*n)++] = pf[i].ip;
			else
				(*dropped)++;
		}
		if (pf[i].entry) {
			i++;
			break;
		}
	}
	*next = i;
}

int pystack__merge(struct pystack *ps, const void *rec, const struct xpu_py_stack *py, void *out,
		   __u32 cap)
{
	const struct xpu_rec *h = rec;
	struct pyf pf[XPU_PY_MAX_FRAMES];
	__u64 ips[XPU_MAX_FRAMES], look, dropped = 0, unmatched = 0;
	const __u64 *user;
	__u32 nu, nk = 0, n = 0, next = 0, i, exact, size, npf = py->n;
	__u64 t0 = xpu_now_ns();

	if (h->type == XPU_REC_CPU_SAMPLE) {
		const struct xpu_cpu_sample *s = rec;

		nk = s->n_kernel;
		nu = s->n_user;
		user = s->ips + nk;
		exact = 1; /* a sample's innermost user frame is where it was, not a return */
	} else {
		const struct xpu_launch *l = rec;

		nu = l->n_user;
		user = l->ips;
		exact = 0; /* the launch stack starts at the return into the launching code */
	}
	if (npf > XPU_PY_MAX_FRAMES)
		npf = XPU_PY_MAX_FRAMES;
	if (ps)
		py_frames(ps, h->pid, py, pf);
	else
		npf = 0; /* no memory for the cache: the native frames alone */
	for (i = 0; i < nu; i++) {
		look = user[i] - (i < exact ? 0 : 1);
		if (next < npf && look >= py->eval_start && look < py->eval_end) {
			put_activation(pf, npf, &next, ips, &n, XPU_MAX_FRAMES, &dropped);
			continue;
		}
		if (n < XPU_MAX_FRAMES)
			ips[n++] = user[i];
		else
			dropped++;
	}
	/* activations left: the native walk stopped short of their eval frames (no CFI for
	 * some frame, a truncated copy); they are outer callers still */
	while (next < npf) {
		unmatched++;
		put_activation(pf, npf, &next, ips, &n, XPU_MAX_FRAMES, &dropped);
	}
	if (ps) {
		ps->st.stacks++;
		ps->st.frames += npf;
		ps->st.dropped += dropped;
		ps->st.unmatched += unmatched;
		ps->st.ns += xpu_now_ns() - t0;
	}
	if (h->type == XPU_REC_CPU_SAMPLE) {
		const struct xpu_cpu_sample *s = rec;
		struct xpu_cpu_sample *o = out;

		size = xpu_cpu_sample__size(nk, n);
		if (cap < size)
			return -ENOSPC;
		memcpy(o, s, sizeof(*s) + 8u * nk);
		memcpy(o->ips + nk, ips, 8u * n);
		o->n_user = (__u16)n;
	} else {
		const struct xpu_launch *l = rec;
		struct xpu_launch *o = out;

		size = xpu_launch__size(n);
		if (cap < size)
			return -ENOSPC;
		memcpy(o, l, sizeof(*l));
		memcpy(o->ips, ips, 8u * n);
		o->n_user = (__u16)n;
	}
	((struct xpu_rec *)out)->size = size;
	((struct xpu_rec *)out)->flags = h->flags & ~(XPU_STACK_F_PY | XPU_STACK_F_COPY);
	return (int)size;
}

void pystack__name(struct pystack *ps, __u32 pid, const __u64 *ips, __u32 n, const char **names)
{
	const struct layout_slot *s = slot_of(ps, pid);
	__u32 i, line;

	for (i = 0; i < n; i++) {
		if (!xpu_pyframe__is(ips[i]))
			continue;
		names[i] = py_codes__name(ps->codes, pid, xpu_pyframe__code(ips[i]),
					  xpu_pyframe__line(ips[i]));
		/* evicted since the merge: read again while the process is there */
		if (!names[i] && s->pid == pid && s->state == LAYOUT_OK &&
		    !py_codes__line(ps->codes, pid, s->l, xpu_pyframe__code(ips[i]),
				    XPU_PY_LASTI_NONE, &line))
			names[i] = py_codes__name(ps->codes, pid, xpu_pyframe__code(ips[i]),
						  xpu_pyframe__line(ips[i]));
		if (names[i])
			ps->st.named++;
		else
			ps->st.unnamed++;
	}
}

void pystack__stats(struct pystack *ps, struct pystack_stats *out)
{
	*out = ps->st;
	py_codes__stats(ps->codes, &out->codes);
	/* the entries held now fall to 0 as processes go: the peak is what sizes the cache */
	if (out->codes.cached > ps->cached_max)
		ps->cached_max = out->codes.cached;
	out->codes.cached = ps->cached_max;
}
