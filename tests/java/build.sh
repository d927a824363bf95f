#!/usr/bin/env bash
# Builds the Java harness of tests/kafka_codec.rs and tests/kafka_records.rs (tests/java/harness)
# against Apache Kafka's kafka-clients jar, fetched by Maven from Maven Central into the local
# Maven repository.
#
# Output, in target/java/:
#   harness/classes        the compiled harness
#   harness.classpath      the whole classpath to run it: `java -cp "$(cat harness.classpath)"
#                          kwire.harness.Harness`
#
# Idempotent and cached: when the pom and sources are unchanged since the last build (and the jars
# it names are still there), it does nothing. After the first run Maven needs no network.
# Exits non-zero, saying why, when Java or Maven is missing or the build fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
src="$root/tests/java/harness"
out="$root/target/java"

for tool in java javac mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "tests/java/build.sh: '$tool' is not installed; the Kafka codec check needs a JDK (17+) and Maven" >&2
    exit 1
  fi
done

stamp="$( (cat "$src/pom.xml" "$root/tests/kafka/VERSION"; find "$src/src" -type f -name '*.java' | LC_ALL=C sort | xargs cat; javac -version 2>&1) | sha256sum | cut -d' ' -f1)"
if [[ -f "$out/harness.classpath" && -f "$out/stamp" && "$(cat "$out/stamp")" == "$stamp" ]]; then
  missing=0
  IFS=: read -r -a entries < "$out/harness.classpath"
  for entry in "${entries[@]}"; do [[ -e "$entry" ]] || missing=1; done
  if [[ $missing == 0 ]]; then
    exit 0
  fi
fi

mkdir -p "$out"
rm -f "$out/stamp" "$out/harness.classpath"
# -Xmx for Maven's own JVM too: the machine is shared.
# (Debian's Maven prints colour resets even when told not to: they are filtered out.)
MAVEN_OPTS="${MAVEN_OPTS:-} -Xmx512m" mvn -q -B -Dstyle.color=never -f "$src/pom.xml" "-Dkwire.out=$out" \
  "-Dkafka.version=$(cat "$root/tests/kafka/VERSION")" compile 2>&1 \
  | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$/d'
echo "$out/harness/classes:$(cat "$out/dependencies.classpath")" > "$out/harness.classpath"
echo "$stamp" > "$out/stamp"
echo "tests/java/build.sh: built the Kafka codec harness into target/java"
