// SPDX-License-Identifier: MIT
/* Event model: builders produce records the validator accepts; the validator rejects every
 * size or count that disagrees, and the wire layout is pinned by golden bytes. */
#include "xpusup/event.h"

#include <errno.h>
#include <string.h>

#include "tests/tap.h"

static _Alignas(8) unsigned char buf[XPU_REC_MAX_SIZE + 64];

static void test_golden_header(void)
{
	/* type=STRING(15) flags=0 size=48 ts=0x0102030405060708 pid=0x11 tid=0x22, id=7,
	 * kind=1, len=3, "abc" + 5 bytes of zero padding. */
	static const unsigned char want[48] = {
		0x0f, 0x00, 0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x08, 0x07, 0x06, 0x05,
		0x04, 0x03, 0x02, 0x01, 0x11, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00,
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
		0x03, 0x00, 0x00, 0x00, 'a',  'b',  'c',  0x00, 0x00, 0x00, 0x00, 0x00,
	};
	int n;

	memset(buf, 0xa5, 64);
	n = xpu_string__build(buf, sizeof(buf), 0x0102030405060708ull, 0x11, 0x22, 7,
			      XPU_STR_KERNEL, "abc", 3);
	tap_eq_u64(n, 48, "string record of 3 bytes is 48 bytes");
	tap_ok(!memcmp(buf, want, sizeof(want)),
	       "string record matches golden bytes (padding zeroed)");
	tap_ok(xpu_rec__validate(buf, 48) == 0, "golden string validates");
}

static void test_builders_validate(void)
{
	__u64 kips[XPU_MAX_FRAMES], uips[XPU_MAX_FRAMES];
	int n, i;

	for (i = 0; i < XPU_MAX_FRAMES; i++) {
		kips[i] = 0xffffffff81000000ull + (__u64)i;
		uips[i] = 0x400000ull + (__u64)i * 16;
	}
	n = xpu_cpu_sample__build(buf, sizeof(buf), 1, 2, 3, 0, 10000000, "python3", kips, 5, uips,
				  9);
	tap_eq_u64(n, 56 + 8 * 14, "cpu sample size counts both stacks");
	tap_ok(xpu_rec__validate(buf, (size_t)n) == 0, "cpu sample validates");
	tap_ok(((struct xpu_cpu_sample *)buf)->ips[5] == uips[0],
	       "user frames follow kernel frames");
	n = xpu_cpu_sample__build(buf, sizeof(buf), 1, 2, 3, 0, 1, "x", kips, XPU_MAX_FRAMES, uips,
				  XPU_MAX_FRAMES);
	tap_ok(n > 0 && xpu_rec__validate(buf, (size_t)n) == 0, "cpu sample with full stacks");
	tap_eq_u64(xpu_cpu_sample__build(buf, sizeof(buf), 1, 2, 3, 0, 1, "x", kips,
					 XPU_MAX_FRAMES + 1, uips, 0),
		   (__u64)(__s64)-EINVAL, "too many frames is EINVAL");
	tap_eq_u64(xpu_cpu_sample__build(buf, 60, 1, 2, 3, 0, 1, "x", kips, 1, uips, 1),
		   (__u64)(__s64)-ENOSPC, "small buffer is ENOSPC");

	n = xpu_launch__build(buf, sizeof(buf), 5, 6, 7, 0xabcdef, 211, uips, 3);
	tap_ok(n == 64 && xpu_rec__validate(buf, 64) == 0, "launch record");
	n = xpu_range__build(buf, sizeof(buf), 5, 6, 7, XPU_RANGE_PUSH, 1, 0, 0, "forward", 7);
	tap_ok(n == 64 && xpu_rec__validate(buf, 64) == 0, "range record with inline name");
	n = xpu_proc_exec__build(buf, sizeof(buf), 5, 6, 6, 1, "bash", "/bin/bash", 9, 0);
	tap_ok(n == 64 && xpu_rec__validate(buf, 64) == 0, "proc_exec record");
	n = xpu_module__build(buf, sizeof(buf), 5, 6, 6, 0x400000, 0x401000, 0x1000, 0x803, 77,
			      "/usr/lib/libx.so", 16);
	tap_ok(n == 88 && xpu_rec__validate(buf, 88) == 0, "module record");
	((struct xpu_module *)buf)->path[0] = 'u';
	tap_ok(xpu_rec__validate(buf, 88) == -EBADMSG, "module with a relative path is invalid");
	((struct xpu_module *)buf)->path[0] = '/';
	((struct xpu_module *)buf)->end = 0x400000;
	tap_ok(xpu_rec__validate(buf, 88) == -EBADMSG, "module with start == end is invalid");
	((struct xpu_module *)buf)->end = 0x401000;
	((struct xpu_module *)buf)->path_len = 15;
	tap_ok(xpu_rec__validate(buf, 88) == 0,
	       "module: a shorter path in the same size (padding after it)");
	((struct xpu_module *)buf)->path_len = 40;
	tap_ok(xpu_rec__validate(buf, 88) == -EBADMSG, "module whose path outruns the record");
	tap_eq_u64(xpu_module__build(buf, sizeof(buf), 5, 6, 6, 1, 2, 0, 0, 0, "rel", 3),
		   (__u64)(__s64)-EINVAL, "module with a relative path is EINVAL");
	n = xpu_module__build(buf, sizeof(buf), 5, 6, 6, 0x7fff0000, 0x7fff2000, 0, 0, 0, "[vdso]",
			      6);
	tap_ok(n == 80 && xpu_rec__validate(buf, 80) == 0, "module: the vDSO, \"[vdso]\"");
	((struct xpu_module *)buf)->path[1] = 'h';
	tap_ok(xpu_rec__validate(buf, 80) == -EBADMSG, "module: another bracketed name is invalid");
	((struct xpu_module *)buf)->path[1] = 'v';
	((struct xpu_module *)buf)->path_len = 5;
	tap_ok(xpu_rec__validate(buf, 80) == -EBADMSG, "module: \"[vdso\" is invalid");
	tap_eq_u64(xpu_module__build(buf, sizeof(buf), 5, 6, 6, 1, 2, 0, 0, 0, "[vdso]x", 7),
		   (__u64)(__s64)-EINVAL, "module: \"[vdso]x\" is EINVAL");
	n = xpu_loss__build(buf, sizeof(buf), 5, 6, XPU_LOSS_RING_FULL, 42, 4);
	tap_ok(n == 48 && xpu_rec__validate(buf, 48) == 0, "loss record");
	tap_eq_u64(xpu_loss__build(buf, sizeof(buf), 5, 6, 0, 42, 4), (__u64)(__s64)-EINVAL,
		   "loss with cause 0 is EINVAL");

	for (i = XPU_REC_CUDA_API; i < XPU_REC_TYPE_MAX; i++) {
		__u32 min = xpu_rec_type__min_size((__u32)i);

		if (min != xpu_rec_type__max_size((__u32)i) || i == XPU_REC_LOSS)
			continue;
		xpu_rec__init(buf, (__u16)i, min, 1, 2, 3);
		tap_ok(xpu_rec__validate(buf, min) == 0, "fixed kind %s of %u bytes validates",
		       xpu_rec_type__name((__u32)i), min);
		xpu_rec__init(buf, (__u16)i, min + 8, 1, 2, 3);
		tap_ok(xpu_rec__validate(buf, min + 8) == -EBADMSG, "%s 8 bytes too long rejected",
		       xpu_rec_type__name((__u32)i));
	}
}

