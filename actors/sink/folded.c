// SPDX-License-Identifier: MIT
/*
 * The folded-stacks format (kind folded): one line per distinct stack,
 *
 *	comm;outermost frame;...;innermost frame WEIGHT
 *
 * as flamegraph.pl, inferno and speedscope read it. CPU samples give their user frames
 * then their kernel frames (suffixed "_[k]", flamegraph.pl's convention). GPU work joined to
 * its launch gives the launch's user stack and a leaf "[gpu] KERNEL NAME" (or "[gpu] memcpy
 * HtoD", "[gpu] memset"), so GPU time sits under the code that launched it, beside the CPU
 * time of the same code. GPU work with no launch stack sits under "[gpu] no launch stack".
 * Weights: ns (default; a sample weighs its period, GPU work its duration) or samples (one
 * per CPU sample and per GPU activity).
 *
 * Stacks are aggregated in memory (a hash table of at most max_stacks entries; beyond that
 * the weight goes to a "[more stacks]" line per process, counted) and written whole, through
 * out.h, every snapshot_s seconds and at stop: the file is always a complete snapshot.
 * Beside it, flame.html: the same data in a self-contained interactive page (hover, click to
 * zoom, search), xpusup's own renderer, no network needed.
 *
 * A frame is its function's name when the event carries one (struct xpu_cevent.frames, from
 * the correlator's symbolizer), its address in hex otherwise. In a name, ';' (the frame
 * separator) and control bytes (a line break would end the line) become '_'; blanks stay, as
 * readers take the weight after the last one. Stacks are told apart by their addresses: a
 * stack takes its names when it is first met, and a frame first met without a name takes one
 * from a later event that has it. Names are kept once each (interned) for the whole run.
 *
 * Python frames (common/pyframe.h: the correlator merges them into the user stack) are
 * written at function level, "[py] QUALNAME (FILE)", the line cut off, "[py] 0x<code
 * object>" when unnamed: a profile by function, as flame graphs of native code are (a native
 * frame is its function's name, not its address). Their addresses carry the line, so the
 * stack key drops it (keeps tag and code object): the lines of one function are one stack,
 * not max_stacks entries per line.
 *
 * User scopes (the annotate API's ranges, NVTX ranges through CUPTI) are frames too, right
 * after the comm, outermost first: "train;[range] epoch;[range] forward;main;...;matmul". The
 * correlator makes the innermost range open on a thread the parent of the samples, launches
 * and nested ranges inside it, and links a launch's GPU work to that range (inside_range);
 * flame_frames.h (shared with the pprof format) remembers the ranges and names the frames. An
 * event whose range is not (or no longer) known keeps its plain stack.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/sink/flame_frames.h"
#include "actors/sink/fmt.h"
#include "actors/sink/out.h"
#include "actors/sink/sink_options.h"
#include "actors/sink/table_hash.h"
#include "common/config.h"
#include "common/hash.h"
#include "common/json_escape.h"
#include "common/mix.h"
#include "common/pyframe.h"
#include "xpusup/event.h"

#define FOLDED_PATH_MAX 4096
/* the [more stacks] line of the processes past the others (no pid is this: PID_MAX_LIMIT is
 * 2^22) */
#define FOLDED_PID_OTHERS UINT32_MAX
/* the longest line: comm, every frame at its longest name, the GPU leaf */
#define LINE_MAX (XPU_WIRE_STACK_MAX * (XPU_WIRE_FRAME_NAME_MAX + 8) + FLAME_SCOPE_MAX + 8192)

enum frame_kind {
	LEAF_NONE = 0, /* a CPU sample: the frames are the whole stack */
	LEAF_GPU = 1, /* GPU work: leaf text after the frames */
	LEAF_MORE = 2, /* the overflow line of a process */
};

