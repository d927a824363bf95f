#!/usr/bin/env bash
# `kwire proxy` against direct access to a real Apache Kafka 4.4.0 broker, in the same run:
# producers sending 1 KB records and a consumer fetching them (franz-go, from
# tests/interop/go), first as fast as they can (throughput), then at a low rate (latency
# without queueing). Each phase runs directly against the broker and through the proxy,
# alternately, ROUNDS times. Prints a Markdown table; see docs/proxy.md.
#
#   bash benches/proxy.sh     # SECONDS_PER_RUN=10 ROUNDS=2 PRODUCERS=2 RATE=400 PINGS=20000
#
# A third phase, ping, sends ApiVersions requests one at a time on one connection (no
# client library): the round trip with and without the proxy isolates what it adds.
#
# The proxy runs as a release build with its default text log (one line per request) and
# again with --quiet. Its CPU time comes from /proc/PID/stat (10 ms ticks). Not a test:
# figures depend on the machine and its load, which the output records.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${SECONDS_PER_RUN:-10}
rounds=${ROUNDS:-2}
producers=${PRODUCERS:-2}
rate=${RATE:-400}
pings=${PINGS:-20000}
work=$root/target/bench-proxy
mkdir -p "$work"
say() { echo "bench: $*" >&2; }

command -v go >/dev/null || { say "Go is needed for the load generator"; exit 1; }
(cd tests/interop/go && go build -o "$work/load" .)
if [ -n "${KWIRE:-}" ]; then
  kwire=$KWIRE # a release build of kwire, as it is
else
  if command -v kcargo >/dev/null; then cargo=kcargo; else cargo=cargo; fi
  $cargo build --release --quiet --features cli --bin kwire
  kwire=${CARGO_TARGET_DIR:-$root/target}/release/kwire
fi

broker=$(bash tests/kafka/broker.sh start "$work/broker" $$)
proxy_pid=
cleanup() {
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
  bash tests/kafka/broker.sh stop "$work/broker" || true
}
trap cleanup EXIT

start_proxy() { # args: extra proxy flags; sets proxy_pid and target
  : >"$work/proxy.log"
  "$kwire" proxy --listen 127.0.0.1:0 --upstream "$broker" "$@" >"$work/proxy.log" 2>"$work/proxy.err" &
  proxy_pid=$!
  for _ in $(seq 100); do [ -s "$work/proxy.log" ] && break; sleep 0.05; done
  target=$(sed -n '1s/.*listening on \([^,]*\),.*/\1/p' "$work/proxy.log")
  [ -n "$target" ] || { say "the proxy did not start"; exit 1; }
}
stop_proxy() {
  kill "$proxy_pid" 2>/dev/null || true
  wait "$proxy_pid" 2>/dev/null || true
  proxy_pid=
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

results=$work/results.jsonl
: >"$results"
n=0
run_phase() { # name target mode producers rate
  local name=$1 target=$2 mode=$3 p=$4 r=$5 before after
  n=$((n + 1))
  before=0
  [ "$mode" != direct ] && before=$(cpu_ticks "$proxy_pid")
  local out
  out=$(timeout $((secs + 60)) "$work/load" bench "$target" "bench-$$-$n" "$secs" "$p" "$r")
  after=0
  [ "$mode" != direct ] && after=$(cpu_ticks "$proxy_pid")
  local cpu
  cpu=$(awk "BEGIN { printf \"%.2f\", ($after - $before) / 100 }")
  echo "{\"phase\":\"$name\",\"mode\":\"$mode\",\"proxy_cpu_s\":$cpu,\"load\":$out}" >>"$results"
  say "$name $mode: $out"
}

run_ping() { # target mode: ApiVersions round trips, one at a time
  local target=$1 mode=$2 before=0 after=0 out cpu
  [ "$mode" != direct ] && before=$(cpu_ticks "$proxy_pid")
  out=$(timeout 120 "$work/load" ping "$target" "$pings")
  [ "$mode" != direct ] && after=$(cpu_ticks "$proxy_pid")
  cpu=$(awk "BEGIN { printf \"%.2f\", ($after - $before) / 100 }")
  echo "{\"phase\":\"ping\",\"mode\":\"$mode\",\"proxy_cpu_s\":$cpu,\"load\":$out}" >>"$results"
  say "ping $mode: $out"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
  for mode in direct proxy quiet; do
    case $mode in
      direct) target=$broker ;;
      proxy) start_proxy ;;
      quiet) start_proxy --quiet ;;
    esac
    run_phase throughput "$target" "$mode" "$producers" 0
    run_phase latency "$target" "$mode" 1 "$rate"
    run_ping "$target" "$mode"
    [ "$mode" != direct ] && stop_proxy
  done
  say "round $round done"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$results" "$load_before" "$load_after" "$secs" "$rounds" "$producers" "$rate" "$pings" <<'PY'
