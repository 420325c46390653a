/* SPDX-License-Identifier: MIT */
#ifndef XPUSUP_CLI_GPU_ENV_H
#define XPUSUP_CLI_GPU_ENV_H

#include <limits.h>
#include <stdbool.h>

/*
 * The environment of a command profiled into a session, the same for `record` and `run`:
 * XPUSUP_SESSION_DIR (where the annotate and CUPTI libraries find the session's in-process
 * socket) and, for a session with a cupti source, CUDA_INJECTION64_PATH and
 * NVTX_INJECTION64_PATH naming the CUPTI injection library (xpu_cupti_lib(): the file the
 * cpu source puts its launch uprobe on).
 *
 *	gpu_env__plan(&env, dir, cupti);	in xpusup, once: decides, says what is missing
 *	gpu_env__apply(&env);			in the process about to exec the command
 */
struct gpu_env {
	char session_dir[4200]; /* "" leaves XPUSUP_SESSION_DIR alone */
	char cupti_lib[PATH_MAX]; /* "" when the command gets no injection library */
	bool nvtx; /* NVTX_INJECTION64_PATH too: the user has none of their own */
};

/*
 * gpu_env__plan - fill env for session_dir; cupti says the session has a cupti source. Says
 * once on stderr why GPU activity will not be recorded when it will not: the library is not
 * there (the command still runs, CPU profiling goes on), or CUDA_INJECTION64_PATH already
 * names another library (kept: CUDA loads only one). NVTX_INJECTION64_PATH naming another
 * library is kept the same way. Cannot fail.
 */
void gpu_env__plan(struct gpu_env *env, const char *session_dir, bool cupti);

/* gpu_env__apply - setenv what env says in this process. Returns 0 or -errno. */
int gpu_env__apply(const struct gpu_env *env);

#endif /* XPUSUP_CLI_GPU_ENV_H */