struct stack {
	__u64 hash;
	__u32 pid;
	__u16 n_user, n_kernel;
	__u16 leaf_kind;
	__u16 leaf_len;
	__u64 weight;
	__u64 *frames; /* user frames then kernel frames, innermost first, as they came */
	const char **names; /* parallel to frames, interned (folded.names); NULL: none yet */
	__u16 unnamed; /* frames without a name */
	char *leaf; /* "[gpu] name", not NUL-terminated */
	/* the enclosing user scopes, "[range] outer;[range] inner", interned (flame_scopes__of):
	 * equal chains are the same pointer; NULL: none */
	const char *scope;
	bool used;
};

struct folded {
	char path[FOLDED_PATH_MAX];
	char html[FOLDED_PATH_MAX];
	bool samples; /* weight = samples, not ns */
	__u64 snapshot_ns, last_snapshot;
	__u32 max_stacks;
	struct stack *tab; /* 2 * max_stacks slots */
	__u32 mask, n;
	struct flame_comms comms;
	struct line *pre; /* a restarted sink's last complete file, merged into every write */
	__u32 n_pre;
	struct flame_names names; /* the frames' names */
	struct flame_scopes scopes;
	char *line; /* LINE_MAX bytes: the line being built */
	__u64 key_frames[XPU_WIRE_STACK_MAX]; /* the event's frames, Python lines dropped */
	__u64 cpu_samples, gpu_events, overflow, writes, dirty;
};

static const char *const counter_names[] = {
	"stacks", "cpu_samples", "gpu_events", "stacks_overflow", "files_written", "events_in_range"
};

/* Give s's nameless frames the names the event has for them (frames parallel to s->frames). */
static void stack__name(struct folded *f, struct stack *s, const char *const *frames)
{
	size_t nf = (size_t)s->n_user + s->n_kernel, k;

	if (!s->names) {
		s->names = calloc(nf, sizeof(*s->names));
		if (!s->names)
			return;
	}
	for (k = 0; k < nf; k++) {
		if (s->names[k] || !frames[k] || !frames[k][0])
			continue;
		s->names[k] = flame_names__intern(&f->names, frames[k]);
		if (s->names[k]) {
			s->unnamed--;
			f->dirty++; /* the line changes */
		}
	}
}

/* What find() compares, hashed: pid, frames, leaf kind and text, scope. */
static __u64 stack_hash(const struct stack *key)
{
	size_t nf = (size_t)key->n_user + key->n_kernel;
	__u64 h = (__u64)key->pid << 32 | (__u64)key->leaf_kind << 16 | nf;

	h = sink_hash_words(h, key->frames, nf * sizeof(__u64));
	h = sink_hash_words(h, key->leaf, key->leaf_len);
	/* interned: the pointer stands for the text */
	return xpu_mix64(h ^ (__u64)(uintptr_t)key->scope);
}

static struct stack *find(struct folded *f, const struct stack *key)
{
	__u32 i = (__u32)key->hash & f->mask;
	size_t nf = (size_t)key->n_user + key->n_kernel;

	for (;; i = (i + 1) & f->mask) {
		struct stack *s = &f->tab[i];

		if (!s->used)
			return s;
		if (s->hash == key->hash && s->pid == key->pid && s->n_user == key->n_user &&
		    s->n_kernel == key->n_kernel && s->leaf_kind == key->leaf_kind &&
		    s->leaf_len == key->leaf_len && s->scope == key->scope &&
		    /* a CPU sample has no leaf, an overflow line no frames: NULL pointers,
		     * which memcmp must not get even for 0 bytes */
		    (!nf || !memcmp(s->frames, key->frames, nf * sizeof(__u64))) &&
		    (!key->leaf_len || !memcmp(s->leaf, key->leaf, key->leaf_len)))
			return s;
	}
}

