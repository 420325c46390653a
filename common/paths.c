/* SPDX-License-Identifier: MIT */
#include "common/paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* meson passes these (common/meson.build): the build root and where each copy of the
 * library is or will be. */
#ifndef XPUSUP_BUILD_ROOT
#define XPUSUP_BUILD_ROOT ""
#endif
#ifndef XPUSUP_BUILD_CUPTI_LIB
#define XPUSUP_BUILD_CUPTI_LIB ""
#endif
#ifndef XPUSUP_INSTALLED_CUPTI_LIB
#define XPUSUP_INSTALLED_CUPTI_LIB ""
#endif

/* Whether this program is one of the build tree's: then the build tree's library is the one
 * built with it, even when an older one is installed. */
static int in_build_tree(void)
{
	size_t root_len = strlen(XPUSUP_BUILD_ROOT);
	char self[PATH_MAX];
	ssize_t n;

	if (!root_len)
		return 0;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 0;
	self[n] = '\0';
	return !strncmp(self, XPUSUP_BUILD_ROOT, root_len) && self[root_len] == '/';
}

int xpu_cupti_lib(char *buf, size_t len)
{
	const char *env = getenv(XPU_CUPTI_LIB_ENV);
	const char *path;

	if (env && *env)
		path = env;
	else if (in_build_tree())
		path = XPUSUP_BUILD_CUPTI_LIB;
	else
		path = XPUSUP_INSTALLED_CUPTI_LIB;
	if ((size_t)snprintf(buf, len, "%s", path) >= len)
		return -ENAMETOOLONG;
	if (!*path || access(path, R_OK))
		return -ENOENT;
	return 0;
}

int xpu_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	/* each parent in turn; EEXIST covers a folder made by someone else meanwhile */
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int xpu_mkdir_parents(const char *path, mode_t mode)
{
	char dir[PATH_MAX], *slash;

	if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	return xpu_mkdir_p(dir, mode);
}
