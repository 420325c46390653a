#!/usr/bin/env python3
"""What Prometheus scraped from the metrics sink against the stats sink's stats.json of the
same session (tests/metrics_test.sh).

Usage: metrics_check.py query PROM_PORT OUT.json     every family, through /api/v1/query, and
                                                      the target's health, into OUT.json
       metrics_check.py compare OUT.json STATS.json TOP_KERNELS N_LAUNCHES

compare prints one TAP-style line per family ("ok - ..." / "not ok - ..."). Counts and bytes
must be equal; seconds are exact decimals of whole nanoseconds on the page, so they must be
within 1e-12 relative of stats.json's ns / 1e9 (float64 parsing); a ratio must be within
5e-6 of stats.json's active_pct / 100 (printed there with 3 decimals of a percent).
"""
import json
import sys
import urllib.parse
import urllib.request

FAMILIES = [
    "up", "xpusup_actor_up", "xpusup_actor_restarts_total", "xpusup_actor_events_in_total",
    "xpusup_actor_launches_total", "xpusup_actor_scrapes_total", "xpusup_events_total",
    "xpusup_gpu_kernels_total", "xpusup_gpu_kernel_seconds_total", "xpusup_gpu_memcpy_total",
    "xpusup_gpu_memcpy_bytes_total", "xpusup_gpu_memcpy_seconds_total",
    "xpusup_gpu_memset_total", "xpusup_gpu_memset_bytes_total", "xpusup_cpu_samples_total",
    "xpusup_cpu_sampled_seconds_total", "xpusup_process_info",
    "xpusup_gpu_sm_busy_seconds_total", "xpusup_gpu_sm_active_ratio",
    "xpusup_process_sm_busy_seconds_total", "xpusup_process_sm_active_ratio",
    "xpusup_ring_fill_ratio", "xpusup_ring_produced_records_total",
    "xpusup_ring_consumed_records_total", "xpusup_ring_lost_records_total",
    "xpusup_actor_records_out_total",
]


def get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return json.load(r)


def query(port, out):
    res = {"targets": get(port, "/api/v1/targets")["data"]["activeTargets"], "families": {}}
    for f in FAMILIES:
        q = urllib.parse.urlencode({"query": f})
        j = get(port, "/api/v1/query?" + q)
        res["families"][f] = [(r["metric"], r["value"][1]) for r in j["data"]["result"]]
    json.dump(res, open(out, "w"))


