"""kafka-python transactions against kwire::broker (tests/broker.rs), as the README's demo:

    kafka_python_txn.py BOOTSTRAP TOPIC

commits 3 records, aborts 2, commits 1, then reads TOPIC from the start at read_committed
and read_uncommitted. Prints one JSON line: the records each saw, as [offset, value].
"""
import json
import sys

from kafka import KafkaConsumer, KafkaProducer

bootstrap, topic = sys.argv[1], sys.argv[2]
tx = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic}-kp")
tx.init_transactions()
tx.begin_transaction()
for i in range(3):
    tx.send(topic, b"k-%d" % i, partition=0)
tx.commit_transaction()
tx.begin_transaction()
for i in range(2):
    tx.send(topic, b"ka-%d" % i, partition=0)
tx.flush()
tx.abort_transaction()
tx.begin_transaction()
tx.send(topic, b"k-3", partition=0)
tx.commit_transaction()
tx.close()


def read(isolation):
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, isolation_level=isolation,
                      auto_offset_reset="earliest", consumer_timeout_ms=3000)
    out = [[m.offset, m.value.decode()] for m in c]
    c.close()
    return out


print(json.dumps({"committed": read("read_committed"), "uncommitted": read("read_uncommitted")}))
