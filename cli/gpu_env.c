// SPDX-License-Identifier: MIT
/* The environment of a profiled command (cli/gpu_env.h), for `record` and `run`. */
#include "cli/gpu_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/inproc.h"
#include "common/paths.h"

/* Whether name may be set to value: yes when it is unset or holds value already; when it
 * holds another value, that is the user's, kept, and said once. */
static bool env_claim(const char *name, const char *value, const char *what)
{
	const char *theirs = getenv(name);

	if (!theirs || !*theirs || !strcmp(theirs, value))
		return true;
	fprintf(stderr,
		"xpusup: %s is already set to %s: kept, so %s will not be recorded by xpusup\n",
		name, theirs, what);
	return false;
}

void gpu_env__plan(struct gpu_env *env, const char *session_dir, bool cupti)
{
	int err;

	memset(env, 0, sizeof(*env));
	snprintf(env->session_dir, sizeof(env->session_dir), "%s", session_dir);
	if (!cupti)
		return;
	err = xpu_cupti_lib(env->cupti_lib, sizeof(env->cupti_lib));
	if (err) {
		fprintf(stderr,
			"xpusup: going on without GPU activity: no CUPTI injection library at %s "
			"(%s; build xpusup with CUPTI, or set %s)\n",
			env->cupti_lib, strerror(-err), XPU_CUPTI_LIB_ENV);
		env->cupti_lib[0] = '\0';
		return;
	}
	/* CUDA loads one injection library: someone else's wins, and then NVTX through ours
	 * would reach a library CUDA never initialised. */
	if (!env_claim("CUDA_INJECTION64_PATH", env->cupti_lib, "GPU activity")) {
		env->cupti_lib[0] = '\0';
		return;
	}
	env->nvtx = env_claim("NVTX_INJECTION64_PATH", env->cupti_lib, "NVTX ranges");
}

int gpu_env__apply(const struct gpu_env *env)
{
	if (env->session_dir[0] && setenv(XPU_INPROC_ENV, env->session_dir, 1))
		return -errno;
	if (!env->cupti_lib[0])
		return 0;
	if (setenv("CUDA_INJECTION64_PATH", env->cupti_lib, 1))
		return -errno;
	if (env->nvtx && setenv("NVTX_INJECTION64_PATH", env->cupti_lib, 1))
		return -errno;
	return 0;
}
