import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One tenant's transactional traffic through {@code kwire proxy --tenant principal:...}, the
 * Java client's twin of tests/proxy/tenant_txn.py (see there for the names and the
 * transactions), for tests/proxy_tls.rs. Besides topics, groups and the committed offset, it
 * lists transactions and describes its own through the proxy. Prints one JSON object:
 * {"client", "committed", "consumed", "topics", "groups", "offsets", "transactions",
 * "state"}. Run from source:
 * {@code java -cp 'target/java-client/lib/*' tests/proxy/TenantClient.java BOOTSTRAP USER TAG},
 * with the SASL PLAIN password in KWIRE_SASL_PASSWORD.
 */
public final class TenantClient {
    private TenantClient() {}

    private static String json(Collection<?> items) {
        List<String> out = new ArrayList<>();
        for (Object o : items) {
            if (o instanceof Number) {
                out.add(o.toString());
            } else {
                out.add("\"" + o.toString().replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
            }
        }
        return "[" + String.join(",", out) + "]";
    }

    private static List<String> values(String user, String what, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(user + "-" + what + "-" + i);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String user = args[1];
        String tag = args[2];
        String password = System.getenv("KWIRE_SASL_PASSWORD");
        String topic = "orders-" + tag;
        String group = "group-" + tag;
        String offsetsGroup = "offsets-" + tag;
        String txn = "txn-" + tag;
        Properties auth = new Properties();
        auth.put("bootstrap.servers", bootstrap);
        auth.put("security.protocol", "SASL_PLAINTEXT");
        auth.put("sasl.mechanism", "PLAIN");
        auth.put(
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                        + user
                        + "\" password=\""
                        + password
                        + "\";");
        try (Admin admin = Admin.create(auth)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();

            Properties p = new Properties();
            p.putAll(auth);
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txn);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            List<String> committed = new ArrayList<>();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                producer.initTransactions();
                String[] whats = {"commit", "abort", "commit2"};
                int[] counts = {3, 3, 2};
                for (int t = 0; t < whats.length; t++) {
                    producer.beginTransaction();
                    List<String> batch = values(user, whats[t], counts[t]);
                    for (String v : batch) {
                        producer.send(new ProducerRecord<>(topic, 0, null, v)).get();
                    }
                    if (t == 0) {
                        producer.sendOffsetsToTransaction(
                                Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(3)),
                                new ConsumerGroupMetadata(offsetsGroup));
                    }
                    if (whats[t].equals("abort")) {
                        producer.abortTransaction();
                    } else {
                        producer.commitTransaction();
                        committed.addAll(batch);
                    }
                }
            }

            Properties c = new Properties();
            c.putAll(auth);
            c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            List<String> consumed = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 40_000;
                while (System.currentTimeMillis() < deadline) {
                    int got = 0;
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofSeconds(1))) {
                        consumed.add(r.value());
                        got++;
                    }
                    if (got == 0 && consumed.size() >= committed.size()) {
                        break; // a quiet second after all of them: anything more would have come
                    }
                }
                consumer.commitSync();
            }

            TreeSet<String> topics = new TreeSet<>();
            for (String t : admin.listTopics().names().get()) {
                if (t.contains(tag)) {
                    topics.add(t);
                }
            }
            TreeSet<String> groups = new TreeSet<>();
            for (GroupListing g : admin.listGroups().all().get()) {
                if (g.groupId().contains(tag)) {
                    groups.add(g.groupId());
                }
            }
            List<Long> offsets = new ArrayList<>();
            Map<TopicPartition, OffsetAndMetadata> listed =
                    admin.listConsumerGroupOffsets(offsetsGroup).partitionsToOffsetAndMetadata().get();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : listed.entrySet()) {
                if (e.getKey().topic().equals(topic)) {
                    offsets.add(e.getValue().offset());
                }
            }
            TreeSet<String> transactions = new TreeSet<>();
            for (TransactionListing t : admin.listTransactions().all().get()) {
                if (t.transactionalId().contains(tag)) {
                    transactions.add(t.transactionalId());
                }
            }
            TransactionDescription d = admin.describeTransactions(List.of(txn)).all().get().get(txn);
            System.out.println(
                    "{\"client\":\"java\",\"committed\":" + json(committed)
                            + ",\"consumed\":" + json(consumed)
                            + ",\"topics\":" + json(topics)
                            + ",\"groups\":" + json(groups)
                            + ",\"offsets\":" + json(offsets)
                            + ",\"transactions\":" + json(transactions)
                            + ",\"state\":\"" + d.state() + "\"}");
        }
    }
}
