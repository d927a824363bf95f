#!/usr/bin/env bash
# Build cost, side by side: clean `cargo build --release --lib` and
# `cargo check --lib` times of kwire (every API, and four APIs), kafka-protocol 0.18 (every
# message: features client and broker, no codecs; and again with `messages_enums`, which
# compiles its codecs in the library) and krabka-protocol 0.8 (every API, no record
# codecs), one after another, each in a scratch target folder of its own, dependencies
# included (downloads excluded: everything is fetched first). Not part of CI; the figures
# and what they mean are in docs/benchmarks.md, "Build cost".
#
#   bash benches/build_cost.sh                 # all ten builds, a table on stdout
#   CARGO=kcargo bash benches/build_cost.sh    # through a wrapper (a lock on a shared machine)
#   BUILD_COST_TOOLCHAIN=stable bash benches/build_cost.sh
#   flock /tmp/kcargo.lock bash benches/build_cost.sh   # the whole run under one lock
#
# Every build uses one toolchain, by default the one benches/krabka pins (krabka-protocol
# 0.8 needs rustc >= 1.98.1), so that the compiler is the same for all four crates.
# CARGO_INCREMENTAL=0 for every build (dependencies are never incremental; kwire, a path
# crate, would otherwise be for `check` alone), and no CARGO_PROFILE_* or RUSTFLAGS from
# the environment. The time is cargo's own "Finished" figure, so a wrapper's wait for a lock
# is not counted; the load average at the end of each build is recorded (on a shared machine
# it says how far the figures can be trusted). Results: target/build-cost/results.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
CARGO=${CARGO:-cargo}
toolchain=${BUILD_COST_TOOLCHAIN:-$(sed -n 's/^channel *= *"\(.*\)"/\1/p' benches/krabka/rust-toolchain.toml)}
out=${BUILD_COST_DIR:-$root/target/build-cost}
four_apis="std,api-list-offsets,api-metadata,api-list-groups"

# Nothing from the caller's environment that changes what is compiled.
unset RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR
for v in $(env | sed -n 's/^\(CARGO_PROFILE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export CARGO_INCREMENTAL=0

mkdir -p "$out/crates"

# Binary sizes: the `kwire` command, and a small program on four APIs (a frame
# from stdin parsed and printed, a MetadataResponse encoded), release builds, as built and
# stripped. `bash benches/build_cost.sh sizes` runs this part alone.
sizes() {
  local small="$out/crates/four-apis" dir="$out/target-sizes" features
  features=$(echo "$four_apis" | sed 's/,/", "/g')
  mkdir -p "$small/src"
  cat >"$small/Cargo.toml" <<EOF
[package]
name = "four-apis"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
kwire = { path = "$root", default-features = false, features = ["$features"] }
EOF
  cat >"$small/src/main.rs" <<'EOF'
use std::io::Read;

fn main() {
    let mut frame = Vec::new();
    std::io::stdin().read_to_end(&mut frame).expect("stdin");
    match kwire::dispatch::parse_request(frame.get(4..).unwrap_or_default()) {
        Ok(request) => println!("{:?}", request.body),
        Err(e) => println!("{e}"),
    }
    let answer = kwire::messages::MetadataResponse::default();
    let mut buf = vec![0; kwire::dispatch::response_len(&answer, 12).expect("size")];
    kwire::dispatch::encode_response(&answer, 12, 1, &mut buf).expect("encode");
    println!("{} bytes", buf.len());
}
EOF
  rm -rf "$dir"
  CARGO_TARGET_DIR="$dir" "$CARGO" "+$toolchain" build --release --manifest-path "$root/Cargo.toml" \
    --features cli --bin kwire --color never 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  CARGO_TARGET_DIR="$dir" "$CARGO" "+$toolchain" build --release --manifest-path "$small/Cargo.toml" \
    --color never 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  {
    echo "| binary (release, $(rustc "+$toolchain" -V | cut -d' ' -f1-2)) | size | stripped |"
    echo "|---|---:|---:|"
    for b in kwire four-apis; do
      cp "$dir/release/$b" "$dir/$b.stripped" && strip "$dir/$b.stripped"
      printf '| `%s` | %s bytes | %s bytes |\n' "$b" "$(stat -c %s "$dir/release/$b")" "$(stat -c %s "$dir/$b.stripped")"
    done
  } | tee "$out/sizes.md"
  rm -rf "$dir"
}
# Where the release build's work goes (`cargo llvm-lines`, installed if missing): the LLVM
# IR each generic function hands to LLVM before optimisation, with its copies, for the
# library with default features (every API). `bash benches/build_cost.sh llvm-lines` runs
# this part alone; benches/build_report.py puts the totals and the top entries into
# docs/benchmarks.md ("Where the build goes"). Counts, not times: the machine's load does
# not move them. Symbol names are rustc's v0 names, in which each copy of a generic function
# is named with its type arguments: build_report.py counts the copies together.
llvm_lines() {
  local dir="$out/target-llvm-lines"
  if ! cargo llvm-lines --version >/dev/null 2>&1; then
    "$CARGO" install --locked cargo-llvm-lines --version 0.4.48
  fi
  rm -rf "$dir"
  CARGO_TARGET_DIR="$dir" "$CARGO" "+$toolchain" llvm-lines --release --lib --manifest-path "$root/Cargo.toml" \
    --color never >"$out/llvm-lines.txt" 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  rm -rf "$dir"
  python3 "$root/benches/build_report.py" --llvm-lines "$out/llvm-lines.txt"
}
case "${1:-}" in
  sizes) sizes; exit 0 ;;
  llvm-lines) llvm_lines; exit 0 ;;