static void test_validate_rejects(void)
{
	struct xpu_string *s = (void *)buf;
	struct xpu_cpu_sample *cs = (void *)buf;
	int n;

	n = xpu_string__build(buf, sizeof(buf), 1, 2, 3, 9, XPU_STR_OTHER, "hello", 5);
	tap_ok(xpu_rec__validate(buf, (size_t)n - 8) == -EBADMSG, "len shorter than size rejected");
	s->len = 13;
	tap_ok(xpu_rec__validate(buf, (size_t)n) == -EBADMSG,
	       "string len beyond its record rejected");
	s->len = 5;
	s->hdr.size = 44;
	tap_ok(xpu_rec__validate(buf, 44) == -EBADMSG, "unaligned size rejected");
	s->hdr.size = (__u32)n;
	s->hdr.type = XPU_REC_PAD;
	tap_ok(xpu_rec__validate(buf, (size_t)n) == -EBADMSG, "PAD is not a record");
	s->hdr.type = XPU_REC_TYPE_MAX;
	tap_ok(xpu_rec__validate(buf, (size_t)n) == -EBADMSG, "unknown type rejected");
	s->hdr.type = 0;
	tap_ok(xpu_rec__validate(buf, (size_t)n) == -EBADMSG, "type 0 (zeroed memory) rejected");
	tap_ok(xpu_rec__validate(buf, 8) == -EBADMSG, "shorter than a header rejected");

	xpu_cpu_sample__build(buf, sizeof(buf), 1, 2, 3, 0, 1, "x", NULL, 0, NULL, 0);
	cs->n_user = 0xffff;
	tap_ok(xpu_rec__validate(buf, 56) == -EBADMSG, "frame count over the limit rejected");
	cs->n_user = 1;
	tap_ok(xpu_rec__validate(buf, 56) == -EBADMSG, "frame count beyond the record rejected");
	tap_ok(!strcmp(xpu_rec_type__name(XPU_REC_GPU_KERNEL), "gpu_kernel"), "kind names");
	tap_ok(!strcmp(xpu_loss_cause__name(XPU_LOSS_TOO_BIG), "too_big"), "loss cause names");
}

int main(void)
{
	test_golden_header();
	test_builders_validate();
	test_validate_rejects();
	return tap_done();
}
