import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;

/**
 * Kafka 4.3.1's share consumer (KIP-932), unmodified, in a group with a dead-letter topic
 * (KIP-1191's errors.deadletterqueue.* configs, which Kafka's next release adds). The
 * topic is created opted in (errors.deadletterqueue.group.enable=true); the group copies
 * records and allows two deliveries. Of v0..v3 the member accepts v0 and v3, rejects v1
 * and releases v2 at each of its two deliveries. A plain consumer then reads the
 * dead-letter topic: prints "LETTER <value> <offset> <count> <message>" per letter, sorted.
 */
public class ShareGroupDeadLetters {
    static String header(ConsumerRecord<String, String> r, String key) {
        Header h = r.headers().lastHeader(key);
        return h == null ? "-" : new String(h.value(), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], dlq = args[3];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            NewTopic letters = new NewTopic(dlq, 1, (short) 1)
                .configs(Map.of("errors.deadletterqueue.group.enable", "true"));
            admin.createTopics(List.of(letters)).all().get();
            ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
            Collection<AlterConfigOp> ops = new ArrayList<>();
            for (String[] kv : new String[][] {
                    {"share.auto.offset.reset", "earliest"}, {"share.delivery.count.limit", "2"},
                    {"errors.deadletterqueue.topic.name", dlq},
                    {"errors.deadletterqueue.copy.record.enable", "true"}}) {
                ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        pp.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        int v2 = 0;
        TreeSet<String> accepted = new TreeSet<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < end && (accepted.size() < 2 || v2 < 2)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    switch (r.value()) {
                        case "v1" -> c.acknowledge(r, AcknowledgeType.REJECT);
                        case "v2" -> { v2++; c.acknowledge(r, AcknowledgeType.RELEASE); }
                        default -> { accepted.add(r.value()); c.acknowledge(r, AcknowledgeType.ACCEPT); }
                    }
                }
                c.commitSync();
            }
        }
        System.out.println("ACCEPTED " + String.join(",", accepted) + " V2-DELIVERIES " + v2);
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        cp.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        TreeSet<String> seen = new TreeSet<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(dlq, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < end && seen.size() < 2) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    seen.add("LETTER " + r.value() + " key=" + r.key()
                        + " topic=" + header(r, "__dlq.errors.topic")
                        + " offset=" + header(r, "__dlq.errors.offset")
                        + " group=" + header(r, "__dlq.errors.group")
                        + " count=" + header(r, "__dlq.errors.delivery.count")
                        + " " + header(r, "__dlq.errors.message"));
                }
            }
        }
        seen.forEach(System.out::println);
    }
}
