#!/usr/bin/env bash
# Three paths to one real Apache Kafka 4.4.0 broker, side by side in one run: direct,
# through haproxy 2.x in TCP mode (the floor: it forwards bytes and decodes nothing), and
# through `kwire proxy` with its text log (one line per request) and with --quiet.
#
#   bash benches/proxy.sh     # SECONDS_PER_RUN=10 ROUNDS=2 PRODUCERS=2 PINGS=20000 IDLE=1000
#
# Each path is measured at two connection counts:
# - few: only the load's own connections (franz-go's 2 producers, 1 consumer and their
#   metadata connections, about 6; the ping phase's one);
# - IDLE (1,000): IDLE more connections opened through the same path first, each making one
#   ApiVersions round trip to the broker and then idling for the rest of that path's
#   phases (most idle; the load runs on top of them, as in `benches/proxy_connections.sh`).
# and in two phases:
# - throughput: PRODUCERS producers (franz-go, tests/interop/go) sending 1 KB records, no
#   compression, as fast as they can, and a consumer fetching them, SECONDS_PER_RUN s;
# - ping: PINGS ApiVersions v3 requests one at a time on one connection (no client
#   library), timed from write to whole response: what a path adds to a round trip;
# - moderate (a few connections only): the throughput phase's load at a fixed rate,
#   MODERATE (0.2) of the records per second the direct path produced in the same round
#   (MODERATE_RATE records/s, 20000 by default, when direct is not run before it), for
#   SECONDS_PER_RUN s: Produce latency when nothing queues, so the report gives each
#   path's added p99 (its p99 minus direct's in the same round).
# A round runs every path in turn (direct, haproxy, kwire, kwire --quiet), each path at
# few connections and then at IDLE; ROUNDS rounds, each reported on its own.
#
# haproxy rewrites nothing, so the broker has a second listener (HAP) whose advertised
# address is haproxy's: clients that bootstrap through haproxy are sent back to haproxy.
# `kwire proxy` rewrites the broker's address itself and uses the broker's first listener.
#
# Proxy CPU is the proxy process's utime + stime from /proc/PID/stat (10 ms ticks) over
# the phase; memory is its VmRSS. haproxy is installed with apt-get if missing (needs
# root); otherwise say HAPROXY=path. KWIRE=path runs a given release build of kwire, and
# PROXY_FILTER=path a given release build of benches/proxy_filter.rs (the paths below).
# PATHS may add "tenant": kwire --quiet with every connection one tenant (--tenant
# default=bench.), so every name is prefixed and unprefixed (docs/proxy.md, "Tenants");
# "filter": a user's proxy on the library with the docs' example filter and no log
# (benches/proxy_filter.rs), every Produce request read by the filter; "library": the same
# program with no filter (what the library itself costs); and "validate":
# kwire --quiet --validate 'bench-*=json' with the producers' values one 1 KB JSON
# document each (KWIRE_BENCH_JSON, tests/interop/go/bench.go), so every record's value is
# checked as JSON on its way (docs/proxy.md, "Record validation"); and "encrypt": kwire
# --quiet --encrypt 'bench*=kek-bench' --kms memory, so every record's value is sealed with
# AES-256-GCM on Produce and opened on Fetch (docs/proxy.md, "Record encryption").
# The profile pass (PROFILE=0 turns it off): after the last round, outside the measured
# rounds (a recorder slows what it records), each proxy (haproxy, or kwire's) is started
# again and, at a few connections, recorded with `perf record` (PROFILE_FREQ, 999 Hz, call
# chains where perf takes them) for PROFILE_SECONDS (6) s of a throughput load and for a
# ping load of PINGS pings; then STRACE_PINGS (2,000) more pings run under `strace -c -f`
# of the proxy, for its system calls per ping. benches/proxy_profile.py sorts each recording's samples into categories (kernel by system
# call, memmove, AES/GHASH, CRC-32C, allocation, the proxy's own code, ...) into
# results.jsonl, keeps `perf report`'s summary in target/bench-proxy/profile/ and deletes
# the recording; the report shows where each proxy's CPU goes and, for each missed target,
# which categories make the difference with haproxy. Skipped, with a message, where perf
# cannot record (strace likewise).
# KWIRE_BASE=path adds a path "base": that other build with --quiet, measured in the same
# rounds as the others (an A/B of two builds against the same haproxy), e.g.
#   KWIRE_BASE=old/kwire PATHS="direct haproxy quiet base" bash benches/proxy.sh
# Not a test: figures depend on the machine and its load, which the output records.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${SECONDS_PER_RUN:-10}
rounds=${ROUNDS:-2}
producers=${PRODUCERS:-2}
pings=${PINGS:-20000}
idle=${IDLE:-1000}
moderate=${MODERATE:-0.2}
moderate_rate=${MODERATE_RATE:-20000}
paths=${PATHS:-direct haproxy kwire quiet}
profile=${PROFILE:-1}
profile_freq=${PROFILE_FREQ:-999}
profile_secs=${PROFILE_SECONDS:-6}
strace_pings=${STRACE_PINGS:-2000}
work=$root/target/bench-proxy
mkdir -p "$work"
say() { echo "bench: $*" >&2; }

