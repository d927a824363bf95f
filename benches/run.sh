#!/usr/bin/env bash
# Runs every benchmark and writes the report: criterion (kwire, kafka-protocol and the copy
# floor, in one run), gungraun instruction counts if gungraun-runner 0.20.0 is installed,
# the zero-allocation test, then benches/report.py, which fills docs/benchmarks.md and
# draws docs/bench-chart.svg.
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

if command -v gungraun-runner >/dev/null 2>&1 && gungraun-runner --version | grep -qx 'gungraun-runner 0.20.0'; then
  GUNGRAUN_SAVE_SUMMARY=json "$CARGO" bench --bench instructions
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
 "load_after": "$load_after", "alloc_test": "$alloc"}
EOF
python3 benches/report.py
