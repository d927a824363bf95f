"""A SASL client through `kwire proxy` to a SASL_PLAINTEXT listener of a real cluster, for
tests/proxy_cluster.rs: authenticates, produces 3 records to TOPIC (created by the broker on
first use) and reads them back; prints one JSON object {"produced": [...], "consumed": [...]}.

Usage: sasl_client.py kafka-python|confluent-kafka BOOTSTRAP MECHANISM USER TOPIC
The password comes from the environment (KWIRE_SASL_PASSWORD), not the command line.
"""

import json
import os
import sys
import time


def kafka_python(bootstrap, mechanism, user, password, topic, values):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    auth = dict(
        bootstrap_servers=bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=password,
        client_id=f"kafka-python-sasl-{mechanism}",
    )
    p = KafkaProducer(acks="all", retries=20, **auth)
    for v in values:
        p.send(topic, value=v.encode(), partition=0).get(timeout=60)
    p.flush()
    p.close()
    c = KafkaConsumer(auto_offset_reset="earliest", consumer_timeout_ms=20000, **auth)
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()
    got = []
    for m in c:
        got.append(m.value.decode())
        if len(got) == len(values):
            break
    c.close()
    return got


def confluent(bootstrap, mechanism, user, password, topic, values):
    from confluent_kafka import Consumer, Producer, TopicPartition

    auth = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "client.id": f"confluent-sasl-{mechanism}",
    }
    p = Producer({**auth, "acks": "all"})
    errors = []
    for v in values:
        p.produce(topic, value=v.encode(), partition=0, on_delivery=lambda e, m: e and errors.append(str(e)))
    left = p.flush(60)
    if left or errors:
        raise SystemExit(f"produce failed: {left} unanswered, {errors}")
    c = Consumer({**auth, "group.id": f"sasl-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + 30
    while len(got) < len(values) and time.time() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    return got


def main():
    client, bootstrap, mechanism, user, topic = sys.argv[1:6]
    password = os.environ["KWIRE_SASL_PASSWORD"]
    values = [f"{client}-{mechanism}-{i}" for i in range(3)]
    run = kafka_python if client == "kafka-python" else confluent
    got = run(bootstrap, mechanism, user, password, topic, values)
    print(json.dumps({"produced": values, "consumed": got}))


if __name__ == "__main__":
    main()
