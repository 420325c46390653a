/* SPDX-License-Identifier: MIT */
/*
 * py_codes against code objects built by hand in this process's own memory (read back with
 * process_vm_readv like another process's), laid out as 3.12's table says: the location
 * table decoder on every entry form, str decoding (ASCII, latin-1, UCS2, UCS4, bad code
 * points, the length caps), the type check, interning, eviction, revalidation after a
 * second (with a test clock), drop_pid and collect (under ASan a name freed too early fails).
 * Several processes: forked children, whose memory holds the same objects at the same
 * addresses, each dropped on its own, with and without eviction among them.
 */
#include "python/python.h"
#include "python/internal.h"

#include "tests/tap.h"
#include "xpusup/event.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct py_layout layout;

#define KIDS 5
static __u64 fake_code_type[52]; /* stands for PyCode_Type: only its address matters */
static __u64 fake_now;

static __u64 test_clock(void)
{
	return fake_now;
}

static __u64 addr(const void *p)
{
	return (__u64)(uintptr_t)p;
}

static void put64(unsigned char *obj, unsigned off, __u64 v)
{
	memcpy(obj + off, &v, 8);
}

/* A compact str: kind 1, 2 or 4; ascii set for a compact ASCII one. */
static unsigned char *fake_str(unsigned kind, int ascii, const __u32 *cps, size_t n)
{
	unsigned data = ascii ? layout.unicode_ascii_data : layout.unicode_compact_data;
	unsigned char *s = calloc(1, data + (n + 1) * kind);
	__u32 state = kind << 2 | 1u << 5 | (ascii ? 1u << 6 : 0);
	size_t i;

	put64(s, layout.unicode_length, n);
	memcpy(s + layout.unicode_state, &state, 4);
	for (i = 0; i < n; i++) {
		if (kind == 1)
			s[data + i] = (unsigned char)cps[i];
		else if (kind == 2) {
			__u16 u = (__u16)cps[i];

			memcpy(s + data + 2 * i, &u, 2);
		} else
			memcpy(s + data + 4 * i, &cps[i], 4);
	}
	return s;
}

static unsigned char *fake_ascii(const char *text)
{
	__u32 cps[2048];
	size_t i, n = strlen(text);

	for (i = 0; i < n && i < 2048; i++)
		cps[i] = (unsigned char)text[i];
	return fake_str(1, 1, cps, n);
}

static unsigned char *fake_bytes(const unsigned char *b, size_t n)
{
	unsigned char *o = calloc(1, layout.bytes_data + n + 1);

	put64(o, layout.bytes_size, n);
	memcpy(o + layout.bytes_data, b, n);
	return o;
}

static unsigned char *fake_code(const void *qualname, const void *filename, const void *table,
				__s32 firstlineno)
{
	unsigned char *co = calloc(1, 256);

	put64(co, layout.object_type, addr(fake_code_type));
	put64(co, layout.code_qualname, addr(qualname));
	put64(co, layout.code_filename, addr(filename));
	put64(co, layout.code_linetable, addr(table));
	memcpy(co + layout.code_firstlineno, &firstlineno, 4);
	return co;
}

/*
 * firstlineno 10, entries (code units): [0,1) no-columns +1 -> 11; [1,3) short -> 11;
 * [3,4) one-line +2 -> 13; [4,5) no location; [5,8) long -2 -> 11; [8,9) no-columns +100
 * (a two-byte varint) -> 111.
 */
static const unsigned char table[] = {
	0xe8, 0x02, 0x81, 0x05, 0xe0, 0x01, 0x02, 0xf8,
	0xf2, 0x05, 0x00, 0x01, 0x02, 0xe8, 0x48, 0x03,
};

static void test_lines(struct py_codes *c, __u32 pid, __u64 code)
{
	static const struct {
		__u32 lasti, line;
	} want[] = { { 0, 11 },
		     { 1, 11 },
		     { 2, 11 },
		     { 3, 13 },
		     { 4, 0 },
		     { 5, 11 },
		     { 7, 11 },
		     { 8, 111 },
		     { 9, 0 },
		     { 1000000, 0 },
		     { XPU_PY_LASTI_NONE, 10 } };
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		__u32 line = 12345;
		int err = py_codes__line(c, pid, &layout, code, want[i].lasti, &line);

		tap_ok(!err && line == want[i].line, "lasti %u: line %u (want %u), err %d",
		       want[i].lasti, line, want[i].line, err);
	}
}

