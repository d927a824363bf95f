"""confluent-kafka (librdkafka) through `kwire proxy` against Apache Kafka: prints one JSON
object.

Usage: confluent_client.py BOOTSTRAP PREFIX

Same steps and output as kafka_python_client.py: topic PREFIX-t with 3 partitions, its
configs, 12 records per codec, a consumer group PREFIX-g with committed offsets, groups and
latest offsets. Used by tests/proxy.rs; see docs/proxy.md.
"""

import json
import sys
import time
from importlib.metadata import version

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 12
PARTITIONS = 3
T = 20.0


def main():
    bootstrap, prefix = sys.argv[1], sys.argv[2]
    topic, group = f"{prefix}-t", f"{prefix}-g"
    common = {"bootstrap.servers": bootstrap, "client.id": "confluent-kafka-proxy-test"}
    out = {
        "client": f"confluent-kafka {version('confluent-kafka')} (librdkafka {confluent_kafka.libversion()[0]})",
        "codecs": CODECS,
        "errors": [],
    }

    admin = AdminClient(common)
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=T).values():
        f.result(timeout=T)
    deadline = time.time() + T
    while True:
        md = admin.list_topics(topic=topic, timeout=T)
        t = md.topics.get(topic)
        if (t is not None and t.error is None and len(t.partitions) == PARTITIONS) or time.time() > deadline:
            break
        time.sleep(0.2)
    described = admin.describe_topics(
        confluent_kafka.TopicCollection([topic]), request_timeout=T
    )[topic].result(timeout=T)
    out["topic_partitions"] = len(described.partitions)
    res = ConfigResource("topic", topic)
    configs = admin.describe_configs([res], request_timeout=T)[res].result(timeout=T)
    out["config"] = {"cleanup.policy": configs["cleanup.policy"].value}

    produced = {str(p): [] for p in range(PARTITIONS)}
    failures = []

    def delivered(err, msg):
        if err is not None:
            failures.append(str(err))

    for codec in CODECS:
        # Idempotent, as the Java client and franz-go are by default: a retry cannot write a
        # record twice, so a duplicate in the log would be the proxy's doing.
        producer = Producer(
            {**common, "compression.codec": codec, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
        )
        for i in range(PER_CODEC):
            value = f"{codec}-{i}"
            p = i % PARTITIONS
            producer.produce(topic, key=str(i).encode(), value=value.encode(), partition=p, on_delivery=delivered)
            produced[str(p)].append(value)
        left = producer.flush(T)
        if left:
            failures.append(f"{left} {codec} records not delivered")
    out["produced"] = produced
    out["errors"] += failures

    consumed = {str(p): [] for p in range(PARTITIONS)}
    consumer = Consumer(
        {**common, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    want = PER_CODEC * len(CODECS)
    seen = set()
    deadline = time.time() + 40
    while len(seen) < want and time.time() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            out["errors"].append(str(msg.error()))
            continue
        # [offset, value]: a record delivered again after a rebalance shows as such.
        consumed[str(msg.partition())].append([msg.offset(), msg.value().decode()])
        seen.add((msg.partition(), msg.offset()))
    consumer.commit(asynchronous=False)
    out["consumed"] = consumed
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    out["committed"] = {str(tp.partition): tp.offset for tp in consumer.committed(tps, timeout=T)}
    consumer.close()

    groups = admin.list_consumer_groups(request_timeout=T).result(timeout=T)
    out["groups"] = sorted(g.group_id for g in groups.valid)
    latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=T)
    out["latest"] = {str(tp.partition): f.result(timeout=T).offset for tp, f in latest.items()}
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
