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
#   tests/kafka/broker.sh cluster DIR N [OWNER_PID]
#                                      N KRaft nodes (each broker and controller, node ids
#                                      1..N, an N-voter quorum) in DIR/node-1 ... DIR/node-N,
#                                      formatted and started in parallel; prints the N client
#                                      addresses, one a line, in node order, when all serve.
#                                      Internal topics get replication factor min(3, N);
#                                      DIR/bootstrap holds the addresses comma-separated
#   tests/kafka/broker.sh stop-node DIR ID [SIGNAL]
#                                      stop node ID of the cluster in DIR (SIGNAL: TERM, the
#                                      default, or KILL for a crash)
#   tests/kafka/broker.sh start-node DIR ID
#                                      start node ID again with its data and ports, wait until
#                                      it serves
#   tests/kafka/broker.sh stop-cluster DIR
#
# DIR holds everything of one server: server.properties, data/, server.log, pid, address.
# Nothing of Kafka is committed: the jars come from Maven Central through tests/kafka/pom.xml
# (the release named in tests/kafka/VERSION). Needs Java 17+, Maven and python3 (for picking free ports).
#
# A cluster's ports are picked once (DIR/ports) and kept across stop-node/start-node.
#
# Environment: KWIRE_KAFKA_HEAP (default 768m; 384m for each node of a cluster), KWIRE_KAFKA_START_TIMEOUT (seconds, default
# 90), KWIRE_KAFKA_LIB (default target/kafka/lib of this checkout).
# KWIRE_KAFKA_PROPS: a file of properties appended to server.properties (a later key wins, so
# it can replace the listeners, e.g. with SSL or SASL ones); @PORT@ (the port printed and
# waited for), @PORT2@ (a second free port), @CPORT@ (the controller's) and @DIR@ are replaced
# (per node in a cluster, where @NODE@ is the node id and @DIR@ the node's folder); a single
# server (`start`) also has @PORT3@, a third free port.
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

