"""Parses Prometheus text expositions with the Prometheus Python client's own parser
(prometheus_client.parser), for tests/proxy.rs: each argument is a file holding one
scrape; prints one JSON list per file of [sample name, labels, value]. A scrape the parser
rejects makes this exit non-zero with the parser's error."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    samples = []
    types = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples.append([s.name, s.labels, s.value])
    print(json.dumps({"types": types, "samples": samples}))