/* names: the event's frame names, parallel to key->frames, or NULL. */
static void add(struct folded *f, struct stack *key, const char *const *names, __u64 weight)
{
	size_t nf = (size_t)key->n_user + key->n_kernel;
	struct stack *s;

	key->hash = stack_hash(key);
	s = find(f, key);
	if (!s->used) {
		if (f->n >= f->max_stacks)
			goto overflow;
		*s = *key;
		s->frames = malloc(nf ? nf * sizeof(__u64) : 1);
		s->leaf = malloc(key->leaf_len ? key->leaf_len : 1);
		if (!s->frames || !s->leaf) {
			free(s->frames);
			free(s->leaf);
			/* folded_free frees every slot's pointers: none may dangle */
			s->frames = NULL;
			s->leaf = NULL;
			s->used = false;
			goto overflow;
		}
		if (nf)
			memcpy(s->frames, key->frames, nf * sizeof(__u64));
		if (key->leaf_len)
			memcpy(s->leaf, key->leaf, key->leaf_len);
		s->names = NULL;
		s->unnamed = (__u16)nf;
		s->used = true;
		s->weight = 0;
		f->n++;
	}
	if (names && s->unnamed)
		stack__name(f, s, names);
	s->weight += weight;
	f->dirty++;
	return;
overflow:
	f->overflow++;
	f->dirty++; /* the [more stacks] line changed: the file on disk lacks it */
	*key = (struct stack){ .pid = key->pid, .leaf_kind = LEAF_MORE };
	key->hash = xpu_mix64(key->pid) ^ LEAF_MORE;
	s = find(f, key);
	if (!s->used && f->n >= f->max_stacks + f->max_stacks / 2) {
		/* so many processes past the limit: their weight goes to one line, and the table
		 * (2 * max_stacks slots at least) stays at most three quarters full */
		*key = (struct stack){ .pid = FOLDED_PID_OTHERS, .leaf_kind = LEAF_MORE };
		key->hash = xpu_mix64(FOLDED_PID_OTHERS) ^ LEAF_MORE;
		s = find(f, key);
	}
	if (!s->used) {
		*s = *key;
		s->used = true;
		f->n++;
	}
	s->weight += weight;
}

/* e's n frames as the stack key: Python frames without their line (tag and code object
 * kept), so the lines of one function are one stack; NULL for an event without a stack. */
static __u64 *key_frames(struct folded *f, const struct xpu_cevent *e, size_t n)
{
	size_t k;

	if (!e->stack)
		return NULL;
	for (k = 0; k < n && k < XPU_WIRE_STACK_MAX; k++)
		f->key_frames[k] = xpu_pyframe__is(e->stack[k]) ?
					   XPU_PYFRAME_TAG | xpu_pyframe__code(e->stack[k]) :
					   e->stack[k];
	return f->key_frames;
}

static void folded_batch(void *st, const struct xpu_wire_batch *b, const struct xpu_cevent *ev)
{
	struct folded *f = st;
	char leaf[FLAME_GPU_LEAF_MAX];
	struct stack key;
	__u32 i, len;

	for (i = 0; i < b->n_events; i++) {
		const struct xpu_cevent *e = &ev[i];

		switch (e->kind) {
		case XPU_REC_CPU_SAMPLE:
			flame_comms__learn(&f->comms, e);
			key = (struct stack){
				.pid = e->pid,
				/* no stack (the decoder keeps the counts of one it had no
				 * room for): no frames, as for GPU work */
				.n_kernel = (__u16)(e->stack ? e->n_kernel : 0),
				.n_user = (__u16)(e->stack ? e->n_user : 0),
				.frames = key_frames(f, e, (size_t)e->n_kernel + e->n_user),
				.scope = flame_scopes__of(&f->scopes, b->producer, e)
			};
			f->cpu_samples++;
			add(f, &key, e->stack ? e->frames : NULL, f->samples ? 1 : e->value);
			break;
		case XPU_REC_PROC_EXEC:
			flame_comms__learn(&f->comms, e);
			break;
		case XPU_REC_RANGE:
			if (e->sub_kind == XPU_RANGE_PUSH || e->sub_kind == XPU_RANGE_START)
				flame_scopes__add(&f->scopes, b->producer, e);
			break;
		case XPU_REC_GPU_KERNEL:
		case XPU_REC_GPU_MEMCPY:
		case XPU_REC_GPU_MEMSET:
			len = flame_frame__gpu_leaf(e, leaf);
			key = (struct stack){ .pid = e->pid,
					      .n_user = (__u16)(e->stack ? e->n_user : 0),
					      .frames = key_frames(f, e, e->n_user),
					      .leaf_kind = LEAF_GPU,
					      .leaf_len = (__u16)len,
					      .leaf = leaf,
					      .scope = flame_scopes__of(&f->scopes, b->producer,
									e) };
			f->gpu_events++;
			add(f, &key, e->stack ? e->frames : NULL,
			    f->samples		 ? 1 :
			    e->end_ns > e->ts_ns ? e->end_ns - e->ts_ns :
						   0);
			break;
		default:
			break;
		}
	}
}

