// SPDX-License-Identifier: MIT
/*
 * Code for cfi_test to read the CFI of, never loaded: built with -fno-asynchronous-unwind-tables
 * -g, so that its only CFI is .debug_frame, and linked without the start files, whose .eh_frame
 * would come along. A leaf, a function that saves callee-saved registers across calls, and one
 * with an over-aligned local and alloca, for which gcc realigns the stack (DRAP): its CFA is
 * DW_OP_breg6 N; DW_OP_deref and rbp's rule DW_OP_breg6 0, the forms cfi.c follows.
 */
long cfi_test_lib_leaf(long x);
long cfi_test_lib_saves(long a, long b);
long cfi_test_lib_use(char *p, long n);
long cfi_test_lib_realigned(int n);

__attribute__((noinline)) long cfi_test_lib_leaf(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3;
}

__attribute__((noinline)) long cfi_test_lib_saves(long a, long b)
{
	long s = 0, i;

	for (i = 0; i < a; i++)
		s += cfi_test_lib_leaf(a + i) * b + cfi_test_lib_leaf(s);
	return s;
}

__attribute__((noinline)) long cfi_test_lib_use(char *p, long n)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	return p[0] + n;
}

long cfi_test_lib_realigned(int n)
{
	char __attribute__((aligned(64))) buf[100];
	char *p = __builtin_alloca((unsigned long)n);

	buf[0] = (char)n;
	p[0] = 1;
	return cfi_test_lib_use(buf, n) + cfi_test_lib_use(p, n) + cfi_test_lib_saves(n, n);
}
