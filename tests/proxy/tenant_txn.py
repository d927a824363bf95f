"""One tenant's transactional traffic through `kwire proxy --tenant principal:...`, for
tests/proxy_tls.rs, with confluent-kafka (librdkafka) or kafka-python; the Java client's
twin is tests/proxy/TenantClient.java. Every tenant runs it with the same TAG, so the
names below are the same for all of them:

  topic "orders-TAG" (1 partition), consumer group "group-TAG", the group "offsets-TAG"
  that the first transaction commits an offset for, transactional id "txn-TAG".

A transactional producer commits 3 records (and offset 3 of "offsets-TAG"), aborts 3, and
commits 2 more; a read_committed consumer of "group-TAG" reads the topic from the start.
Prints one JSON object: {"client", "committed" (the values committed, in order),
"consumed" (what the consumer got, in order), "topics", "groups" (names holding TAG that
listing shows), "offsets" (the committed offset of "offsets-TAG")}.

Usage: tenant_txn.py confluent-kafka|kafka-python BOOTSTRAP USER TAG
The SASL PLAIN password comes from the environment (KWIRE_SASL_PASSWORD).
"""

import json
import os
import sys
import time


def names(tag):
    return "orders-" + tag, "group-" + tag, "offsets-" + tag, "txn-" + tag


def values(user, what, n):
    return [f"{user}-{what}-{i}" for i in range(n)]


def confluent(bootstrap, user, password, tag):
    from confluent_kafka import ConsumerGroupTopicPartitions, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group, offsets_group, txn = names(tag)
    auth = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }
    admin = AdminClient(auth)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)

    p = Producer({**auth, "transactional.id": txn, "acks": "all"})
    p.init_transactions(60)
    # The consumer group metadata of "offsets-TAG", for the transactional offset commit.
    meta = Consumer({**auth, "group.id": offsets_group, "enable.auto.commit": False})
    committed = []
    for what, n, commit in (("commit", 3, True), ("abort", 3, False), ("commit2", 2, True)):
        p.begin_transaction()
        for v in values(user, what, n):
            p.produce(topic, value=v.encode(), partition=0)
        p.flush(60)
        if what == "commit":
            p.send_offsets_to_transaction(
                [TopicPartition(topic, 0, 3)], meta.consumer_group_metadata(), 60
            )
        if commit:
            p.commit_transaction(60)
            committed += values(user, what, n)
        else:
            p.abort_transaction(60)
    meta.close()

    c = Consumer(
        {
            **auth,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    got = []
    deadline = time.time() + 40
    while time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value().decode())
        elif got and len(got) >= len(committed):
            break  # a quiet second after all of them: anything more would have come
    c.commit(asynchronous=False)
    c.close()

    topics = sorted(t for t in admin.list_topics(timeout=30).topics if tag in t)
    listed = admin.list_consumer_groups(request_timeout=30).result()
    groups = sorted(g.group_id for g in listed.valid if tag in g.group_id)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(offsets_group)])
    listed_offsets = offsets[offsets_group].result().topic_partitions
    offset = [tp.offset for tp in listed_offsets if tp.topic == topic]
    return {"committed": committed, "consumed": got, "topics": topics, "groups": groups, "offsets": offset}


def kafka_python(bootstrap, user, password, tag):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import OffsetAndMetadata

    topic, group, offsets_group, txn = names(tag)
    auth = dict(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=password,
    )
    admin = KafkaAdminClient(**auth)
    admin.create_topics([NewTopic(topic, 1, 1)])
    p = KafkaProducer(transactional_id=txn, acks="all", **auth)
    p.init_transactions()
    committed = []
    for what, n, commit in (("commit", 3, True), ("abort", 3, False), ("commit2", 2, True)):
        p.begin_transaction()
        for v in values(user, what, n):
            p.send(topic, v.encode(), partition=0)
        p.flush()
        if what == "commit":
            p.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(3, "", -1)}, offsets_group
            )
        if commit:
            p.commit_transaction()
            committed += values(user, what, n)
        else:
            p.abort_transaction()
    p.close()
    c = KafkaConsumer(
        topic,
        group_id=group,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
        **auth,
    )
    got = []
    deadline = time.time() + 40
    while time.time() < deadline:
        batch = c.poll(timeout_ms=1000)
        records = [m for ms in batch.values() for m in ms]
        got += [m.value.decode() for m in records]
        if not records and got and len(got) >= len(committed):
            break
    c.commit()
    c.close()
    topics = sorted(t for t in admin.list_topics() if tag in t)
    listed = [g["group_id"] if isinstance(g, dict) else g[0] for g in admin.list_groups()]
    groups = sorted(g for g in listed if tag in g)
    offsets = admin.list_group_offsets(offsets_group)[offsets_group]
    offset = [om.offset for tp, om in offsets.items() if tp.topic == topic]
    admin.close()
    return {"committed": committed, "consumed": got, "topics": topics, "groups": groups, "offsets": offset}


def main():
    client, bootstrap, user, tag = sys.argv[1:5]
    password = os.environ["KWIRE_SASL_PASSWORD"]
    run = confluent if client == "confluent-kafka" else kafka_python
    out = run(bootstrap, user, password, tag)
    print(json.dumps({"client": client, **out}))


if __name__ == "__main__":
    main()