# Whether perf records here (and with call chains, which split the kernel's share by system
# call), and whether strace is there.
perf_flags=()
strace_ok=
if [ "$profile" = 1 ]; then
  rm -rf "$work/profile"
  mkdir -p "$work/profile"
  if ! command -v perf >/dev/null; then
    say "perf is missing: the profile phase is skipped (apt-get install linux-perf)"
    profile=0
  elif perf record -q -F 99 -g -o "$work/profile/probe.data" -- true >/dev/null 2>&1; then
    perf_flags=(-g)
  elif perf record -q -F 99 -o "$work/profile/probe.data" -- true >/dev/null 2>&1; then
    say "perf records no call chains here: the kernel's share is not split by system call"
  else
    say "perf cannot record here (kernel.perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo ?), or no perf events in this machine): the profile phase is skipped"
    profile=0
  fi
  rm -f "$work/profile/probe.data"
  if [ "$profile" = 1 ]; then
    if command -v strace >/dev/null; then strace_ok=1; else say "strace is missing: no system calls per ping"; fi
  fi
fi
profile_spent=0 # seconds the profile phase added (the strace'd pings, the summaries)

command -v go >/dev/null || { say "Go is needed for the load generator"; exit 1; }
(cd tests/interop/go && go build -o "$work/load" .)
haproxy=${HAPROXY:-$(command -v haproxy || true)}
if [ -z "$haproxy" ]; then
  say "haproxy is missing: installing it (apt-get install -y haproxy)"
  if [ "$(id -u)" = 0 ]; then apt-get install -y haproxy >&2; else sudo apt-get install -y haproxy >&2; fi ||
    { say "could not install haproxy: install haproxy 2.x, or set HAPROXY=/path/to/haproxy"; exit 1; }
  haproxy=$(command -v haproxy)
fi
if [ -n "${KWIRE:-}" ]; then
  kwire=$KWIRE # a release build of kwire, as it is
else
  if command -v kcargo >/dev/null; then cargo=kcargo; else cargo=cargo; fi
  $cargo build --release --quiet --features cli --bin kwire
  kwire=${CARGO_TARGET_DIR:-$root/target}/release/kwire
