"""confluent-kafka's AdminClient against kwire::broker (tests/broker.rs): configs altered
incrementally and described, an unknown config refused, DeleteRecords then the earliest offset,
ACLs created, described and deleted, and a preferred election. Prints one JSON line."""
import json, sys
from confluent_kafka import Producer, TopicPartition, ElectionType
from confluent_kafka.admin import (AdminClient, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, OffsetSpec,
    ResourcePatternType, ResourceType)
addr, topic = sys.argv[1], sys.argv[2]
a = AdminClient({"bootstrap.servers": addr})
a.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
p = Producer({"bootstrap.servers": addr})
for i in range(5):
    p.produce(topic, b"r%d" % i); p.flush(10)
res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
    ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
    ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
list(a.incremental_alter_configs([res]).values())[0].result(10)
cfg = list(a.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values())[0].result(10)
out = {"configs": {k: [cfg[k].value, str(cfg[k].source)] for k in ("retention.ms", "cleanup.policy")}}
try:
    bad = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    list(a.incremental_alter_configs([bad]).values())[0].result(10); out["bad"] = None
except Exception as e:
    out["bad"] = e.args[0].name()
deleted = list(a.delete_records([TopicPartition(topic, 0, 3)]).values())[0].result(10)
out["low_watermark"] = deleted.low_watermark
earliest = a.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
out["earliest"] = list(earliest.values())[0].result(10).offset
acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                 AclOperation.READ, AclPermissionType.ALLOW)
a.create_acls([acl])[acl].result(10)
flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                       AclOperation.ANY, AclPermissionType.ANY)
out["acls"] = [b.principal for b in a.describe_acls(flt).result(10)]
out["deleted_acls"] = [b.principal for b in a.delete_acls([flt])[flt].result(10)]
elected = a.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(10)
out["elect"] = [e.name() if e else None for e in elected.values()]
print(json.dumps(out))
