/* SPDX-License-Identifier: MIT */
/*
 * The checks of a 3.13's _Py_DebugOffsets, against offsets built in this process's memory:
 * what the 3.13.0 tested end to end publishes is taken; a wrong cookie, a version other
 * than Py_Version, a free-threaded build, a field the BPF walk reads that differs from the
 * table, or one too large for the layout is refused with a reason, never used. And the
 * version strings the reasons are made of.
 */
#include "python/python.h"
#include "python/internal.h"

#include "tests/tap.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static struct py_debug_offsets_313 good;

static void good__init(const struct py_layout *t)
{
	memset(&good, 0, sizeof(good));
	memcpy(good.cookie, "xdebugpy", 8);
	good.version = 0x030d00f0;
	good.runtime_state.interpreters_head = t->runtime_interpreters_head;
	good.interpreter_state.threads_head = t->interp_threads_head;
	good.thread_state.next = t->tstate_next;
	good.thread_state.native_thread_id = t->tstate_native_thread_id;
	good.thread_state.current_frame = t->tstate_current_frame;
	good.interpreter_frame.executable = t->frame_code;
	good.interpreter_frame.previous = t->frame_previous;
	good.interpreter_frame.instr_ptr = t->frame_instr;
	good.interpreter_frame.owner = t->frame_owner;
	good.code_object.co_code_adaptive = t->code_adaptive;
	good.code_object.filename = t->code_filename;
	good.code_object.qualname = t->code_qualname;
	good.code_object.firstlineno = t->code_firstlineno;
	good.code_object.linetable = t->code_linetable;
	good.pyobject.ob_type = t->object_type;
	good.unicode_object.length = t->unicode_length;
	good.unicode_object.state = t->unicode_state;
	good.unicode_object.asciiobject_size = t->unicode_ascii_data;
	good.bytes_object.ob_size = t->bytes_size;
	good.bytes_object.ob_sval = t->bytes_data;
}

/* py_layout__from_debug_offsets on d, as detection calls it. */
static int from(const struct py_debug_offsets_313 *d, struct py_layout *l, char *why)
{
	*l = *py_table__find(0x030d0000);
	l->version = 0x030d00f0;
	l->runtime = (__u64)(uintptr_t)d;
	strcpy(l->path, "/test/libpython3.13.so.1.0");
	why[0] = '\0';
	return py_layout__from_debug_offsets((__u32)getpid(), l, why, PY_WHY_MAX);
}

int main(void)
{
	const struct py_layout *t = py_table__find(0x030d0000);
	struct py_debug_offsets_313 d;
	static struct py_layout l;
	char why[PY_WHY_MAX], buf[32];
	int err;

	tap_ok(t != NULL, "a 3.13 table");
	good__init(t);

	d = good;
	d.runtime_state.interpreters_head += 8; /* a later 3.13.x grew _PyRuntimeState */
	d.interpreter_state.threads_head += 16;
	err = from(&d, &l, why);
	tap_ok(!err && l.source == PY_LAYOUT_DEBUG_OFFSETS, "published offsets taken: %d (%s)", err,
	       why);
	tap_ok(l.runtime_interpreters_head == t->runtime_interpreters_head + 8 &&
		       l.interp_threads_head == t->interp_threads_head + 16,
	       "the two heads as published");
	tap_ok(l.unicode_compact_data == t->unicode_compact_data && l.owner_cstack == 3 &&
		       l.tstate_cframe == PY_OFF_NONE && l.frame_is_entry == PY_OFF_NONE,
	       "the unpublished fields from the table, the 3.11/3.12 ones absent");

	d = good;
	memcpy(d.cookie, "xdebugpz", 8);
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "no _Py_DebugOffsets"), "wrong cookie: %d (%s)", err,
	       why);

	d = good;
	d.version = 0x030d01f0;
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "Py_Version"), "version differs: %d (%s)", err, why);

	d = good;
	d.free_threaded = 1;
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "free-threaded"), "free-threaded: %d (%s)", err, why);

	d = good;
	d.interpreter_frame.owner += 1;
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "frame_owner"), "a frame field differs: %d (%s)", err,
	       why);

	d = good;
	d.code_object.co_code_adaptive = 208;
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "code_adaptive"), "a code field differs: %d (%s)",
	       err, why);

	d = good;
	d.runtime_state.interpreters_head = 1u << 20;
	err = from(&d, &l, why);
	tap_ok(err == -ENOTSUP && strstr(why, "runtime_interpreters_head"),
	       "an offset past 16 bits: %d (%s)", err, why);

	err = from((const void *)(uintptr_t)8, &l, why);
	tap_ok(err == -EFAULT, "unreadable: %d (%s)", err, why);

	tap_ok(!strcmp(py_version__str(0x030b02f0, buf, sizeof(buf)), "3.11.2"), "%s", buf);
	tap_ok(!strcmp(py_version__str(0x030d00a1, buf, sizeof(buf)), "3.13.0a1"), "%s", buf);
	tap_ok(!strcmp(py_version__str(0x030c00c2, buf, sizeof(buf)), "3.12.0rc2"), "%s", buf);
	tap_ok(py_table__find(0x030a0df0) == NULL && py_table__find(0x030e0000) == NULL,
	       "no table for 3.10 or 3.14");
	return tap_done();
}
