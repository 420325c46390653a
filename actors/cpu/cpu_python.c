// SPDX-License-Identifier: MIT
/* The CPU source's side of Python frames: contract in cpu_python.h. */
#include "actors/cpu/cpu_python.h"

#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/cpu/profile.h"
#include "common/status.h"
#include "python/python.h"

#define PROG "xpusup-cpu"
#define LOOKS_PER_TICK 64 /* bounds the time one drain spends on /proc and ELF files */

/* When to look again after an exec, by looks so far: the loader maps a libpython within
 * milliseconds; a slow start (a loaded machine, a launcher script) gets a few seconds. */
static const __u64 retry_ms[] = { 0, 20, 100, 500, 2000 };
#define TRIES (sizeof(retry_ms) / sizeof(retry_ms[0]))

void cpu_python__init(struct cpu_python *p, struct bpf_map *procs, struct xpu_actor_slot *slot)
{
	memset(p, 0, sizeof(*p));
	p->procs = procs;
	p->slot = slot;
}

static void enqueue(struct cpu_python *p, __u32 pid, __u32 tries, __u64 at_ns)
{
	__u32 i;

	for (i = 0; i < p->n_pending; i++) {
		if (p->pending[i].pid == pid) {
			p->pending[i] = (struct cpu_python_pending){ pid, tries, at_ns };
			return;
		}
	}
	if (p->n_pending == CPU_PYTHON_PENDING_MAX) {
		p->st.pending_full++;
		return;
	}
	p->pending[p->n_pending++] = (struct cpu_python_pending){ pid, tries, at_ns };
}

void cpu_python__watch(struct cpu_python *p, __u32 pid, __u64 now_ns)
{
	enqueue(p, pid, 0, now_ns);
}

void cpu_python__watch_all(struct cpu_python *p, __u64 now_ns)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		unsigned long pid;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtoul(e->d_name, &end, 10);
		if (*end || !pid || pid > 0xffffffffu)
			continue;
		/* running already: its libraries are mapped, one look is enough */
		enqueue(p, (__u32)pid, TRIES - 1, now_ns);
	}
	closedir(d);
}

/* The kernel side's view of a layout: 0, or -ERANGE when a frame field lies past what the
 * programs read of a frame (a layout they cannot use, said like an unsupported version). */
static int to_bpf(const struct py_layout *l, struct profile_py_proc *o)
{
	memset(o, 0, sizeof(*o));
	if (l->frame_code > PROFILE_PY_FRAME_READ - 8 ||
	    l->frame_previous > PROFILE_PY_FRAME_READ - 8 ||
	    l->frame_instr > PROFILE_PY_FRAME_READ - 8 ||
	    l->frame_owner > PROFILE_PY_FRAME_READ - 1 ||
	    (l->frame_is_entry != PY_OFF_NONE && l->frame_is_entry > PROFILE_PY_FRAME_READ - 1))
		return -ERANGE;
	if (l->tstate_current_frame == PY_OFF_NONE &&
	    (l->tstate_cframe == PY_OFF_NONE || l->cframe_current_frame == PY_OFF_NONE))
		return -ERANGE;
	o->runtime = l->runtime;
	o->eval_start = l->eval_start;
	o->eval_end = l->eval_end;
	o->version = l->version;
	o->runtime_interpreters_head = l->runtime_interpreters_head;
	o->interp_threads_head = l->interp_threads_head;
	o->tstate_next = l->tstate_next;
	o->tstate_native_thread_id = l->tstate_native_thread_id;
	o->tstate_cframe = l->tstate_cframe;
	o->cframe_current_frame = l->cframe_current_frame;
	o->tstate_current_frame = l->tstate_current_frame;
	o->frame_code = l->frame_code;
	o->frame_previous = l->frame_previous;
	o->frame_instr = l->frame_instr;
	o->frame_owner = l->frame_owner;
	o->frame_is_entry = l->frame_is_entry;
	o->code_adaptive = l->code_adaptive;
	o->owner_cstack = l->owner_cstack;
	return 0;
}

/* An interpreter this cannot read: native frames only, said once per process on stderr (the
 * session log) and in status, where `xpusup record` shows it. */
static void unsupported(struct cpu_python *p, __u32 pid, const char *why)
{
	char msg[PY_WHY_MAX + 64];

	p->st.unsupported++;
	/* the verdict first: status keeps the first XPU_STATUS_PROBLEM_LEN bytes */
	snprintf(msg, sizeof(msg), "native frames only for pid %u: %s", pid, why);
	fprintf(stderr, PROG ": %s\n", msg);
	if (p->slot)
		status__set_problem(p->slot, msg, xpu_now_ns());
}

/* One look at pid. Returns true when it is settled (found, not Python for good, gone). */
static bool look(struct cpu_python *p, const struct cpu_python_pending *w)
{
	struct py_layout *l = malloc(sizeof(*l));
	struct profile_py_proc v;
	char why[PY_WHY_MAX], ver[16];
	bool settled = true;
	int err;

	if (!l)
		return true; /* not worth a retry loop: the process keeps its native frames */
	err = py_layout__detect(w->pid, l, why, sizeof(why));
	if (!err && to_bpf(l, &v)) {
		/* the path's tail: the reason is one status line */
		snprintf(why, sizeof(why), "CPython %s in %.100s: a frame layout this cannot read",
			 py_version__str(l->version, ver, sizeof(ver)),
			 l->path + (strlen(l->path) > 100 ? strlen(l->path) - 100 : 0));
		err = -ENOTSUP;
	}
	if (!err) {
		if (bpf_map__update_elem(p->procs, &w->pid, sizeof(w->pid), &v, sizeof(v),
					 BPF_ANY)) {
			fprintf(stderr, PROG ": pid %u: unable to follow its Python frames: %s\n",
				w->pid, strerror(errno));
		} else {
			p->st.processes++;
			fprintf(stderr,
				PROG ": pid %u: CPython %s in %s: reading its Python frames\n",
				w->pid, py_version__str(l->version, ver, sizeof(ver)), l->path);
		}
	} else if (err == -ENOTSUP) {
		unsupported(p, w->pid, why);
	} else if (err == -ENOENT) {
		settled = w->tries + 1 >= TRIES; /* the loader may not have mapped it yet */
	} else if (err != -ESRCH) {
		fprintf(stderr, PROG ": pid %u: unable to look for a Python interpreter: %s\n",
			w->pid, why[0] ? why : strerror(-err));
	}
	free(l);
	return settled;
}

void cpu_python__tick(struct cpu_python *p, __u64 now_ns)
{
	unsigned int looks = 0;
	__u32 i = 0;

	while (i < p->n_pending && looks < LOOKS_PER_TICK) {
		struct cpu_python_pending *w = &p->pending[i];

		if (w->at_ns > now_ns) {
			i++;
			continue;
		}
		looks++;
		if (look(p, w)) {
			p->pending[i] = p->pending[--p->n_pending];
			continue;
		}
		w->tries++;
		w->at_ns = now_ns + retry_ms[w->tries < TRIES ? w->tries : TRIES - 1] * 1000000ull;
		i++;
	}
}
