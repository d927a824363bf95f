#!/usr/bin/env bash
# Fetches Apache Kafka's kafka-clients jar from Maven Central into target/kafka/
# and extracts Kafka's message schemas (common/message/*.json inside the jar)
# into target/kafka/message/. Idempotent: does nothing when both are present.
# Nothing it fetches is committed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The one place the Kafka release is named; every script, pom and test reads it.
KAFKA_VERSION=$(cat "$root/tests/kafka/VERSION")
out="$root/target/kafka"
jar="$out/kafka-clients-$KAFKA_VERSION.jar"
messages="$out/message"
mkdir -p "$out"

if [ ! -s "$jar" ]; then
    MAVEN_OPTS="${MAVEN_OPTS:-} -Xmx512m" mvn -q -B dependency:copy \
        -Dartifact="org.apache.kafka:kafka-clients:$KAFKA_VERSION" \
        -DoutputDirectory="$out" >&2
fi
test -s "$jar" || { echo "fetch.sh: $jar was not fetched" >&2; exit 1; }

# The version stamp makes a change of KAFKA_VERSION re-extract the schemas.
if [ "$(cat "$messages/.version" 2>/dev/null)" != "$KAFKA_VERSION" ]; then
    rm -rf "$messages" "$messages.tmp"
    mkdir -p "$messages.tmp"
    # unzip if the machine has it, else Python's zipfile.
    if command -v unzip >/dev/null 2>&1; then
        unzip -q -j "$jar" 'common/message/*.json' -d "$messages.tmp"
    else
        python3 - "$jar" "$messages.tmp" <<'PY'
import os, sys, zipfile
jar, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(jar) as z:
    for name in z.namelist():
        if name.startswith("common/message/") and name.endswith(".json"):
            with open(os.path.join(out, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
PY
    fi
    echo "$KAFKA_VERSION" > "$messages.tmp/.version"
    mv "$messages.tmp" "$messages"
fi
n=$(find "$messages" -name '*.json' | wc -l)
test "$n" -gt 0 || { echo "fetch.sh: no schemas in $jar" >&2; exit 1; }