static void test_strings(struct py_codes *c, __u32 pid, const unsigned char *file,
			 const unsigned char *tab)
{
	static const __u32 latin1[] = { 'c', 'a', 'f', 0xe9 };
	static const __u32 ucs2[] = { 'x', 0x2192, 0xd800, 'y' }; /* arrow, lone surrogate */
	static const __u32 ucs4[] = { 0x1f600, 'z', 0x110000, 0 };
	static const __u32 bad_ascii[] = { 'a', 0xff, 'b' };
	static const struct {
		unsigned kind;
		int ascii;
		const __u32 *cps;
		size_t n;
		const char *want;
	} cases[] = {
		{ 1, 0, latin1, 4, "caf\xc3\xa9 (f.py:10)" },
		{ 2, 0, ucs2, 4, "x\xe2\x86\x92?y (f.py:10)" },
		{ 4, 0, ucs4, 4, "\xf0\x9f\x98\x80z?? (f.py:10)" },
		{ 1, 1, bad_ascii, 3, "a?b (f.py:10)" },
	};
	char long_name[600];
	unsigned char *s, *co;
	const char *name;
	size_t i;
	__u32 line;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = fake_str(cases[i].kind, cases[i].ascii, cases[i].cps, cases[i].n);
		co = fake_code(s, file, tab, 10);
		tap_ok(!py_codes__line(c, pid, &layout, addr(co), XPU_PY_LASTI_NONE, &line),
		       "str kind %u read", cases[i].kind);
		name = py_codes__name(c, pid, addr(co), line);
		tap_ok(name && !strcmp(name, cases[i].want), "str kind %u: \"%s\"", cases[i].kind,
		       name ? name : "(null)");
		free(co);
		free(s);
	}

	/* Qualified names are cut at 256 bytes, on a character boundary. */
	memset(long_name, 'q', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	s = fake_ascii(long_name);
	co = fake_code(s, file, tab, 10);
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), XPU_PY_LASTI_NONE, &line),
	       "long name read");
	name = py_codes__name(c, pid, addr(co), line);
	tap_ok(name && strspn(name, "q") == 256 && !strcmp(name + 256, " (f.py:10)"),
	       "a 599-character name keeps 256");
	free(co);
	free(s);

	/* A str that is not compact is not read. */
	s = fake_ascii("f");
	memset(s + layout.unicode_state, 0, 4);
	co = fake_code(s, file, tab, 10);
	tap_ok(py_codes__line(c, pid, &layout, addr(co), 0, &line) == -EINVAL,
	       "a str that is not compact: -EINVAL");
	free(co);
	free(s);
}

/* Whether pid's entry for code is cached (py_codes__name of a line read before). */
static bool cached(struct py_codes *c, __u32 pid, __u64 code)
{
	return py_codes__name(c, pid, code, 11) != NULL;
}

/* KIDS processes (children paused, the same memory) with 2 code objects each in a cache of
 * max slots; drop_pid of one leaves the others' entries, and dropping a process with none
 * (or one dropped already) is harmless. max < 2 * KIDS: entries evicted meanwhile. */
