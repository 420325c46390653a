/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer: the function name of a stack frame, an enrich stage the correlator runs on
 * CPU samples and launch stacks. A frame's name is the bare function name, as perf's folded
 * output has it (no +offset, no module), C++ names demangled in full
 * ("ns::Widget::run(int)"), "[file]" (its basename) for an address inside a mapped file that
 * has no symbol covering it, "[unknown]" when no file is known there; so flamegraph shares
 * compare with perf's. docs/symbolize.md has the details.
 *
 * Single-threaded: one symbolizer per correlator shard, no locks. Its caches:
 *   - per process: the executable mappings of /proc/PID/maps, read on the first frame (or
 *     symbolizer__capture) and again when a frame falls outside all of them (dlopen), at most
 *     once per 100 ms per process; kept after the process exits until symbolizer__forget, so
 *     the late frames of a short-lived process still resolve (at most 65536 processes: past
 *     that, the one with the oldest frame is forgotten);
 *   - per file (device + inode), shared by all processes: its function symbols (.symtab,
 *     .dynsym, .gnu_debugdata, or separate debug info found by build id or .gnu_debuglink),
 *     loaded with libdwfl on the first frame in it;
 *   - the kernel's text symbols from /proc/kallsyms, loaded on the first kernel frame;
 *   - the interned names handed out.
 *
 * Calling order: symbolizer__new; then, in any order, symbolizer__capture when a process
 * execs or is first seen (optional: the first frame reads its maps anyway, but by then a
 * short-lived process may be gone), symbolizer__name / symbolizer__stack for frames,
 * symbolizer__exec when a process execs (its maps are stale), symbolizer__forget when it is
 * gone for good; symbolizer__free last.
 */
#ifndef XPUSUP_ACTORS_CORRELATOR_SYMBOLIZE_H
#define XPUSUP_ACTORS_CORRELATOR_SYMBOLIZE_H

#include <linux/types.h>
#include <stdbool.h>

#include "unwind/cfi.h"

/* Names are cut to this many bytes (the wire's XPU_WIRE_FRAME_NAME_MAX). */
#define SYMBOLIZER_NAME_MAX 4096

/* What symbolizer__name returns for a frame it cannot name. */
#define SYMBOLIZER_UNKNOWN "[unknown]"

struct symbolizer;

struct symbolizer_stats {
	__u64 frames; /* frames looked up */
	__u64 unknown; /* ... of which named "[unknown]" */
	__u64 kernel_frames; /* ... of which kernel addresses */
	__u64 pids; /* processes whose maps are held now */
	__u64 maps_reads; /* /proc/PID/maps reads, successful or not */
	__u64 maps_missing; /* ... that failed (the process was gone): its last maps are kept */
	__u64 files; /* files whose symbols are held now */
	__u64 files_failed; /* attempts to load a file's symbols that failed (no file, not ELF) */
	__u64 resolve_ns; /* total time spent in symbolizer__name and symbolizer__stack */
	/* Beyond the first nine: */
	__u64 files_loaded; /* file loads, in total (a file evicted and needed again counts twice) */
	__u64 maps_throttled; /* misses that did not re-read maps (read less than 100 ms ago) */
	__u64 kernel_symbols; /* kernel text symbols held (0 until the first kernel frame) */
	__u64 kernel_hidden; /* 1: /proc/kallsyms shows zero addresses (kptr_restrict, no
			      * CAP_SYSLOG): every kernel frame is "[unknown]" */
	__u64 names; /* interned names held (they live until symbolizer__free) */
	__u64 bytes; /* memory held by all caches, approximately (CFI sections not included) */
	/* The unwinder's CFI (symbolizer__rule): */
	__u64 cfi_files; /* files whose CFI is held now */
	__u64 cfi_bytes; /* ... their CFI sections (mapped) and indexes, in bytes */
	__u64 cfi_loaded; /* CFI loads, in total */
	__u64 cfi_evicted; /* files whose CFI was dropped to stay within the bound */
	__u64 cfi_failed; /* CFI loads that failed (no file, no CFI section, not x86-64 ELF) */
	__u64 rule_hits, rule_misses; /* rule cache lookups */
	__u64 module_named; /* frames in a file with no symbol for them, named "[file]" */
	/* What processes reported of their own mappings (symbolizer__module): */
	__u64 modules; /* mappings taken */
	__u64 modules_known; /* ... reported again, unchanged */
	__u64 modules_dropped; /* ... not kept: the process had SYMBOLIZER_MODULES_MAX already */
	__u64 maps_superseded; /* maps entries dropped: a report newer than the read put another
				* file where they were (not in status: the counters are full) */
	__u64 module_frames; /* frames found in them where the maps read had nothing */
};

/* Mappings kept per process from symbolizer__module. */
#define SYMBOLIZER_MODULES_MAX 4096

/* The default bound on the CFI the symbolizer holds for the unwinder: past it, the least
 * recently used files' CFI is dropped (and read again when needed). */