static const char *comm_of(struct folded *f, __u32 pid, char *buf, size_t size)
{
	const char *c = pid == FOLDED_PID_OTHERS ? "[other_processes]" :
						   flame_comms__get(&f->comms, pid);

	if (c) {
		/* ';' separates frames and a blank the weight: neither may be in a frame */
		size_t i;

		snprintf(buf, size, "%s", c);
		for (i = 0; buf[i]; i++)
			if (buf[i] == ';' || buf[i] == ' ' || buf[i] < 0x20)
				buf[i] = '_';
		return buf;
	}
	snprintf(buf, size, "pid_%u", pid);
	return buf;
}

struct line {
	char *text; /* without the weight */
	__u64 weight;
};

static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	*len = n < 0 ? size : *len + (size_t)n;
}

/* ";NAME" (suffix after it): ';' separates frames and a line break ends the line, so they,
 * and the other control bytes, become '_'. */
static void put_name(char *buf, size_t size, size_t *len, const char *name, const char *suffix)
{
	const unsigned char *c = (const unsigned char *)name;

	if (*len >= size)
		return;
	for (buf[(*len)++] = ';'; *c && *len < size; c++)
		buf[(*len)++] = *c == ';' || *c < 0x20 || *c == 0x7f ? '_' : (char)*c;
	put(buf, size, len, "%s", suffix);
}

/* Frame k of s: a Python frame's function ("[py] QUALNAME (FILE)", "[py] 0x<code>"), a
 * native one's name when it has one, else its address in hex. */
static void put_frame(char *buf, size_t size, size_t *len, const struct stack *s, int k,
		      const char *suffix)
{
	char py[XPU_PYFRAME_FUNCTION_SIZE(XPU_WIRE_FRAME_NAME_MAX)];

	if (xpu_pyframe__is(s->frames[k])) {
		xpu_pyframe__function(py, sizeof(py), s->frames[k], s->names ? s->names[k] : NULL);
		put_name(buf, size, len, py, suffix);
	} else if (s->names && s->names[k])
		put_name(buf, size, len, s->names[k], suffix);
	else
		put(buf, size, len, ";0x%" PRIx64 "%s", (uint64_t)s->frames[k], suffix);
}

/* One stack's line, root first: comm, range frames outermost first, user frames outermost
 * first, kernel frames, leaf. */
