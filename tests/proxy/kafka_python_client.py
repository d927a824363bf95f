"""kafka-python through `kwire proxy` against Apache Kafka: prints one JSON object.

Usage: kafka_python_client.py BOOTSTRAP PREFIX

Creates topic PREFIX-t (3 partitions), describes it and its configs, produces 12 records
with each codec, consumes them all in group PREFIX-g with offsets committed, lists groups
and offsets. The test (tests/proxy.rs) checks the answers; see docs/proxy.md.
"""

import json
import sys
import time
from importlib.metadata import version

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic, OffsetSpec

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 12
PARTITIONS = 3


def main():
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    topic, group = f"{prefix}-t", f"{prefix}-g"
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    out = {"client": f"kafka-python {version('kafka-python')}", "codecs": CODECS, "errors": []}

    admin = KafkaAdminClient(**common)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.wait_for_topics([topic]) if hasattr(admin, "wait_for_topics") else time.sleep(1)
    out["topic_partitions"] = len(admin.describe_topics([topic])[0]["partitions"])
    configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    out["config"] = {"cleanup.policy": configs["topic"][topic]["cleanup.policy"]["value"]}

    produced = {str(p): [] for p in range(PARTITIONS)}
    for codec in CODECS:
        producer = KafkaProducer(
            compression_type=None if codec == "none" else codec, acks="all", linger_ms=5, **common
        )
        futures = []
        for i in range(PER_CODEC):
            value = f"{codec}-{i}"
            p = i % PARTITIONS
            futures.append(producer.send(topic, key=str(i).encode(), value=value.encode(), partition=p))
            produced[str(p)].append(value)
        producer.flush()
        for f in futures:
            f.get(timeout=20)
        producer.close()
    out["produced"] = produced

    consumed = {str(p): [] for p in range(PARTITIONS)}
    consumer = KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **common
    )
    want = PER_CODEC * len(CODECS)
    deadline = time.time() + 40
    seen = set()
    while len(seen) < want and time.time() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            for r in records:
                # [offset, value]: a record delivered again after a rebalance shows as such.
                consumed[str(tp.partition)].append([r.offset, r.value.decode()])
                seen.add((tp.partition, r.offset))
    consumer.commit()
    out["consumed"] = consumed
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    out["committed"] = {str(tp.partition): consumer.committed(tp) for tp in tps}
    consumer.close()

    out["groups"] = sorted(g["group_id"] for g in admin.list_groups())
    latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    out["latest"] = {str(tp.partition): (v if isinstance(v, int) else v.offset) for tp, v in latest.items()}
    admin.close()
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
