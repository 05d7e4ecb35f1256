import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's online migration between the group protocols with kafka-clients 4.3: A, a
 * consumer of the classic protocol, holds every partition; B joins the same group with
 * group.protocol=consumer (the group is upgraded to a KIP-848 group, A stays in it
 * speaking the classic protocol), the two split the partitions and read everything
 * once; B leaves (the group is downgraded to a classic group) and A has everything
 * again and reads what comes next.
 * Prints ALONE/AFTER lines of partitions, SPLIT a b, CONSUMED n, DESCRIBE type state
 * members [upgraded flags], MORE n, END; TIMEOUT/LOST lines when something went wrong.
 * Args: bootstrap topic group partitions
 */
public class ProtocolMigration {
    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Set<TopicPartition> held = ConcurrentHashMap.newKeySet();
        final Map<TopicPartition, Set<Long>> read = new ConcurrentHashMap<>();
        volatile boolean stop = false;

        Member(String name, String bootstrap, String topic, String group, String protocol) {
            this.name = name;
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", protocol);
            p.put("client.id", "migration-" + name);
            p.put("auto.offset.reset", "earliest");
            p.put("enable.auto.commit", "false");
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            consumer = new KafkaConsumer<>(p);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            consumer.commitSync();
            held.removeAll(parts);
        }

        public void onPartitionsAssigned(Collection<TopicPartition> parts) { held.addAll(parts); }

        public void onPartitionsLost(Collection<TopicPartition> parts) {
            System.out.println("LOST " + name + " " + parts);
            held.removeAll(parts);
        }

        public void run() {
            consumer.subscribe(List.of(topic), this);
            while (!stop) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    read.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                                         k -> ConcurrentHashMap.newKeySet()).add(r.offset());
                }
                consumer.commitSync();
            }
            consumer.close();
        }

        int count() { return read.values().stream().mapToInt(Set::size).sum(); }

        Set<Integer> partitions() {
            Set<Integer> out = new TreeSet<>();
            for (TopicPartition tp : held) out.add(tp.partition());
            return out;
        }
    }

    static void produce(String bootstrap, String topic, int n, int from) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = from; i < from + n; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
        }
    }

    static void await(String what, long deadline, Callable<Boolean> done) throws Exception {
        while (!done.call()) {
            if (System.currentTimeMillis() > deadline) { System.out.println("TIMEOUT " + what); return; }
            Thread.sleep(100);
        }
    }

    /** The group as the admin client describes it, once it is Stable with `members`. */
    static void describe(Admin admin, String group, int members, long deadline) throws Exception {
        String[] last = {""};
        await("describe " + members, deadline, () -> {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            List<String> upgraded = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                upgraded.add(m.clientId() + "=" + m.upgraded().map(String::valueOf).orElse("?"));
            }
            Collections.sort(upgraded);
            last[0] = "DESCRIBE " + d.type() + " " + d.groupState() + " " + d.members().size() + " " + upgraded;
            return d.groupState() == org.apache.kafka.common.GroupState.STABLE && d.members().size() == members;
        });
        System.out.println(last[0]);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int partitions = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 150_000;
        produce(bootstrap, topic, 40, 0);
        Member a = new Member("A", bootstrap, topic, group, "classic");
        Member b = new Member("B", bootstrap, topic, group, "consumer");
        Thread ta = new Thread(a), tb = new Thread(b);
        ta.start();
        await("A alone", deadline, () -> a.partitions().size() == partitions);
        System.out.println("ALONE A " + a.partitions());
        tb.start();
        await("A and B", deadline, () -> !a.held.isEmpty() && !b.held.isEmpty()
                && a.held.size() + b.held.size() == partitions);
        Set<Integer> both = new TreeSet<>(a.partitions());
        both.retainAll(b.partitions());
        System.out.println("SPLIT " + a.held.size() + " " + b.held.size() + " shared " + both);
        await("all read", deadline, () -> a.count() + b.count() >= 40);
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            describe(admin, group, 2, deadline);
            Thread.sleep(500);  // a wrong further move would show up now
            System.out.println("CONSUMED " + (a.count() + b.count()));
            b.stop = true;
            tb.join(30_000);
            await("A after B left", deadline, () -> a.partitions().size() == partitions);
            System.out.println("AFTER A " + a.partitions());
            describe(admin, group, 1, deadline);
        }
        int before = a.count();
        produce(bootstrap, topic, 8, 40);
        await("A reads on", deadline, () -> a.count() >= before + 8);
        System.out.println("MORE " + (a.count() - before));
        a.stop = true;
        ta.join(30_000);
        System.out.println("END");
    }
}
