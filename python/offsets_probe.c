/* SPDX-License-Identifier: MIT */
/*
 * The offsets of struct py_layout's table fields as the compiler sees them in CPython's
 * internal headers (compiled by tables_test.sh with -DPy_BUILD_CORE against one version's
 * include directory), printed as "field value" lines in the format py_layout_dump prints
 * the library's table in, so the two can be compared line by line.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define P(name, value) printf("%s %u\n", name, (unsigned)(value))

int main(void)
{
	P("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
	P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#if PY_VERSION_HEX < 0x030d0000
	P("tstate_cframe", offsetof(PyThreadState, cframe));
	P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
	P("tstate_current_frame", 0xffff);
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	P("tstate_cframe", 0xffff);
	P("cframe_current_frame", 0xffff);
	P("tstate_current_frame", offsetof(PyThreadState, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	P("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
	P("owner_cstack", 0xff);
#else
	P("frame_is_entry", 0xffff);
	P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("object_type", offsetof(PyObject, ob_type));
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
	P("unicode_length", offsetof(PyASCIIObject, length));
	P("unicode_state", offsetof(PyASCIIObject, state));
	P("unicode_ascii_data", sizeof(PyASCIIObject));
	P("unicode_compact_data", sizeof(PyCompactUnicodeObject));
	{
		/* The bits codes.c decodes the state with, as the compiler lays them out. */
		PyASCIIObject o;
		unsigned bits = 0;

		memset(&o, 0, sizeof(o));
		o.state.kind = 4;
		o.state.compact = 1;
		o.state.ascii = 1;
		memcpy(&bits, &o.state, sizeof(bits));
		P("unicode_state_bits", bits);
	}
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_data", offsetof(PyBytesObject, ob_sval));
	return 0;
}
