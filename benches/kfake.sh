#!/usr/bin/env bash
# `kwire serve` (kwire::broker) beside franz-go's kfake, the in-memory broker Go tests use:
# the same franz-go load against each, in one run, each broker a process of its own.
#
#   bash benches/kfake.sh     # ROUNDS=5 RECORDS=500000 SMALL_RECORDS=2000000 PARTITIONS=6
#
# The load (benches/kfake/load, franz-go 1.22.3, a process of its own) creates a topic of
# PARTITIONS partitions, produces the records as fast as the client can (acks=all,
# idempotent, no compression, batches up to BATCH_BYTES, franz-go's 10 ms linger), then
# consumes them all in a new consumer group from the start, and checks every record (count,
# each value byte for byte, no duplicate, order within each partition): a broker that
# loses or damages records fails the run rather than win it. Two shapes:
#   - large: RECORDS records of VALUE_BYTES (1 KiB) values, batches up to BATCH_BYTES (64 KiB);
#   - small: SMALL_RECORDS records of SMALL_BYTES (100 B) values, batches up to
#     SMALL_BATCH_BYTES (16 KiB, the Java client's default batch.size): per-record and
#     per-request costs rather than bytes.
# Each round starts each broker afresh and runs the shape's load once against it; the order
# of the brokers alternates from round to round. The broker's CPU (utime + stime of its
# /proc/PID/stat, 10 ms ticks) is read by the load before and after each phase, its peak RSS
# is its VmHWM at the end (it holds every record: both keep their logs in memory).
#
# kwire: a release build of `kwire serve` (KWIRE=path to use a given one), no -v. kfake:
# github.com/twmb/franz-go/pkg/kfake at the version benches/kfake/go.mod pins, one node, no
# logging (benches/kfake/broker), Go's defaults (GOMAXPROCS = the cores, GOGC=100).
# Everything downloaded goes to target/kfake-bench (GOMODCACHE). PERF=1 adds, after the
# rounds, one run of each shape per broker under `perf record -g` and writes the top of each
# report to target/kfake-bench/perf-SHAPE-BROKER.txt.
# Not a test: figures depend on the machine and its load, which the output records.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-5}
records=${RECORDS:-500000}
value_bytes=${VALUE_BYTES:-1024}
batch_bytes=${BATCH_BYTES:-65536}
small_records=${SMALL_RECORDS:-2000000}
small_bytes=${SMALL_BYTES:-100}
small_batch_bytes=${SMALL_BATCH_BYTES:-16384}
partitions=${PARTITIONS:-6}
shapes=${SHAPES:-large small}
work=$root/target/kfake-bench
mkdir -p "$work"
say() { echo "bench: $*" >&2; }

command -v go >/dev/null || { say "Go is needed (kfake and the load are Go programs)"; exit 1; }
export GOMODCACHE=$work/gomod GOFLAGS="-modcacherw -mod=readonly -buildvcs=false"
(cd benches/kfake && go build -o "$work/kfake-broker" ./broker && go build -o "$work/kfake-load" ./load)
if [ -n "${KWIRE:-}" ]; then
  kwire=$KWIRE
else
  if command -v kcargo >/dev/null; then cargo=kcargo; else cargo=cargo; fi
  $cargo build --release --quiet --features cli --bin kwire
  kwire=${CARGO_TARGET_DIR:-$root/target}/release/kwire
fi

broker_pid=
perf_pid=
cleanup() {
  [ -n "$perf_pid" ] && kill -INT "$perf_pid" 2>/dev/null || true
  [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null || true
}
trap cleanup EXIT

start_broker() { # kwire|kfake: sets broker_pid and addr
  : >"$work/broker.out"
  case $1 in
    kwire) "$kwire" serve --listen 127.0.0.1:0 >"$work/broker.out" 2>"$work/broker.err" & ;;
    kfake) "$work/kfake-broker" >"$work/broker.out" 2>"$work/broker.err" & ;;
  esac
  broker_pid=$!
  addr=
  for _ in $(seq 200); do
    addr=$(sed -n '1s/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' "$work/broker.out")
    [ -n "$addr" ] && return
    sleep 0.05
  done
  say "$1 did not start"; cat "$work/broker.err" >&2; exit 1
}
stop_broker() {
  kill "$broker_pid" 2>/dev/null || true
  wait "$broker_pid" 2>/dev/null || true
  broker_pid=
}
shape_args() { # shape: RECORDS VALUE_BYTES PARTITIONS BATCH_BYTES
  case $1 in
    large) echo "$records $value_bytes $partitions $batch_bytes" ;;
    small) echo "$small_records $small_bytes $partitions $small_batch_bytes" ;;
    *) say "unknown shape $1"; exit 1 ;;
  esac
}
n=0
run_one() { # shape broker: writes the load's JSON line to $work/run.json
  n=$((n + 1))
  start_broker "$2"
  sleep 0.3
  # shellcheck disable=SC2046
  timeout 600 "$work/kfake-load" "$addr" "$broker_pid" "bench-$n" $(shape_args "$1") >"$work/run.json" ||
    { say "the load failed against $2 (shape $1)"; exit 1; }
  stop_broker
}