static char *line_text(struct folded *f, const struct stack *s)
{
	char comm[64], *buf = f->line;
	size_t len = 0, i;
	int k;

	put(buf, LINE_MAX, &len, "%s", comm_of(f, s->pid, comm, sizeof(comm)));
	if (s->scope)
		put(buf, LINE_MAX, &len, ";%s", s->scope);
	for (k = (int)s->n_kernel + s->n_user - 1; k >= (int)s->n_kernel; k--)
		put_frame(buf, LINE_MAX, &len, s, k, "");
	for (k = (int)s->n_kernel - 1; k >= 0; k--)
		put_frame(buf, LINE_MAX, &len, s, k, "_[k]");
	if (s->leaf_kind == LEAF_GPU) {
		if (!s->n_user)
			put(buf, LINE_MAX, &len, ";" FLAME_NO_LAUNCH_STACK);
		/* a kernel's name, as it came: ';' and control bytes as in any frame */
		put(buf, LINE_MAX, &len, ";");
		for (i = 0; i < s->leaf_len && len < LINE_MAX; i++) {
			unsigned char c = (unsigned char)s->leaf[i];

			buf[len++] = c == ';' || c < 0x20 || c == 0x7f ? '_' : (char)c;
		}
	} else if (s->leaf_kind == LEAF_MORE) {
		put(buf, LINE_MAX, &len, ";[more stacks]");
	}
	if (len >= LINE_MAX)
		len = LINE_MAX - 1;
	buf[len] = 0;
	/* a line break would end the line, a blank before the weight would confuse readers
	 * that split at the last blank: neither may be in a frame (names can hold anything) */
	for (i = 0; i < len; i++)
		if (buf[i] == '\n' || buf[i] == '\r')
			buf[i] = '_';
	return strdup(buf);
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Every stack as a line, sorted, equal lines merged (processes of one program share their
 * stacks): the file is the same whatever order the events came in. */
static struct line *lines_of(struct folded *f, __u32 *count)
{
	struct line *l = malloc(((size_t)f->n + f->n_pre + 1) * sizeof(*l));
	__u32 i, n = 0, m;

	if (!l)
		return NULL;
	for (i = 0; i < f->n_pre; i++) {
		l[n].text = strdup(f->pre[i].text);
		l[n].weight = f->pre[i].weight;
		if (l[n].text)
			n++;
	}
	for (i = 0; i <= f->mask; i++) {
		if (!f->tab[i].used)
			continue;
		l[n].text = line_text(f, &f->tab[i]);
		l[n].weight = f->tab[i].weight;
		if (l[n].text)
			n++;
	}
	qsort(l, n, sizeof(*l), line_cmp);
	for (i = 0, m = 0; i < n; i++) {
		if (m && !strcmp(l[m - 1].text, l[i].text)) {
			l[m - 1].weight += l[i].weight;
			free(l[i].text);
		} else {
			l[m++] = l[i];
		}
	}
	*count = m;
	return l;
}

static void lines_free(struct line *l, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++)
		free(l[i].text);
	free(l);
}

/* The interactive page: the folded lines as a JSON array, and a small renderer. */
static const char html_head[] =
	"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>xpusup flame graph</title>\n"
	"<style>\n"
	"body{font:12px sans-serif;margin:8px}#bar{margin-bottom:6px}#info{height:18px;"
	"white-space:nowrap;overflow:hidden}\n"
	"#g{position:relative;width:100%}.f{position:absolute;height:17px;box-sizing:border-box;"
	"border:1px solid #fff;overflow:hidden;white-space:nowrap;font-size:11px;"
	"line-height:15px;padding-left:2px;cursor:pointer}\n"
	".f.gpu{background:#6a9bd8}.f.m{outline:2px solid #c0f}\n"
	".lg{display:inline-block;padding:0 4px;margin-left:4px;font-size:11px}\n"
	"</style></head><body>\n"
	"<div id=\"bar\"><b>xpusup flame graph</b> &nbsp; <input id=\"q\" placeholder=\"search "
	"(regexp)\" size=\"30\"> <button id=\"reset\">reset zoom</button> <span "
	"id=\"found\"></span> &nbsp; <span class=\"lg\" style=\"background:hsl(25,80%,62%)\">"
	"native</span><span class=\"lg\" style=\"background:hsl(175,55%,60%)\">Python</span>"
	"<span class=\"lg\" style=\"background:#6a9bd8\">GPU</span><span class=\"lg\" "
	"style=\"background:#9ccc65\">range</span></div>\n"
	"<div id=\"info\">hover a frame; click to zoom</div><div id=\"g\"></div>\n"
	"<script>\nconst UNIT = \"";

