// SPDX-License-Identifier: MIT
/*
 * xpusup subscribe: becomes xpusup-subscribe (actors/sink/subscribe.c), the remote sink, by
 * exec: the process a user or a script signals is the subscriber itself, and its exit status,
 * output and messages are the command's. A program of its own because it is a sink (the sink
 * driver, the formats, nng, io_uring), which the xpusup command otherwise has no use for.
 * It is found where the actor programs are (supervisor_find_program).
 */
#include "cli/subscribe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "supervisor/supervisor.h"

int subscribe_cmd(int argc, char **argv)
{
	char *prog = supervisor_find_program("subscribe");

	(void)argc; /* argv is NULL-terminated: passed on whole, one URL or several */
	if (!prog) {
		fprintf(stderr,
			"xpusup: unable to subscribe: no program xpusup-subscribe (searched "
			"$XPUSUP_ACTOR_PATH, beside xpusup, the build tree, the libexec folder)\n");
		return XPUSUP_EXIT_SYSTEM;
	}
	execv(prog, argv);
	fprintf(stderr, "xpusup: unable to subscribe: unable to run %s: %s\n", prog,
		strerror(errno));
	free(prog);
	return XPUSUP_EXIT_SYSTEM;
}
