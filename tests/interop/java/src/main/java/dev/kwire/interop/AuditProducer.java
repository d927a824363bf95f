package dev.kwire.interop;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One Produce request that names an allowed and a refused topic, from Apache Kafka's Java
 * client (which names topics by id, Produce v13, against Kafka 4.x): prints one JSON object
 * with the offset or the error of each topic's record.
 *
 * <p>Usage: {@code AuditProducer BOOTSTRAP TAG}: topics {@code orders-TAG} and
 * {@code audit.logins-TAG}, one record each, sent together (linger.ms) so that they share a
 * request. Then reads each topic's partition from the start with a consumer (which names
 * topics by id too, Fetch v13 and later): {@code read_orders} and {@code read_audit} are the
 * values read, or the error.
 */
public final class AuditProducer {
    private AuditProducer() {}

    private static String outcome(Future<RecordMetadata> f) throws InterruptedException {
        try {
            return "{\"offset\":" + f.get().offset() + "}";
        } catch (ExecutionException e) {
            return "{\"error\":\"" + e.getCause().getClass().getSimpleName() + "\"}";
        }
    }

    /** The values a consumer reads from partition 0 of {@code topic} (JSON), or its error. */
    private static String read(String bootstrap, String topic, int expect) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            StringBuilder values = new StringBuilder();
            int n = 0;
            // Until `expect` values are read; a partition expected empty is read for 3 s
            // (a refused one fails at once).
            long deadline = System.currentTimeMillis() + (expect == 0 ? 3_000 : 10_000);
            while ((expect == 0 || n < expect) && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                for (var r : records) {
                    values.append(n++ == 0 ? "" : ",").append('"').append(r.value()).append('"');
                }
            }
            return "{\"values\":[" + values + "]}";
        } catch (RuntimeException e) {
            return "{\"error\":\"" + e.getClass().getSimpleName() + "\"}";
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String orders = "orders-" + args[1];
        String audit = "audit.logins-" + args[1];
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(a)) {
            admin.createTopics(List.of(new NewTopic(orders, 1, (short) 1), new NewTopic(audit, 1, (short) 1)))
                    .all()
                    .get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "500");
        p.put(ProducerConfig.RETRIES_CONFIG, "0");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            // The topics' metadata first, so that both records wait in one linger window.
            producer.partitionsFor(orders);
            producer.partitionsFor(audit);
            Future<RecordMetadata> o = producer.send(new ProducerRecord<>(orders, "k", "an order"));
            Future<RecordMetadata> s = producer.send(new ProducerRecord<>(audit, "k", "a login"));
            producer.flush();
            String produced = "\"orders\":" + outcome(o) + ",\"audit\":" + outcome(s);
            String read = "\"read_orders\":" + read(bootstrap, orders, 1)
                    + ",\"read_audit\":" + read(bootstrap, audit, 0);
            System.out.println("{" + produced + "," + read + "}");
        }
    }
}