static const char html_tail[] =
	";\n"
	"const root = {n: 'all', v: 0, c: new Map()};\n"
	"for (const [s, w] of DATA) {\n"
	"  let node = root; root.v += w;\n"
	"  for (const name of s.split(';')) {\n"
	"    let k = node.c.get(name);\n"
	"    if (!k) { k = {n: name, v: 0, c: new Map(), p: node}; node.c.set(name, k); }\n"
	"    k.v += w; node = k;\n"
	"  }\n"
	"}\n"
	"const g = document.getElementById('g'), info = document.getElementById('info');\n"
	"let zoom = root, re = null;\n"
	"function kind(node) {\n"
	"  const n = node.n;\n"
	"  if (!node.p) return '';\n"
	"  if (node.p === root) return 'process';\n"
	"  if (n.startsWith('[gpu]')) return 'GPU';\n"
	"  if (n.startsWith('[range]') || n.startsWith('[nvtx]')) return 'range';\n"
	"  if (n.startsWith('[py] ')) return 'Python';\n"
	"  if (n.endsWith('_[k]')) return 'kernel';\n"
	"  return 'native';\n"
	"}\n"
	"function color(node) {\n"
	"  const n = node.n, k = kind(node);\n"
	"  if (k === 'GPU') return '#6a9bd8';\n"
	"  if (k === 'range') return '#9ccc65';\n"
	"  let h = 0; for (const ch of n) h = (h * 31 + ch.charCodeAt(0)) >>> 0;\n"
	"  if (k === 'Python')\n"
	"    return 'hsl(' + (160 + h % 35) + ',' + (45 + h % 25) + '%,' + (52 + h % 15) + '%)';\n"
	"  return 'hsl(' + (10 + h % 45) + ',' + (70 + h % 25) + '%,' + (55 + h % 15) + '%)';\n"
	"}\n"
	"function fmt(v) { return UNIT === 'ns' ? (v / 1e6).toFixed(3) + ' ms' : v + ' "
	"samples'; }\n"
	"function draw() {\n"
	"  g.innerHTML = ''; const W = g.clientWidth || 1000; let rows = 0, hits = 0;\n"
	"  const frag = document.createDocumentFragment();\n"
	"  function put(node, x, depth, w) {\n"
	"    if (w < 0.5) return; rows = Math.max(rows, depth + 1);\n"
	"    const d = document.createElement('div'); d.className = 'f';\n"
	"    d.style.left = x + 'px'; d.style.width = w + 'px'; d.style.bottom = (depth * 17) + "
	"'px';\n"
	"    d.style.background = color(node); if (w > 30) d.textContent = node.n;\n"
	"    if (re && re.test(node.n)) { d.classList.add('m'); hits++; }\n"
	"    d.onmouseover = () => { info.textContent = (kind(node) ? kind(node) + ': ' : '') "
	"+ node.n + ' — ' + fmt(node.v) + ' (' + (100 * node.v / root.v).toFixed(2) + '%)'; };\n"
	"    d.onclick = () => { zoom = node; draw(); };\n"
	"    frag.appendChild(d); let cx = x;\n"
	"    for (const k of [...node.c.values()].sort((a, b) => a.n < b.n ? -1 : 1)) {\n"
	"      const kw = w * k.v / node.v; put(k, cx, depth + 1, kw); cx += kw;\n"
	"    }\n"
	"  }\n"
	"  let depth = 0; for (let p = zoom.p; p; p = p.p) depth++;\n"
	"  put(zoom, 0, depth, W); g.appendChild(frag); g.style.height = (rows * 17 + 4) + "
	"'px';\n"
	"  document.getElementById('found').textContent = re ? hits + ' matching frames' : '';\n"
	"}\n"
	"document.getElementById('q').oninput = e => {\n"
	"  try { re = e.target.value ? new RegExp(e.target.value) : null; } catch (x) { re = null; "
	"}\n"
	"  draw();\n"
	"};\n"
	"document.getElementById('reset').onclick = () => { zoom = root; draw(); };\n"
	"window.onresize = draw; draw();\n"
	"</script></body></html>\n";

