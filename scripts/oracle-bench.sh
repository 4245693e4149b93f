#!/usr/bin/env bash
# Side by side: kubelet's packed take (its own code, timed by the kubelet oracle's -time mode)
# against Huygens' (testbed/oracle_bench.cc, Google Benchmark), on the same inputs, and one
# table with the ratio per row. CPU nanoseconds per call (both sides), excluding I/O and parsing.
# Usage: scripts/oracle-bench.sh   Environment: BUILD_DIR (default build), REPETITIONS
# (Huygens' repetitions, default 3; the fastest counts), ORACLE_TIME (kubelet's time per row,
# default 1s). Needs Go (testbed/oracle/build.sh) and a build with benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
oracle=$(testbed/oracle/build.sh | tail -1)
bench="$build_dir/testbed/testbed_oracle_bench"
[ -x "$bench" ] || ninja -C "$build_dir" testbed/testbed_oracle_bench >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
HUYGENS_ORACLE_BENCH_CASES="$work" "$bench"
"$oracle" -time -time-for "${ORACLE_TIME:-1s}" <"$work/cases.jsonl" >"$work/kubelet.jsonl"
"$bench" --benchmark_repetitions="${REPETITIONS:-3}" --benchmark_format=json \
  --benchmark_out="$work/huygens.json" >/dev/null
python3 - "$work/kubelet.jsonl" "$work/huygens.json" <<'PY'
import json, sys
kubelet = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "ns" not in r:
        sys.exit(f"oracle error on {r['id']}: {r.get('error')}")
    kubelet[r["id"]] = r["ns"]
huygens = {}
for b in json.load(open(sys.argv[2]))["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    ns = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b["time_unit"]]
    name = b["run_name"]
    huygens[name] = min(ns, huygens.get(name, ns))
print("| CPUs | request | uncore option | kubelet v1.35.4 (ns) | Huygens (ns) | ratio |")
print("|---:|---:|---|---:|---:|---:|")
for name, k in kubelet.items():
    _, cpus, n, mode = name.split("/")
    h = huygens[name]
    print(f"| {cpus[:-4]} | {n} | {'on' if mode == 'uncore' else 'off'} | {k:,.0f} | {h:,.0f} | {k / h:,.0f}x |")
PY
