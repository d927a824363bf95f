import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application as one tenant of {@code kwire proxy --tenants}, for
 * tests/proxy_tls.rs. Both tenants run it with the same application id and topic names.
 *
 * <p>Phase {@code run} (through the proxy, as USER): creates {@code words-TAG} (2 partitions)
 * and {@code counts-TAG}, produces the tenant's own words (each word starts with USER, and
 * {@code USER-w<i>} is sent {@code i + 1} times), and runs a word count with exactly-once v2:
 * a re-keying {@code groupBy} (an internal repartition topic) and a {@code count} into a
 * persistent state store (RocksDB, with its changelog topic) written to {@code counts-TAG}. It
 * reads that topic with {@code read_committed} until every word has its count, and prints
 * {"counts": {word: latest count}, "expected": {...}, "topics": [...], "groups": [...]}, the
 * topics and groups as the tenant lists them.
 *
 * <p>Phase {@code broker} (on the broker's PLAINTEXT listener, USER "-"): prints {"topics",
 * "groups", "transactions"}: the names the broker holds that contain TAG.
 *
 * <p>Run from source: {@code java -cp 'target/java-client/lib/*' tests/proxy/TenantStreams.java
 * BOOTSTRAP USER TAG PHASE}, with the SASL PLAIN password in KWIRE_SASL_PASSWORD.
 */
public final class TenantStreams {
    private static final int WORDS = 5;
    private static final Duration DEADLINE = Duration.ofSeconds(90);

    private TenantStreams() {}

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String json(Collection<String> items) {
        List<String> out = new ArrayList<>();
        for (String s : items) {
            out.add(quote(s));
        }
        return "[" + String.join(",", out) + "]";
    }

    private static String json(Map<String, Long> counts) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            out.add(quote(e.getKey()) + ":" + e.getValue());
        }
        return "{" + String.join(",", out) + "}";
    }

    private static Properties auth(String bootstrap, String user) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        if (!user.equals("-")) {
            p.put("security.protocol", "SASL_PLAINTEXT");
            p.put("sasl.mechanism", "PLAIN");
            p.put(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                            + user
                            + "\" password=\""
                            + System.getenv("KWIRE_SASL_PASSWORD")
                            + "\";");
        }
        return p;
    }

    private static TreeSet<String> named(Collection<String> names, String tag) {
        TreeSet<String> out = new TreeSet<>();
        for (String n : names) {
            if (n.contains(tag)) {
                out.add(n);
            }
        }
        return out;
    }

    private static TreeSet<String> groups(Admin admin, String tag) throws Exception {
        List<String> ids = new ArrayList<>();
        for (GroupListing g : admin.listGroups().all().get()) {
            ids.add(g.groupId());
        }
        return named(ids, tag);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String user = args[1];
        String tag = args[2];
        String phase = args[3];
        Properties auth = auth(bootstrap, user);
        if (phase.equals("broker")) {
            try (Admin admin = Admin.create(auth)) {
                TreeSet<String> topics = named(admin.listTopics().names().get(), tag);
                List<String> txns = new ArrayList<>();
                for (TransactionListing t : admin.listTransactions().all().get()) {
                    txns.add(t.transactionalId());
                }
                System.out.println(
                        "{\"topics\":" + json(topics) + ",\"groups\":" + json(groups(admin, tag))
                                + ",\"transactions\":" + json(named(txns, tag)) + "}");
            }
            return;
        }
        String input = "words-" + tag;
        String output = "counts-" + tag;
        try (Admin admin = Admin.create(auth)) {
            admin.createTopics(List.of(new NewTopic(input, 2, (short) 1), new NewTopic(output, 1, (short) 1)))
                    .all()
                    .get();
        }
        TreeMap<String, Long> expected = new TreeMap<>();
        Properties producerProps = (Properties) auth.clone();
        producerProps.put("key.serializer", StringSerializer.class.getName());
        producerProps.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps)) {
            for (int i = 0; i < WORDS; i++) {
                String word = user + "-w" + i;
                expected.put(word, (long) i + 1);
                for (int n = 0; n <= i; n++) {
                    // Keyed by the occurrence, so that groupBy must re-key through a repartition topic.
                    producer.send(new ProducerRecord<>(input, word + "#" + n, word)).get();
                }
            }
        }

        Properties config = (Properties) auth.clone();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, "wordcount-" + tag);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        config.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        Path stateDir = Files.createTempDirectory("kwire-streams");
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("word-counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        TreeMap<String, Long> counts = new TreeMap<>();
        try (KafkaStreams streams = new KafkaStreams(builder.build(), config)) {
            streams.start();
            Properties consumerProps = (Properties) auth.clone();
            consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + tag);
            consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            consumerProps.put("key.deserializer", StringDeserializer.class.getName());
            consumerProps.put("value.deserializer", LongDeserializer.class.getName());
            long end = System.nanoTime() + DEADLINE.toNanos();
            try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(consumerProps)) {
                consumer.subscribe(List.of(output));
                while (!counts.equals(expected) && System.nanoTime() < end) {
                    for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(500))) {
                        counts.put(r.key(), r.value());
                    }
                    if (streams.state() == KafkaStreams.State.ERROR) {
                        break;
                    }
                }
            }
            String state = streams.state().toString();
            streams.close(Duration.ofSeconds(20));
            try (Admin admin = Admin.create(auth)) {
                TreeSet<String> topics = named(admin.listTopics().names().get(), tag);
                System.out.println(
                        "{\"counts\":" + json(counts) + ",\"expected\":" + json(expected) + ",\"state\":"
                                + quote(state) + ",\"topics\":" + json(topics) + ",\"groups\":"
                                + json(groups(admin, tag)) + "}");
            }
        } finally {
            // The stores' directory is this run's alone: nothing of it stays in the temporary folder.
            try (Stream<Path> paths = Files.walk(stateDir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }
}
