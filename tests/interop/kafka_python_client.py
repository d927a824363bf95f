"""kafka-python against a Kafka broker (here `kwire serve`): prints one JSON object.

Usage: kafka_python_client.py HOST:PORT TOPIC:PARTITIONS...   (e.g. orders:3 payments:1)

Every answer is written as the client returned it, only made JSON-friendly: a partition's
result is {"offset": ..., "timestamp": ...} or null where the client returned None. A call
that raised is {"error": "<exception>"} in place of its answer, so one failure does not
hide the others. Used by tests/interop.rs; see docs/interop.md.
"""

import json
import sys
from importlib.metadata import version

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import OffsetSpec

TIMEOUT_MS = 10_000
T0 = 1_700_000_000_000
TIMESTAMPS = [T0 + 2_000, T0 + 6_000, T0 + 300_000]


def key(tp):
    return f"{tp.topic}/{tp.partition}"


def offset_and_timestamp(value):
    if value is None:
        return None
    if isinstance(value, int):
        return {"offset": value, "timestamp": None}
    return {"offset": value.offset, "timestamp": value.timestamp}


def by_partition(result):
    return {key(tp): offset_and_timestamp(v) for tp, v in sorted(result.items(), key=lambda kv: key(kv[0]))}


def attempt(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported, compared by the test
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    bootstrap = sys.argv[1]
    partitions = []
    for spec in sys.argv[2:]:
        topic, count = spec.split(":")
        partitions += [TopicPartition(topic, p) for p in range(int(count))]
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
    out = {"client": "kafka-python", "version": version("kafka-python")}

    admin = KafkaAdminClient(**common)
    topics = sorted({tp.topic for tp in partitions})

    def cluster():
        c = admin.describe_cluster()
        return {
            "cluster_id": c.get("cluster_id"),
            "controller_id": c.get("controller_id"),
            "brokers": [[b["broker_id"], b["host"], b["port"]] for b in c["brokers"]],
        }

    out["describe_cluster"] = attempt(cluster)
    out["list_topics"] = attempt(lambda: sorted(admin.list_topics()))
    out["describe_topics"] = attempt(
        lambda: [
            {
                "name": t["name"],
                "error_code": t["error_code"],
                "topic_id": str(t.get("topic_id")).replace("-", ""),
                "partitions": sorted(
                    [p["partition_index"], p["leader_id"], p.get("leader_epoch"), p["replica_nodes"], p["isr_nodes"]]
                    for p in t["partitions"]
                ),
            }
            for t in sorted(admin.describe_topics(topics), key=lambda t: t["name"])
        ]
    )
    groups = {}
    for name, kwargs in [
        ("all", {}),
        ("states_stable", {"states_filter": ["Stable"]}),
        ("states_stable_empty", {"states_filter": ["Stable", "Empty"]}),
        ("types_classic", {"types_filter": ["classic"]}),
        ("types_consumer", {"types_filter": ["consumer"]}),
    ]:
        groups[name] = attempt(
            lambda kwargs=kwargs: sorted(
                [g["group_id"], g.get("protocol_type"), g.get("group_state"), g.get("group_type")]
                for g in admin.list_groups(**kwargs)
            )
        )
    out["list_groups"] = groups

    # The admin client's list_partition_offsets: every spec, both isolation levels.
    admin_offsets = {}
    specs = [
        ("earliest", OffsetSpec.EARLIEST),
        ("latest", OffsetSpec.LATEST),
        ("max_timestamp", OffsetSpec.MAX_TIMESTAMP),
    ] + [(f"timestamp_{ts}", ts) for ts in TIMESTAMPS]
    for iso in ["read_uncommitted", "read_committed"]:
        for name, spec in specs:
            admin_offsets[f"{name}/{iso}"] = attempt(
                lambda spec=spec, iso=iso: by_partition(
                    admin.list_partition_offsets({tp: spec for tp in partitions}, isolation_level=iso)
                )
            )
    out["admin_list_partition_offsets"] = admin_offsets
    admin.close()

    # The consumer's beginning_offsets, end_offsets and offsets_for_times; the isolation
    # level is the consumer's configuration.
    consumer_offsets = {}
    for iso in ["read_uncommitted", "read_committed"]:
        consumer = KafkaConsumer(isolation_level=iso, **common)
        consumer_offsets[f"earliest/{iso}"] = attempt(
            lambda: by_partition(consumer.beginning_offsets(partitions, timeout_ms=TIMEOUT_MS))
        )
        consumer_offsets[f"latest/{iso}"] = attempt(
            lambda: by_partition(consumer.end_offsets(partitions, timeout_ms=TIMEOUT_MS))
        )
        for ts in TIMESTAMPS:
            consumer_offsets[f"timestamp_{ts}/{iso}"] = attempt(
                lambda ts=ts: by_partition(
                    consumer.offsets_for_times({tp: ts for tp in partitions}, timeout_ms=TIMEOUT_MS)
                )
            )
        consumer.close()
    out["consumer_offsets"] = consumer_offsets
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
