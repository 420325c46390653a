// SPDX-License-Identifier: MIT
/* sockets__close_within: close.h says why. */
#include "actors/sink/close.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct closer {
	nng_socket sock;
	sem_t done;
};

static void *closer__run(void *arg)
{
	struct closer *c = arg;

	nng_close(c->sock);
	sem_post(&c->done);
	return NULL;
}

/* The close of sock under way in a detached thread (a thread still blocked at exit is nobody's
 * to join); NULL when it could not start one, the socket then closed here. */
static struct closer *closer__start(nng_socket sock)
{
	struct closer *c = malloc(sizeof(*c));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!c)
		goto inline_close;
	c->sock = sock;
	if (sem_init(&c->done, 0, 0))
		goto free_closer;
	if (pthread_attr_init(&attr))
		goto destroy_sem;
	rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) ||
	     pthread_create(&t, &attr, closer__run, c);
	pthread_attr_destroy(&attr);
	if (rc)
		goto destroy_sem;
	return c;
destroy_sem:
	sem_destroy(&c->done);
free_closer:
	free(c);
inline_close:
	nng_close(sock);
	return NULL;
}

/* 0 once c's close returned (c freed), -ETIMEDOUT at until (c stays: its thread holds it,
 * and the process is about to end). */
static int closer__wait(struct closer *c, const struct timespec *until)
{
	int rc;

	while ((rc = sem_timedwait(&c->done, until)) && errno == EINTR)
		;
	if (rc)
		return -ETIMEDOUT;
	sem_destroy(&c->done);
	free(c);
	return 0;
}

int sockets__close_within(const nng_socket *socks, unsigned int n, unsigned int ms,
			  const char *prog)
{
	struct closer **c = calloc(n ? n : 1, sizeof(*c));
	struct timespec until;
	unsigned int i, late = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	/* all at once, so that the bound is for them together, not for each; without room for
	 * the list, one after another within the same bound */
	for (i = 0; i < n; i++) {
		struct closer *one = closer__start(socks[i]);

		if (c)
			c[i] = one;
		else if (one && closer__wait(one, &until))
			late++;
	}
	for (i = 0; c && i < n; i++)
		if (c[i] && closer__wait(c[i], &until))
			late++;
	free(c);
	if (late)
		fprintf(stderr,
			"%s: %u of %u sockets did not close within %u ms (libnng 1.5.2 can block "
			"in nng_close: nanomsg/nng#1543); exiting without them\n",
			prog, late, n, ms);
	return late ? -ETIMEDOUT : 0;
}

int socket__close_within(nng_socket sock, unsigned int ms, const char *prog)
{
	return sockets__close_within(&sock, 1, ms, prog);
}