import json, sys, statistics
path, load_before, load_after, secs, rounds, producers, rate, pings = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
def ping(mode):
    rs = [r for r in rows if r["phase"] == "ping" and r["mode"] == mode]
    med = lambda k: statistics.median(r["load"][k] for r in rs)
    req = sum(r["load"]["requests"] for r in rs)
    cpu = sum(r["proxy_cpu_s"] for r in rs)
    return dict(p50=med("p50_us"), p99=med("p99_us"), p999=med("p999_us"),
                cpu=(cpu / req * 1e6) if mode != "direct" else None)
def agg(phase, mode):
    rs = [r for r in rows if r["phase"] == phase and r["mode"] == mode]
    l = [r["load"] for r in rs]
    mb = statistics.mean(x["produce_mb_per_s"] + x["consume_mb_per_s"] for x in l)
    req = sum(x["requests"] for x in l)
    mbytes = sum((x["produced_records"] + x["consumed_records"]) * 1024 / 1e6 for x in l)
    cpu = sum(r["proxy_cpu_s"] for r in rs)
    med = lambda k: statistics.median(x.get(k, -1) for x in l)
    return dict(mb=mb, rps=statistics.mean(x["requests"] / x["seconds"] for x in l),
                pp50=med("produce_p50_us"), pp99=med("produce_p99_us"),
                fp50=med("fetch_p50_us"), fp99=med("fetch_p99_us"),
                cpu_req=(cpu / req * 1e6) if req and mode != "direct" else None,
                cpu_mb=(cpu / mbytes * 1e3) if mbytes and mode != "direct" else None)
names = {"direct": "direct", "proxy": "through kwire proxy (log on)", "quiet": "through kwire proxy --quiet"}
print(f"{rounds} rounds of {secs} s per phase; throughput: {producers} producers as fast as they can and 1 consumer; "
      f"latency: 1 producer at {rate} records/s and 1 consumer; 1 KB records, no compression; "
      f"load average before {load_before}, after {load_after}\n")
for phase in ["throughput", "latency"]:
    print(f"**{phase}**\n")
    print("| path | MB/s (produce + fetch) | vs direct | requests/s | Produce p50 / p99 µs | Fetch p50 / p99 µs | proxy CPU µs/request | proxy CPU ms/MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    d = agg(phase, "direct")
    for mode in ["direct", "proxy", "quiet"]:
        a = agg(phase, mode)
        f = lambda v: "-" if v is None else f"{v:.1f}"
        print(f"| {names[mode]} | {a['mb']:.1f} | {100 * a['mb'] / d['mb']:.0f}% | {a['rps']:.0f} | "
              f"{a['pp50']:.0f} / {a['pp99']:.0f} | {a['fp50']:.0f} / {a['fp99']:.0f} | {f(a['cpu_req'])} | {f(a['cpu_mb'])} |")
    print()
if any(r["phase"] == "ping" for r in rows):
    print(f"**ping** ({pings} ApiVersions v3 requests one at a time, medians of the rounds)\n")
    print("| path | p50 µs | p99 µs | p99.9 µs | added p50 / p99 µs | proxy CPU µs/request |")
    print("| --- | --- | --- | --- | --- | --- |")
    d = ping("direct")
    for mode in ["direct", "proxy", "quiet"]:
        a = ping(mode)
        cpu = "-" if a["cpu"] is None else f"{a['cpu']:.1f}"
        print(f"| {names[mode]} | {a['p50']:.0f} | {a['p99']:.0f} | {a['p999']:.0f} | "
              f"{a['p50'] - d['p50']:+.0f} / {a['p99'] - d['p99']:+.0f} | {cpu} |")
    print()
PY
