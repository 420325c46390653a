// SPDX-License-Identifier: MIT
/* kind = cpu: the eBPF stack sampler's keys (docs/cpu.md), and where each lands in struct
 * cpu_options. */
#include "actors/cpu/cpu_options.h"

#include "xpusup/event.h"

static const char *const cpu_event_names[] = { "cpu-clock", "cycles", "auto", NULL };
static const char *const cpu_unwind_names[] = { "auto", "fp", "dwarf", NULL };
static const char *const cpu_follow_mmap_names[] = { "auto", "tracepoint", "raw", "off", NULL };

static const struct conf_key cpu_keys[] = {
	{ .key = "frequency_hz",
	  CONF_MEMBER(struct cpu_options, frequency_hz),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 1,
	  .max = 100000,
	  .def = "99",
	  .doc = "samples a second on each CPU" },
	{ .key = "event",
	  CONF_MEMBER(struct cpu_options, event),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SOURCE,
	  .names = cpu_event_names,
	  .def = "cpu-clock",
	  .doc = "what drives sampling: cpu-clock (works in VMs), cycles, or auto (cycles when "
		 "the CPU has them)" },
	{ .key = "target",
	  CONF_MEMBER(struct cpu_options, target),
	  .type = CONF_T_TARGET,
	  .roles = CONF_SOURCE,
	  .def = "all",
	  .doc = "which processes: all, pid:PID,..., tree:PID, command or cgroup:PATH" },
	{ .key = "kernel_stacks",
	  CONF_MEMBER(struct cpu_options, kernel_stacks),
	  .type = CONF_T_BOOL,
	  .roles = CONF_SOURCE,
	  .def = "yes",
	  .doc = "capture the kernel part of each stack" },
	{ .key = "user_stacks",
	  CONF_MEMBER(struct cpu_options, user_stacks),
	  .type = CONF_T_BOOL,
	  .roles = CONF_SOURCE,
	  .def = "yes",
	  .doc = "capture the user part of each stack" },
	{ .key = "unwind",
	  CONF_MEMBER(struct cpu_options, unwind),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SOURCE,
	  .names = cpu_unwind_names,
	  .def = "auto",
	  .doc = "how user stacks are unwound: dwarf copies stack_bytes of each user stack for "
		 "the correlator to unwind with the CFI of the files mapped (no frame pointers "
		 "needed); fp walks frame pointers in the kernel; auto is dwarf where it can run "
		 "(x86-64), else fp" },
	{ .key = "follow_mmap",
	  CONF_MEMBER(struct cpu_options, follow_mmap),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SOURCE,
	  .names = cpu_follow_mmap_names,
	  .def = "auto",
	  .doc = "how libraries mapped while the session runs are reported, so their frames get "
		 "names at once: tracepoint follows the mmap syscall's tracepoints (in tracefs); "
		 "raw the raw syscall tracepoints, where tracefs is not mounted; auto the first, "
		 "else the second; off none. Either puts every system call of the machine on its "
		 "slower path while the session runs (docs/cpu.md); off costs them nothing, and "
		 "a library loaded later is named after the correlator's next read of the maps" },
	{ .key = "python",
	  CONF_MEMBER(struct cpu_options, python),
	  .type = CONF_T_BOOL,
	  .roles = CONF_SOURCE,
	  .def = "yes",
	  .doc = "read the Python frames of CPython 3.11 to 3.13 processes and merge them into "
		 "their stacks (docs/python.md)" },
	/* A multiple of 8: the copy is sent in whole words (event.h, struct xpu_stack_copy). */
	{ .key = "stack_bytes",
	  CONF_MEMBER(struct cpu_options, stack_bytes),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 1024,
	  .max = XPU_STACK_COPY_MAX,
	  .multiple = 8,
	  .def = "16384",
	  .doc = "bytes of user stack copied per sample and launch in dwarf mode" },
	/* No schema default: when not written, the actor takes the CUPTI injection library's
	 * path (common/paths.h, the file `record` and `run` inject) if that file exists, and
	 * attaches no uprobe if it does not; a path written here must exist. */
	{ .key = "launch_marker",
	  CONF_MEMBER(struct cpu_options, launch_marker),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SOURCE,
	  .doc = "library or program whose xpusup_launch_marker gets the launch uprobe "
		 "(default: the CUPTI injection library, when it is installed)" },
	{ .key = "ringbuf_kb",
	  CONF_MEMBER(struct cpu_options, ringbuf_kb),
	  .type = CONF_T_POW2,
	  .roles = CONF_SOURCE,
	  .min = 64,
	  .max = 1048576,
	  .def = "8192",
	  .doc = "size of the BPF ring buffer between the kernel and the actor" },
	{ .key = "wakeup_kb",
	  CONF_MEMBER(struct cpu_options, wakeup_kb),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 0,
	  .max = 1048576,
	  .def = "256",
	  .doc = "wake the actor when this much is waiting (else it polls every drain_ms)" },
	{ .key = "drain_ms",
	  CONF_MEMBER(struct cpu_options, drain_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SOURCE,
	  .min = 1,
	  .max = 1000,
	  .def = "50",
	  .doc = "longest a record waits in the BPF ring buffer" },
	{ .key = NULL },
};

const struct conf_kind cpu_conf_kind = {
	.name = "cpu",
	.roles = CONF_SOURCE,
	.available = true,
	.keys = cpu_keys,
	.doc = "CPU stack sampling (eBPF)",
	.needs_correlator = true,
	.options_size = sizeof(struct cpu_options),
};