# N distinct free ports on 127.0.0.1, on one line.
free_ports() {
  python3 -c 'import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

java_args() {
  # Heap bounded: several engineers share a 2-core machine.
  jargs=(java -Xms128m -Xmx"$heap" -XX:+UseG1GC -XX:MaxGCPauseMillis=20
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties"
    -cp "$lib/*")
}

# Writes server.properties and log4j2.properties of one node into $1: node id $2, quorum
# voters $3, ports $4 (clients), $5 (@PORT2@), $6 (controller), replication factor $7 of the
# internal topics and the default one, min.insync.replicas $8, and optionally $9 (@PORT3@).
write_props() {
  local d=$1 id=$2 voters=$3 port=$4 port2=$5 cport=$6 rf=$7 isr=$8 port3=${9:-}
  cat >"$d/server.properties" <<EOF
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$d/data
num.partitions=1
auto.create.topics.enable=true
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.num.partitions=3
offsets.topic.replication.factor=$rf
transaction.state.log.num.partitions=3
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
log.flush.interval.messages=9223372036854775807
EOF
  if [ "$rf" -gt 1 ]; then
    # A node that is gone is fenced after 4 s rather than 9 (failover tests).
    cat >>"$d/server.properties" <<EOF
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
EOF
  fi
  if [ -n "${KWIRE_KAFKA_PROPS:-}" ]; then
    [ -f "$KWIRE_KAFKA_PROPS" ] || die "KWIRE_KAFKA_PROPS names no file: $KWIRE_KAFKA_PROPS"
    sed -e "s|@PORT@|$port|g" -e "s|@PORT2@|$port2|g" -e "s|@PORT3@|$port3|g" -e "s|@CPORT@|$cport|g" \
      -e "s|@DIR@|$d|g" -e "s|@NODE@|$id|g" "$KWIRE_KAFKA_PROPS" >>"$d/server.properties"
  fi
  cat >"$d/log4j2.properties" <<EOF
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
}

# A cluster id not starting with '-', which the storage tool would read as an option.
new_cluster_id() {
  python3 -c 'import base64,uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): break
print(s)'
}

# Formats the storage of the node in $1 for cluster id $2.
format_node() {
  local d=$1 cluster=$2 jargs
  dir=$d java_args
  local -a format_args
  read -r -a format_args <<<"${KWIRE_KAFKA_FORMAT_ARGS:-}"
  if ! "${jargs[@]}" kafka.tools.StorageTool format -t "$cluster" -c "$d/server.properties" \
      "${format_args[@]}" >"$d/format.log" 2>&1; then
    cat "$d/format.log" >&2
    die "formatting storage failed (log: $d/format.log)"
  fi
}

# Starts the server of the node in $1 in the background, its pid in $1/pid. The log of an
# earlier run of the node is kept as server.log.1, .2, ...
launch() {
  local d=$1 jargs n=1
  dir=$d java_args
  if [ -f "$d/server.log" ]; then
    while [ -e "$d/server.log.$n" ]; do n=$((n + 1)); done
    mv "$d/server.log" "$d/server.log.$n"
  fi
  # setsid: the server gets its own process group, so that `stop` ends it and only it.
  setsid "${jargs[@]}" kafka.Kafka "$d/server.properties" >"$d/server.log" 2>&1 </dev/null &
  echo $! >"$d/pid"
}

# Waits until the node in $1 serves clients on port $2; stops it and fails if it does not.
wait_ready() {
  local d=$1 port=$2
  local deadline=$((SECONDS + start_timeout))
  while :; do
    if ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
      tail -40 "$d/server.log" >&2
      die "the server exited during start-up (log: $d/server.log)"
    fi
    if grep -q "Kafka Server started" "$d/server.log" 2>/dev/null \
        && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      break
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -40 "$d/server.log" >&2
      dir=$d stop
      die "the server did not start within ${start_timeout}s (log: $d/server.log)"
    fi
    sleep 0.2
  done
  echo "127.0.0.1:$port" >"$d/address"
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
  local port port2 port3 cport
  read -r port port2 port3 cport <<<"$(free_ports 4)"
  write_props "$dir" 1 "1@127.0.0.1:$cport" "$port" "$port2" "$cport" 1 1 "$port3"
  format_node "$dir" "$(new_cluster_id)"
  launch "$dir"
  wait_ready "$dir" "$port"
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

# The client port of node $2 of the cluster in $1 (DIR/ports: ID PORT PORT2 CPORT a line).
node_port() {
  awk -v id="$2" '$1 == id { print $2 }' "$1/ports"
}

cluster() {
  local n=${nodes:-} id port port2 cport pid
  [ -n "${dir:-}" ] && [[ "$n" =~ ^[1-9]$ ]] || die "usage: broker.sh cluster DIR N [OWNER_PID] (N from 1 to 9)"
  command -v java >/dev/null || die "java is not installed"
  fetch
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  stop_cluster
  rm -rf "$dir"/node-* "$dir/ports" "$dir/bootstrap"
  heap=${KWIRE_KAFKA_HEAP:-384m}
  local -a ports
  read -r -a ports <<<"$(free_ports $((3 * n)))"
  local voters="" rf isr
  for id in $(seq 1 "$n"); do
    echo "$id ${ports[$((3 * id - 3))]} ${ports[$((3 * id - 2))]} ${ports[$((3 * id - 1))]}" >>"$dir/ports"
    voters="$voters${voters:+,}$id@127.0.0.1:${ports[$((3 * id - 1))]}"
  done
  rf=$((n < 3 ? n : 3))
  isr=$((rf < 2 ? 1 : 2))
  local cluster_id
  cluster_id=$(new_cluster_id)
  local -a formatting=()
  while read -r id port port2 cport; do
    mkdir -p "$dir/node-$id"
    write_props "$dir/node-$id" "$id" "$voters" "$port" "$port2" "$cport" "$rf" "$isr"
    format_node "$dir/node-$id" "$cluster_id" &
    formatting+=($!)
  done <"$dir/ports"
  for pid in "${formatting[@]}"; do wait "$pid" || die "formatting a node failed"; done
  if [ -n "$owner" ]; then
    # One watchdog for every node, whatever its pid is by then (nodes are restarted).
    setsid bash -c "while kill -0 $owner 2>/dev/null; do sleep 1; done; \
      for f in '$dir'/node-*/pid; do kill -TERM \$(cat \"\$f\") 2>/dev/null; done; sleep 10; \
      for f in '$dir'/node-*/pid; do kill -KILL \$(cat \"\$f\") 2>/dev/null; done" \
      >/dev/null 2>&1 </dev/null &
  fi
  for id in $(seq 1 "$n"); do launch "$dir/node-$id"; done
  local addrs=""
  for id in $(seq 1 "$n"); do
    wait_ready "$dir/node-$id" "$(node_port "$dir" "$id")"
    addrs="$addrs${addrs:+,}127.0.0.1:$(node_port "$dir" "$id")"
  done
  echo "$addrs" >"$dir/bootstrap"
  say "cluster of $n ready: $addrs (logs $dir/node-*/server.log)"
  tr ',' '\n' <"$dir/bootstrap"
}

stop_node() {
  [ -n "${dir:-}" ] && [ -n "${nodes:-}" ] || die "usage: broker.sh stop-node DIR ID [TERM|KILL]"
  local d=$dir/node-$nodes
  [ -d "$d" ] || die "no node $nodes in $dir"
  case "${owner:-TERM}" in
    KILL)
      if [ -f "$d/pid" ]; then
        kill -KILL "$(cat "$d/pid")" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$(cat "$d/pid")" 2>/dev/null || break; sleep 0.1; done
        rm -f "$d/pid"
      fi
      ;;
    TERM) dir=$d stop ;;
    *) die "stop-node: signal TERM or KILL, not $owner" ;;
  esac
  say "node $nodes stopped (SIG${owner:-TERM})"
}

start_node() {
  [ -n "${dir:-}" ] && [ -n "${nodes:-}" ] || die "usage: broker.sh start-node DIR ID"
  local d=$dir/node-$nodes
  [ -f "$d/server.properties" ] || die "no node $nodes in $dir"
  if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
    cat "$d/address"
    return 0
  fi
  heap=${KWIRE_KAFKA_HEAP:-384m}
  launch "$d"
  wait_ready "$d" "$(node_port "$dir" "$nodes")"
  say "node $nodes ready again at $(cat "$d/address")"
  cat "$d/address"
}

stop_cluster() {
  local d
  for d in "$dir"/node-*; do
    if [ -d "$d" ]; then dir=$d stop & fi
  done
  wait
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
case "$cmd" in
  cluster | stop-node | start-node) nodes=${3:-}; owner=${4:-} ;;
  *) owner=${3:-} ;;
esac
case "$cmd" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  cluster) cluster ;;
  stop-node) stop_node ;;
  start-node) start_node ;;
  stop-cluster) [ -n "$dir" ] || die "usage: broker.sh stop-cluster DIR"; stop_cluster ;;
  *) die "usage: broker.sh fetch | start DIR [OWNER_PID] | stop DIR | cluster DIR N [OWNER_PID] | stop-node DIR ID [TERM|KILL] | start-node DIR ID | stop-cluster DIR" ;;
esac
