// SPDX-License-Identifier: MIT
/* `xpusup status`: actors, rings and counters of a running session, as text or JSON. */
#include "cli/status_cmd.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json_escape.h"
#include "common/topology.h"
#include "shm/ring.h"
#include "supervisor/supervisor.h"

static const char *const role_names[] = { "sink", "correlator", "source" };

static const char *role_name(__u32 role)
{
	return role < 3 ? role_names[role] : "?";
}

static const char *session_state_name(__u32 state)
{
	switch (state) {
	case XPU_SESSION_STARTING:
		return "starting";
	case XPU_SESSION_RUNNING:
		return "running";
	case XPU_SESSION_STOPPING:
		return "stopping";
	default:
		return "unknown";
	}
}

static void fmt_duration(char *buf, size_t len, __u64 ns)
{
	__u64 s = ns / 1000000000ull;

	if (s < 60)
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", s / 60, s % 60);
	else
		snprintf(buf, len, "%lluh%02llum", s / 3600, (s / 60) % 60);
}

static void fmt_exit(char *buf, size_t len, const struct xpu_actor_slot *slot)
{
	__s32 code = status_load(&slot->last_exit_code);
	__u32 sig = status_load(&slot->last_signal);

	if (sig)
		snprintf(buf, len, "SIG%s", xpu_signal__name((int)sig));
	else if (code >= 0)
		snprintf(buf, len, "exit %d", code);
	else
		snprintf(buf, len, "-");
}

static void file_write(void *out, const char *p, size_t len)
{
	fwrite(p, 1, len, out);
}

/* A string of ours as JSON: common/json_escape.h's rule, the sinks' one. */
static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	xpu_json_escape_to(s, strlen(s), 0, file_write, out);
	fputc('"', out);
}

/* The ring mesh, derived from the slots: every source has one ring per shard. */
struct ring_row {
	char name[80];
	const char *source;
	unsigned int shard;
	struct ring_stats st;
	bool ok;
};

/* Drops the producer has not yet told its consumer in a LOSS record (it will, once the ring has
 * room and it flushes). The counters are read one at a time while the producer runs: a
 * report newer than the loss count read before it is not a negative backlog. */
static __u64 unreported(const struct ring_stats *st)
{
	__u64 lost = st->lost_full + st->lost_too_big;

	return lost > st->reported ? lost - st->reported : 0;
}

static unsigned int collect_rings(const struct session *s, struct ring_row *rows, unsigned int max)
{
	const struct xpu_status_block *b = s->status;
	__u32 n_actors = status_load(&b->hdr.n_actors), shards = b->hdr.shards, i, k;
	unsigned int n = 0;
	struct ring *r;

	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		if (b->slots[i].role != CONF_ROLE_SOURCE)
			continue;
		for (k = 0; k < shards && n < max; k++) {
			struct ring_row *row = &rows[n++];

			snprintf(row->name, sizeof(row->name), XPU_RING_NAME_FMT, b->slots[i].name,
				 k);
			row->source = b->slots[i].name;
			row->shard = k;
			r = ring__open(s->dirfd, row->name, RING_OBSERVER);
			row->ok = r != NULL;
			if (r) {
				ring__stats(r, &row->st);
				ring__close(r);
			}
		}
	}
	return n;
}

