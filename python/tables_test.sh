#!/bin/sh
# SPDX-License-Identifier: MIT
# The tables of python/tables.c against the compiler: for every CPython 3.11, 3.12, 3.13 whose
# headers are installed (Debian's /usr/include/python3.N, pyenv's), compile offsets_probe.c
# with -DPy_BUILD_CORE against them and compare its offsetof() lines with what
# `py_layout_dump --table 3.N` prints. Any difference fails; a version with no headers is
# reported as not checked; no version checked at all fails (the test would prove nothing).
#
# usage: tables_test.sh PY_LAYOUT_DUMP OFFSETS_PROBE_C [CC...]  (CC: the compiler's command,
# "ccache cc" included; cc when absent)
set -u
dump=$1 probe=$2
shift 2
[ $# -gt 0 ] || set -- cc
pyenv_root=${PYENV_ROOT:-/root/.pyenv}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
checked=0 failed=0 n=0

for minor in 11 12 13; do
	found=0
	for inc in /usr/include/python3.$minor "$pyenv_root"/versions/3.$minor.*/include/python3.$minor; do
		[ -f "$inc/internal/pycore_frame.h" ] || continue
		found=1
		n=$((n + 1))
		if ! "$@" -I"$inc" -o "$tmp/probe$n" "$probe" 2>"$tmp/cc$n.log"; then
			echo "not ok $n - 3.$minor: $probe does not compile against $inc"
			cat "$tmp/cc$n.log"
			failed=$((failed + 1))
			continue
		fi
		"$tmp/probe$n" >"$tmp/headers$n"
		"$dump" --table 3.$minor >"$tmp/table$n"
		if diff -u "$tmp/headers$n" "$tmp/table$n" >"$tmp/diff$n"; then
			echo "ok $n - 3.$minor table matches $inc ($(wc -l <"$tmp/table$n") fields)"
			checked=$((checked + 1))
		else
			echo "not ok $n - 3.$minor table differs from $inc (- headers, + table):"
			cat "$tmp/diff$n"
			failed=$((failed + 1))
		fi
	done
	[ $found = 1 ] || echo "# 3.$minor: no internal headers installed, its table is not checked"
done
echo "1..$n"
[ $failed = 0 ] || exit 1
if [ $checked = 0 ]; then
	echo "# no CPython 3.11-3.13 headers found: no table could be checked"
	exit 1
fi
exit 0