static void out_write(void *o, const char *p, size_t len)
{
	out__write(o, p, len);
}

/* A folded line as a JavaScript string literal: a JSON string by common/json_escape.h's rule
 * (UTF-8 names stay as they are: the page is UTF-8), with '<' and '>' escaped too, as
 * "</script>" inside a name must not end the page's script. */
static void js_string(struct out *o, const char *s, size_t n)
{
	out__write(o, "\"", 1);
	xpu_json_escape_to(s, n, XPU_JSON_ESCAPE_SCRIPT, out_write, o);
	out__write(o, "\"", 1);
}

static int write_files(struct folded *f, char *why, size_t why_len)
{
	struct out *o = NULL;
	struct line *l;
	__u32 n = 0, i;
	int err;

	l = lines_of(f, &n);
	if (!l) {
		snprintf(why, why_len, "out of memory writing %s", f->path);
		return -ENOMEM;
	}
	err = out__open(&o, f->path, why, why_len);
	if (err)
		goto free_lines;
	for (i = 0; i < n; i++) { /* a line may be longer than out__printf's buffer */
		out__write(o, l[i].text, strlen(l[i].text));
		out__printf(o, " %" PRIu64 "\n", (uint64_t)l[i].weight);
	}
	err = out__commit(o, why, why_len);
	if (err || !f->html[0])
		goto free_lines;
	err = out__open(&o, f->html, why, why_len);
	if (err)
		goto free_lines;
	out__printf(o, "%s%s\";\nconst DATA = [\n", html_head, f->samples ? "samples" : "ns");
	for (i = 0; i < n; i++) {
		out__write(o, i ? ",\n[" : "[", i ? 3 : 1);
		js_string(o, l[i].text, strlen(l[i].text));
		out__printf(o, ",%" PRIu64 "]", (uint64_t)l[i].weight);
	}
	out__printf(o, "\n]%s", html_tail);
	err = out__commit(o, why, why_len);
free_lines:
	lines_free(l, n);
	if (!err) {
		f->writes++;
		f->dirty = 0;
	}
	return err;
}

static int folded_tick(void *st, __u64 now_ns, char *why, size_t why_len)
{
	struct folded *f = st;

	int err;

	if (!f->last_snapshot)
		f->last_snapshot = now_ns;
	if (!f->snapshot_ns)
		return FMT_IDLE;
	if (!f->dirty) /* the file on disk (if any) already holds everything */
		return f->writes ? FMT_COMPLETE : FMT_IDLE;
	if (now_ns - f->last_snapshot < f->snapshot_ns)
		return FMT_IDLE;
	f->last_snapshot = now_ns;
	err = write_files(f, why, why_len);
	return err ? err : FMT_COMPLETE;
}

static int folded_finish(void *st, char *why, size_t why_len)
{
	return write_files(st, why, why_len);
}

static void folded_free(void *st)
{
	struct folded *f = st;
	__u32 i;

	if (f->tab)
		for (i = 0; i <= f->mask; i++) {
			free(f->tab[i].frames);
			free(f->tab[i].names);
			free(f->tab[i].leaf);
		}
	free(f->tab);
	flame_comms__free(&f->comms);
	flame_scopes__free(&f->scopes);
	flame_names__free(&f->names);
	free(f->line);
	if (f->pre)
		lines_free(f->pre, f->n_pre);
	free(f);
}

static unsigned int folded_counters(void *st, const char **names, __u64 *values, unsigned int max)
{
	struct folded *f = st;
	__u64 v[] = { f->n,	   f->cpu_samples, f->gpu_events,
		      f->overflow, f->writes,	   f->scopes.in_range };
	unsigned int i, n = sizeof(v) / sizeof(v[0]);

	for (i = 0; i < n && i < max; i++) {
		names[i] = counter_names[i];
		values[i] = v[i];
	}
	return i;
}