static void print_text(FILE *out, const struct session *s)
{
	const struct xpu_status_block *b = s->status;
	__u32 n_actors = status_load(&b->hdr.n_actors), i, j, n_counters;
	struct ring_row rows[CONF_MAX_ACTORS * 4];
	__u64 now = xpu_now_ns(), ready;
	char up[32], ex[32], pid[16];
	unsigned int n_rings, r;
	bool any_counter = false;

	fmt_duration(up, sizeof(up), now - b->hdr.started_ns);
	fprintf(out, "session %s: %s, supervisor pid %u, up %s, %u actors, correlator shards: %u\n",
		b->hdr.session, session_state_name(status_load(&b->hdr.state)),
		b->hdr.supervisor_pid, up, n_actors, b->hdr.shards);
	fprintf(out, "config %s, log %s\n\n", b->hdr.config_path, s->log);
	fprintf(out, "%-20s %-11s %-10s %-9s %7s %8s %-11s %8s\n", "ACTOR", "KIND", "ROLE", "STATE",
		"PID", "RESTARTS", "LAST EXIT", "UPTIME");
	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		const struct xpu_actor_slot *slot = &b->slots[i];
		__u32 p = status_load(&slot->pid);

		ready = status_load(&slot->ready_ns);
		if (p && ready)
			fmt_duration(up, sizeof(up), now - ready);
		else
			snprintf(up, sizeof(up), "-");
		snprintf(pid, sizeof(pid), p ? "%u" : "-", p);
		fmt_exit(ex, sizeof(ex), slot);
		fprintf(out, "%-20s %-11s %-10s %-9s %7s %8u %-11s %8s\n", slot->name, slot->kind,
			role_name(slot->role), xpu_actor_state__name(status_load(&slot->state)),
			pid, status_load(&slot->restarts), ex, up);
	}
	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		char problem[XPU_STATUS_PROBLEM_LEN + 1];

		status__get_problem(&b->slots[i], problem, sizeof(problem));
		if (!problem[0])
			continue;
		fmt_duration(up, sizeof(up), now - status_load(&b->slots[i].problem_ns));
		fprintf(out, "%s%-20s PROBLEM (for %s): %s\n", any_counter ? "" : "\n",
			b->slots[i].name, up, problem);
		any_counter = true; /* one blank line before the first problem only */
	}
	any_counter = false;
	n_rings = collect_rings(s, rows, sizeof(rows) / sizeof(rows[0]));
	if (n_rings) {
		fprintf(out, "\n%-24s %12s %12s %10s %10s %8s %6s\n", "RING", "PRODUCED",
			"CONSUMED", "LOST:FULL", "LOST:BIG", "CORRUPT", "FILL");
		for (r = 0; r < n_rings; r++) {
			const struct ring_stats *st = &rows[r].st;

			if (!rows[r].ok) {
				fprintf(out, "%-24s (cannot open: %s)\n", rows[r].name, "missing");
				continue;
			}
			fprintf(out, "%-24s %12llu %12llu %10llu %10llu %8llu %5.1f%%\n",
				rows[r].name, (unsigned long long)st->produced,
				(unsigned long long)st->consumed, (unsigned long long)st->lost_full,
				(unsigned long long)st->lost_too_big,
				(unsigned long long)st->corrupt,
				100.0 * (double)(st->head - st->tail) / (double)st->capacity);
		}
	}
	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		const struct xpu_actor_slot *slot = &b->slots[i];

		/* pairs with the release in actor__counter: the names below it are written */
		n_counters = __atomic_load_n(&slot->n_counters, __ATOMIC_ACQUIRE);
		if (!n_counters || n_counters > XPU_STATUS_MAX_COUNTERS)
			continue;
		if (!any_counter)
			fprintf(out, "\nCOUNTERS\n");
		any_counter = true;
		fprintf(out, "%-20s", slot->name);
		for (j = 0; j < n_counters; j++)
			fprintf(out, " %.*s=%llu", (int)sizeof(slot->counters[j].name),
				slot->counters[j].name,
				(unsigned long long)status_load(&slot->counters[j].value));
		fputc('\n', out);
	}
}

