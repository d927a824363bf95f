"""confluent-kafka (librdkafka) against a Kafka broker (here `kwire serve`): prints one JSON
object.

Usage: confluent_client.py HOST:PORT TOPIC:PARTITIONS...   (e.g. orders:3 payments:1)

Every answer is written as the client returned it, only made JSON-friendly: a partition's
result is {"offset": ..., "timestamp": ..., "leader_epoch": ...}. A call that raised is
{"error": "<exception>"} in place of its answer, so one failure does not hide the others.
Used by tests/interop.rs; see docs/interop.md.
"""

import json
import sys
from importlib.metadata import version

import confluent_kafka
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupType,
    IsolationLevel,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

TIMEOUT_S = 10.0
T0 = 1_700_000_000_000
TIMESTAMPS = [T0 + 2_000, T0 + 6_000, T0 + 300_000]


def key(tp):
    return f"{tp.topic}/{tp.partition}"


def uuid_hex(uuid):
    mask = (1 << 64) - 1
    return f"{uuid.get_most_significant_bits() & mask:016x}{uuid.get_least_significant_bits() & mask:016x}"


def attempt(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - reported, compared by the test
        return {"error": f"{type(e).__name__}: {e}"}


def list_groups(admin, **kwargs):
    result = admin.list_consumer_groups(request_timeout=TIMEOUT_S, **kwargs).result(timeout=TIMEOUT_S)
    if result.errors:
        raise RuntimeError(f"list_consumer_groups errors: {result.errors}")
    return sorted(
        [g.group_id, g.is_simple_consumer_group, g.state.name, g.type.name] for g in result.valid
    )


def list_offsets(admin, partitions, spec, isolation):
    futures = admin.list_offsets(
        {tp: spec for tp in partitions}, isolation_level=isolation, request_timeout=TIMEOUT_S
    )
    out = {}
    for tp, future in sorted(futures.items(), key=lambda kv: key(kv[0])):
        try:
            info = future.result(timeout=TIMEOUT_S)
            out[key(tp)] = {"offset": info.offset, "timestamp": info.timestamp, "leader_epoch": info.leader_epoch}
        except Exception as e:  # noqa: BLE001 - one partition's error, compared by the test
            out[key(tp)] = {"error": f"{type(e).__name__}: {e}"}
    return out


def main():
    bootstrap = sys.argv[1]
    partitions = []
    for spec in sys.argv[2:]:
        topic, count = spec.split(":")
        partitions += [TopicPartition(topic, p) for p in range(int(count))]
    out = {
        "client": "confluent-kafka",
        "version": version("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
    }
    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(TIMEOUT_S * 1000)}

    admin = AdminClient(common)
    topics = sorted({tp.topic for tp in partitions})

    def metadata():
        md = admin.list_topics(timeout=TIMEOUT_S)
        return {
            "cluster_id": md.cluster_id,
            "controller_id": md.controller_id,
            "brokers": sorted([b.id, b.host, b.port] for b in md.brokers.values()),
            "topics": {
                name: sorted([p.id, p.leader, p.replicas, p.isrs] for p in t.partitions.values())
                for name, t in sorted(md.topics.items())
            },
        }

    def cluster():
        c = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        return {
            "cluster_id": c.cluster_id,
            "controller": c.controller.id,
            "nodes": sorted([n.id, n.host, n.port] for n in c.nodes),
        }

    def describe_topics():
        futures = admin.describe_topics(
            confluent_kafka.TopicCollection(topics), request_timeout=TIMEOUT_S
        )
        out = {}
        for name, future in sorted(futures.items()):
            d = future.result(timeout=TIMEOUT_S)
            out[name] = {
                "topic_id": uuid_hex(d.topic_id),
                "is_internal": d.is_internal,
                "partitions": sorted(
                    [p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr]]
                    for p in d.partitions
                ),
            }
        return out

    out["list_topics"] = attempt(metadata)
    out["describe_cluster"] = attempt(cluster)
    out["describe_topics"] = attempt(describe_topics)
    out["list_groups"] = {
        name: attempt(lambda kwargs=kwargs: list_groups(admin, **kwargs))
        for name, kwargs in [
            ("all", {}),
            ("states_stable", {"states": {ConsumerGroupState.STABLE}}),
            ("states_stable_empty", {"states": {ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY}}),
            ("types_classic", {"types": {ConsumerGroupType.CLASSIC}}),
            ("types_consumer", {"types": {ConsumerGroupType.CONSUMER}}),
        ]
    }

    specs = [
        ("earliest", OffsetSpec.earliest()),
        ("latest", OffsetSpec.latest()),
        ("max_timestamp", OffsetSpec.max_timestamp()),
    ] + [(f"timestamp_{ts}", OffsetSpec.for_timestamp(ts)) for ts in TIMESTAMPS]
    admin_offsets = {}
    for iso_name, iso in [
        ("read_uncommitted", IsolationLevel.READ_UNCOMMITTED),
        ("read_committed", IsolationLevel.READ_COMMITTED),
    ]:
        for name, spec in specs:
            admin_offsets[f"{name}/{iso_name}"] = attempt(
                lambda spec=spec, iso=iso: list_offsets(admin, partitions, spec, iso)
            )
    out["admin_list_offsets"] = admin_offsets

    # The consumer's watermarks (ListOffsets earliest and latest) and offsets_for_times;
    # the isolation level is the consumer's configuration.
    consumer_offsets = {}
    for iso in ["read_uncommitted", "read_committed"]:
        consumer = confluent_kafka.Consumer(
            {**common, "group.id": "kwire-interop", "isolation.level": iso, "enable.auto.commit": False}
        )
        watermarks = {}
        for tp in partitions:
            watermarks[key(tp)] = attempt(
                lambda tp=tp: list(consumer.get_watermark_offsets(tp, timeout=TIMEOUT_S, cached=False))
            )
        consumer_offsets[f"watermarks/{iso}"] = watermarks
        for ts in TIMESTAMPS:
            consumer_offsets[f"timestamp_{ts}/{iso}"] = attempt(
                lambda ts=ts: {
                    key(tp): {"offset": tp.offset, "error": None if tp.error is None else str(tp.error)}
                    for tp in consumer.offsets_for_times(
                        [TopicPartition(p.topic, p.partition, ts) for p in partitions], timeout=TIMEOUT_S
                    )
                }
            )
        consumer.close()
    out["consumer_offsets"] = consumer_offsets
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
