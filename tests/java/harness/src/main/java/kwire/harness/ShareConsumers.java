package kwire.harness;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Two KafkaShareConsumers in one share group on one topic (tests/broker_share_java.rs).
 * Arguments: bootstrap, topic, group, record count. Once both consumers poll, it produces
 * the records "r0".."r{n-1}"; each consumer acknowledges explicitly: a record whose number
 * is 1 mod 5 is released at its first delivery and accepted at the next, one 2 mod 5 is
 * rejected, the others are accepted. Prints one JSON line per delivery:
 * {"consumer":"a","value":"r1","delivery":1,"action":"release"}, then {"done":true} when
 * every record was accepted or rejected (or {"done":false} after 40 s).
 */
public final class ShareConsumers {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int n = Integer.parseInt(args[3]);
        ConcurrentHashMap<String, Boolean> settled = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentHashMap<String, Boolean> polling = new ConcurrentHashMap<>();
        Thread[] threads = new Thread[2];
        String[] names = {"a", "b"};
        Throwable[] failed = new Throwable[1];
        for (int i = 0; i < 2; i++) {
            String name = names[i];
            threads[i] = new Thread(() -> {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("group.id", group);
                p.put("client.id", "share-" + name);
                p.put("share.acknowledgement.mode", "explicit");
                p.put("key.deserializer", StringDeserializer.class.getName());
                p.put("value.deserializer", StringDeserializer.class.getName());
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                        polling.put(name, true);
                        for (ConsumerRecord<String, String> r : records) {
                            int number = Integer.parseInt(r.value().substring(1));
                            short delivery = r.deliveryCount().orElse((short) -1);
                            String action;
                            AcknowledgeType type;
                            if (number % 5 == 1 && delivery == 1) {
                                action = "release";
                                type = AcknowledgeType.RELEASE;
                            } else if (number % 5 == 2) {
                                action = "reject";
                                type = AcknowledgeType.REJECT;
                            } else {
                                action = "accept";
                                type = AcknowledgeType.ACCEPT;
                            }
                            c.acknowledge(r, type);
                            synchronized (System.out) {
                                System.out.println("{\"consumer\":\"" + name + "\",\"value\":\"" + r.value()
                                    + "\",\"delivery\":" + delivery + ",\"action\":\"" + action + "\"}");
                                System.out.flush();
                            }
                            if (!action.equals("release")) {
                                settled.put(r.value(), true);
                            }
                        }
                        if (!records.isEmpty()) {
                            c.commitSync(Duration.ofSeconds(10));
                        }
                    }
                } catch (Throwable t) {
                    failed[0] = t;
                    t.printStackTrace();
                }
            });
            threads[i].start();
        }
        long until = System.currentTimeMillis() + 15_000;
        while (polling.size() < 2 && System.currentTimeMillis() < until) {
            Thread.sleep(50);
        }
        // Let the second member's join reach the first's assignment.
        Thread.sleep(1500);
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "r" + i));
            }
            producer.flush();
        }
        long deadline = System.currentTimeMillis() + 40_000;
        while (settled.size() < n && System.currentTimeMillis() < deadline && failed[0] == null) {
            Thread.sleep(50);
        }
        boolean done = settled.size() >= n;
        // Past the last settlement: a rejected or accepted record must not come again.
        Thread.sleep(1500);
        stop.set(true);
        for (Thread t : threads) {
            t.join(30_000);
        }
        System.out.println("{\"done\":" + (done && failed[0] == null) + "}");
        System.out.flush();
    }
}
