package dev.kwire.interop;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a KIP-848 consumer group ({@code group.protocol=consumer}), for
 * tests/broker_kip848.rs: it consumes TOPIC in GROUP, commits after each poll's records, and
 * prints one JSON line per event, flushed: {@code {"assigned":[partitions]}},
 * {@code {"revoked":[partitions]}}, {@code {"record":[partition,offset,"value"]}} and, once
 * its standard input ends, {@code {"closed":true}} after closing (which leaves the group).
 *
 * <p>Usage: {@code GroupMember BOOTSTRAP TOPIC GROUP NAME}.
 */
public final class GroupMember {
    private GroupMember() {}

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String partitions(Collection<TopicPartition> tps) {
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : tps) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(tp.partition());
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        String name = args[3];
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() != -1) {
                    // Nothing to read: the end of the input is the signal.
                }
            } catch (IOException e) {
                // Closed: stop as well.
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    say("{\"revoked\":" + partitions(tps) + "}");
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    say("{\"assigned\":" + partitions(tps) + "}");
                }
            });
            while (!stop.get()) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    say("{\"record\":[" + r.partition() + "," + r.offset() + ",\"" + r.value() + "\"]}");
                }
                if (!records.isEmpty()) {
                    // Committed before the next poll, in which a revocation may come.
                    consumer.commitSync();
                }
            }
        }
        say("{\"closed\":true}");
    }
}