results=$work/results.jsonl
: >"$results"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for shape in $shapes; do
  for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order="kwire kfake"; else order="kfake kwire"; fi
    for broker in $order; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      run_one "$shape" "$broker"
      out=$(cat "$work/run.json")
      echo "{\"shape\":\"$shape\",\"round\":$round,\"broker\":\"$broker\",\"load1\":$load,\"r\":$out}" >>"$results"
      say "$shape round $round $broker (load $load): $out"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

if [ "${PERF:-0}" = 1 ]; then
  command -v perf >/dev/null || { say "PERF=1 needs perf"; exit 1; }
  for shape in $shapes; do
    for broker in kwire kfake; do
      n=$((n + 1))
      start_broker "$broker"
      sleep 0.3
      perf record -g -F 999 -o "$work/perf-$shape-$broker.data" -p "$broker_pid" 2>"$work/perf.err" &
      perf_pid=$!
      sleep 0.5
      # shellcheck disable=SC2046
      "$work/kfake-load" "$addr" "$broker_pid" "bench-$n" $(shape_args "$shape") >/dev/null
      kill -INT "$perf_pid"; wait "$perf_pid" || true
      perf_pid=
      stop_broker
      perf report -i "$work/perf-$shape-$broker.data" --no-children --percent-limit 1 --stdio \
        -g none 2>/dev/null | grep -v '^$' | head -60 >"$work/perf-$shape-$broker.txt"
      say "profile: $work/perf-$shape-$broker.txt"
    done
  done
fi

python3 - "$results" "$load_before" "$load_after" "$commit" "$rounds" "$(nproc)" \
  "$(sed -n 's/^\s*github.com\/twmb\/franz-go\/pkg\/kfake \(v[^ ]*\)$/\1/p' benches/kfake/go.mod)" <<'PY'
import datetime, json, statistics, sys
path, load_before, load_after, commit, rounds, cores, kfake_version = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
def fig(vals, fmt):
    return f"{fmt.format(statistics.median(vals))} ({fmt.format(min(vals))}–{fmt.format(max(vals))})"
print(f"{datetime.date.today()}, commit {commit}, kfake {kfake_version}, franz-go 1.22.3 load; "
      f"{rounds} rounds per shape, brokers alternating; {cores} cores; "
      f"load average before {load_before}, after {load_after}; "
      f"1-minute load at each run's start {min(r['load1'] for r in rows):.2f}–{max(r['load1'] for r in rows):.2f}\n")
print("Median (min–max) over the rounds. CPU is the broker process's user+system time per MB of record "
      "values (ms/MB, MB = 10^6 bytes); RSS its peak (VmHWM) with every record held.\n")
print("| shape | broker | produce records/s | consume records/s | broker CPU ms/MB produce | broker CPU ms/MB consume "
      "| peak RSS MiB | load CPU s (produce + consume) | first record after s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for shape in dict.fromkeys(r["shape"] for r in rows):
    for broker in ["kwire", "kfake"]:
        rs = [r["r"] for r in rows if r["shape"] == shape and r["broker"] == broker]
        if not rs:
            continue
        x = rs[0]
        mb = x["records"] * x["value_bytes"] / 1e6
        label = f"{shape}: {x['records']:,} × {x['value_bytes']} B, {x['partitions']} partitions, batches ≤ {x['batch_bytes'] // 1024} KiB"
        print(f"| {label} | {broker} "
              f"| {fig([r['records'] / r['produce_s'] for r in rs], '{:,.0f}')} "
              f"| {fig([r['records'] / r['consume_s'] for r in rs], '{:,.0f}')} "
              f"| {fig([r['broker_cpu_produce_s'] * 1e3 / mb for r in rs], '{:.2f}')} "
              f"| {fig([r['broker_cpu_consume_s'] * 1e3 / mb for r in rs], '{:.2f}')} "
              f"| {fig([r['hwm_kib'] / 1024 for r in rs], '{:.0f}')} "
              f"| {fig([r['load_cpu_produce_s'] + r['load_cpu_consume_s'] for r in rs], '{:.2f}')} "
              f"| {fig([r['first_record_s'] for r in rs], '{:.3f}')} |")
print()
print("Every run's records were all consumed and checked (count, values, order per partition).")
PY
