#!/usr/bin/env bash
# Installs what the proxy interop tests (tests/proxy.rs) need, into target/ of this
# checkout, on top of tests/interop/setup.sh (kafka-python, confluent-kafka, kafkajs):
#   - the compression codecs kafka-python and kafkajs need for snappy, lz4 and zstd;
#   - Apache Kafka $kafka_version's broker jars (tests/kafka/broker.sh fetch);
#   - the Java kafka-clients program (tests/interop/java, Maven) in target/java-client/;
#   - the franz-go program (tests/interop/go) in target/go-client/, when Go is installed.
# Idempotent; writes target/proxy-clients/ready last, which the tests look for.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
kafka_version=$(cat "$root/tests/kafka/VERSION")
dir=$root/target/proxy-clients
say() { echo "proxy setup: $*"; }
mkdir -p "$dir"
rm -f "$dir/ready"

[ -f "$root/target/interop/ready" ] || bash "$root/tests/interop/setup.sh"

venv=$root/target/interop/venv
if ! "$venv/bin/python" -c 'import lz4, snappy, zstandard, prometheus_client' 2>/dev/null; then
  # prometheus_client: its text-format parser reads the proxy's --metrics in the tests.
  say "python codecs (lz4, python-snappy, zstandard) and prometheus_client"
  timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    lz4==4.4.5 python-snappy==0.7.3 zstandard==0.25.0 prometheus_client==0.26.0
fi

node_dir=$root/target/interop/node
if ! NODE_PATH=$node_dir/node_modules node -e 'require("kafkajs-snappy"); require("kafkajs-lz4")' 2>/dev/null; then
  say "kafkajs codecs (kafkajs-snappy, kafkajs-lz4)"
  timeout 600 npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error --save-exact \
    kafkajs-snappy@1.1.0 kafkajs-lz4@1.2.1
fi

# kcat over Debian's librdkafka (2.0.2 on bookworm): a release that turns compression off
# when Produce's advertised minimum version is above 0 (the librdkafka test of tests/proxy.rs).
if ! command -v kcat >/dev/null 2>&1; then
  say "kcat from apt"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq --no-install-recommends kcat >/dev/null
else
  say "kcat ready ($(kcat -V 2>/dev/null | sed -n 1p))"
fi

say "Apache Kafka $kafka_version broker jars"
bash "$root/tests/kafka/broker.sh" fetch

java_dir=$root/target/java-client
if [ ! -f "$java_dir/proxy-java-client-0.jar" ] || [ -n "$(find "$root/tests/interop/java" "$root/tests/kafka/VERSION" -newer "$java_dir/proxy-java-client-0.jar" -type f)" ]; then
  say "Java kafka-clients program"
  timeout 900 mvn -q -B -f "$root/tests/interop/java/pom.xml" "-Dkafka.version=$kafka_version" \
    package dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$java_dir/lib" >"$dir/java-build.log" 2>&1 \
    || { tail -30 "$dir/java-build.log"; exit 1; }
fi

go_bin=$root/target/go-client/go-client
if command -v go >/dev/null; then
  if [ ! -x "$go_bin" ] || [ -n "$(find "$root/tests/interop/go" -newer "$go_bin" -type f)" ]; then
    say "franz-go program"
    (cd "$root/tests/interop/go" && timeout 900 go build -o "$go_bin" .)
  fi
else
  say "Go is not installed: the franz-go test will fail"
fi

{
  cat "$root/target/interop/versions.txt"
  echo "kafka-clients $kafka_version (Java $(java -version 2>&1 | sed -n 1p))"
  command -v go >/dev/null && echo "franz-go $(sed -n 's/^\s*github.com\/twmb\/franz-go \(v[^ ]*\)$/\1/p' "$root/tests/interop/go/go.mod")"
  echo "Apache Kafka $kafka_version broker"
} >"$dir/versions.txt"
cp "$dir/versions.txt" "$dir/ready"
say "ready:"
sed 's/^/  /' "$dir/ready"
