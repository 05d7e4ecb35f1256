import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Kafka 4.3.1's share consumer (KIP-932), unmodified: `members` members of one share group
 * split what is produced after they joined, each record to one of them (implicit
 * acknowledgement); with "explicit", a member in explicit mode then releases a record and
 * gets it again, delivered twice. Prints "MEMBER i n" per member, "RECEIVED distinct
 * DUPLICATES d", "VALUES v,v,..." and "DELIVERY count" per delivery, "REDELIVERED n".
 * Other consumers of the group's Pulsar subscription may take records meanwhile: the
 * members wait for `count` records or 30 s without a new one.
 */
public class ShareGroupConsume {
    static Properties common(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        return p;
    }

    static void produce(String bootstrap, String topic, List<String> values) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (String v : values) producer.send(new ProducerRecord<>(topic, v, v));
            producer.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int count = Integer.parseInt(args[3]);
        int n = Integer.parseInt(args[4]);
        boolean explicitPhase = args.length > 5 && args[5].equals("explicit");
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        int[] perMember = new int[n];
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] members = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int me = i;
            members[i] = new Thread(() -> {
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(common(bootstrap, group))) {
                    c.subscribe(List.of(topic));
                    while (!stop.get()) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                            seen.merge(r.value(), 1, Integer::sum);
                            perMember[me]++;
                        }
                    }
                }
            });
            members[i].start();
        }
        Thread.sleep(8000); // both joined and fetching: their subscriptions exist (latest)
        List<String> values = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) values.add("v" + i);
        produce(bootstrap, topic, values);
        long deadline = System.currentTimeMillis() + 90_000;
        int last = -1;
        long quietSince = System.currentTimeMillis();
        while (seen.size() < count && System.currentTimeMillis() < deadline
                && System.currentTimeMillis() - quietSince < 30_000) {
            if (seen.size() != last) { last = seen.size(); quietSince = System.currentTimeMillis(); }
            Thread.sleep(200);
        }
        Thread.sleep(2000); // a duplicate would show by now
        stop.set(true);
        for (Thread t : members) t.join();
        int dups = seen.values().stream().mapToInt(k -> k - 1).sum();
        for (int i = 0; i < n; i++) System.out.println("MEMBER " + i + " " + perMember[i]);
        System.out.println("RECEIVED " + seen.size() + " DUPLICATES " + dups);
        System.out.println("VALUES " + String.join(",", seen.keySet()));
        if (!explicitPhase) return;

        Properties explicit = common(bootstrap, group);
        explicit.put("share.acknowledgement.mode", "explicit");
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(explicit)) {
            c.subscribe(List.of(topic));
            long until = System.currentTimeMillis() + 8000;
            while (System.currentTimeMillis() < until) c.poll(Duration.ofMillis(200));
            produce(bootstrap, topic, List.of("again"));
            int delivered = 0;
            long end = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < end && delivered < 2) {
                ConsumerRecords<String, String> got = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : got) {
                    if (!r.value().equals("again")) { c.acknowledge(r, AcknowledgeType.ACCEPT); continue; }
                    delivered++;
                    System.out.println("DELIVERY " + r.deliveryCount().orElse((short) -1));
                    c.acknowledge(r, delivered == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                }
                c.commitSync();
            }
            System.out.println("REDELIVERED " + delivered);
        }
    }
}
