/* SPDX-License-Identifier: MIT */
/*
 * An output file of a sink, written with io_uring in large writes and made visible only
 * when complete:
 *
 *	out__open(&o, "out/flame.folded")   writes go to "out/flame.folded.partial" (out/ is
 *					    made if missing)
 *	out__write(o, buf, n) ...           copied into 1 MiB buffers; a full buffer is
 *					    submitted while the other one fills
 *	out__commit(o)                      last write, wait, fsync, rename over the final
 *					    name: readers see the old file or the new one, whole
 *	out__abort(o)                       or: drop the partial file
 *
 * So a sink killed mid-write leaves a ".partial" file beside the last complete one, never a
 * truncated file under the final name. The first error (ENOSPC, EIO, EACCES...) sticks:
 * later writes are dropped, out__commit fails and leaves the previous final file in place,
 * and out__error() says what happened in words, for the sink's status.
 */
#ifndef XPUSUP_ACTORS_SINK_OUT_H
#define XPUSUP_ACTORS_SINK_OUT_H

#include <stddef.h>

struct out;

/* out__open - start a new version of path. 0 or -errno (the folder missing, not writable,
 * io_uring unavailable); *o is NULL on error, and why (why_len bytes, may be NULL) says it
 * in words. */
int out__open(struct out **o, const char *path, char *why, size_t why_len);

/* out__write - append len bytes. 0, or the sticky -errno of an earlier failure. */
int out__write(struct out *o, const void *data, size_t len);

/* out__printf - append formatted text (at most 64 KiB at once). */
int out__printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* out__commit - finish: everything written, fsync'ed and renamed into place. Frees o.
 * Returns 0 or -errno (then the previous file, if any, is untouched, the partial file
 * removed, and why says what failed). */
int out__commit(struct out *o, char *why, size_t why_len);

/* out__abort - drop what was written; the previous file stays. Frees o. Accepts NULL. */
void out__abort(struct out *o);

/* out__error - the first failure in words ("unable to write out/x.json: No space left on
 * device"), or "" when none. Valid until o is freed. */
const char *out__error(const struct out *o);

/* out__bytes - bytes appended so far. */
size_t out__bytes(const struct out *o);

#endif /* XPUSUP_ACTORS_SINK_OUT_H */
