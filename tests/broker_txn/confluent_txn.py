"""confluent-kafka (librdkafka) transactions against kwire::broker (tests/broker.rs).

    confluent_txn.py BOOTSTRAP PREFIX basics
        commit 10 records, abort 5, commit 3 (topic PREFIX-in); a zombie producer fenced by a
        new one with the same transactional id; then read_committed and read_uncommitted
        consumers read the topic from the start. Prints one JSON line.
    confluent_txn.py BOOTSTRAP PREFIX rpw [CRASH_AFTER]
        read-process-write: consume PREFIX-in in group PREFIX-g at read_committed, write
        "out:<value>" to PREFIX-out and the group's offsets in one transaction per batch of
        at most 4 records. With CRASH_AFTER, after that many records it writes the next
        batch's output and exits (status 3) before committing: the restarted process must
        abort that transaction (fencing) and go on from the committed offsets.
    confluent_txn.py BOOTSTRAP PREFIX read TOPIC
        read TOPIC from the start with both isolation levels. Prints one JSON line.
"""
import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, prefix, mode = sys.argv[1], sys.argv[2], sys.argv[3]
DEADLINE = time.time() + 120


def producer(txn_id):
    p = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": txn_id,
        "transaction.timeout.ms": 60000,
        "linger.ms": 5,
    })
    p.init_transactions(30)
    return p


def read_all(topic, isolation):
    """Every record of partition 0 of topic, as (offset, value), from the start to its end."""
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"{prefix}-reader-{isolation}-{time.time()}",
        "enable.auto.commit": False,
        "isolation.level": isolation,
        "auto.offset.reset": "earliest",
    })
    tp = TopicPartition(topic, 0, 0)
    c.assign([tp])
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    out = []
    idle = 0
    while time.time() < DEADLINE:
        m = c.poll(0.5)
        if m is None:
            idle += 1
            pos = c.position([TopicPartition(topic, 0)])[0].offset
            # Done at the end of the log (the position passes control records too).
            if pos >= high and idle >= 2:
                break
            continue
        if m.error():
            raise KafkaException(m.error())
        out.append([m.offset(), m.value().decode()])
    c.close()
    return out


def basics():
    topic = f"{prefix}-in"
    p = producer(f"{prefix}-basic")
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"c-{i}".encode(), partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"a-{i}".encode(), partition=0)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=f"d-{i}".encode(), partition=0)
    p.commit_transaction(30)

    # A zombie: a producer with an open transaction, then a new one with its id.
    zombie = producer(f"{prefix}-zombie")
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie-0", partition=0)
    zombie.flush(30)
    fresh = producer(f"{prefix}-zombie")
    fenced = None
    try:
        zombie.produce(topic, value=b"zombie-1", partition=0)
        zombie.commit_transaction(30)
    except KafkaException as e:
        err = e.args[0]
        fenced = {"name": err.name(), "fatal": err.fatal()}
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh-0", partition=0)
    fresh.commit_transaction(30)
    print(json.dumps({
        "fenced": fenced,
        "committed": read_all(topic, "read_committed"),
        "uncommitted": read_all(topic, "read_uncommitted"),
    }))


def rpw(crash_after):
    src, dst, group = f"{prefix}-in", f"{prefix}-out", f"{prefix}-g"
    p = producer(f"{prefix}-rpw")
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
    })
    c.subscribe([src])
    done = 0
    idle = 0
    while time.time() < DEADLINE:
        msgs = c.consume(4, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            idle += 1
            if idle >= 4 and c.assignment():
                break
            continue
        idle = 0
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, value=b"out:" + m.value(), partition=0)
        if crash_after is not None and done + len(msgs) > crash_after:
            p.flush(30)
            os._exit(3)  # mid-transaction: output written, nothing committed
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        done += len(msgs)
    c.close()
    print(json.dumps({"processed": done}))


if mode == "basics":
    basics()
elif mode == "rpw":
    rpw(int(sys.argv[4]) if len(sys.argv) > 4 else None)
elif mode == "read":
    t = sys.argv[4]
    print(json.dumps({"committed": read_all(t, "read_committed"), "uncommitted": read_all(t, "read_uncommitted")}))
