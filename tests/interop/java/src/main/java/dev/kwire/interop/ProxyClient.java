package dev.kwire.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Apache Kafka's Java client through {@code kwire proxy}: prints one JSON object.
 *
 * <p>Usage: {@code ProxyClient BOOTSTRAP PREFIX}. Same steps and output as
 * tests/proxy/kafka_python_client.py: topic PREFIX-t with 3 partitions, its configs, 12 records
 * per codec and 6 with acks=0 (no responses), a consumer group PREFIX-g (the classic protocol, then the consumer protocol of
 * KIP-848 for a second group PREFIX-g2) with committed offsets, groups and latest offsets.
 */
public final class ProxyClient {
    private static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    private static final int PER_CODEC = 12;
    private static final int PARTITIONS = 3;
    private static final int ACKS0_RECORDS = 6;

    private ProxyClient() {}

    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('"').toString();
    }

    private static String list(Collection<String> items) {
        List<String> quoted = new ArrayList<>();
        for (String s : items) {
            quoted.add(q(s));
        }
        return "[" + String.join(",", quoted) + "]";
    }

    private static String byPartition(Map<Integer, String> m) {
        List<String> parts = new ArrayList<>();
        for (Map.Entry<Integer, String> e : new TreeMap<>(m).entrySet()) {
            parts.add(q(String.valueOf(e.getKey())) + ":" + e.getValue());
        }
        return "{" + String.join(",", parts) + "}";
    }

    private static Map<Integer, List<String>> consume(String bootstrap, String topic, String group, String protocol) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<Integer, List<String>> consumed = new TreeMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            consumed.put(p, new ArrayList<>());
        }
        int want = PER_CODEC * CODECS.length + ACKS0_RECORDS;
        int n = 0;
        java.util.Set<String> seen = new java.util.HashSet<>();
        long deadline = System.currentTimeMillis() + 40_000;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            while (n < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    // [offset, value]: a record delivered again after a rebalance shows as such.
                    consumed.get(r.partition()).add("[" + r.offset() + "," + q(r.value()) + "]");
                    seen.add(r.partition() + "/" + r.offset());
                    n = seen.size();
                }
                consumer.commitSync();
            }
            consumer.commitSync();
        }
        return consumed;
    }

    /** The kafka-clients release on the class path, from the version file inside its jar. */
    static String clientVersion() throws java.io.IOException {
        Properties p = new Properties();
        try (java.io.InputStream in = Admin.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        return p.getProperty("version", "unknown");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String topic = prefix + "-t";
        String group = prefix + "-g";
        String group2 = prefix + "-g2";
        StringBuilder out = new StringBuilder("{");
        out.append("\"client\":").append(q("kafka-clients " + clientVersion()));
        out.append(",\"codecs\":").append(list(List.of(CODECS)));
        out.append(",\"errors\":[]");

        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            out.append(",\"topic_partitions\":").append(d.partitions().size());
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(res)).all().get().get(res);
            out.append(",\"config\":{\"cleanup.policy\":").append(q(config.get("cleanup.policy").value())).append("}");

            Map<Integer, List<String>> produced = new TreeMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                produced.put(p, new ArrayList<>());
            }
            for (String codec : CODECS) {
                Properties pp = new Properties();
                pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
                pp.put(ProducerConfig.ACKS_CONFIG, "all");
                pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
                pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
                pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
                try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                    List<Future<RecordMetadata>> sent = new ArrayList<>();
                    for (int i = 0; i < PER_CODEC; i++) {
                        String value = codec + "-" + i;
                        int p = i % PARTITIONS;
                        sent.add(producer.send(new ProducerRecord<>(topic, p, String.valueOf(i), value)));
                        produced.get(p).add(value);
                    }
                    producer.flush();
                    for (Future<RecordMetadata> f : sent) {
                        f.get();
                    }
                }
            }
            // acks=0: the broker sends no response, so the proxy must pair the next
            // response on that connection with a later request.
            Properties p0 = new Properties();
            p0.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p0.put(ProducerConfig.ACKS_CONFIG, "0");
            p0.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            p0.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            p0.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p0.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p0)) {
                for (int i = 0; i < ACKS0_RECORDS; i++) {
                    String value = "acks0-" + i;
                    int p = i % PARTITIONS;
                    producer.send(new ProducerRecord<>(topic, p, String.valueOf(i), value)).get();
                    produced.get(p).add(value);
                }
                producer.flush();
            }
            out.append(",\"extra_records\":").append(ACKS0_RECORDS);
            Map<Integer, String> producedJson = new HashMap<>();
            produced.forEach((p, v) -> producedJson.put(p, list(v)));
            out.append(",\"produced\":").append(byPartition(producedJson));

            Map<Integer, String> consumedJson = new HashMap<>();
            consume(bootstrap, topic, group, "classic").forEach((p, v) -> consumedJson.put(p, "[" + String.join(",", v) + "]"));
            out.append(",\"consumed\":").append(byPartition(consumedJson));
            // KWIRE_CLASSIC_GROUPS_ONLY: a broker without the KIP-848 protocol (kwire::broker).
            if (System.getenv("KWIRE_CLASSIC_GROUPS_ONLY") == null) {
                Map<Integer, String> consumed2Json = new HashMap<>();
                consume(bootstrap, topic, group2, "consumer").forEach((p, v) -> consumed2Json.put(p, "[" + String.join(",", v) + "]"));
                out.append(",\"consumed_consumer_protocol\":").append(byPartition(consumed2Json));
            }

            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            Map<Integer, String> committedJson = new HashMap<>();
            committed.forEach((tp, o) -> committedJson.put(tp.partition(), String.valueOf(o.offset())));
            out.append(",\"committed\":").append(byPartition(committedJson));

            TreeSet<String> groups = new TreeSet<>();
            for (GroupListing g : admin.listGroups().all().get()) {
                groups.add(g.groupId());
            }
            out.append(",\"groups\":").append(list(groups));

            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> latest = admin.listOffsets(specs).all().get();
            Map<Integer, String> latestJson = new HashMap<>();
            latest.forEach((tp, info) -> latestJson.put(tp.partition(), String.valueOf(info.offset())));
            out.append(",\"latest\":").append(byPartition(latestJson));
        }
        out.append("}");
        System.out.println(out);
    }
}