esac
# A scratch library crate depending on one peer, outside kwire's workspace.
scratch() { # name, dependency line
  mkdir -p "$out/crates/$1/src"
  cat >"$out/crates/$1/Cargo.toml" <<EOF
[package]
name = "build-cost-$1"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
$2
EOF
  echo "pub use ${3}::*;" >"$out/crates/$1/src/lib.rs"
}
scratch kafka-protocol 'kafka-protocol = { version = "=0.18.0", default-features = false, features = ["client", "broker"] }' kafka_protocol
# kafka-protocol's codecs are generic over its buffer traits, so its library alone compiles
# none of them: they are compiled in the crate that calls them. `messages_enums` (its
# `RequestKind`/`ResponseKind`, whose encode and decode take concrete buffers) compiles every
# message's codec in the library, as kwire's library compiles its own.
scratch kafka-protocol-codecs 'kafka-protocol = { version = "=0.18.0", default-features = false, features = ["client", "broker", "messages_enums"] }' kafka_protocol
scratch krabka-protocol 'krabka-protocol = { version = "=0.8.0", default-features = false }' krabka_protocol

# name | manifest | extra cargo arguments
builds=(
  "kwire, every API|$root/Cargo.toml|"
  "kwire, 4 APIs|$root/Cargo.toml|--no-default-features --features $four_apis"
  "kafka-protocol 0.18 (client, broker)|$out/crates/kafka-protocol/Cargo.toml|"
  "kafka-protocol 0.18 (client, broker, messages_enums)|$out/crates/kafka-protocol-codecs/Cargo.toml|"
  "krabka-protocol 0.8|$out/crates/krabka-protocol/Cargo.toml|"
)

for b in "${builds[@]}"; do
  IFS='|' read -r _ manifest _ <<<"$b"
  (cd "$(dirname "$manifest")" && "$CARGO" "+$toolchain" fetch --manifest-path "$manifest" -q)
done

load() { cut -d' ' -f1-3 /proc/loadavg; }
json="$out/results.json"
echo "[" >"$json"
rows=()
first=1
for b in "${builds[@]}"; do
  IFS='|' read -r name manifest args <<<"$b"
  cells=()
  for cmd in "build --release --lib" "check --lib"; do
    slug=$(echo "$name $cmd" | tr -c 'a-zA-Z0-9\n' '-' | tr -s '-')
    dir="$out/target-$slug"
    rm -rf "$dir"
    # The time is cargo's own ("Finished ... in 1m 47s"), which starts when cargo does: a
    # wrapper's wait for a lock is not counted.
    # shellcheck disable=SC2086 # $cmd and $args are word lists
    # CPU time (user + system, cargo and every rustc it runs, from /usr/bin/time) too: other
    # processes on a shared machine stretch the wall time far more than the CPU time.
    (cd "$(dirname "$manifest")" && CARGO_TARGET_DIR="$dir" /usr/bin/time -f '%U %S' -o "$out/cpu" \
      "$CARGO" "+$toolchain" $cmd --manifest-path "$manifest" $args --color never) 2>"$out/log" ||
      { cat "$out/log" >&2; exit 1; }
    cpu=$(awk '{ print $1 + $2 }' "$out/cpu")
    secs=$(sed -n 's/^ *Finished .* in \(.*\)$/\1/p' "$out/log" | tail -1 |
      awk '{ t = 0; for (i = 1; i <= NF; i++) { v = $i; if (v ~ /m$/) { sub(/m$/, "", v); t += 60 * v }
             else { sub(/s$/, "", v); t += v } } print t }')
    [ -n "$secs" ] || { cat "$out/log" >&2; echo "no Finished line from cargo" >&2; exit 1; }
    after=$(load)
    units=$(find "$dir" -name '*.rlib' | wc -l)
    size=$(du -sm "$dir" | cut -f1)
    printf '%-40s %-22s %7.1f s, CPU %7.1f s  (load average at the end %s; %s rlibs; %s MB)\n' \
      "$name" "$cmd" "$secs" "$cpu" "$after" "$units" "$size" >&2
    cells+=("$(printf '%.1f s' "$secs")" "$(printf '%.1f s' "$cpu")")
    [ $first = 1 ] || echo "," >>"$json"
    first=0
    printf '{"build": "%s", "command": "cargo %s %s", "seconds": %.2f, "cpu_seconds": %.2f, "load_after": "%s", "rlibs": %s}' \
      "$name" "$cmd" "$args" "$secs" "$cpu" "$after" "$units" >>"$json"
    rm -rf "$dir"
  done
  rows+=("| $name | ${cells[0]} | ${cells[1]} | ${cells[2]} | ${cells[3]} |")
done
echo "]" >>"$json"

{
  echo "Clean builds, one after another, $(date -u +%Y-%m-%dT%H:%MZ), $(rustc "+$toolchain" -V),"
  echo "$(nproc) cores, load average after: $(load). Dependencies included, each in its own target folder."
  echo
  echo "| crate | \`cargo build --release --lib\` | CPU | \`cargo check --lib\` | CPU |"
  echo "|---|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
} | tee "$out/results.md"

sizes
llvm_lines