static void test_processes(__u32 max, __u64 co, __u64 co2)
{
	pid_t kid[KIDS];
	struct py_codes *c = py_codes__new(max);
	struct py_codes_stats st;
	__u32 line, i, ok = 0, left = 0;

	for (i = 0; i < KIDS; i++) {
		kid[i] = fork();
		if (!kid[i]) {
			pause();
			_exit(0);
		}
	}
	for (i = 0; i < KIDS; i++)
		if (kid[i] > 0 && !py_codes__line(c, (__u32)kid[i], &layout, co, 0, &line) &&
		    !py_codes__line(c, (__u32)kid[i], &layout, co2, 0, &line) &&
		    py_codes__name(c, (__u32)kid[i], co, 11) &&
		    py_codes__name(c, (__u32)kid[i], co2, 11))
			ok++;
	tap_ok(ok == KIDS, "max %u: %u processes' code objects read", max, ok);
	py_codes__stats(c, &st);
	tap_ok(st.cached == (max < 2 * KIDS ? max : 2 * KIDS), "max %u: cached %llu", max,
	       (unsigned long long)st.cached);
	/* the middle one goes; the rest stay as they were */
	for (i = 0; i < KIDS; i++)
		left += i != KIDS / 2 &&
			cached(c, (__u32)kid[i], co) + cached(c, (__u32)kid[i], co2);
	py_codes__drop_pid(c, (__u32)kid[KIDS / 2]);
	py_codes__drop_pid(c, (__u32)kid[KIDS / 2]);
	py_codes__drop_pid(c, 0x7ffffff0u); /* no entries at all */
	tap_ok(!cached(c, (__u32)kid[KIDS / 2], co) && !cached(c, (__u32)kid[KIDS / 2], co2),
	       "max %u: the dropped process's entries are gone", max);
	for (i = 0; i < KIDS; i++)
		left -= i != KIDS / 2 &&
			cached(c, (__u32)kid[i], co) + cached(c, (__u32)kid[i], co2);
	tap_ok(!left, "max %u: the other processes' entries stay", max);
	/* each of the others, then: nothing left, and the slots come back for reuse */
	for (i = 0; i < KIDS; i++)
		py_codes__drop_pid(c, (__u32)kid[i]);
	py_codes__stats(c, &st);
	tap_ok(st.cached == 0, "max %u: every process dropped, cached %llu", max,
	       (unsigned long long)st.cached);
	tap_ok(!py_codes__line(c, (__u32)kid[0], &layout, co, 0, &line) &&
		       cached(c, (__u32)kid[0], co),
	       "max %u: read again after the drops", max);
	py_codes__drop_pid(c, (__u32)kid[0]);
	py_codes__stats(c, &st);
	tap_ok(st.cached == 0, "max %u: and dropped again", max);
	for (i = 0; i < KIDS; i++) {
		if (kid[i] > 0) {
			kill(kid[i], SIGKILL);
			waitpid(kid[i], NULL, 0);
		}
	}
	py_codes__collect(c);
	py_codes__free(c);
}

