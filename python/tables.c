/* SPDX-License-Identifier: MIT */
/*
 * The offsets of CPython 3.11, 3.12 and 3.13 release builds on x86-64 (docs/python.md,
 * "Versions and offsets").
 *
 * 3.11 and 3.12 publish nothing about their layout, so the frame walk and the code object
 * reader use these numbers, which are offsetof() over the internal headers (Py_BUILD_CORE)
 * of 3.11.2 (Debian), 3.11.7, 3.12.1 and 3.13.0 (pyenv); python/tables_test.sh compiles
 * python/offsets_probe.c against each set of headers present and fails on any difference.
 * Within a minor version these structures do not change in a bugfix release (CPython keeps
 * the internal layout the debuggers read stable there). 3.13 publishes its own in
 * _Py_DebugOffsets; its table is what detect.c checks them against, and supplies the two
 * fields _Py_DebugOffsets lacks (a compact str's data, the C stack frame's owner).
 */
#include "python/internal.h"

#include <stddef.h>

#define NONE PY_OFF_NONE

static const struct py_layout table_311 = {
	.version = 0x030b0000,
	.runtime_interpreters_head = 40,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_native_thread_id = 160,
	.tstate_cframe = 56,
	.cframe_current_frame = 8,
	.tstate_current_frame = NONE,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_instr = 56,
	.frame_owner = 69,
	.frame_is_entry = 68,
	.code_adaptive = 184,
	.owner_cstack = 0xff,
	.object_type = 8,
	.code_filename = 112,
	.code_qualname = 128,
	.code_firstlineno = 72,
	.code_linetable = 136,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 48,
	.unicode_compact_data = 72,
	.bytes_size = 16,
	.bytes_data = 32,
};

static const struct py_layout table_312 = {
	.version = 0x030c0000,
	.runtime_interpreters_head = 40,
	.interp_threads_head = 72,
	.tstate_next = 8,
	.tstate_native_thread_id = 144,
	.tstate_cframe = 56,
	.cframe_current_frame = 0,
	.tstate_current_frame = NONE,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_instr = 56,
	.frame_owner = 70,
	.frame_is_entry = NONE,
	.code_adaptive = 192,
	.owner_cstack = 3, /* FRAME_OWNED_BY_CSTACK */
	.object_type = 8,
	.code_filename = 112,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

static const struct py_layout table_313 = {
	.version = 0x030d0000,
	.runtime_interpreters_head = 632,
	.interp_threads_head = 7344,
	.tstate_next = 8,
	.tstate_native_thread_id = 160,
	.tstate_cframe = NONE,
	.cframe_current_frame = NONE,
	.tstate_current_frame = 72,
	.frame_code = 0, /* f_executable */
	.frame_previous = 8,
	.frame_instr = 56, /* instr_ptr */
	.frame_owner = 70,
	.frame_is_entry = NONE,
	.code_adaptive = 200,
	.owner_cstack = 3, /* FRAME_OWNED_BY_CSTACK */
	.object_type = 8,
	.code_filename = 112,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_data = 40,
	.unicode_compact_data = 56,
	.bytes_size = 16,
	.bytes_data = 32,
};

static const struct py_layout *const tables[] = { &table_311, &table_312, &table_313 };

const struct py_layout *py_table__find(__u32 version)
{
	size_t i;

	for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i]->version >> 16 == version >> 16)
			return tables[i];
	return NULL;
}

void py_layout__print(const struct py_layout *l, FILE *f)
{
#define P(field) fprintf(f, "%s %u\n", #field, (unsigned)l->field)
	P(runtime_interpreters_head);
	P(interp_threads_head);
	P(tstate_next);
	P(tstate_native_thread_id);
	P(tstate_cframe);
	P(cframe_current_frame);
	P(tstate_current_frame);
	P(frame_code);
	P(frame_instr);
	P(frame_previous);
	P(frame_owner);
	P(frame_is_entry);
	P(owner_cstack);
	P(code_adaptive);
	P(object_type);
	P(code_filename);
	P(code_qualname);
	P(code_firstlineno);
	P(code_linetable);
	P(unicode_length);
	P(unicode_state);
	P(unicode_ascii_data);
	P(unicode_compact_data);
	/* Not a field: the state of a compact ASCII str of kind 4 as codes.c reads it. */
	fprintf(f, "unicode_state_bits %u\n", (unsigned)PY_STATE_BITS(4u, 1u, 1u));
	P(bytes_size);
	P(bytes_data);
#undef P
}
