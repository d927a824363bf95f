#!/usr/bin/env bash
# A real Apache Kafka broker for kwire's tests: a single-node KRaft server (broker and
# controller in one JVM) on 127.0.0.1.
#
#   tests/kafka/broker.sh fetch        resolve the Kafka jars from Maven Central into
#                                      target/kafka/lib/ (cached; idempotent)
#   tests/kafka/broker.sh start DIR [OWNER_PID]
#                                      fetch, format storage in DIR, start the server on
#                                      free ports, wait until it serves clients, and
#                                      print its address (127.0.0.1:PORT) on stdout; with
#                                      OWNER_PID, the server is stopped when that process
#                                      ends (tests pass their own pid)
#   tests/kafka/broker.sh stop DIR     stop the server started in DIR (idempotent)
#
# DIR holds everything of one server: server.properties, data/, server.log, pid, address.
# Nothing of Kafka is committed: the jars come from Maven Central through tests/kafka/pom.xml
# (the release named in tests/kafka/VERSION). Needs Java 17+, Maven and python3 (for picking free ports).
#
# Environment: KWIRE_KAFKA_HEAP (default 768m), KWIRE_KAFKA_START_TIMEOUT (seconds, default
# 90), KWIRE_KAFKA_LIB (default target/kafka/lib of this checkout).
# KWIRE_KAFKA_PROPS: a file of properties appended to server.properties (a later key wins, so
# it can replace the listeners, e.g. with SSL or SASL ones); @PORT@ (the port printed and
# waited for), @PORT2@ (a second free port), @CPORT@ (the controller's) and @DIR@ are replaced.
# KWIRE_KAFKA_FORMAT_ARGS: more arguments for `kafka-storage format` (e.g. --add-scram ...),
# split on whitespace.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
pom=$root/tests/kafka/pom.xml
version=$(cat "$root/tests/kafka/VERSION")
lib=${KWIRE_KAFKA_LIB:-$root/target/kafka/lib}
heap=${KWIRE_KAFKA_HEAP:-768m}
start_timeout=${KWIRE_KAFKA_START_TIMEOUT:-90}

say() { echo "kafka broker: $*" >&2; }
die() { say "$*"; exit 1; }

fetch() {
  # The jar set is keyed by the pom's content: editing the pom fetches again.
  local stamp key
  stamp=$lib/.pom-sha256
  key=$(cat "$pom" "$root/tests/kafka/VERSION" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && [ -f "$lib/kafka_2.13-$version.jar" ]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn is not installed (needed to fetch Kafka from Maven Central)"
  say "fetching Apache Kafka $version from Maven Central into $lib"
  rm -rf "$lib.tmp"
  mkdir -p "$(dirname "$lib")"
  if ! timeout 900 mvn -q -B -f "$pom" "-Dkafka.version=$version" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$lib.tmp" >"$(dirname "$lib")/mvn.log" 2>&1; then
    tail -30 "$(dirname "$lib")/mvn.log" >&2
    die "mvn could not resolve $pom (log: $(dirname "$lib")/mvn.log)"
  fi
  rm -rf "$lib"
  mv "$lib.tmp" "$lib"
  echo "$key" >"$stamp"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

java_args() {
  # Heap bounded: several engineers share a 2-core machine.
  jargs=(java -Xms128m -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties"
    -cp "$lib/*")
}

start() {
  [ -n "${dir:-}" ] || die "usage: broker.sh start DIR"
  command -v java >/dev/null || die "java is not installed"
  fetch
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    cat "$dir/address"
    return 0
  fi
  rm -rf "$dir/data" "$dir/pid" "$dir/address" "$dir/server.log"
  local port port2 cport cluster
  port=$(free_port)
  cport=$(free_port)
  while [ "$cport" = "$port" ]; do cport=$(free_port); done
  port2=$(free_port)
  while [ "$port2" = "$port" ] || [ "$port2" = "$cport" ]; do port2=$(free_port); done
  # Not starting with '-', which the storage tool would read as an option.
  cluster=$(python3 -c 'import base64,uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): break
print(s)')
  cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.num.partitions=3
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=9223372036854775807
EOF
  if [ -n "${KWIRE_KAFKA_PROPS:-}" ]; then
    [ -f "$KWIRE_KAFKA_PROPS" ] || die "KWIRE_KAFKA_PROPS names no file: $KWIRE_KAFKA_PROPS"
    sed -e "s|@PORT@|$port|g" -e "s|@PORT2@|$port2|g" -e "s|@CPORT@|$cport|g" -e "s|@DIR@|$dir|g" \
      "$KWIRE_KAFKA_PROPS" >>"$dir/server.properties"
  fi
  cat >"$dir/log4j2.properties" <<EOF
appender.out.type=Console
appender.out.name=out
appender.out.layout.type=PatternLayout
appender.out.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.out.ref=out
logger.kafka.name=kafka
logger.kafka.level=INFO
logger.apache.name=org.apache.kafka
logger.apache.level=INFO
EOF
  local jargs
  java_args
  local -a format_args
  read -r -a format_args <<<"${KWIRE_KAFKA_FORMAT_ARGS:-}"
  if ! "${jargs[@]}" kafka.tools.StorageTool format -t "$cluster" -c "$dir/server.properties" \
      "${format_args[@]}" >"$dir/format.log" 2>&1; then
    cat "$dir/format.log" >&2
    die "formatting storage failed (log: $dir/format.log)"
  fi
  # setsid: the server gets its own process group, so that `stop` ends it and only it.
  setsid "${jargs[@]}" kafka.Kafka "$dir/server.properties" >"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  local deadline=$((SECONDS + start_timeout))
  while :; do
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      tail -40 "$dir/server.log" >&2
      die "the server exited during start-up (log: $dir/server.log)"
    fi
    if grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null \
        && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      break
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -40 "$dir/server.log" >&2
      stop
      die "the server did not start within ${start_timeout}s (log: $dir/server.log)"
    fi
    sleep 0.2
  done
  echo "127.0.0.1:$port" >"$dir/address"
  if [ -n "$owner" ]; then
    # A watchdog in its own session: ends the server when the owner ends, however it ends.
    local server_pid
    server_pid=$(cat "$dir/pid")
    setsid bash -c "while kill -0 $owner 2>/dev/null && kill -0 $server_pid 2>/dev/null; do sleep 1; done; \
      kill -TERM $server_pid 2>/dev/null; sleep 10; kill -KILL $server_pid 2>/dev/null" \
      >/dev/null 2>&1 </dev/null &
  fi
  say "ready at 127.0.0.1:$port (pid $(cat "$dir/pid"), log $dir/server.log)"
  echo "127.0.0.1:$port"
}

stop() {
  [ -n "${dir:-}" ] || die "usage: broker.sh stop DIR"
  [ -f "$dir/pid" ] || return 0
  local pid
  pid=$(cat "$dir/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}

cmd=${1:-}
dir=${2:-}
owner=${3:-}
case "$cmd" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  *) die "usage: broker.sh fetch | start DIR | stop DIR" ;;
esac