/* A restarted sink starts from its previous run's last complete file, so the final file
 * still holds what was written before the crash (what came after that was lost with the
 * process, and the sink counts it). */
static int preload(struct folded *f)
{
	FILE *in = fopen(f->path, "re");
	char *line = NULL, *sp;
	struct line *grown;
	size_t size = 0;
	__u32 cap = 0;

	if (!in)
		return errno == ENOENT ? 0 : -errno;
	/* getline: lines with names can be long */
	while (getline(&line, &size, in) > 0) {
		line[strcspn(line, "\n")] = 0;
		sp = strrchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		if (f->n_pre == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(f->pre, cap * sizeof(*grown));
			if (!grown)
				break;
			f->pre = grown;
		}
		f->pre[f->n_pre].text = strdup(line);
		f->pre[f->n_pre].weight = strtoull(sp + 1, NULL, 10);
		if (f->pre[f->n_pre].text)
			f->n_pre++;
	}
	free(line);
	fclose(in);
	return 0;
}

static int folded_open(void **out, const struct fmt_env *env, char *why, size_t why_len)
{
	struct folded *f = calloc(1, sizeof(*f));
	struct folded_options o;
	char *dot;
	int err;

	if (!f)
		return -ENOMEM;
	err = env->path(env->ctx, "path", f->path, sizeof(f->path));
	if (err) {
		snprintf(why, why_len, "no output file: set 'path'");
		err = -EINVAL;
		goto fail;
	}
	err = conf_kind__options(&folded_conf_kind, CONF_SINK, env->get, env->ctx, &o, sizeof(o),
				 why, why_len);
	if (err)
		goto fail;
	if (o.html && !strcmp(o.html, "none")) {
		f->html[0] = 0;
	} else if (o.html) {
		err = env->path(env->ctx, "html", f->html, sizeof(f->html));
		if (err) {
			snprintf(why, why_len, "bad 'html': %s", strerror(-err));
			err = -EINVAL;
			goto fail;
		}
	} else {
		/* beside the folded file: flame.folded -> flame.html */
		snprintf(f->html, sizeof(f->html), "%s", f->path);
		dot = strrchr(f->html, '.');
		if (dot && !strchr(dot, '/'))
			*dot = 0;
		if (strlen(f->html) + 5 < sizeof(f->html))
			strcat(f->html, ".html");
	}
	if (f->html[0] && !strcmp(f->html, f->path)) { /* path = out/flame.html, say */
		snprintf(why, why_len,
			 "bad 'html': the same file as 'path' (html = none, or another "
			 "name)");
		err = -EINVAL;
		goto fail;
	}
	f->samples = o.weight == FOLDED_WEIGHT_SAMPLES;
	f->snapshot_ns = o.snapshot_s * 1000000000ull;
	f->max_stacks = (__u32)o.max_stacks;
	for (f->mask = 16; f->mask < 2 * f->max_stacks; f->mask <<= 1)
		;
	f->mask--;
	f->tab = calloc((size_t)f->mask + 1, sizeof(*f->tab));
	f->line = malloc(LINE_MAX);
	if (!f->tab || !f->line || flame_comms__init(&f->comms) || flame_scopes__init(&f->scopes)) {
		err = -ENOMEM;
		snprintf(why, why_len, "out of memory");
		goto fail;
	}
	if (env->resume && preload(f))
		snprintf(why, why_len, "unable to read the last %s back: %s", f->path,
			 strerror(errno));
	*out = f;
	return 0;
fail:
	folded_free(f);
	return err;
}

const struct fmt_ops fmt_folded = {
	.kind = "folded",
	.open = folded_open,
	.batch = folded_batch,
	.tick = folded_tick,
	.finish = folded_finish,
	.free = folded_free,
	.counters = folded_counters,
};
