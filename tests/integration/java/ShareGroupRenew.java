import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Kafka 4.3.1's share consumer (KIP-932), unmodified, on what ShareFetch and
 * ShareAcknowledge v2 add: the record-limit acquire mode (KIP-1206) and RENEW
 * acknowledgements (KIP-1222). Six records are produced in one batch to a topic of one
 * partition; the group starts at the earliest record and locks records for 15 s.
 *
 * Member A (explicit acknowledgement, share.acquire.mode=record_limit,
 * max.poll.records=2) prints its first poll: two records, not the whole batch. It then
 * renews v0's lock for `renewMs` (longer than the lock) and accepts every other record it
 * gets; member B (implicit acknowledgement) joins after A's first poll and takes what it
 * gets. Without renewal v0's lock would lapse and v0 come again (to B or to A, counted a
 * second delivery); with it v0 is delivered once. Then a second group with
 * share.renew.acknowledge.enable=false: a RENEW there fails for its partition.
 *
 * Prints "FIRST v,v", "LOCK ms", "RENEW-COMMIT ok|<exception>", "V0 deliveries n
 * accepted-by A", "ALL accepted once: true|false", "DISABLED <exception>: <message>".
 */
public class ShareGroupRenew {
    static Properties common(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        return p;
    }

    static void configure(Admin admin, String group, Map<String, String> configs) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        Collection<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
    }

    static String outcome(Map<TopicIdPartition, Optional<KafkaException>> result) {
        for (Optional<KafkaException> e : result.values()) {
            if (e.isPresent()) return e.get().getClass().getSimpleName() + ": " + e.get().getMessage();
        }
        return result.isEmpty() ? "nothing" : "ok";
    }

    static ConsumerRecords<String, String> pollSome(KafkaShareConsumer<String, String> c, long ms) {
        long end = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < end) {
            ConsumerRecords<String, String> got = c.poll(Duration.ofMillis(500));
            if (!got.isEmpty()) return got;
        }
        throw new IllegalStateException("nothing to poll within " + ms + " ms");
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        long renewMs = Long.parseLong(args[3]);
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            configure(admin, group, Map.of("share.auto.offset.reset", "earliest",
                "share.record.lock.duration.ms", "15000"));
            configure(admin, group + "-off", Map.of("share.auto.offset.reset", "earliest",
                "share.renew.acknowledge.enable", "false"));
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("linger.ms", "1000");
        pp.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        pp.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 6; i++) producer.send(new ProducerRecord<>(topic, 0, "k", "v" + i));
            producer.flush();
        }

        Map<String, Integer> accepted = new ConcurrentHashMap<>();
        Map<String, String> acceptedBy = new ConcurrentHashMap<>();
        int[] v0Deliveries = {0};
        AtomicBoolean stop = new AtomicBoolean();
        Properties a = common(bootstrap, group);
        a.put("share.acknowledgement.mode", "explicit");
        a.put("share.acquire.mode", "record_limit");
        a.put("max.poll.records", "2");
        Thread b = null;
        try (KafkaShareConsumer<String, String> ca = new KafkaShareConsumer<>(a)) {
            ca.subscribe(List.of(topic));
            ConsumerRecords<String, String> first = pollSome(ca, 60_000);
            List<String> values = new ArrayList<>();
            for (ConsumerRecord<String, String> r : first) values.add(r.value());
            System.out.println("FIRST " + String.join(",", values));
            System.out.println("LOCK " + ca.acquisitionLockTimeoutMs().orElse(-1));
            b = new Thread(() -> {
                try (KafkaShareConsumer<String, String> cb = new KafkaShareConsumer<>(common(bootstrap, group))) {
                    cb.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : cb.poll(Duration.ofMillis(500))) {
                            accepted.merge(r.value(), 1, Integer::sum);
                            acceptedBy.put(r.value(), "B");
                        }
                    }
                }
            });
            b.start();
            long renewUntil = System.currentTimeMillis() + renewMs;
            boolean firstCommit = true;
            ConsumerRecords<String, String> got = first;
            long end = System.currentTimeMillis() + renewMs + 30_000;
            while (System.currentTimeMillis() < end && !(accepted.size() == 6 && accepted.containsKey("v0"))) {
                for (ConsumerRecord<String, String> r : got) {
                    if (r.value().equals("v0")) v0Deliveries[0] = Math.max(v0Deliveries[0], r.deliveryCount().orElse((short) 0));
                    if (r.value().equals("v0") && System.currentTimeMillis() < renewUntil) {
                        ca.acknowledge(r, AcknowledgeType.RENEW);
                    } else {
                        ca.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted.merge(r.value(), 1, Integer::sum);
                        acceptedBy.put(r.value(), "A");
                    }
                }
                if (!got.isEmpty()) {
                    String result = outcome(ca.commitSync(Duration.ofSeconds(15)));
                    if (firstCommit) System.out.println("RENEW-COMMIT " + result);
                    firstCommit = false;
                    Thread.sleep(2000); // the work a renewed lock is for
                }
                got = ca.poll(Duration.ofMillis(500));
            }
        } finally {
            stop.set(true);
            if (b != null) b.join();
        }
        System.out.println("V0 deliveries " + v0Deliveries[0] + " accepted-by " + acceptedBy.get("v0"));
        boolean once = accepted.size() == 6 && accepted.values().stream().allMatch(n -> n == 1);
        System.out.println("ALL accepted once: " + once + " " + new TreeMap<>(accepted));

        Properties off = common(bootstrap, group + "-off");
        off.put("share.acknowledgement.mode", "explicit");
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(off)) {
            c.subscribe(List.of(topic));
            ConsumerRecords<String, String> got = pollSome(c, 60_000);
            ConsumerRecord<String, String> r = got.iterator().next();
            c.acknowledge(r, AcknowledgeType.RENEW);
            System.out.println("DISABLED " + outcome(c.commitSync(Duration.ofSeconds(15))));
        }
    }
}
