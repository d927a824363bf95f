"""confluent-kafka (librdkafka) in the failover test of tests/proxy_cluster.rs: a three-broker
cluster behind `kwire proxy`, one broker killed and restarted while these run.

Usage:
  confluent_cluster.py create BOOTSTRAP TOPIC PARTITIONS REPLICAS MIN_ISR
      creates the topic (min.insync.replicas MIN_ISR), waits until every partition has a
      leader; prints {"created": TOPIC}
  confluent_cluster.py produce BOOTSTRAP TOPIC SECONDS NAME
      an idempotent producer (acks=all) sends NAME-0, NAME-1, ... for SECONDS, record i to
      partition i mod PARTITIONS (env KWIRE_PARTITIONS, default 3), one every 4 ms, then
      waits for every answer; prints {"acked": {"P": [[offset, value], ...]}, "errors": [...]}
  confluent_cluster.py consume BOOTSTRAP TOPIC GROUP STOPFILE NAME
      a member of consumer group GROUP, from the start, committing synchronously after each
      batch; prints each record as it comes ({"p": P, "o": OFFSET, "v": VALUE} a line) and
      ends once STOPFILE exists and a poll brought nothing

Progress goes to stderr.
"""

import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def create(bootstrap, topic, partitions, replicas, min_isr):
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "confluent-cluster-admin"})
    new = NewTopic(topic, int(partitions), int(replicas), config={"min.insync.replicas": min_isr})
    for f in admin.create_topics([new], operation_timeout=30).values():
        f.result(timeout=60)
    deadline = time.time() + 60
    while True:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md and len(md.partitions) == int(partitions) and all(
            p.leader >= 0 and len(p.isrs) == int(replicas) for p in md.partitions.values()
        ):
            break
        if time.time() > deadline:
            raise SystemExit(f"topic {topic} has no leaders with full ISR: {md and md.partitions}")
        time.sleep(0.2)
    print(json.dumps({"created": topic}))


def produce(bootstrap, topic, seconds, name):
    parts = int(os.environ.get("KWIRE_PARTITIONS", "3"))
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": name,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 120000,
        }
    )
    acked = {str(i): [] for i in range(parts)}
    errors = []

    def done(err, msg):
        if err is not None:
            errors.append(f"{msg.value().decode()}: {err}")
        else:
            acked[str(msg.partition())].append([msg.offset(), msg.value().decode()])

    end = time.time() + float(seconds)
    i = 0
    next_at = time.time()
    while time.time() < end:
        p.produce(topic, value=f"{name}-{i}".encode(), partition=i % parts, on_delivery=done)
        i += 1
        if i % 1000 == 0:
            log(f"{name}: {i} records sent")
        next_at += 0.004
        p.poll(max(0.0, next_at - time.time()))
    left = p.flush(120)
    if left:
        errors.append(f"{left} records not answered after 120 s")
    print(json.dumps({"client": "confluent-kafka", "sent": i, "acked": acked, "errors": errors}))


def consume(bootstrap, topic, group, stop, name):
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": name,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
        }
    )
    c.subscribe([topic])
    n = 0
    while True:
        msgs = c.consume(num_messages=500, timeout=1.0)
        got = 0
        for m in msgs:
            if m.error():
                log(f"{name}: {m.error()}")
                continue
            print(json.dumps({"p": m.partition(), "o": m.offset(), "v": m.value().decode()}))
            got += 1
        sys.stdout.flush()
        n += got
        if got:
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:
                log(f"{name}: commit: {e}")
        elif os.path.exists(stop):
            break
    log(f"{name}: {n} records consumed")
    c.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    {"create": create, "produce": produce, "consume": consume}[mode](*args)


if __name__ == "__main__":
    main()
