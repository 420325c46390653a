/* SPDX-License-Identifier: MIT */
/*
 * CPython, read from outside the process (docs/python.md).
 *
 *   py_layout__detect   finds the interpreter a process runs (its executable or a libpython
 *                       it maps), its version, where _PyRuntime and the eval function are,
 *                       and the offsets of the structures the frame walk and the code
 *                       object reader need: from the interpreter itself where it publishes
 *                       them (3.13's _Py_DebugOffsets at the start of _PyRuntime), from
 *                       tables of the release builds otherwise (3.11, 3.12).
 *   py_codes            names code objects: reads a code object's qualified name, file and
 *                       line table from the process's memory, and a frame's line from its
 *                       instruction offset; a bounded cache keyed by (pid, code address).
 *
 * The CPU source's BPF program walks the frames with the layout (actors/cpu/profile.bpf.c);
 * the correlator names what it found (actors/correlator/pystack.c).
 */
#ifndef XPUSUP_PYTHON_PYTHON_H
#define XPUSUP_PYTHON_PYTHON_H

#include <linux/types.h>
#include <stddef.h>

#define PY_OFF_NONE 0xffffu /* the version has no such field */
#define PY_WHY_MAX 160 /* bytes of a reason, its NUL included */

enum py_layout_source {
	PY_LAYOUT_DEBUG_OFFSETS = 1, /* read from the process's _Py_DebugOffsets (3.13+) */
	PY_LAYOUT_TABLE = 2, /* this project's table for the version (python/tables.c) */
};

struct py_layout {
	__u32 version; /* PY_VERSION_HEX, 0x030b02f0 for 3.11.2 final */
	__u32 source; /* enum py_layout_source */
	__u64 runtime; /* address of _PyRuntime in the process */
	__u64 eval_start; /* _PyEval_EvalFrameDefault in the process, [start, end) */
	__u64 eval_end;
	__u64 code_type; /* address of PyCode_Type: a code object's ob_type */

	/* The frame walk (bytes from the start of each structure; PY_OFF_NONE: absent). */
	__u16 runtime_interpreters_head; /* _PyRuntimeState.interpreters.head */
	__u16 interp_threads_head; /* PyInterpreterState.threads.head */
	__u16 tstate_next; /* PyThreadState.next */
	__u16 tstate_native_thread_id; /* PyThreadState.native_thread_id (the kernel's tid) */
	__u16 tstate_cframe; /* 3.11, 3.12: PyThreadState.cframe */
	__u16 cframe_current_frame; /* 3.11, 3.12: _PyCFrame.current_frame */
	__u16 tstate_current_frame; /* 3.13: PyThreadState.current_frame */
	__u16 frame_code; /* _PyInterpreterFrame.f_code (3.13: f_executable) */
	__u16 frame_previous; /* _PyInterpreterFrame.previous */
	__u16 frame_instr; /* 3.11, 3.12: prev_instr; 3.13: instr_ptr (both: lasti's address) */
	__u16 frame_owner; /* _PyInterpreterFrame.owner (a char) */
	__u16 frame_is_entry; /* 3.11: _PyInterpreterFrame.is_entry (a bool) */
	__u16 code_adaptive; /* PyCodeObject.co_code_adaptive: instruction 0 */
	__u8 owner_cstack; /* owner of the C stack's shim frame (3.12+: 3); 0xff: none */
	__u8 reserved;

	/* Code objects and their strings, for py_codes. */
	__u16 object_type; /* PyObject.ob_type */
	__u16 code_filename; /* PyCodeObject.co_filename (a str) */
	__u16 code_qualname; /* PyCodeObject.co_qualname (a str) */
	__u16 code_firstlineno; /* PyCodeObject.co_firstlineno (an int) */
	__u16 code_linetable; /* PyCodeObject.co_linetable (a bytes, 3.11's location table) */
	__u16 unicode_length; /* PyASCIIObject.length */
	__u16 unicode_state; /* PyASCIIObject.state (kind, compact, ascii bits) */
	__u16 unicode_ascii_data; /* where a compact ASCII str's characters start */
	__u16 unicode_compact_data; /* where another compact str's characters start */
	__u16 bytes_size; /* PyVarObject.ob_size of a bytes */
	__u16 bytes_data; /* PyBytesObject.ob_sval */

	char path[4096]; /* the file the interpreter is in (as /proc/PID/maps names it) */
};

/*
 * py_layout__detect - the CPython interpreter process pid runs, if any.
 *
 * Returns 0 with out filled; -ENOENT when no file the process maps is a CPython interpreter
 * (no _PyRuntime); -ENOTSUP for a CPython this cannot read (a version before 3.11 or past
 * the last one known, a debug or free-threaded build, a _Py_DebugOffsets that does not
 * match), with why saying which in one line ("CPython 3.10.13 in /usr/bin/python3.10:
 * versions before 3.11 are not supported"); -ESRCH when the process is gone; another
 * -errno when its files or memory cannot be read (why says which). why may be NULL.
 */
int py_layout__detect(__u32 pid, struct py_layout *out, char *why, size_t why_len);

/* "3.11.2" for a PY_VERSION_HEX, into buf (at least 16 bytes). */
const char *py_version__str(__u32 version, char *buf, size_t len);

struct py_codes;

struct py_codes_stats {
	__u64 resolved; /* code objects read and named */
	__u64 failed; /* code objects that could not be read or were not code objects */
	__u64 cached; /* entries now */
	__u64 evicted; /* entries dropped to stay within the bound */
	__u64 revalidated; /* entries found changed on a later check and read again */
};

/* A cache of at most max_codes code objects (each with its names and line table). */
struct py_codes *py_codes__new(__u32 max_codes);
void py_codes__free(struct py_codes *c);

/*
 * py_codes__line - the line code (a code object's address in pid) was at when its frame's
 * instruction offset was lasti (code units; XPU_PY_LASTI_NONE: unknown, gives the code's
 * first line). Reads and caches the code object on first use, and checks a cached one again
 * against the process when it was last checked more than a second ago (a freed code object's
 * address may hold another one).
 *
 * Returns 0 with *line set (0 when the line table has none for lasti); -EINVAL when the
 * address does not hold a code object (its ob_type is not layout->code_type), -ESRCH when
 * the process is gone, -EFAULT when its memory cannot be read there.
 */
int py_codes__line(struct py_codes *c, __u32 pid, const struct py_layout *layout, __u64 code,
		   __u32 lasti, __u32 *line);

/*
 * py_codes__name - "QUALNAME (FILE:LINE)" for a code object py_codes__line resolved, as
 * common/pyframe.h describes: the same pointer for the same (pid, code, line) until
 * py_codes__collect frees it after a py_codes__drop_pid. NULL when code is not cached (or
 * no memory).
 */
const char *py_codes__name(struct py_codes *c, __u32 pid, __u64 code, __u32 line);

/* Forget pid's code objects (its exec or exit). Their names stay valid until the next
 * py_codes__collect, so that a batch being encoded keeps them. */
void py_codes__drop_pid(struct py_codes *c, __u32 pid);

/* Free what py_codes__drop_pid and eviction retired: call when no name is in use. */
void py_codes__collect(struct py_codes *c);

void py_codes__stats(const struct py_codes *c, struct py_codes_stats *out);

#endif /* XPUSUP_PYTHON_PYTHON_H */
