// SPDX-License-Identifier: MIT
/* The sink kinds' keys (docs/sinks.md), and where each lands in its format's options struct. */
#include "actors/sink/sink_options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wire.h" /* a host name as the wire carries it */

/* kind = stats (actors/sink/stats.c, docs/stats.md). */
static const struct conf_key stats_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct stats_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "the statistics as JSON, e.g. out/stats.json" },
	{ .key = "text",
	  CONF_MEMBER(struct stats_options, text),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "the same for people (default: beside path, .txt; none: no text file)" },
	{ .key = "interval_s",
	  CONF_MEMBER(struct stats_options, interval_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 86400,
	  .def = "0",
	  .doc = "every N seconds append the interval's statistics to the intervals file and "
		 "rewrite path and text with the totals so far (0: only at stop)" },
	{ .key = "intervals",
	  CONF_MEMBER(struct stats_options, intervals),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "one JSON line an interval (default: beside path, .intervals.jsonl)" },
	{ .key = "window_ms",
	  CONF_MEMBER(struct stats_options, window_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 3600000,
	  .def = "1000",
	  .doc = "SM-active windows, in event time" },
	{ .key = "lateness_ms",
	  CONF_MEMBER(struct stats_options, lateness_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 3600000,
	  .def = "10000",
	  .doc = "a window closes when kernels ending this long after it have arrived" },
	{ .key = "max_kernels",
	  CONF_MEMBER(struct stats_options, max_kernels),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 16,
	  .max = 1u << 20,
	  .def = "10000",
	  .doc = "kernel names kept apart; the rest are counted as [other kernels]" },
	{ .key = NULL },
};

const struct conf_kind stats_conf_kind = {
	.name = "stats",
	.roles = CONF_SINK | CONF_FORMAT,
	.available = true,
	.keys = stats_keys,
	.doc = "summary statistics",
	.options_size = sizeof(struct stats_options),
};

static const char *const folded_weight_names[] = { "ns", "samples", NULL };

/* kind = folded (actors/sink/folded.c). */
static const struct conf_key folded_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct folded_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "the folded-stacks file, e.g. out/flame.folded" },
	{ .key = "html",
	  CONF_MEMBER(struct folded_options, html),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "the interactive flame graph page (default: beside path, .html; none: no page)" },
	{ .key = "weight",
	  CONF_MEMBER(struct folded_options, weight),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SINK,
	  .names = folded_weight_names,
	  .def = "ns",
	  .doc = "ns: samples weigh their period, GPU work its duration; samples: one each" },
	{ .key = "snapshot_s",
	  CONF_MEMBER(struct folded_options, snapshot_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 86400,
	  .def = "10",
	  .doc = "rewrite the files every N seconds while running (0: only at stop)" },
	{ .key = "max_stacks",
	  CONF_MEMBER(struct folded_options, max_stacks),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 16,
	  .max = 1u << 26,
	  .def = "1000000",
	  .doc = "distinct stacks kept; the rest is added to one [more stacks] line per process" },
	{ .key = NULL },
};

const struct conf_kind folded_conf_kind = {
	.name = "folded",
	.roles = CONF_SINK | CONF_FORMAT,
	.available = true,
	.keys = folded_keys,
	.doc = "folded stacks and an interactive flame graph",
	.options_size = sizeof(struct folded_options),
};

/* kind = publish (actors/sink/publish.c): the address is checked when the sink starts. */
static const struct conf_key publish_keys[] = {
	{ .key = "listen",
	  CONF_MEMBER(struct publish_options, listen),
	  .type = CONF_T_TEXT, /* any text: a URL, not a file name */
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "where subscribers dial: tcp://HOST:PORT, ipc:///PATH, tls+tcp://HOST:PORT" },
	{ .key = "tls_cert",
	  CONF_MEMBER(struct publish_options, tls_cert),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "tls+tcp: the server certificate (PEM)" },
	{ .key = "tls_key",
	  CONF_MEMBER(struct publish_options, tls_key),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "tls+tcp: the server certificate's private key (PEM, unencrypted)" },
	{ .key = "tls_ca",
	  CONF_MEMBER(struct publish_options, tls_ca),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "tls+tcp: subscribers must present a certificate this CA signed (PEM)" },
	{ .key = "host",
	  CONF_MEMBER(struct publish_options, host),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "the name subscribers know this host by (1..64 printable bytes, no space); "
		 "default: the hostname" },
	{ .key = "queue",
	  CONF_MEMBER(struct publish_options, queue),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 8192,
	  .def = "32",
	  .doc = "batches queued per subscriber; beyond that a slow subscriber loses batches" },
	{ .key = "linger_ms",
	  CONF_MEMBER(struct publish_options, linger_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 10000,
	  .def = "200",
	  .doc = "at stop, time given to the last batches to reach subscribers" },
	{ .key = NULL },
};

/* A host name travels in every batch (docs/wire.md, "Origin"): what the wire allows. */
static const char *publish_check(const void *opts, char *why, size_t why_len)
{
	const struct publish_options *o = opts;

	if (!o->host || xpu_wire_origin__valid_host(o->host, strlen(o->host)))
		return NULL;
	snprintf(why, why_len,
		 "bad host '%.80s': 1..%d printable characters without spaces, e.g. node17",
		 o->host, XPU_WIRE_HOST_MAX);
	return "host";
}

const struct conf_kind publish_conf_kind = {
	.name = "publish",
	.roles = CONF_SINK,
	.available = true,
	.keys = publish_keys,
	.doc = "records to subscribers over nng",
	.options_size = sizeof(struct publish_options),
	.check = publish_check,
};

static const char *const timeline_mode_names[] = { "file", "ring", NULL };

/* kind = timeline (actors/sink/timeline.c, docs/timeline.md). */
static const struct conf_key timeline_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct timeline_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "the Chrome trace JSON file, e.g. out/trace.json" },
	{ .key = "sm_window_ms",
	  CONF_MEMBER(struct timeline_options, sm_window_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 60000,
	  .def = "100",
	  .doc = "windows of the SM-active % counter tracks, in event time" },
	{ .key = "sm_lateness_ms",
	  CONF_MEMBER(struct timeline_options, sm_lateness_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 3600000,
	  .def = "2000",
	  .doc = "an SM-active window is written when kernels ending this long after it came" },
	{ .key = "max_launches",
	  CONF_MEMBER(struct timeline_options, max_launches),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1024,
	  .max = 16777216,
	  .def = "262144",
	  .doc = "recent launches remembered for flow arrows to the GPU work they launched" },
	{ .key = "mode",
	  CONF_MEMBER(struct timeline_options, mode),
	  .type = CONF_T_ENUM,
	  .roles = CONF_SINK,
	  .names = timeline_mode_names,
	  .def = "file",
	  .doc = "file: events go to disk as they come; ring: the last keep_s in memory, "
		 "written on `xpusup snapshot`, SIGUSR1, a trigger and at stop" },
	{ .key = "window_s",
	  CONF_MEMBER(struct timeline_options, window_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 86400,
	  .def = "0",
	  .doc = "mode = file: a new self-contained file every N seconds, listed in an index; "
		 "0: one file" },
	{ .key = "max_mb",
	  CONF_MEMBER(struct timeline_options, max_mb),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 1048576,
	  .doc = "windows: the most MiB on disk, oldest windows deleted (default none); ring: "
		 "the most MiB of events in memory (default 256)" },
	{ .key = "keep_s",
	  CONF_MEMBER(struct timeline_options, keep_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 86400,
	  .def = "60",
	  .doc = "mode = ring: seconds of events kept, before the newest" },
	{ .key = "trigger_kernel_us",
	  CONF_MEMBER(struct timeline_options, trigger_kernel_us),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 3600000000ull,
	  .def = "0",
	  .doc = "mode = ring: a snapshot when a GPU kernel runs longer than this; 0: never" },
	{ .key = "trigger_mark",
	  CONF_MEMBER(struct timeline_options, trigger_mark),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "mode = ring: a snapshot when a user mark or range of this name arrives "
		 "(annotate API)" },
	{ .key = "trigger_holdoff_s",
	  CONF_MEMBER(struct timeline_options, trigger_holdoff_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 86400,
	  .def = "10",
	  .doc = "mode = ring: after a triggered snapshot, triggers are ignored this long" },
	{ .key = NULL },
};

/* What only makes sense in one mode is refused in the other, rather than ignored. */
static const char *timeline_check(const void *opts, char *why, size_t why_len)
{
	const struct timeline_options *o = opts;

	if (o->mode == TIMELINE_RING && o->window_s) {
		snprintf(why, why_len,
			 "window_s is for mode = file (mode = ring keeps events in "
			 "memory and writes them on demand)");
		return "window_s";
	}
	if (o->mode == TIMELINE_FILE && o->max_mb && !o->window_s) {
		snprintf(why, why_len,
			 "max_mb needs window_s in mode = file (old windows are "
			 "what is deleted to stay under it)");
		return "max_mb";
	}
	if (o->mode == TIMELINE_FILE && (o->trigger_kernel_us || o->trigger_mark)) {
		snprintf(why, why_len,
			 "triggers are for mode = ring (mode = file writes every "
			 "event already)");
		return o->trigger_kernel_us ? "trigger_kernel_us" : "trigger_mark";
	}
	if (o->trigger_mark && !o->trigger_mark[0]) {
		snprintf(why, why_len, "an empty trigger_mark");
		return "trigger_mark";
	}
	return NULL;
}

/* A group sink has no snapshot of its own to give a format: `xpusup snapshot` and SIGUSR1
 * reach the sink, and a flight recorder needs its own. */
static const char *timeline_format_check(const void *opts, char *why, size_t why_len)
{
	const struct timeline_options *o = opts;

	if (o->mode != TIMELINE_RING)
		return NULL;
	snprintf(why, why_len,
		 "mode = ring cannot be a [format]: a flight recorder's snapshots need a sink of "
		 "its own ([sink NAME] with kind = timeline)");
	return "mode";
}

const struct conf_kind timeline_conf_kind = {
	.name = "timeline",
	.roles = CONF_SINK | CONF_FORMAT,
	.available = true,
	.keys = timeline_keys,
	.doc = "Chrome trace JSON for Perfetto and speedscope",
	.options_size = sizeof(struct timeline_options),
	.check = timeline_check,
	.format_check = timeline_format_check,
};

/* kind = group (actors/sink/group.c): which [format] sections it runs is checked by the
 * loader (formats_key), across sections. */
static const struct conf_key group_keys[] = {
	{ .key = "formats",
	  CONF_MEMBER(struct group_options, formats),
	  .type = CONF_T_TEXT, /* a list of section names, not a file name */
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "the [format NAME] sections this sink runs, comma-separated (1 to 8)" },
	{ .key = NULL },
};

const struct conf_kind group_conf_kind = {
	.name = "group",
	.roles = CONF_SINK,
	.available = true,
	.keys = group_keys,
	.doc = "several formats in one sink process: one receive and one decode for all",
	.options_size = sizeof(struct group_options),
	.formats_key = "formats",
};

int timeline_index__path(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	size_t len = strlen(path);

	if (len - (size_t)(name - path) > 5 && !strcmp(path + len - 5, ".json"))
		len -= 5;
	if (len == (size_t)(name - path))
		return -EINVAL;
	if ((size_t)snprintf(buf, size, "%.*s.index.json", (int)len, path) >= size)
		return -ENAMETOOLONG;
	return 0;
}

int metrics_listen__parse(const char *s, struct metrics_listen *l)
{
	struct metrics_listen r = { 0 };
	struct sockaddr_in *v4 = (struct sockaddr_in *)&r.addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&r.addr;
	char host[64];
	const char *colon, *port;
	bool bracket = s && s[0] == '[';
	unsigned long p;
	char *end;
	size_t n;

	if (!s || strlen(s) >= sizeof(r.text))
		return -EINVAL;
	if (bracket) { /* [v6]:port */
		colon = strstr(s, "]:");
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s - 1);
		port = colon + 2;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s);
		port = colon + 1;
	}
	if (!n || n >= sizeof(host) || *port < '1' || *port > '9')
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	errno = 0;
	p = strtoul(port, &end, 10);
	if (errno || *end || p > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1 && !bracket) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((unsigned short)p);
		r.len = sizeof(*v4);
		r.loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1 && bracket) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((unsigned short)p);
		r.len = sizeof(*v6);
		r.loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
	} else {
		return -EINVAL;
	}
	/* as written: it fits, it is shorter than r.text */
	memcpy(r.text, bracket ? s - 1 : s, strlen(bracket ? s - 1 : s) + 1);
	*l = r;
	return 0;
}

static int metrics_listen_parse(const char *s, void *member)
{
	return metrics_listen__parse(s, member);
}

/* kind = metrics (actors/sink/metrics.c, docs/fleet.md). */
static const struct conf_key metrics_keys[] = {
	{ .key = "listen",
	  CONF_MEMBER(struct metrics_options, listen),
	  .type = CONF_T_CUSTOM,
	  .parse = metrics_listen_parse,
	  .expected = "IPV4:PORT or [IPV6]:PORT, e.g. 127.0.0.1:9464",
	  .roles = CONF_SINK,
	  .def = "127.0.0.1:9464",
	  .doc = "where Prometheus scrapes GET /metrics; loopback unless an address that is not "
		 "is written here" },
	{ .key = "top_kernels",
	  CONF_MEMBER(struct metrics_options, top_kernels),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 10000,
	  .def = "20",
	  .doc = "kernel names with series of their own (the first seen); the rest are "
		 "kernel=\"other\"" },
	{ .key = "top_processes",
	  CONF_MEMBER(struct metrics_options, top_processes),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 10000,
	  .def = "50",
	  .doc = "processes with series of their own (the first seen); the rest are pid=\"other\"" },
	{ .key = "window_ms",
	  CONF_MEMBER(struct metrics_options, window_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 3600000,
	  .def = "1000",
	  .doc = "SM-active windows, in event time (as the stats sink's)" },
	{ .key = "lateness_ms",
	  CONF_MEMBER(struct metrics_options, lateness_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .max = 3600000,
	  .def = "10000",
	  .doc = "a window closes when kernels ending this long after it have arrived (as the "
		 "stats sink's)" },
	{ .key = "max_clients",
	  CONF_MEMBER(struct metrics_options, max_clients),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 64,
	  .def = "8",
	  .doc = "connections served at once; one more closes the oldest still sending its "
		 "request" },
	{ .key = "timeout_ms",
	  CONF_MEMBER(struct metrics_options, timeout_ms),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 100,
	  .max = 60000,
	  .def = "5000",
	  .doc = "a client must send its request, and take the reply, within this long" },
	{ .key = NULL },
};

const struct conf_kind metrics_conf_kind = {
	.name = "metrics",
	.roles = CONF_SINK | CONF_FORMAT,
	.available = true,
	.keys = metrics_keys,
	.doc = "a Prometheus endpoint (GET /metrics)",
	.options_size = sizeof(struct metrics_options),
};

/* kind = pprof (actors/sink/pprof.c, docs/fleet.md). */
static const struct conf_key pprof_keys[] = {
	{ .key = "path",
	  CONF_MEMBER(struct pprof_options, path),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .required = true,
	  .doc = "the files' name: out/profile.pb.gz writes "
		 "out/profile-YYYYMMDDTHHMMSS.mmmZ.pb.gz, one per interval" },
	{ .key = "interval_s",
	  CONF_MEMBER(struct pprof_options, interval_s),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 1,
	  .max = 86400,
	  .def = "60",
	  .doc = "a file every N seconds (and a last one at stop), each with what came in it" },
	{ .key = "max_entries",
	  CONF_MEMBER(struct pprof_options, max_entries),
	  .type = CONF_T_UINT,
	  .roles = CONF_SINK,
	  .min = 64,
	  .max = 1u << 24,
	  .def = "262144",
	  .doc = "strings, functions, locations, mappings and samples a file holds, each; "
		 "past them events go to one [pprof tables full] sample" },
	{ .key = "host",
	  CONF_MEMBER(struct pprof_options, host),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "the host label of every sample (default: the hostname)" },
	{ .key = "labels",
	  CONF_MEMBER(struct pprof_options, labels),
	  .type = CONF_T_TEXT,
	  .roles = CONF_SINK,
	  .doc = "labels of every sample, NAME=VALUE,NAME=VALUE (e.g. team=ml,job=resnet)" },
	PUSH_CONF_KEYS(struct pprof_options, push),
	{ .key = NULL },
};

static bool label_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > 64 || (s[0] >= '0' && s[0] <= '9') || (n >= 2 && s[0] == '_' && s[1] == '_'))
		return false;
	for (i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* labels: NAME=VALUE pairs with Prometheus-style names (what Pyroscope and Parca accept as
 * label names), not one of the labels the sink sets itself, each once; values printable. */
static const char *pprof_labels_check(const char *labels, char *why, size_t why_len)
{
	static const char *const own[] = { "pid",    "thread", "comm", "device",
					   "stream", "kernel", "host", NULL };
	const char *s = labels, *end, *eq, *prev, *c;
	unsigned int n = 0, i;

	while (*s) {
		end = strchr(s, ',');
		end = end ? end : s + strlen(s);
		eq = memchr(s, '=', (size_t)(end - s));
		if (!eq || !label_name_ok(s, (size_t)(eq - s)) || eq + 1 == end) {
			snprintf(why, why_len,
				 "bad label '%.*s': expected NAME=VALUE, NAME of letters, digits "
				 "and '_' (not a digit first, not '__' first), VALUE not empty",
				 (int)(end - s), s);
			return "labels";
		}
		for (c = eq + 1; c < end; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f) {
				snprintf(why, why_len, "bad label '%.*s': a control byte",
					 (int)(end - s), s);
				return "labels";
			}
		for (i = 0; own[i]; i++)
			if (strlen(own[i]) == (size_t)(eq - s) && !memcmp(own[i], s, eq - s)) {
				snprintf(why, why_len, "label '%s' is set by the sink itself%s",
					 own[i],
					 strcmp(own[i], "host") ? "" : " (use the host key)");
				return "labels";
			}
		for (prev = labels; prev < s; prev = strchr(prev, ',') + 1)
			if (!strncmp(prev, s, (size_t)(eq - s) + 1)) {
				snprintf(why, why_len, "label '%.*s' given twice", (int)(eq - s),
					 s);
				return "labels";
			}
		if (++n > PPROF_LABELS_MAX) {
			snprintf(why, why_len, "more than %d labels", PPROF_LABELS_MAX);
			return "labels";
		}
		s = *end ? end + 1 : end;
		if (!*s && *end) {
			snprintf(why, why_len, "a ',' at the end of labels");
			return "labels";
		}
	}
	return NULL;
}

static const char *pprof_check(const void *opts, char *why, size_t why_len)
{
	const struct pprof_options *o = opts;
	const char *c;

	if (o->host) {
		for (c = o->host; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == '_'))
				break;
		if (!o->host[0] || *c || c - o->host > 255) {
			snprintf(why, why_len,
				 "bad host '%s': expected a host name (letters, digits, '-', '.', "
				 "'_')",
				 o->host);
			return "host";
		}
	}
	c = o->labels ? pprof_labels_check(o->labels, why, why_len) : NULL;
	if (c)
		return c;
	if (o->push.url && !o->push.labels && o->labels) {
		/* without push_labels the samples' labels are the pushed profiles' too, and
		 * Pyroscope's name takes fewer bytes in a value than pprof does */
		struct push_opts po = o->push;
		char inner[256];

		po.labels = o->labels;
		if (push_opts__check(&po, inner, sizeof(inner))) {
			snprintf(why, why_len,
				 "with push_url and no push_labels, labels are pushed too: %s",
				 inner);
			return "labels";
		}
	}
	return push_opts__check(&o->push, why, why_len);
}

const struct conf_kind pprof_conf_kind = {
	.name = "pprof",
	.roles = CONF_SINK | CONF_FORMAT,
	.available = true,
	.keys = pprof_keys,
	.doc = "gzip-compressed pprof profiles (profile.proto), one per interval",
	.options_size = sizeof(struct pprof_options),
	.check = pprof_check,
};
