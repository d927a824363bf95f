import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Apache Kafka's Java client through {@code kwire proxy} over TLS: a few records produced and
 * consumed, printed as one JSON object ({"client", "produced", "consumed", "errors"}), as
 * tests/proxy/tls_client.py does. Run from source by tests/proxy_tls.rs:
 * {@code java -cp 'target/java-client/lib/*' tests/proxy/TlsClient.java BOOTSTRAP PREFIX CAFILE}.
 * The CA file (PEM) is the trust store; host names are checked (the client's default). A CA
 * file of {@code -} is plaintext. With KWIRE_SASL_MECHANISM, KWIRE_SASL_USER and
 * KWIRE_SASL_PASSWORD in the environment (never the command line) it authenticates with SASL
 * (SASL_SSL or SASL_PLAINTEXT), as tests/broker_scram_clients.rs runs it against kwire::broker.
 */
public final class TlsClient {
    private static final int RECORDS = 5;

    private TlsClient() {}

    private static String list(List<String> items) {
        List<String> quoted = new ArrayList<>();
        for (String s : items) {
            quoted.add("\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
        }
        return "[" + String.join(",", quoted) + "]";
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        String ca = args[2];
        String topic = prefix + "-t";
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        String mechanism = System.getenv("KWIRE_SASL_MECHANISM");
        boolean tls = !ca.equals("-");
        boolean sasl = mechanism != null && !mechanism.isEmpty();
        common.put("security.protocol", (sasl ? "SASL_" : "") + (tls ? "SSL" : "PLAINTEXT"));
        if (tls) {
            common.put("ssl.truststore.type", "PEM");
            common.put("ssl.truststore.location", ca);
        }
        if (sasl) {
            common.put("sasl.mechanism", mechanism);
            String quote = "\"";
            common.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username="
                    + quote + System.getenv("KWIRE_SASL_USER") + quote + " password=" + quote
                    + System.getenv("KWIRE_SASL_PASSWORD") + quote + ";");
        }
        common.put("client.id", "java-tls-test");
        List<String> produced = new ArrayList<>();
        List<String> consumed = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                String value = prefix + "-" + i;
                sent.add(producer.send(new ProducerRecord<>(topic, 0, null, value)));
                produced.add(value);
            }
            for (Future<RecordMetadata> f : sent) {
                f.get();
            }
        }
        Properties c = new Properties();
        c.putAll(common);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, prefix + "-g");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 40_000;
            while (consumed.size() < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    consumed.add(r.value());
                }
            }
        }
        System.out.println("{\"client\":\"kafka-clients (Java)\",\"produced\":" + list(produced)
                + ",\"consumed\":" + list(consumed) + ",\"errors\":" + list(errors) + "}");
    }
}
