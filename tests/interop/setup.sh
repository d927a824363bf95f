#!/usr/bin/env bash
# Installs what the interop tests (tests/interop.rs, tests/tshark.rs) need, into
# target/interop/ of this checkout: a Python venv with kafka-python and confluent-kafka,
# kafkajs under node_modules, and Debian's tshark and tcpdump (system-wide, through apt-get);
# and, through tests/kms/setup.sh, moto's AWS KMS server into target/kms/ (tests/kms_aws.rs).
#
# Idempotent: a second run checks what is there and installs only what is missing. The
# last thing it does is write target/interop/ready, which the tests look for.
#
# Needs python3 (with venv), npm, and root for apt-get (or tshark already installed).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${KWIRE_INTEROP_DIR:-$root/target/interop}
kafka_python=${KAFKA_PYTHON_VERSION:-3.0.12}
confluent_kafka=${CONFLUENT_KAFKA_VERSION:-2.16.1}
kafkajs=${KAFKAJS_VERSION:-2.2.4}

say() { echo "interop setup: $*"; }
mkdir -p "$dir"
rm -f "$dir/ready"

# Python clients.
venv=$dir/venv
want_py="kafka-python==$kafka_python confluent-kafka==$confluent_kafka"
have_py=$("$venv/bin/python" - <<'PY' 2>/dev/null || true
from importlib.metadata import version
print(f"kafka-python=={version('kafka-python')} confluent-kafka=={version('confluent-kafka')}")
PY
)
if [ "$have_py" != "$want_py" ]; then
  say "python venv with $want_py"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  timeout 600 "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "kafka-python==$kafka_python" "confluent-kafka==$confluent_kafka"
else
  say "python venv ready ($have_py)"
fi

# kafkajs.
node_dir=$dir/node
have_js=$(node -p "require('$node_dir/node_modules/kafkajs/package.json').version" 2>/dev/null || true)
if [ "$have_js" != "$kafkajs" ]; then
  say "kafkajs $kafkajs"
  mkdir -p "$node_dir"
  [ -f "$node_dir/package.json" ] || echo '{"private": true}' >"$node_dir/package.json"
  timeout 600 npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error --save-exact \
    "kafkajs@$kafkajs"
else
  say "kafkajs ready ($have_js)"
fi

# tshark (Debian's; the Wireshark cross-check).
if ! command -v tshark >/dev/null 2>&1; then
  say "tshark from apt"
  export DEBIAN_FRONTEND=noninteractive
  # Do not ask whether non-root users may capture packets; answer no.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq --no-install-recommends tshark >/dev/null
else
  say "tshark ready ($(tshark --version 2>/dev/null | sed -n 1p))"
fi

# tcpdump (Debian's; records the captures of tests/capture_interop.rs).
if ! command -v tcpdump >/dev/null 2>&1; then
  say "tcpdump from apt"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq --no-install-recommends tcpdump >/dev/null
else
  say "tcpdump ready ($(tcpdump --version 2>/dev/null | sed -n 1p))"
fi

# moto's AWS KMS server (its own venv, target/kms/).
bash "$root/tests/kms/setup.sh"

{
  "$venv/bin/python" - <<'PY'
from importlib.metadata import version
print(f"kafka-python {version('kafka-python')}")
print(f"confluent-kafka {version('confluent-kafka')}")
import confluent_kafka
print(f"librdkafka {confluent_kafka.libversion()[0]}")
PY
  echo "kafkajs $(node -p "require('$node_dir/node_modules/kafkajs/package.json').version")"
  echo "node $(node --version)"
  tshark --version 2>/dev/null | sed -n 1p
  tcpdump --version 2>/dev/null | sed -n 1p
} >"$dir/versions.txt"
cp "$dir/versions.txt" "$dir/ready"
say "ready:"
sed 's/^/  /' "$dir/ready"