int main(void)
{
	unsigned char *qual, *qual2, *file, *tab, *co, *co2, *co3, *not_code;
	struct py_codes_stats st;
	const char *n11, *n13, *again, *n_co2;
	struct py_codes *c;
	__u32 pid = (__u32)getpid(), line = 0;

	layout = *py_table__find(0x030c01f0);
	layout.code_type = addr(fake_code_type);
	c = py_codes__new(1000);
	py_codes__set_clock(c, test_clock);
	fake_now = 5000000000ull;
	qual = fake_ascii("Outer.inner");
	qual2 = fake_ascii("replaced");
	file = fake_ascii("f.py");
	tab = fake_bytes(table, sizeof(table));
	co = fake_code(qual, file, tab, 10);

	test_lines(c, pid, addr(co));
	n11 = py_codes__name(c, pid, addr(co), 11);
	n13 = py_codes__name(c, pid, addr(co), 13);
	again = py_codes__name(c, pid, addr(co), 11);
	tap_ok(n11 && !strcmp(n11, "Outer.inner (f.py:11)"), "name \"%s\"", n11 ? n11 : "(null)");
	tap_ok(n13 && !strcmp(n13, "Outer.inner (f.py:13)"), "name \"%s\"", n13 ? n13 : "(null)");
	tap_ok(again == n11, "the same (pid, code, line) gives the same pointer");
	tap_ok(!py_codes__name(c, pid, addr(co) + 8, 11), "no name for a code not read");
	tap_ok(!py_codes__name(c, pid + 1, addr(co), 11), "no name for another pid");

	/* Not a code object: the type differs (a str here). */
	not_code = qual;
	tap_ok(py_codes__line(c, pid, &layout, addr(not_code), 0, &line) == -EINVAL,
	       "a str's address: -EINVAL");
	tap_ok(py_codes__line(c, pid, &layout, 8, 0, &line) == -EFAULT, "address 8: -EFAULT");
	test_strings(c, pid, file, tab);

	/* Within a second a changed object is not read again; past it, it is. */
	put64(co, layout.code_qualname, addr(qual2));
	fake_now += 500000000ull;
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line) &&
		       py_codes__name(c, pid, addr(co), 11) == n11,
	       "within a second the entry is trusted");
	fake_now += 600000000ull;
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line) && line == 11,
	       "past a second it is checked again");
	again = py_codes__name(c, pid, addr(co), 11);
	tap_ok(again && !strcmp(again, "replaced (f.py:11)"), "and read again: \"%s\"",
	       again ? again : "(null)");
	tap_ok(!strcmp(n11, "Outer.inner (f.py:11)"), "the old name stays until collect");
	py_codes__stats(c, &st);
	tap_ok(st.revalidated == 1, "revalidated %llu", (unsigned long long)st.revalidated);
	/* An unchanged object checked again is not counted. */
	fake_now += 2000000000ull;
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line), "checked again unchanged");
	py_codes__stats(c, &st);
	tap_ok(st.revalidated == 1, "still revalidated 1");
	/* A freed code object whose memory no longer holds one: the entry goes. */
	put64(co, layout.object_type, 0);
	fake_now += 2000000000ull;
	tap_ok(py_codes__line(c, pid, &layout, addr(co), 0, &line) == -EINVAL,
	       "a code object gone after a second: -EINVAL");
	tap_ok(!py_codes__name(c, pid, addr(co), 11), "and its entry is dropped");
	put64(co, layout.object_type, addr(fake_code_type));

	/* drop_pid: names stay readable until collect (ASan tells a use after free). */
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line), "read again");
	again = py_codes__name(c, pid, addr(co), 11);
	py_codes__drop_pid(c, pid);
	tap_ok(!py_codes__name(c, pid, addr(co), 11), "dropped");
	tap_ok(again && !strcmp(again, "replaced (f.py:11)"), "a dropped name is still readable");
	py_codes__stats(c, &st);
	tap_ok(st.cached == 0, "cached %llu after drop", (unsigned long long)st.cached);
	py_codes__collect(c);
	py_codes__free(c);

	/* The bound: two slots, three code objects. */
	c = py_codes__new(2);
	co2 = fake_code(qual2, file, tab, 10);
	co3 = fake_code(file, file, tab, 20);
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line), "1 of 3");
	n11 = py_codes__name(c, pid, addr(co), 11);
	tap_ok(!py_codes__line(c, pid, &layout, addr(co2), 0, &line), "2 of 3");
	n_co2 = py_codes__name(c, pid, addr(co2), 11);
	tap_ok(!py_codes__line(c, pid, &layout, addr(co3), 0, &line), "3 of 3");
	py_codes__stats(c, &st);
	tap_ok(st.cached == 2 && st.evicted == 1 && st.resolved == 3,
	       "bounded: cached %llu evicted %llu resolved %llu", (unsigned long long)st.cached,
	       (unsigned long long)st.evicted, (unsigned long long)st.resolved);
	tap_ok(!strcmp(n11, "replaced (f.py:11)") && !strcmp(n_co2, "replaced (f.py:11)"),
	       "evicted names stay readable until collect");
	py_codes__collect(c);
	py_codes__free(c);
	py_codes__free(NULL);

	test_processes(1000, addr(co), addr(co2));
	test_processes(7, addr(co), addr(co2)); /* 10 entries wanted: 3 evicted */

	/* A process's newest entry removed on its own (its code object freed): the older one
	 * stays in the process's list, and the drop finds it. */
	c = py_codes__new(16);
	py_codes__set_clock(c, test_clock);
	tap_ok(!py_codes__line(c, pid, &layout, addr(co), 0, &line) &&
		       !py_codes__line(c, pid, &layout, addr(co2), 0, &line),
	       "two code objects of one process");
	put64(co2, layout.object_type, 0);
	fake_now += 2000000000ull;
	tap_ok(py_codes__line(c, pid, &layout, addr(co2), 0, &line) == -EINVAL,
	       "the newer one freed: -EINVAL");
	put64(co2, layout.object_type, addr(fake_code_type));
	py_codes__drop_pid(c, pid);
	py_codes__stats(c, &st);
	tap_ok(st.cached == 0 && !cached(c, pid, addr(co)), "the drop finds the older: cached %llu",
	       (unsigned long long)st.cached);
	py_codes__collect(c);
	py_codes__free(c);

	tap_ok(!py_codes__new(0) && errno == EINVAL, "py_codes__new(0): EINVAL");

	free(co);
	free(co2);
	free(co3);
	free(qual);
	free(qual2);
	free(file);
	free(tab);
	return tap_done();
}
