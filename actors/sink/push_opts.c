// SPDX-License-Identifier: MIT
/*
 * The push keys' rules (push_opts__check), apart from the uploader itself (push.c): every
 * program that checks a configuration links them (actors/kinds.c's tables, `xpusup start
 * --check`), and none of those needs libcurl. The URL's syntax is checked here; libcurl's
 * own parse, at pusher__open, is the last word (a start that fails says why).
 */
#include "actors/sink/push.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- options ---- */

static bool label_key_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

bool push__label_value_ok(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)s[i]) || strchr(",{}=\"\\", s[i]))
			return false;
	return true;
}

static bool app_ok(const char *s)
{
	if (!s[0] || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("._-", *s)))
			return false;
	return true;
}

/* What Pyroscope (Cortex's rules) accepts as a tenant id; a header value, so no CR or LF. */
static bool tenant_ok(const char *s)
{
	if (!s[0] || strlen(s) > 150)
		return false;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!-_.*'()", *s)))
			return false;
	return true;
}

/* labels: "k=v,k=v", each key once and none "host". */
static bool labels_ok(const char *labels, char *why, size_t why_len)
{
	const char *s = labels, *keys[64];
	size_t key_len[64], n = 0;

	while (*s) {
		const char *end = strchr(s, ','), *eq;
		size_t len = end ? (size_t)(end - s) : strlen(s);

		eq = memchr(s, '=', len);
		if (!eq || !label_key_ok(s, (size_t)(eq - s)) ||
		    !push__label_value_ok(eq + 1, len - (size_t)(eq - s) - 1)) {
			snprintf(why, why_len,
				 "push_labels: \"%.*s\" is not k=v (k: letters, digits, _; v: "
				 "printable, none of ,{}=\"\\)",
				 (int)len, s);
			return false;
		}
		for (size_t i = 0; i < n; i++)
			if (key_len[i] == (size_t)(eq - s) && !memcmp(keys[i], s, key_len[i])) {
				snprintf(why, why_len, "push_labels: %.*s twice", (int)key_len[i],
					 s);
				return false;
			}
		if (eq - s == 4 && !memcmp(s, "host", 4)) {
			snprintf(why, why_len,
				 "push_labels: host is the sink's host, always a label already");
			return false;
		}
		if (n == 64) {
			snprintf(why, why_len, "push_labels: more than 64 labels");
			return false;
		}
		keys[n] = s;
		key_len[n++] = (size_t)(eq - s);
		if (!end)
			break;
		s = end + 1;
		if (!*s) {
			snprintf(why, why_len, "push_labels: a trailing comma");
			return false;
		}
	}
	return true;
}

/* http:// or https://, an authority (no space or control byte; a port, if any, 1..65535),
 * then an optional path; no query or fragment. */
static bool url_syntax_ok(const char *url)
{
	const char *s, *end, *colon, *p;
	unsigned long port = 0;

	if (!strncmp(url, "http://", 7))
		s = url + 7;
	else if (!strncmp(url, "https://", 8))
		s = url + 8;
	else
		return false;
	if (!*s || strchr("/?#@:", *s))
		return false;
	for (p = s; *p; p++)
		if (!isgraph((unsigned char)*p) || *p == '?' || *p == '#')
			return false;
	end = strchr(s, '/');
	end = end ? end : s + strlen(s);
	colon = memrchr(s, ':', (size_t)(end - s));
	if (colon && !memchr(colon, ']', (size_t)(end - colon))) { /* not inside [v6] */
		if (colon + 1 == end)
			return false;
		for (p = colon + 1; p < end; p++) {
			if (*p < '0' || *p > '9')
				return false;
			port = port * 10 + (unsigned long)(*p - '0');
			if (port > 65535)
				return false;
		}
		if (!port)
			return false;
	}
	return true;
}

const char *push_opts__check(const struct push_opts *o, char *why, size_t why_len)
{
	if (!o->url)
		return NULL;
	if (!url_syntax_ok(o->url)) {
		snprintf(why, why_len,
			 "push_url \"%s\": not http://HOST[:PORT][/PATH] or https://... (without "
			 "a query or fragment: the push writes its own query)",
			 o->url);
		return "push_url";
	}
	if (o->app && !app_ok(o->app)) {
		snprintf(why, why_len, "push_app \"%s\": 1 to 128 letters, digits, '.', '_' or '-'",
			 o->app);
		return "push_app";
	}
	if (o->labels && !labels_ok(o->labels, why, why_len))
		return "push_labels";
	if (o->tenant && !tenant_ok(o->tenant)) {
		snprintf(why, why_len, "push_tenant \"%s\": 1 to 150 letters, digits or !-_.*'()",
			 o->tenant);
		return "push_tenant";
	}
	if (o->backoff_ms && o->backoff_max_s && o->backoff_ms > o->backoff_max_s * 1000) {
		snprintf(why, why_len, "push_backoff_ms %llu is over push_backoff_max_s %llu",
			 o->backoff_ms, o->backoff_max_s);
		return "push_backoff_ms";
	}
	return NULL;
}
