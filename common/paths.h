/* SPDX-License-Identifier: MIT */
/*
 * Paths: where the CUPTI injection library is, and making folders.
 *
 * Where the CUPTI injection library is: the one file that `record` and `run` name in
 * CUDA_INJECTION64_PATH and on which the cpu source puts its launch-marker uprobe by default.
 * Both must name the same file (a uprobe is attached to an inode), so both ask here.
 */
#ifndef XPUSUP_COMMON_PATHS_H
#define XPUSUP_COMMON_PATHS_H

#include <stddef.h>
#include <sys/types.h>

#define XPU_CUPTI_LIB_ENV "XPUSUP_CUPTI_LIB" /* overrides the search below */

/*
 * xpu_cupti_lib - the injection library's absolute path into buf (len bytes):
 * $XPUSUP_CUPTI_LIB when set; the build tree's library when the calling program runs from
 * the build tree; else the installed one. Returns 0 when that file exists, -ENOENT when it
 * does not (buf still holds the path looked for, for the message), -ENAMETOOLONG.
 */
int xpu_cupti_lib(char *buf, size_t len);

/*
 * xpu_mkdir_p - mkdir -p: make path and every missing folder above it with mode (less the
 * umask). A folder that exists already is fine. Returns 0, -ENAMETOOLONG (PATH_MAX), or the
 * -errno of the first mkdir that failed (-ENOTDIR when a component is a file).
 */
int xpu_mkdir_p(const char *path, mode_t mode);

/*
 * xpu_mkdir_parents - xpu_mkdir_p of the folder that holds file path (users write
 * `path = out/flame.folded` and expect out/). Nothing to do for a bare file name or a file
 * at the root. Returns as xpu_mkdir_p.
 */
int xpu_mkdir_parents(const char *path, mode_t mode);

#endif /* XPUSUP_COMMON_PATHS_H */
