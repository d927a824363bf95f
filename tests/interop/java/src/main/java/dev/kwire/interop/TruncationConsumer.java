package dev.kwire.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A consumer that must detect log truncation, for tests/broker_epochs.rs: it reads partition 0
 * of TOPIC from offset 0 (no group, {@code auto.offset.reset=none}) until it has COUNT records,
 * printing {@code {"record":[offset,epoch,"value"]}} for each and then {@code {"read":COUNT}};
 * then, after a line on its standard input (the test has cut the log), it polls until the
 * client throws {@code LogTruncationException}, and prints
 * {@code {"truncated":[divergent offset, its epoch]}}, or {@code {"no_truncation":N}} with the
 * records it got instead if none is thrown within 30 s. One JSON line per event, flushed.
 *
 * <p>Usage: {@code TruncationConsumer BOOTSTRAP TOPIC COUNT}.
 */
public final class TruncationConsumer {
    private TruncationConsumer() {}

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "truncation-consumer");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "1000");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 0);
            int read = 0;
            long until = System.currentTimeMillis() + 60_000;
            while (read < count && System.currentTimeMillis() < until) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    say("{\"record\":[" + r.offset() + "," + r.leaderEpoch().orElse(-1) + ",\"" + r.value() + "\"]}");
                    read++;
                }
            }
            say("{\"read\":" + read + "}");
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            int after = 0;
            until = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < until) {
                try {
                    after += consumer.poll(Duration.ofMillis(200)).count();
                } catch (LogTruncationException e) {
                    Map<TopicPartition, OffsetAndMetadata> d = e.divergentOffsets();
                    OffsetAndMetadata at = d.get(tp);
                    say("{\"truncated\":[" + at.offset() + "," + at.leaderEpoch().orElse(-1) + "]}");
                    return;
                }
            }
            say("{\"no_truncation\":" + after + "}");
        }
    }
}
