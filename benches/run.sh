#!/usr/bin/env bash
# Runs every benchmark and writes the report: criterion (kwire, kafka-protocol and the copy
# floor, in one run; then the record batches of benches/records.rs; then record encryption,
# benches/encrypt.rs), then krabka-protocol on
# the same frames (benches/krabka/, a crate of its own on the newer toolchain that its
# rust-toolchain.toml pins; skipped with a message if that toolchain is missing and cannot
# be installed), then odradek-protocol and nisshi-sans-io on the same frames and record
# batches (benches/peers/, a crate of its own for nisshi's dependencies, on the same pinned
# toolchain as krabka's), gungraun
# instruction counts if
# gungraun-runner 0.20.0 is installed, the zero-allocation test, then benches/report.py,
# which fills docs/benchmarks.md, draws docs/bench-chart.svg and fills the broker path section
# of docs/records.md.
#
#   bash benches/run.sh                      # everything
#   CARGO=kcargo bash benches/run.sh         # through a wrapper (e.g. a lock on a shared machine)
#   bash benches/run.sh --measurement-time 5 # extra arguments go to criterion
#
# Installing the runner (once, about 4 minutes):
#   cargo install gungraun-runner --version 0.20.0 --locked
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }

load_before=$(load)
started=$(date -u +%Y-%m-%dT%H:%MZ)

# Fresh results, so that no stale benchmark from an earlier or filtered run is reported.
rm -rf target/criterion target/gungraun
"$CARGO" bench --bench codec -- "$@"
# A broker's records path: validate-and-assign and the vectored Fetch encode
# beside kafka-protocol, the copy floor and CRC-32C; its sizes go to target/fetch-path.json.
"$CARGO" bench --bench fetch_path -- "$@"
# Record batches: kwire, kafka-protocol, the decompressors and CRC-32C (records/*).
"$CARGO" bench --bench records -- "$@"
# Record encryption on one core: the filter alone beside AES-256-GCM (encrypt/*).
"$CARGO" bench --features encrypt --bench encrypt -- "$@"
# A tenant's renaming of a 20 × 10 Fetch request (benches/tenant.rs): the splice, the whole
# filter chain and the value tree it replaced.
"$CARGO" bench --features proxy --bench tenant -- "$@"

# krabka-protocol 0.8 needs a newer rustc than kwire's: its bench crate pins one in
# benches/krabka/rust-toolchain.toml, which rustup applies because cargo runs in that
# directory. Its criterion results go to the same target/criterion/<frame>/krabka_*.
krabka_toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' benches/krabka/rust-toolchain.toml)
have_krabka_toolchain() { command -v rustup >/dev/null 2>&1 && rustup run "$krabka_toolchain" rustc -V >/dev/null 2>&1; }
if ! have_krabka_toolchain && command -v rustup >/dev/null 2>&1; then
  echo "installing Rust $krabka_toolchain for benches/krabka (krabka-protocol 0.8 needs it)" >&2
  timeout 600 rustup toolchain install "$krabka_toolchain" --profile minimal >&2 || true
fi
if ! have_krabka_toolchain; then
  krabka="skipped: Rust $krabka_toolchain is not installed"
  echo "Rust $krabka_toolchain not installed: krabka-protocol not measured" >&2
  echo "  (rustup toolchain install $krabka_toolchain --profile minimal)" >&2
elif (export CRITERION_HOME="$PWD/target/criterion" && cd benches/krabka && "$CARGO" bench --locked -- "$@"); then
  krabka="ran with $(rustup run "$krabka_toolchain" rustc -V)"
else
  krabka="failed: see the output of benches/krabka above"
  echo "the krabka-protocol bench failed: krabka-protocol not measured" >&2
fi

# odradek-protocol 0.1 and nisshi-sans-io 0.8 (benches/peers/, with its own Cargo.lock): the same
# frames (target/criterion/<frame>/odradek_*, nisshi_*, kwire_frame_view_walk) and the same
# record batches (target/criterion/records/*/odradek, nisshi). A peer that fails its checks
# on a frame is listed on stderr and not measured there.
# nisshi-sans-io's rama needs rustc >= 1.96: benches/peers/rust-toolchain.toml pins a toolchain
# (krabka's), installed above if it was missing.
peers_toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' benches/peers/rust-toolchain.toml)
if ! rustup run "$peers_toolchain" rustc -V >/dev/null 2>&1; then
  peers="skipped: Rust $peers_toolchain is not installed"
  echo "Rust $peers_toolchain not installed: odradek-protocol and nisshi-sans-io not measured" >&2
# Not --locked: the crate depends on kwire by path, so a new dependency of kwire's must be
# able to enter its Cargo.lock (the peers themselves are pinned with `=` in its manifest).
elif (export CRITERION_HOME="$PWD/target/criterion" && cd benches/peers && "$CARGO" bench -- "$@"); then
  peers="ran with $(rustup run "$peers_toolchain" rustc -V)"
else
  peers="failed: see the output of benches/peers above"
  echo "the odradek-protocol / nisshi-sans-io bench failed: not measured" >&2
fi

if command -v gungraun-runner >/dev/null 2>&1 && gungraun-runner --version | grep -qx 'gungraun-runner 0.20.0'; then
  GUNGRAUN_SAVE_SUMMARY=json "$CARGO" bench --bench instructions
  GUNGRAUN_SAVE_SUMMARY=json "$CARGO" bench --bench fetch_path_instructions
else
  echo "gungraun-runner 0.20.0 not installed: no instruction counts" >&2
  echo "  (cargo install gungraun-runner --version 0.20.0 --locked)" >&2
fi

load_after=$(load)
# The zero-allocation target is a test, not a timing: run it and record the outcome.
if "$CARGO" test --all-features --test alloc --quiet; then alloc=passed; else alloc=failed; fi

mkdir -p target
cat >target/bench-meta.json <<EOF
{"command": "bash benches/run.sh${*:+ $*}", "date": "$started", "load_before": "$load_before",
 "load_after": "$load_after", "alloc_test": "$alloc", "krabka": "$krabka", "peers": "$peers"}
EOF
python3 benches/report.py
# The run's conditions stay out of the docs (they keep no dates or loads): said here.
echo "benches/run.sh: started $started; load average before $load_before, after $load_after (target/bench-meta.json)" >&2