#define SYMBOLIZER_CFI_BYTES_MAX (256ull << 20)

/*
 * symbolizer__new - an empty symbolizer; nothing is read until it is used.
 *
 * Returns the symbolizer (free it with symbolizer__free), or NULL with errno set (ENOMEM).
 */
struct symbolizer *symbolizer__new(void);

/* symbolizer__free - free s and everything it holds, names handed out included. NULL is ok. */
void symbolizer__free(struct symbolizer *s);

/*
 * symbolizer__name - the function name for ip in process pid; for a kernel frame (kernel
 * true) ip is a kernel address and pid is ignored.
 *
 * Never NULL: SYMBOLIZER_UNKNOWN when ip cannot be resolved (no mapping, no symbol covers
 * it, the file cannot be read, kernel addresses hidden). The string is NUL-terminated, owned
 * by the symbolizer and valid until symbolizer__free, and interned: the same text is always
 * the same pointer, whatever the process, file or kernel it came from.
 *
 * A warm lookup (maps read, file loaded) makes no system call and allocates nothing. A
 * cold one may read /proc/PID/maps, load a file's symbols or /proc/kallsyms (milliseconds).
 * An ip is taken as is: a caller that wants the call site of a return address passes ip - 1.
 */
const char *symbolizer__name(struct symbolizer *s, __u32 pid, __u64 ip, bool kernel);

/*
 * symbolizer__stack - name a whole stack: ips holds n_kernel kernel frames, then n_user user
 * frames of process pid (the CPU_SAMPLE layout); names[i] gets the name of ips[i], as
 * symbolizer__name would give it. The same lookups, timed once per stack rather than per
 * frame.
 */
void symbolizer__stack(struct symbolizer *s, __u32 pid, const __u64 *ips, __u32 n_kernel,
		       __u32 n_user, const char **names);

/*
 * symbolizer__capture - read /proc/PID/maps now (call it when a process execs or is first
 * seen), so that a short-lived process still resolves after it has exited. Files that could
 * not be read again once the process is gone (deleted, or in another mount namespace: the
 * path does not name the same device and inode here) are loaded now, through
 * /proc/PID/map_files.
 *
 * Returns 0, or -errno: -ENOENT/-ESRCH (no such process; maps read earlier are kept),
 * -EACCES, -ENOMEM.
 */
int symbolizer__capture(struct symbolizer *s, __u32 pid);

/* symbolizer__exec - process pid exec'd at ts_ns: its maps are stale. They are dropped and
 * read again on its next frame (or symbolizer__capture), without waiting out the 100 ms
 * re-read limit; the modules it reported are dropped too unless one is newer than ts_ns. */
void symbolizer__exec(struct symbolizer *s, __u32 pid, __u64 ts_ns);

/*
 * symbolizer__module - process pid reported at ts_ns that it maps [start, end) of the file
 * path (device dev and inode ino as stat gives them, 0 if unknown) from file offset pgoff:
 * a MODULE record (include/xpusup/event.h). A frame that no mapping read from
 * /proc/PID/maps covers is looked up here, so the frames of a process that exited before its
 * maps could be read still get names and CFI. path "[vdso]" is the vDSO (dev, ino 0),
 * read from our own. A mapping overlapping an older report replaces it. At most
 * SYMBOLIZER_MODULES_MAX per process.
 *
 * Returns 0, -EINVAL (start >= end, a relative path), -ENOSPC (the process's limit), -ENOMEM.
 */
int symbolizer__module(struct symbolizer *s, __u32 pid, __u64 ts_ns, __u64 start, __u64 end,
		       __u64 pgoff, __u64 dev, __u64 ino, const char *path);

/* symbolizer__forget - process pid is gone for good: free its maps. Files no process uses any
 * more stay cached (at most 64 of them, least recently released evicted first). */
void symbolizer__forget(struct symbolizer *s, __u32 pid);

/*
 * symbolizer__rule - the CFI rule (unwind/cfi.h) for the code at addr in process pid, with
 * start and end as addresses in the process (for the unwinder: unwind_ops.rule). The file's
 * CFI is read on the first lookup in it, through the same maps and files the names come
 * from; answers are cached by (file, address).
 *
 * Returns 0, -ENOENT (no file mapped there, or it has no CFI that can be read: the caller may
 * try the frame pointer), -EBADMSG / -ENOTSUP (cfi__find's: malformed, or not a rule the
 * unwinder can follow), -ENOMEM.
 */
int symbolizer__rule(struct symbolizer *s, __u32 pid, __u64 addr, struct cfi_rule *out);

/* symbolizer__set_cfi_max - bound the CFI held (default SYMBOLIZER_CFI_BYTES_MAX). */
void symbolizer__set_cfi_max(struct symbolizer *s, __u64 bytes);

/* symbolizer__stats - counters and sizes, as of now. */
void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *out);

#endif /* XPUSUP_ACTORS_CORRELATOR_SYMBOLIZE_H */
