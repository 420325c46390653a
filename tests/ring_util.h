/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the ring tests and bench: self-checking records and private session
 * directories.
 *
 * A test record is a real XPU_REC_STRING (so the default validator accepts it) whose id is
 * a sequence number and whose text is a function of that number: a reader checks every byte
 * without sharing state with the writer.
 */
#ifndef XPUSUP_TESTS_RING_UTIL_H
#define XPUSUP_TESTS_RING_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/mix.h"
#include "xpusup/event.h"

#define TR_MIN_SIZE ((__u32)sizeof(struct xpu_string))

static inline __u64 tr_mix(__u64 x)
{
	return xpu_mix64(x);
}

/* A size in [min, max], multiple of 8, chosen by seq (min and max multiples of 8). */
static inline __u32 tr_size_for(__u64 seq, __u32 min, __u32 max)
{
	__u32 slots = (max - min) / 8 + 1;

	return min + 8 * (__u32)(tr_mix(seq ^ 0x5eed) % slots);
}

/* The 40-byte header of a test record: what the bench writes per record. */
static inline void tr_build_header(void *rec, __u32 size, __u64 seq)
{
	struct xpu_string *s = (struct xpu_string *)rec;

	s->hdr.type = XPU_REC_STRING;
	s->hdr.flags = 0;
	s->hdr.size = size;
	s->hdr.ts_ns = seq;
	s->hdr.pid = 1;
	s->hdr.tid = 1;
	s->id = seq;
	s->kind = XPU_STR_OTHER;
	s->len = size - TR_MIN_SIZE;
}

/* Write a test record of size bytes (a multiple of 8, >= TR_MIN_SIZE) for seq at rec. */
static inline void tr_build(void *rec, __u32 size, __u64 seq)
{
	struct xpu_string *s = (struct xpu_string *)rec;
	__u32 words = (size - TR_MIN_SIZE) / 8, i;
	__u64 w;

	tr_build_header(rec, size, seq);
	for (i = 0; i < words; i++) {
		w = tr_mix(seq * 4099 + i);
		memcpy(s->text + 8 * i, &w, 8);
	}
}

/* Check a test record; returns 0 and its seq, or -1 if any byte is not what seq implies. */
static inline int tr_check(const void *rec, __u32 size, __u64 *seq)
{
	const struct xpu_string *s = (const struct xpu_string *)rec;
	__u32 words, i;
	__u64 w;

	if (size < TR_MIN_SIZE || s->hdr.type != XPU_REC_STRING || s->hdr.size != size ||
	    s->len != size - TR_MIN_SIZE || s->hdr.ts_ns != s->id)
		return -1;
	words = s->len / 8;
	for (i = 0; i < words; i++) {
		memcpy(&w, s->text + 8 * i, 8);
		if (w != tr_mix(s->id * 4099 + i))
			return -1;
	}
	*seq = s->id;
	return 0;
}

/* The end of a test stream: a PROC_EXIT record (the producer is done). */
#define TR_END_SIZE ((__u32)sizeof(struct xpu_proc_exit))

static inline void tr_build_end(void *rec)
{
	xpu_rec__init(rec, XPU_REC_PROC_EXIT, TR_END_SIZE, 0, (__u32)getpid(), (__u32)getpid());
}

static inline __u64 tr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* A private 0700 directory on tmpfs, as a session directory would be; returns an fd. */
static inline int tr_make_dir(char path[64])
{
	snprintf(path, 64, "/dev/shm/xpusup-test-XXXXXX");
	if (!mkdtemp(path)) {
		snprintf(path, 64, "/tmp/xpusup-test-XXXXXX");
		if (!mkdtemp(path))
			return -1;
	}
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static inline void tr_remove_dir(const char *path, int dirfd)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")))
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
	rmdir(path);
}

#endif /* XPUSUP_TESTS_RING_UTIL_H */