static void print_json(FILE *out, const struct session *s)
{
	const struct xpu_status_block *b = s->status;
	__u32 n_actors = status_load(&b->hdr.n_actors), i, j, n_counters;
	struct ring_row rows[CONF_MAX_ACTORS * 4];
	__u64 now = xpu_now_ns(), ready, beat;
	unsigned int n_rings, r;
	__s32 code;
	__u32 sig, p;

	fprintf(out, "{\"session\":");
	json_str(out, b->hdr.session);
	fprintf(out, ",\"state\":\"%s\",\"supervisor_pid\":%u,\"uptime_s\":%.3f,\"shards\":%u,",
		session_state_name(status_load(&b->hdr.state)), b->hdr.supervisor_pid,
		(double)(now - b->hdr.started_ns) / 1e9, b->hdr.shards);
	fprintf(out, "\"config\":");
	json_str(out, b->hdr.config_path);
	fprintf(out, ",\"log\":");
	json_str(out, s->log);
	fprintf(out, ",\"actors\":[");
	for (i = 0; i < n_actors && i < XPU_STATUS_MAX_ACTORS; i++) {
		const struct xpu_actor_slot *slot = &b->slots[i];

		p = status_load(&slot->pid);
		ready = status_load(&slot->ready_ns);
		beat = status_load(&slot->heartbeat_ns);
		code = status_load(&slot->last_exit_code);
		sig = status_load(&slot->last_signal);
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, slot->name);
		fprintf(out, ",\"kind\":");
		json_str(out, slot->kind);
		fprintf(out,
			",\"role\":\"%s\",\"shard\":%u,\"state\":\"%s\",\"pid\":%u,\"restarts\":%u,",
			role_name(slot->role), slot->shard,
			xpu_actor_state__name(status_load(&slot->state)), p,
			status_load(&slot->restarts));
		if (sig)
			fprintf(out, "\"last_exit\":{\"signal\":\"SIG%s\"},",
				xpu_signal__name((int)sig));
		else if (code >= 0)
			fprintf(out, "\"last_exit\":{\"code\":%d},", code);
		else
			fprintf(out, "\"last_exit\":null,");
		fprintf(out, "\"uptime_s\":%.3f,\"heartbeat_age_ms\":%.1f,",
			p && ready ? (double)(now - ready) / 1e9 : 0.0,
			p && beat && now > beat ? (double)(now - beat) / 1e6 : 0.0);
		{
			char problem[XPU_STATUS_PROBLEM_LEN + 1];

			status__get_problem(slot, problem, sizeof(problem));
			fprintf(out, "\"problem\":");
			if (problem[0])
				json_str(out, problem);
			else
				fprintf(out, "null");
		}
		fprintf(out, ",\"counters\":{");
		/* pairs with the release in actor__counter: the names below it are written */
		n_counters = __atomic_load_n(&slot->n_counters, __ATOMIC_ACQUIRE);
		for (j = 0; j < n_counters && j < XPU_STATUS_MAX_COUNTERS; j++) {
			char name[XPU_STATUS_COUNTER_NAME_LEN + 1];

			snprintf(name, sizeof(name), "%.*s", (int)sizeof(slot->counters[j].name),
				 slot->counters[j].name);
			fprintf(out, "%s", j ? "," : "");
			json_str(out, name);
			fprintf(out, ":%llu",
				(unsigned long long)status_load(&slot->counters[j].value));
		}
		fprintf(out, "}}");
	}
	fprintf(out, "],\"rings\":[");
	n_rings = collect_rings(s, rows, sizeof(rows) / sizeof(rows[0]));
	for (r = 0; r < n_rings; r++) {
		const struct ring_stats *st = &rows[r].st;

		fprintf(out, "%s{\"name\":", r ? "," : "");
		json_str(out, rows[r].name);
		fprintf(out, ",\"source\":");
		json_str(out, rows[r].source);
		fprintf(out,
			",\"shard\":%u,\"ok\":%s,\"capacity\":%llu,\"used\":%llu,\"produced\":%llu,"
			"\"consumed\":%llu,\"lost\":{\"ring_full\":%llu,\"too_big\":%llu},"
			"\"lost_unreported\":%llu,\"loss_records\":%llu,\"corrupt\":%llu,"
			"\"producer_pid\":%u,\"consumer_pid\":%u}",
			rows[r].shard, rows[r].ok ? "true" : "false",
			(unsigned long long)st->capacity, (unsigned long long)(st->head - st->tail),
			(unsigned long long)st->produced, (unsigned long long)st->consumed,
			(unsigned long long)st->lost_full, (unsigned long long)st->lost_too_big,
			(unsigned long long)unreported(st), (unsigned long long)st->loss_records,
			(unsigned long long)st->corrupt, st->producer_pid, st->consumer_pid);
	}
	fprintf(out, "]}\n");
}

static volatile sig_atomic_t watch_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	watch_interrupted = 1;
}

int status_cmd(const char *name, bool json, bool watch, unsigned int interval_ms)
{
	struct timespec ts = { .tv_sec = interval_ms / 1000,
			       .tv_nsec = (long)(interval_ms % 1000) * 1000000 };
	struct session s;
	int err, rounds = 0;

	err = session__paths(&s, name);
	if (err) {
		fprintf(stderr, "xpusup: unable to show status: %s\n",
			err == -EINVAL ? "bad session name" : "XDG_RUNTIME_DIR is not set");
		return err == -EINVAL ? XPUSUP_EXIT_USAGE : XPUSUP_EXIT_SYSTEM;
	}
	if (watch)
		signal(SIGINT, on_interrupt);
	do {
		err = session__open(&s);
		if (err == -ENOENT) {
			if (json)
				printf("{\"session\":\"%s\",\"state\":\"not running\"}\n", s.name);
			if (!watch || !rounds) {
				fprintf(stderr,
					"xpusup: no session '%s' is running (start one with `xpusup "
					"start PIPELINE.conf%s%s`)\n",
					s.name,
					strcmp(s.name, SESSION_DEFAULT) ? " --session " : "",
					strcmp(s.name, SESSION_DEFAULT) ? s.name : "");
				return XPUSUP_EXIT_SYSTEM;
			}
			printf("\nsession %s has ended\n", s.name);
			return 0;
		}
		if (err == -EAGAIN) {
			printf("session %s is starting\n", s.name);
		} else if (err) {
			fprintf(stderr, "xpusup: unable to show status: %s: %s\n", s.dir,
				strerror(-err));
			return XPUSUP_EXIT_SYSTEM;
		} else {
			if (watch)
				fputs("\033[H\033[2J", stdout); /* home, clear: redraw like top */
			if (json)
				print_json(stdout, &s);
			else
				print_text(stdout, &s);
			session__close(&s);
		}
		fflush(stdout);
		rounds++;
		if (watch && !watch_interrupted)
			nanosleep(&ts, NULL);
	} while (watch && !watch_interrupted);
	return 0;
}