def compare(res_path, stats_path, top_kernels, launches):
    res = json.load(open(res_path))
    j = json.load(open(stats_path))
    fam = res["families"]

    def say(cond, text):
        print(("ok - " if cond else "not ok - ") + text, flush=True)

    def by(f, label):
        return {m.get(label): float(v) for m, v in fam.get(f, [])}

    def secs_eq(got, ns):
        want = ns / 1e9
        return abs(got - want) <= 1e-12 * max(1.0, abs(want))

    t = res["targets"]
    say(len(t) == 1 and t[0]["health"] == "up" and t[0]["lastError"] == "",
        f"Prometheus: the target is up with no scrape error: "
        f"{[(x['health'], x['lastError']) for x in t]}")

    up = by("xpusup_actor_up", "actor")
    say(len(up) == 5 and all(v == 1 for v in up.values()), f"xpusup_actor_up: every actor 1: {up}")
    rs = by("xpusup_actor_restarts_total", "actor")
    say(len(rs) == 5 and all(v == 0 for v in rs.values()), "xpusup_actor_restarts_total: 0 each")
    ev = by("xpusup_actor_events_in_total", "actor")
    say(ev.get("st") == j["events"]["total"] and ev.get("m") == j["events"]["total"],
        f"xpusup_actor_events_in_total of both sinks = stats.json events.total: {ev}")
    say(by("xpusup_actor_launches_total", "actor").get("syn") == launches,
        "xpusup_actor_launches_total of the source: every launch")
    say(by("xpusup_actor_scrapes_total", "actor").get("m", 0) >= 5,
        "xpusup_actor_scrapes_total: the sink counted the scrapes")

    kinds = by("xpusup_events_total", "kind")
    say(kinds == {k: float(v) for k, v in j["events"]["by_kind"].items()},
        f"xpusup_events_total by kind = stats.json events.by_kind")

    rows = {r["name"]: r for r in j["kernels"]["by_name"]}
    cnt = by("xpusup_gpu_kernels_total", "kernel")
    sec = by("xpusup_gpu_kernel_seconds_total", "kernel")
    named = [k for k in cnt if k != "[other kernels]"]
    ok = len(named) == min(top_kernels, len(rows)) and all(
        k in rows and cnt[k] == rows[k]["count"] and secs_eq(sec[k], rows[k]["total_ns"])
        for k in named)
    say(ok, f"xpusup_gpu_kernels_total / _seconds_total: {len(named)} names (top_kernels "
        f"{top_kernels}) each = stats.json's count and total_ns")
    other_n = j["kernels"]["count"] - sum(rows[k]["count"] for k in named)
    other_ns = j["kernels"]["total_ns"] - sum(rows[k]["total_ns"] for k in named)
    say(cnt.get("[other kernels]", 0) == other_n and secs_eq(sec.get("[other kernels]", 0), other_ns)
        and (other_n > 0) == (len(rows) > top_kernels),
        f"kernel=\"[other kernels]\" = the rest of stats.json's kernels ({other_n})")

    mc = {r["kind"]: r for r in j["memcpy"]["by_kind"]}
    c, b, s = (by(f, "kind") for f in ("xpusup_gpu_memcpy_total", "xpusup_gpu_memcpy_bytes_total",
                                        "xpusup_gpu_memcpy_seconds_total"))
    say(mc and set(c) == set(mc) and all(c[k] == mc[k]["count"] and b[k] == mc[k]["bytes"]
                                         and secs_eq(s[k], mc[k]["total_ns"]) for k in mc),
        f"xpusup_gpu_memcpy_{{total,bytes_total,seconds_total}} by kind = stats.json memcpy")
    ms = j["memset"]
    say(by("xpusup_gpu_memset_total", None).get(None) == ms["count"]
        and by("xpusup_gpu_memset_bytes_total", None).get(None) == ms["bytes"],
        "xpusup_gpu_memset_total / _bytes_total = stats.json memset")

    procs = {str(p["pid"]): p for p in j["cpu"]["top_processes"]}
    cs = by("xpusup_cpu_samples_total", "pid")
    cn = by("xpusup_cpu_sampled_seconds_total", "pid")
    say(procs and set(cs) == set(procs) and all(cs[p] == procs[p]["samples"]
                                                and secs_eq(cn[p], procs[p]["sampled_ns"])
                                                for p in procs),
        f"xpusup_cpu_samples_total / _sampled_seconds_total by pid = stats.json cpu")
    info = {m["pid"]: m["comm"] for m, _ in fam["xpusup_process_info"]}
    say(info == {p: procs[p]["comm"] for p in procs}, "xpusup_process_info: each pid's comm")

    sm = j["sm_active"]
    for key, label, fb, fr in (("devices", "device", "xpusup_gpu_sm_busy_seconds_total",
                                "xpusup_gpu_sm_active_ratio"),
                               ("processes", "pid", "xpusup_process_sm_busy_seconds_total",
                                "xpusup_process_sm_active_ratio")):
        want = {str(e[label]): e for e in sm[key]}
        busy, ratio = by(fb, label), by(fr, label)
        say(want and set(busy) == set(want) and set(ratio) == set(want)
            and all(secs_eq(busy[k], want[k]["busy_ns"])
                    and abs(ratio[k] - want[k]["active_pct"] / 100) <= 5e-6 for k in want),
            f"{fb} / {fr} = stats.json sm_active {key}: "
            f"{[(k, busy.get(k), want[k]['busy_ns'], ratio.get(k), want[k]['active_pct']) for k in want]}")

    fill = fam.get("xpusup_ring_fill_ratio", [])
    if fill:
        prod = by("xpusup_ring_produced_records_total", "shard")
        cons = by("xpusup_ring_consumed_records_total", "shard")
        lost = by("xpusup_ring_lost_records_total", "cause")
        out = by("xpusup_actor_records_out_total", "actor").get("syn")
        say(all(0 <= float(v) <= 1 for _, v in fill) and sum(prod.values()) == out
            and cons == prod and set(lost) == {"ring_full", "too_big"}
            and not any(lost.values()),
            f"xpusup_ring_*: fill in [0, 1], produced by shard = consumed, summing to the "
            f"source's records_out ({out}), none lost: {prod}")
    else:
        print("ok - # SKIP xpusup_ring_*: the sink driver does not give the session folder "
              "(fmt_env.session_dir)")


if __name__ == "__main__":
    if sys.argv[1] == "query":
        query(int(sys.argv[2]), sys.argv[3])
    else:
        compare(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
