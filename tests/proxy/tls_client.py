"""A few records through `kwire proxy` over TLS, with kafka-python or confluent-kafka: prints
one JSON object.

Usage: tls_client.py LIB BOOTSTRAP PREFIX PROTOCOL [CAFILE]
  LIB       kafka-python | confluent-kafka
  PROTOCOL  SSL (TLS to the proxy, checked against CAFILE and the host name) | PLAINTEXT |
            SASL_SSL | SASL_PLAINTEXT (SASL from KWIRE_SASL_MECHANISM, KWIRE_SASL_USER and
            KWIRE_SASL_PASSWORD in the environment, never the command line; used by
            tests/broker_scram_clients.rs against kwire::broker)

Creates topic PREFIX-t (one partition), produces RECORDS records (acks=all), consumes them in
group PREFIX-g from the start, and prints {"client", "produced", "consumed", "errors"}; the test
(tests/proxy_tls.rs) compares them.

The SNI routing test resolves its per-broker names by a hosts file of the client's own
(tests/proxy_tls.rs, with_hosts).
"""

import json
import os
import sys
import time
from importlib.metadata import version

RECORDS = 5
T = 20.0


def kafka_python(bootstrap, prefix, protocol, cafile, out):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic

    out["client"] = f"kafka-python {version('kafka-python')}"
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=20_000, security_protocol=protocol)
    if protocol in ("SSL", "SASL_SSL"):
        common.update(ssl_cafile=cafile, ssl_check_hostname=True)
    if protocol.startswith("SASL_"):
        # kafka-python reports a refused authentication in its log only (and retries).
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        common.update(
            sasl_mechanism=os.environ["KWIRE_SASL_MECHANISM"],
            sasl_plain_username=os.environ["KWIRE_SASL_USER"],
            sasl_plain_password=os.environ["KWIRE_SASL_PASSWORD"],
        )
    topic, group = f"{prefix}-t", f"{prefix}-g"
    admin = KafkaAdminClient(**common)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(acks="all", **common)
    futures = []
    for i in range(RECORDS):
        value = f"{prefix}-{i}"
        futures.append(producer.send(topic, value=value.encode(), partition=0))
        out["produced"].append(value)
    producer.flush()
    for f in futures:
        f.get(timeout=T)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", **common)
    deadline = time.time() + 40
    while len(out["consumed"]) < RECORDS and time.time() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            out["consumed"].extend(r.value.decode() for r in records)
    consumer.close()


def confluent(bootstrap, prefix, protocol, cafile, out):
    import confluent_kafka
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    out["client"] = f"confluent-kafka {version('confluent-kafka')} (librdkafka {confluent_kafka.libversion()[0]})"
    common = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        common.update({"ssl.ca.location": cafile, "ssl.endpoint.identification.algorithm": "https"})
    if protocol.startswith("SASL_"):
        common.update({
            "sasl.mechanism": os.environ["KWIRE_SASL_MECHANISM"],
            "sasl.username": os.environ["KWIRE_SASL_USER"],
            "sasl.password": os.environ["KWIRE_SASL_PASSWORD"],
        })
    topic, group = f"{prefix}-t", f"{prefix}-g"
    admin = AdminClient(common)
    for f in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=T).values():
        f.result(timeout=T)

    def delivered(err, msg):
        if err is not None:
            out["errors"].append(str(err))

    producer = Producer({**common, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):
        value = f"{prefix}-{i}"
        producer.produce(topic, value=value.encode(), partition=0, on_delivery=delivered)
        out["produced"].append(value)
    left = producer.flush(T)
    if left:
        out["errors"].append(f"{left} records not delivered")
    consumer = Consumer({**common, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline = time.time() + 40
    while len(out["consumed"]) < RECORDS and time.time() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            out["errors"].append(str(msg.error()))
            continue
        out["consumed"].append(msg.value().decode())
    consumer.close()


def main():
    lib, bootstrap, prefix, protocol = sys.argv[1:5]
    cafile = sys.argv[5] if len(sys.argv) > 5 else None
    out = {"produced": [], "consumed": [], "errors": []}
    {"kafka-python": kafka_python, "confluent-kafka": confluent}[lib](bootstrap, prefix, protocol, cafile, out)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
