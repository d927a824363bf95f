#!/usr/bin/env bash
# `kwire proxy` (one tokio task per connection) holding many idle
# client connections in front of a real Apache Kafka 4.4.0 broker while 100 connections
# are active: N idle connections (each made one ApiVersions round trip through to the
# broker, then idles), then franz-go (tests/interop/go, `bench`) with PRODUCERS producers
# at RATE records/s each and one consumer for SECONDS_PER_RUN s. Per N,
# the proxy's resident memory, threads and descriptors before, with the idle connections,
# and during the load. Prints a Markdown table; see docs/proxy.md, "Architecture".
#
#   bash benches/proxy_connections.sh   # KWIRE=path/to/kwire COUNTS="1000 5000 9800" SECONDS_PER_RUN=10 PRODUCERS=49 RATE=20
#
# The descriptor limit bounds N: two per connection in the proxy, within the hard limit
# (20,000 here: at most 9,936 connections). Not a test.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
counts=${COUNTS:-1000 5000 9800}
secs=${SECONDS_PER_RUN:-10}
producers=${PRODUCERS:-49}
rate=${RATE:-20}
work=$root/target/bench-proxy-connections
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

broker=$(KWIRE_KAFKA_HEAP=${KWIRE_KAFKA_HEAP:-512m} bash tests/kafka/broker.sh start "$work/broker" $$)
proxy_pid=
opener_pid=
cleanup() {
  [ -n "$opener_pid" ] && kill "$opener_pid" 2>/dev/null || true
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
  bash tests/kafka/broker.sh stop "$work/broker" || true
}
trap cleanup EXIT

# Opens N connections to $1, one ApiVersions v0 round trip each, prints "ready", and holds
# them until its stdin closes.
cat >"$work/idle.py" <<'PY'
import resource, socket, struct, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
host, port = sys.argv[1].rsplit(":", 1)
conns = []
for i in range(int(sys.argv[2])):
    c = socket.create_connection((host, int(port)))
    c.sendall(struct.pack(">ihhih", 10, 18, 0, i, -1))
    head = b""
    while len(head) < 4:
        head += c.recv(4 - len(head))
    size = struct.unpack(">i", head)[0]
    got = 0
    while got < size:
        got += len(c.recv(size - got))
    conns.append(c)
print("ready", flush=True)
sys.stdin.read()
PY

status() { # pid: "RSS_KIB THREADS FDS"
  local rss threads fds
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status")
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$1/status")
  fds=$(ls "/proc/$1/fd" | wc -l)
  echo "$rss $threads $fds"
}

results=$work/results.txt
: >"$results"
n_run=0
for io in tokio; do
  for n in $counts; do
    n_run=$((n_run + 1))
    rm -f "$work/proxy.log"
    "$kwire" proxy --quiet --listen 127.0.0.1:0 --upstream "$broker" >"$work/proxy.log" 2>"$work/proxy.err" &
    proxy_pid=$!
    target=
    for _ in $(seq 200); do
      target=$(sed -n '1s/.*listening on \([^,]*\),.*/\1/p' "$work/proxy.log" 2>/dev/null)
      [ -n "$target" ] && break
      sleep 0.05
    done
    [ -n "$target" ] || { say "the proxy did not start"; exit 1; }
    sleep 0.5
    read -r rss0 th0 fd0 < <(status "$proxy_pid")
    coproc IDLE { python3 "$work/idle.py" "$target" "$n"; }
    opener_pid=$IDLE_PID
    read -r line <&"${IDLE[0]}"
    [ "$line" = ready ] || { say "the idle connections did not open"; exit 1; }
    sleep 2
    read -r rss1 th1 fd1 < <(status "$proxy_pid")
    out=$(timeout $((secs + 60)) "$work/load" bench "$target" "conns-$$-$n_run" "$secs" "$producers" "$rate" &
      sleep $((secs / 2 + 2)); status "$proxy_pid" >"$work/during"; wait)
    read -r rss2 th2 fd2 <"$work/during"
    eval "exec ${IDLE[1]}>&-"
    wait "$opener_pid" 2>/dev/null || true
    opener_pid=
    kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
    proxy_pid=
    echo "$io $n $rss0 $th0 $fd0 $rss1 $th1 $fd1 $rss2 $th2 $fd2 $out" >>"$results"
    say "$io $n: RSS $rss0 -> $rss1 KiB idle -> $rss2 KiB with load; threads $th0 -> $th1 -> $th2; fds $fd0 -> $fd1 -> $fd2; $out"
  done
done

python3 - "$results" "$secs" "$producers" "$rate" <<'PY'
import json, sys
path, secs, producers, rate = sys.argv[1:]
print(f"{producers} producers at {rate} records/s each (1 KB) and 1 consumer, franz-go, {secs} s, while N connections idle\n")
print("| io | idle connections | RSS before | RSS idle (per connection) | RSS under load | threads idle / load | descriptors idle | load MB/s | Produce p50 / p99 µs |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for line in open(path):
    f = line.split(" ", 11)
    io, n = f[0], int(f[1])
    rss0, th0, fd0, rss1, th1, fd1, rss2, th2, fd2 = map(int, f[2:11])
    load = json.loads(f[11])
    per = (rss1 - rss0) * 1024 / n
    print(f"| {io} | {n} | {rss0 / 1024:.0f} MB | {rss1 / 1024:.0f} MB ({per / 1024:.1f} KB) | {rss2 / 1024:.0f} MB | {th1} / {th2} | {fd1} | "
          f"{load['produce_mb_per_s'] + load['consume_mb_per_s']:.1f} | {load.get('produce_p50_us', -1):.0f} / {load.get('produce_p99_us', -1):.0f} |")
PY
