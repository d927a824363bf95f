"""Copies the frames `kwire proxy --record` saved during the proxy interop tests
(target/proxy-vectors/CLIENT/{requests,responses}) into tests/vectors/kafka44/, renamed
CLIENT_API_vVERSION_N.hex (N counts per client, API and version), keeping request/response
pairs whose frames are both under 8 KB. Run after `cargo test --all-features --test proxy`;
see tests/vectors/kafka44/README.md.
"""

import collections
import pathlib
import re
import shutil

root = pathlib.Path(__file__).resolve().parents[2]
src = root / "target/proxy-vectors"
dst = root / "tests/vectors/kafka44"
clients = ["kafka-python", "confluent-kafka", "kafkajs", "java", "franz-go"]
limit = 3
for sub in ["requests", "responses"]:
    shutil.rmtree(dst / sub, ignore_errors=True)
    (dst / sub).mkdir(parents=True)
counts = collections.Counter()
for client in clients:
    for req in sorted((src / client / "requests").glob("*.hex")):
        resp = src / client / "responses" / req.name
        if not resp.exists() or req.stat().st_size > 16_000 or resp.stat().st_size > 16_000:
            continue
        m = re.match(r".*_([a-z0-9]+)_v(\d+)_\d+$", req.stem)
        if not m:
            continue
        key = (client, m.group(1), m.group(2))
        if counts[key] >= limit:
            continue
        counts[key] += 1
        name = f"{client}_{m.group(1)}_v{m.group(2)}_{counts[key]}.hex"
        shutil.copy(req, dst / "requests" / name)
        shutil.copy(resp, dst / "responses" / name)
print(f"{sum(counts.values())} pairs in {dst}")
