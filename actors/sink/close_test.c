// SPDX-License-Identifier: MIT
/*
 * socket__close_within with real nng sockets: a close that returns is waited for; one that
 * blocks (here: a pipe callback that takes 3 s, which nng_close waits for, as it waited for
 * its reaper in libnng 1.5.2's hang) is left behind after the bound, with a message.
 */
#include "actors/sink/close.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>

#include "tests/tap.h"

static unsigned int slow_s;

static void on_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	(void)p;
	(void)ev;
	(void)arg;
	sleep(slow_s);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A pull socket listening at url with a push socket connected to it: nng_close(pull) then
 * waits for the pipe's removal callback. */
static int pair(const char *url, nng_socket *pull, nng_socket *push)
{
	int rc = nng_pull0_open(pull);

	if (!rc)
		rc = nng_pipe_notify(*pull, NNG_PIPE_EV_REM_POST, on_pipe_gone, NULL);
	if (!rc)
		rc = nng_listen(*pull, url, NULL, 0);
	if (!rc)
		rc = nng_push0_open(push);
	if (!rc)
		rc = nng_dial(*push, url, NULL, 0);
	usleep(100000); /* the pipe is up */
	return rc;
}

int main(void)
{
	char dir[] = "/tmp/xpusup-close-XXXXXX", url[128];
	nng_socket pull, push;
	double t0, took;
	int rc;

	if (!mkdtemp(dir))
		return 1;
	snprintf(url, sizeof(url), "ipc://%s/quick.ipc", dir);
	tap_ok(pair(url, &pull, &push) == 0, "a pull socket with a peer");
	t0 = now_s();
	rc = socket__close_within(pull, 2000, "close_test");
	took = now_s() - t0;
	tap_ok(rc == 0 && took < 1.0, "a close that returns is waited for (rc %d, %.3f s)", rc,
	       took);
	nng_close(push);

	slow_s = 3;
	snprintf(url, sizeof(url), "ipc://%s/slow.ipc", dir);
	tap_ok(pair(url, &pull, &push) == 0, "a pull socket whose close takes 3 s");
	t0 = now_s();
	rc = socket__close_within(pull, 200, "close_test");
	took = now_s() - t0;
	tap_ok(rc == -ETIMEDOUT && took >= 0.19 && took < 1.5,
	       "a close past the bound is left behind at the bound (rc %d, %.3f s)", rc, took);
	{
		nng_socket two[2], push2[2];

		snprintf(url, sizeof(url), "ipc://%s/slow1.ipc", dir);
		tap_ok(pair(url, &two[0], &push2[0]) == 0, "two more such sockets (1)");
		snprintf(url, sizeof(url), "ipc://%s/slow2.ipc", dir);
		tap_ok(pair(url, &two[1], &push2[1]) == 0, "two more such sockets (2)");
		t0 = now_s();
		rc = sockets__close_within(two, 2, 200, "close_test");
		took = now_s() - t0;
		tap_ok(rc == -ETIMEDOUT && took >= 0.19 && took < 0.35,
		       "two closes share one bound, not one each (rc %d, %.3f s)", rc, took);
	}
	/* the process ends with the closing threads still in their callbacks, as a sink would */
	for (rc = 0; rc < 4; rc++) {
		static const char *const names[] = { "quick", "slow", "slow1", "slow2" };

		snprintf(url, sizeof(url), "%s/%s.ipc", dir, names[rc]);
		unlink(url);
	}
	rmdir(dir);
	return tap_done();
}