fi
case " $paths " in
  *" filter "* | *" library "*)
    if [ -n "${PROXY_FILTER:-}" ]; then
      filter_bin=$PROXY_FILTER # a release build of benches/proxy_filter.rs, as it is
    else
      if command -v kcargo >/dev/null; then cargo=kcargo; else cargo=cargo; fi
      filter_bin=$($cargo bench --quiet --no-run --features proxy --bench proxy_filter --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "proxy_filter":
        print(m["executable"])')
    fi ;;
esac

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
# haproxy's port, advertised by the broker's second listener.
hport=$(free_port)
cat >"$work/broker.props" <<EOF
listeners=PLAINTEXT://127.0.0.1:@PORT@,HAP://127.0.0.1:@PORT2@,CONTROLLER://127.0.0.1:@CPORT@
advertised.listeners=PLAINTEXT://127.0.0.1:@PORT@,HAP://127.0.0.1:$hport
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,HAP:PLAINTEXT
log.segment.bytes=67108864
message.max.bytes=2097152
log.retention.ms=20000
log.retention.check.interval.ms=5000
file.delete.delay.ms=1000
EOF
# Batches of up to 2 MiB: franz-go fills its batches to 1 MB, the broker's default limit, and
# the path `encrypt` adds an envelope of about 100 bytes to each record, so its batches pass
# that limit (MESSAGE_TOO_LARGE for nearly every Produce request otherwise); the other paths'
# batches stay at 1 MB.
# Retention of 20 s (64 MB segments, deleted a second after): a throughput phase writes
# about 2.5 GB, which would otherwise fill the disk (a run kept 30 GB with Kafka's
# defaults, 23 GB with a minute's retention and the default minute of delete delay). Each
# phase has its own topic and ends before its records expire.
broker=$(KWIRE_KAFKA_PROPS=$work/broker.props bash tests/kafka/broker.sh start "$work/broker" $$)
port2=$(sed -n 's/^listeners=.*HAP:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/broker/server.properties" | tail -1)
[ -n "$port2" ] || { say "the broker's second listener is missing"; exit 1; }
cat >"$work/haproxy.cfg" <<EOF
global
    maxconn 9000
defaults
    mode tcp
    timeout connect 10s
    timeout client 1h
    timeout server 1h
frontend kafka
    bind 127.0.0.1:$hport
    default_backend broker
backend broker
    server broker 127.0.0.1:$port2
EOF

proxy_pid=
opener_pid=
perf_pid=
strace_pid=
cleanup() {
  [ -n "$opener_pid" ] && kill "$opener_pid" 2>/dev/null || true
  [ -n "$perf_pid" ] && kill -INT "$perf_pid" 2>/dev/null || true
  [ -n "$strace_pid" ] && kill -INT "$strace_pid" 2>/dev/null || true
  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
  # Recordings are summarised after the last round: none is kept (they are large).
  rm -f "$work"/profile/*.data
  bash tests/kafka/broker.sh stop "$work/broker" || true
  # The broker's logs (gigabytes after a run): the results are kept, the data is not.
  rm -rf "$work/broker"
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

start_path() { # path: sets proxy_pid (empty for direct) and target
  case $1 in
    direct) proxy_pid=; target=$broker; return ;;
    haproxy)
      "$haproxy" -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
      proxy_pid=$!
      target=127.0.0.1:$hport
      for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $hport)).close()" 2>/dev/null && return
        sleep 0.05
      done
      say "haproxy did not start"; cat "$work/haproxy.log" >&2; exit 1 ;;
    kwire | quiet | base | tenant | filter | library | validate | encrypt)
      local flags=() bin=$kwire
      [ "$1" = kwire ] || flags=(--quiet)
      [ "$1" = tenant ] && flags=(--quiet --tenant default=bench.)
      [ "$1" = validate ] && flags=(--quiet --validate 'bench-*=json')
      [ "$1" = encrypt ] && flags=(--quiet --encrypt 'bench*=kek-bench' --kms memory)
      if [ "$1" = base ]; then
        bin=${KWIRE_BASE:?set KWIRE_BASE to run the base path}
      fi
      : >"$work/proxy.log"
      if [ "$1" = filter ]; then
        "$filter_bin" "$broker" >"$work/proxy.log" 2>"$work/proxy.err" &
      elif [ "$1" = library ]; then
        "$filter_bin" "$broker" --no-filter >"$work/proxy.log" 2>"$work/proxy.err" &
      else
        "$bin" proxy --listen 127.0.0.1:0 --upstream "$broker" "${flags[@]}" >"$work/proxy.log" 2>"$work/proxy.err" &
      fi
      proxy_pid=$!
      target=
      for _ in $(seq 200); do
        target=$(sed -n '1s/.*listening on \([^,]*\),.*/\1/p' "$work/proxy.log" 2>/dev/null)
        [ -n "$target" ] && return
        sleep 0.05
      done
      say "the proxy did not start"; exit 1 ;;
  esac
}
stop_path() {
  [ -n "$proxy_pid" ] || return 0
  kill "$proxy_pid" 2>/dev/null || true
  wait "$proxy_pid" 2>/dev/null || true
  proxy_pid=
}
cpu_ticks() { if [ -n "$proxy_pid" ]; then awk '{print $14 + $15}' "/proc/$proxy_pid/stat"; else echo 0; fi; }
rss_kib() { if [ -n "$proxy_pid" ]; then awk '/^VmRSS:/ {print $2}' "/proc/$proxy_pid/status"; else echo 0; fi; }

results=$work/results.jsonl
: >"$results"
n=0
now() { echo "$EPOCHREALTIME"; }
spent_since() { profile_spent=$(awk "BEGIN{print $profile_spent + $(now) - $1}"); }
# Records the proxy process into profile/NAME.data, in the background (perf_pid), until
# SIGINT, or for $2 seconds if given.
perf_start() {
  local dur=()
  [ -n "${2:-}" ] && dur=(-- sleep "$2")
  perf record -q -F "$profile_freq" "${perf_flags[@]}" -p "$proxy_pid" -o "$work/profile/$1.data" "${dur[@]}" \
    >"$work/profile/$1.log" 2>&1 &
  perf_pid=$!
}
perf_stop() {
  [ -n "$perf_pid" ] || return 0
  kill -INT "$perf_pid" 2>/dev/null || true
  wait "$perf_pid" 2>/dev/null || true
  perf_pid=
}
# STRACE_PINGS pings, not measured, with the proxy's system calls counted (strace -c -f).
strace_pings() { # round path
  local out=$work/profile/$2-strace.txt
  strace -c -f -p "$proxy_pid" -o "$out" 2>"$work/profile/$2-strace.log" &
  strace_pid=$!
  # Attached once every thread of the proxy has a tracer.
  local attached=
  for _ in $(seq 200); do
    if ! grep -hs '^TracerPid:' /proc/"$proxy_pid"/task/*/status | awk '{print $2}' | grep -qx 0; then
      attached=1
      break
    fi
    sleep 0.05
  done
  if [ -n "$attached" ]; then
    timeout 120 "$work/load" ping "$target" "$strace_pings" >/dev/null || say "the strace'd pings failed"
  else
    say "strace did not attach to every thread of the proxy: no system calls per ping for $2"
  fi
  kill -INT "$strace_pid" 2>/dev/null || true
  wait "$strace_pid" 2>/dev/null || true
  strace_pid=
  if [ -n "$attached" ]; then
    python3 benches/proxy_profile.py strace "$out" --path "$2" --round "$1" --pings "$strace_pings" \
      --results "$results" && rm -f "$work/profile/$2-strace.log" || say "no system calls per ping for $2"
  fi
}
record() { # round path conns phase cpu_ticks rss_kib json
  echo "{\"round\":$1,\"path\":\"$2\",\"conns\":\"$3\",\"phase\":\"$4\",\"proxy_cpu_s\":$(awk "BEGIN{print $5/100}"),\"rss_kib\":$6,\"load\":$7}" >>"$results"
  say "round $1 $2 $3 $4: cpu $(awk "BEGIN{print $5/100}") s, rss $6 KiB, $7"
}
run_phases() { # round path conns
  local before after out rss
  n=$((n + 1))
  before=$(cpu_ticks)
  local json=
  [ "$2" = validate ] && json=1
  out=$(KWIRE_BENCH_JSON=$json timeout $((secs + 60)) "$work/load" bench "$target" "bench-$$-$n" "$secs" "$producers" 0 &
    sleep $((secs / 2 + 1)); rss_kib >"$work/rss"; wait)
  after=$(cpu_ticks)
  record "$1" "$2" "$3" throughput $((after - before)) "$(cat "$work/rss")" "$out"
  if [ "$2/$3" = direct/few ]; then
    round_rate=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['produce_records_per_s'] * float(sys.argv[2]))" \
      "$out" "$moderate")
  fi
  before=$(cpu_ticks)
  out=$(timeout 120 "$work/load" ping "$target" "$pings")
  after=$(cpu_ticks)
  record "$1" "$2" "$3" ping $((after - before)) "$(rss_kib)" "$out"
  [ "$3" = few ] || return 0
  # The moderate phase: a fixed rate, set by direct's throughput when it ran this round
  # (before the other paths).
  local rate
  rate=$(python3 -c "import sys; print(max(1, round(float(sys.argv[1]) / int(sys.argv[2]))))" "$round_rate" "$producers")
  n=$((n + 1))
  before=$(cpu_ticks)
  out=$(KWIRE_BENCH_JSON=$json timeout $((secs + 60)) "$work/load" bench "$target" "bench-$$-$n" "$secs" "$producers" "$rate")
  after=$(cpu_ticks)
  record "$1" "$2" "$3" moderate $((after - before)) "$(rss_kib)" "$out"
}

# The profile pass of one proxy path, started: a throughput load with PROFILE_SECONDS s of it
# recorded, a recorded ping load, then the strace'd pings. Its rows carry the last round's
# number, whose measured CPU the report divides by category with them.
profile_path() { # path
  local t0 json= load_pid
  t0=$(now)
  [ "$1" = validate ] && json=1
  n=$((n + 1))
  KWIRE_BENCH_JSON=$json timeout $((profile_secs + 60)) "$work/load" bench "$target" "bench-$$-$n" \
    $((profile_secs + 2)) "$producers" 0 >/dev/null &
  load_pid=$!
  sleep 1
  perf_start "$1-throughput" "$profile_secs"
  wait "$perf_pid" || true
  perf_pid=
  wait "$load_pid" || say "the profile pass's throughput load failed for $1"
  perf_start "$1-ping"
  timeout 120 "$work/load" ping "$target" "$pings" >/dev/null || say "the profile pass's pings failed for $1"
  perf_stop
  [ -z "$strace_ok" ] || strace_pings "$rounds" "$1"
  spent_since "$t0"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for round in $(seq "$rounds"); do
  round_rate=$moderate_rate
  for path in $paths; do
    start_path "$path"
    sleep 0.5
    rss0=$(rss_kib)
    run_phases "$round" "$path" few
    coproc IDLE_CONNS { python3 "$work/idle.py" "$target" "$idle"; }
    opener_pid=$IDLE_CONNS_PID
    read -r line <&"${IDLE_CONNS[0]}"
    [ "$line" = ready ] || { say "the idle connections did not open"; exit 1; }
    sleep 1
    rss1=$(rss_kib)
    echo "{\"round\":$round,\"path\":\"$path\",\"phase\":\"memory\",\"rss_before_kib\":$rss0,\"rss_idle_kib\":$rss1,\"idle\":$idle}" >>"$results"
    say "round $round $path: RSS $rss0 KiB before, $rss1 KiB with $idle idle connections"
    run_phases "$round" "$path" "$idle"
    eval "exec ${IDLE_CONNS[1]}>&-"
    wait "$opener_pid" 2>/dev/null || true
    opener_pid=
    stop_path
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
if [ "$profile" = 1 ]; then
  for path in $paths; do
    start_path "$path"
    sleep 0.5
    [ -z "$proxy_pid" ] || profile_path "$path"
    stop_path
  done
  t0=$(now)
  for data in "$work"/profile/*.data; do
    [ -e "$data" ] || continue
    name=$(basename "$data" .data)
    python3 benches/proxy_profile.py perf "$data" --path "${name%-*}" --of "${name##*-}" --round "$rounds" \
      --results "$results" --text "$work/profile/$name.txt" || say "could not summarise $name's profile"
    rm -f "$data"
    [ -s "$work/profile/$name.log" ] || rm -f "$work/profile/$name.log"
  done
  spent_since "$t0"
  say "the profile pass took $(printf %.0f "$profile_spent") s, after the measured rounds; summaries in $work/profile"
fi

# The run's conditions go to stderr; the figures into docs/benchmarks.md ("Proxy"), which
# benches/proxy_report.py writes from the results (and prints here).
say "commit $commit, $("$haproxy" -v | head -1 | cut -d' ' -f1-3); $rounds rounds, $secs s throughput phases, $producers producers, $pings pings; load average before $load_before, after $load_after"
python3 benches/proxy_report.py "$results" --print
python3 benches/proxy_report.py "$results"
