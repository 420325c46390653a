#!/bin/bash
# pipeline_cpu: where a flat-out pipeline's CPU goes, process by process. One session of
# sinks_bench's shape (the synthetic source flat out, COUNT launches, 4 processes, 2
# correlator shards) with one sink: a counting sink (test), a timeline, record's group, or
# record's group with a pprof and a metrics format more (fleet: issue 20's cost).
# Prints the rate (events the sink received / seconds from the start until it had them all),
# how busy the machine was meanwhile (/proc/stat), and each actor's CPU time (user + system,
# from /proc, its threads included) in all and per event received.
#
# On this project's 2-CPU machines the pipeline is bound by its CPU in all: a sink's ratio to
# the counting sink is about the counting pipeline's CPU an event over its own
# (docs/performance.md); this says which process holds that CPU.
#
# Usage: bench/pipeline_cpu.sh XPUSUP_BINARY [COUNT] [test|timeline|record|fleet]
#        (root, or XDG_RUNTIME_DIR)
set -u
XPUSUP=$(realpath "${1:?usage: pipeline_cpu.sh XPUSUP_BINARY [COUNT] [test|timeline|record|fleet]}")
COUNT=${2:-3000000}
KIND=${3:-timeline}
WORK=$(mktemp -d /tmp/xpusup-pipecpu-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# shellcheck source=bench/sinks_lib.sh
. "$(dirname "$0")/sinks_lib.sh"

case "$KIND" in
test) sinks=('[sink out]' 'kind = test') ;;
timeline) sinks=('[sink trace]' 'kind = timeline' 'path = out/trace.json') ;;
record)
	sinks=('[sink all]' 'kind = group' 'formats = flame, trace, stats'
		'[format flame]' 'kind = folded' 'path = out/flame.folded'
		'[format trace]' 'kind = timeline' 'path = out/trace.json'
		'[format stats]' 'kind = stats' 'path = out/stats.json')
	;;
fleet)
	sinks=('[sink all]' 'kind = group' 'formats = flame, trace, stats, prof, prom'
		'[format flame]' 'kind = folded' 'path = out/flame.folded'
		'[format trace]' 'kind = timeline' 'path = out/trace.json'
		'[format stats]' 'kind = stats' 'path = out/stats.json'
		'[format prof]' 'kind = pprof' 'path = out/profile.pb.gz'
		'[format prom]' 'kind = metrics' "listen = 127.0.0.1:$((20000 + $$ % 20000))")
	;;
*)
	echo "pipeline_cpu.sh: unknown sink '$KIND' (test, timeline, record or fleet)" >&2
	exit 2
	;;
esac
echo "$KIND: $COUNT launches flat out, 2 shards"
# run prints "events seconds sink-cpu", and with SINKS_CPU_REPORT the report on stderr
res=$(SINKS_CPU_REPORT=1 run cpu "${sinks[@]}" 2>&1 >"$WORK/res")
echo "$res"
if [ "$(cut -d' ' -f1 "$WORK/res")" = 0 ]; then
	echo "pipeline_cpu.sh: the session did not start or finish ($WORK/cpu.conf)" >&2
	exit 1
fi
