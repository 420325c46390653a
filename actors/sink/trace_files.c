// SPDX-License-Identifier: MIT
/* The windows of a timeline sink and their index; see trace_files.h. */
#include "actors/sink/trace_files.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actors/sink/out.h"
#include "actors/sink/sink_options.h"
#include "common/json_escape.h"

#define TW_PATH_MAX 4096
#define INDEX_FORMAT "xpusup trace windows 1"

struct trace_windows {
	char dir[TW_PATH_MAX]; /* "out/", or "" for the current folder */
	char stem[256]; /* "trace" */
	char base[256]; /* "trace.json": path's own name, for the index */
	char index[TW_PATH_MAX + 300];
	__u64 max_bytes;
	struct trace_window *v; /* oldest first */
	unsigned int n, cap;
	__u64 listed_bytes, written, deleted, bytes_deleted;
	bool index_stale; /* the index on disk is behind the list: index_err, index_why */
	int index_err;
	char index_why[TW_PATH_MAX + 400];
	unsigned int partials_removed; /* at open: unfinished windows of the run before */
	int trim_err; /* the last trim could not delete a window, for trace_windows__error */
	char trim_why[TW_PATH_MAX + 400];
};

static void utc_text(__u64 ns, char *buf, size_t size, bool compact)
{
	time_t s = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(buf, size,
		 compact ? "%04d%02d%02dT%02d%02d%02d.%03uZ" :
			   "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(ns / 1000000 % 1000));
}

static int push(struct trace_windows *w, const struct trace_window *win)
{
	if (w->n == w->cap) {
		unsigned int cap = w->cap ? w->cap * 2 : 64;
		struct trace_window *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = *win;
	w->listed_bytes += win->bytes;
	return 0;
}

/* The value of the JSON string at s (after its opening quote), as write_index escapes it
 * (xpu_json_escape: \" \\ and \u00XX), into out (size bytes, NUL-terminated). Returns what
 * follows its closing quote, or NULL where it is not one or does not fit. */
static const char *unescape_name(const char *s, char *out, size_t size)
{
	size_t n = 0;
	unsigned int c;

	for (; *s != '"'; s++) {
		if (!*s || n + 1 >= size)
			return NULL;
		c = (unsigned char)*s;
		if (c == '\\') {
			s++;
			if (*s == 'u') {
				if (sscanf(s + 1, "%4x", &c) != 1 || c > 0xff || !c)
					return NULL;
				s += 4;
			} else if (*s == '"' || *s == '\\' || *s == '/') {
				c = (unsigned char)*s;
			} else {
				return NULL;
			}
		}
		out[n++] = (char)c;
	}
	out[n] = 0;
	return s + 1;
}

/* The index found at open (a killed predecessor's, or an earlier session's under the same
 * path): its windows that are still on disk, and its counts. */
static void read_index(struct trace_windows *w)
{
	char file[TW_PATH_MAX + 300], *line = NULL;
	unsigned long long first_us, last_us, events, bytes, del, del_bytes, start, end, written;
	unsigned int first_f, last_f;
	int k;
	struct trace_window win;
	const char *rest;
	size_t cap = 0;
	struct stat st;
	FILE *f = fopen(w->index, "r");

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		memset(&win, 0, sizeof(win));
		/* the name as written, escaped: a stem may hold '"' or '\\' */
		rest = !strncmp(line, "{\"file\":\"", 9) ?
			       unescape_name(line + 9, win.file, sizeof(win.file)) :
			       NULL;
		if (rest &&
		    sscanf(rest,
			   ",\"start_ns\":%llu,\"end_ns\":%llu"
			   ",\"first_ts\":%llu.%3u,\"last_ts\":%llu.%3u,\"events\":%llu,\"bytes\":%llu",
			   &start, &end, &first_us, &first_f, &last_us, &last_f, &events,
			   &bytes) == 8) {
			win.start_ns = start;
			win.end_ns = end;
			win.first_ts = first_us * 1000 + first_f;
			win.last_ts = last_us * 1000 + last_f;
			win.events = events;
			win.bytes = bytes;
			snprintf(file, sizeof(file), "%s%s", w->dir, win.file);
			if (!strchr(win.file, '/') && !stat(file, &st))
				push(w, &win);
		} else if ((k = sscanf(line,
				       "],\"windows_deleted\":%llu,\"bytes_deleted\":%llu"
				       ",\"windows_written\":%llu",
				       &del, &del_bytes, &written)) >= 2) {
			w->deleted = del;
			w->bytes_deleted = del_bytes;
			/* an index of before windows_written: its windows, as then */
			w->written = k == 3 ? written : w->n;
		}
	}
	free(line);
	fclose(f);
}

/* The windows a killed predecessor was writing (STEM-<UTC>.json.partial): never listed, each
 * a new name, they would pile up past the cap over a run of restarts. Returns how many went. */
static unsigned int remove_partials(const struct trace_windows *w)
{
	static const char tail[] = ".json.partial";
	char file[TW_PATH_MAX + 300];
	size_t stem = strlen(w->stem), len;
	unsigned int n = 0;
	struct dirent *de;
	DIR *d = opendir(w->dir[0] ? w->dir : ".");

	while (d && (de = readdir(d))) {
		len = strlen(de->d_name);
		if (len <= stem + 1 + sizeof(tail) - 1 || strncmp(de->d_name, w->stem, stem) ||
		    de->d_name[stem] != '-' || strcmp(de->d_name + len - (sizeof(tail) - 1), tail))
			continue;
		snprintf(file, sizeof(file), "%s%s", w->dir, de->d_name);
		n += !unlink(file);
	}
	if (d)
		closedir(d);
	return n;
}

int trace_windows__open(struct trace_windows **out, const char *path, __u64 max_bytes, bool resume,
			char *why, size_t why_len)
{
	struct trace_windows *w = calloc(1, sizeof(*w));
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	size_t stem_len = strlen(name);

	*out = NULL;
	if (!w) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	if (stem_len > 5 && !strcmp(name + stem_len - 5, ".json"))
		stem_len -= 5;
	if ((size_t)(name - path) >= sizeof(w->dir) || stem_len >= sizeof(w->stem) - 40 ||
	    strlen(name) >= sizeof(w->base) || !stem_len) {
		snprintf(why, why_len, "path '%s': too long for windows", path);
		free(w);
		return -ENAMETOOLONG;
	}
	memcpy(w->dir, path, (size_t)(name - path));
	memcpy(w->stem, name, stem_len);
	snprintf(w->base, sizeof(w->base), "%s", name);
	if (timeline_index__path(path, w->index, sizeof(w->index))) {
		snprintf(why, why_len, "path '%s': too long for windows", path);
		free(w);
		return -ENAMETOOLONG;
	}
	w->max_bytes = max_bytes;
	/* The windows of the index found are taken over either way: a restarted sink's own,
	 * or an earlier session's under the same path, which would otherwise stay on disk past
	 * every cap (they are listed, counted under max_bytes and deleted oldest first). Only a
	 * restarted sink's counts go on, and only it deletes the unfinished window of the run
	 * it follows (a new session's may be another's, still writing). */
	read_index(w);
	if (!resume)
		w->written = w->deleted = w->bytes_deleted = 0;
	else /* only a restart's: another session may be writing under this path */
		w->partials_removed = remove_partials(w);
	*out = w;
	return 0;
}

void trace_windows__free(struct trace_windows *w)
{
	if (!w)
		return;
	free(w->v);
	free(w);
}

int trace_files__stamped(const char *path, const char *tag, char *buf, size_t size, __u64 *wall_ns)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	size_t stem = strlen(path);
	struct timespec now;
	unsigned int seq;
	char when[96]; /* room for what %d of any int could take: -Wformat-truncation */
	int n;

	if (strlen(name) > 5 && !strcmp(path + stem - 5, ".json"))
		stem -= 5;
	clock_gettime(CLOCK_REALTIME, &now);
	*wall_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	utc_text(*wall_ns, when, sizeof(when), true);
	n = snprintf(buf, size, "%.*s-%s%s.json", (int)stem, path, tag, when);
	/* The time is to the millisecond: a small window (max_mb of a few) can fill within
	 * one, and triggers without a holdoff fire as fast. A name that is taken gets -2, -3,
	 * ..., rather than a rename over the file before it. */
	for (seq = 2; n >= 0 && (size_t)n < size && !access(buf, F_OK) && seq < 1000; seq++)
		n = snprintf(buf, size, "%.*s-%s%s-%u.json", (int)stem, path, tag, when, seq);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int trace_windows__name(const struct trace_windows *w, char *buf, size_t size, __u64 *start_ns)
{
	char path[TW_PATH_MAX + 300];

	snprintf(path, sizeof(path), "%s%s", w->dir, w->base);
	return trace_files__stamped(path, "", buf, size, start_ns);
}

/* name as JSON string text (no quotes) into buf, which holds XPU_JSON_ESCAPED_MAX of it. */
static const char *escaped(const char *name, char *buf, size_t size)
{
	size_t n = xpu_json_escape(buf, size - 1, name, strlen(name), NULL, 0);

	buf[n] = 0;
	return buf;
}

static int write_index(struct trace_windows *w, char *why, size_t why_len)
{
	char start[96], end[96], name[XPU_JSON_ESCAPED_MAX(256) + 1];
	struct out *o;
	unsigned int i;
	int err;

	err = out__open(&o, w->index, why, why_len);
	if (err)
		goto stale;
	out__printf(o, "{\"format\":\"" INDEX_FORMAT "\",\"path\":\"%s\",\"windows\":[\n",
		    escaped(w->base, name, sizeof(name)));
	for (i = 0; i < w->n; i++) {
		const struct trace_window *v = &w->v[i];

		utc_text(v->start_ns, start, sizeof(start), false);
		utc_text(v->end_ns, end, sizeof(end), false);
		/* one window a line, fixed key order: read_index reads it back this way */
		out__printf(o,
			    "{\"file\":\"%s\",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
			    ",\"first_ts\":%" PRIu64 ".%03u,\"last_ts\":%" PRIu64 ".%03u"
			    ",\"events\":%" PRIu64 ",\"bytes\":%" PRIu64
			    ",\"start\":\"%s\",\"end\":\"%s\"}%s\n",
			    escaped(v->file, name, sizeof(name)), (uint64_t)v->start_ns,
			    (uint64_t)v->end_ns, (uint64_t)(v->first_ts / 1000),
			    (unsigned int)(v->first_ts % 1000), (uint64_t)(v->last_ts / 1000),
			    (unsigned int)(v->last_ts % 1000), (uint64_t)v->events,
			    (uint64_t)v->bytes, start, end, i + 1 < w->n ? "," : "");
	}
	out__printf(o,
		    "],\"windows_deleted\":%" PRIu64 ",\"bytes_deleted\":%" PRIu64
		    ",\"windows_written\":%" PRIu64 "}\n",
		    (uint64_t)w->deleted, (uint64_t)w->bytes_deleted, (uint64_t)w->written);
	err = out__commit(o, why, why_len);
	if (err)
		goto stale;
	w->index_stale = false;
	return 0;
stale:
	w->index_stale = true;
	w->index_err = err;
	snprintf(w->index_why, sizeof(w->index_why), "the window index is behind: %s", why);
	return err;
}

int trace_windows__add(struct trace_windows *w, const char *file, const struct trace_window *win,
		       char *why, size_t why_len)
{
	const char *slash = strrchr(file, '/');
	struct trace_window v = *win;
	int err;

	snprintf(v.file, sizeof(v.file), "%s", slash ? slash + 1 : file);
	err = push(w, &v);
	if (err) {
		snprintf(why, why_len, "out of memory");
		return err;
	}
	w->written++;
	trace_windows__trim(w, 0);
	return write_index(w, why, why_len);
}

unsigned int trace_windows__trim(struct trace_windows *w, __u64 current)
{
	char file[TW_PATH_MAX + 300], why[256];
	unsigned int k = 0;

	w->trim_err = 0; /* said while it lasts: each trim looks again */
	while (w->max_bytes && w->n - k > 1 && w->listed_bytes + current > w->max_bytes) {
		const struct trace_window *v = &w->v[k];

		snprintf(file, sizeof(file), "%s%s", w->dir, v->file);
		/* gone already (a user's rm): the same for the count; a window that stays
		 * (a read-only folder, say) stays listed and counted, and is said */
		if (unlink(file) && errno != ENOENT) {
			w->trim_err = -errno;
			snprintf(w->trim_why, sizeof(w->trim_why),
				 "unable to delete %s to stay under max_mb: %s", file,
				 strerror(errno));
			break;
		}
		k++;
		w->listed_bytes -= v->bytes;
		w->deleted++;
		w->bytes_deleted += v->bytes;
	}
	if (!k)
		return 0;
	w->n -= k;
	memmove(w->v, w->v + k, w->n * sizeof(*w->v));
	/* a failure leaves it stale, said until a write works (the next add writes it again):
	 * it lists windows that are gone until then */
	write_index(w, why, sizeof(why));
	return k;
}

int trace_windows__error(const struct trace_windows *w, char *why, size_t why_len)
{
	if (w->trim_err) {
		snprintf(why, why_len, "%s", w->trim_why);
		return w->trim_err;
	}
	if (w->index_stale) {
		snprintf(why, why_len, "%s", w->index_why);
		return w->index_err;
	}
	return 0;
}

unsigned int trace_windows__partials_removed(const struct trace_windows *w)
{
	return w->partials_removed;
}

unsigned int trace_windows__count(const struct trace_windows *w)
{
	return w->n;
}

__u64 trace_windows__listed_bytes(const struct trace_windows *w)
{
	return w->listed_bytes;
}

void trace_windows__counts(const struct trace_windows *w, __u64 *written, __u64 *deleted,
			   __u64 *bytes_deleted)
{
	*written = w->written;
	*deleted = w->deleted;
	*bytes_deleted = w->bytes_deleted;
}

const char *trace_windows__index(const struct trace_windows *w)
{
	return w->index;
}
