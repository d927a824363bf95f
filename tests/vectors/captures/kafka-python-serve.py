"""kafka-python against `kwire serve`: produce keyed text records to two topics (plain and
gzip), consume them in a group with commits."""
import sys
from kafka import KafkaConsumer, KafkaProducer, KafkaAdminClient
from kafka.admin import NewTopic

b = sys.argv[1]
admin = KafkaAdminClient(bootstrap_servers=b, client_id="capture-admin")
admin.create_topics([NewTopic("orders", 2, 1), NewTopic("audit", 1, 1)])
admin.close()
for codec in [None, "gzip"]:
    p = KafkaProducer(bootstrap_servers=b, acks="all", linger_ms=5, compression_type=codec, client_id="capture-producer")
    for i in range(6):
        p.send("orders", key=f"order-{i}".encode(), value=f'{{"id":{i},"codec":"{codec}"}}'.encode(),
               headers=[("trace", f"t{i}".encode()), ("bin", bytes([0xff, i]))], partition=i % 2)
        p.send("audit", key=None, value=f"audit {i}".encode())
    p.flush()
    p.close()
c = KafkaConsumer("orders", "audit", bootstrap_servers=b, group_id="billing", client_id="capture-consumer",
                  auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=3000)
n = 0
for m in c:
    n += 1
    if n == 24:
        break
c.commit()
c.close()
print("consumed", n)
