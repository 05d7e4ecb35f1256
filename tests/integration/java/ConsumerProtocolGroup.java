import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * The KIP-848 consumer protocol (group.protocol=consumer) with kafka-clients 4.3:
 * A joins alone, B joins (A gives up only what moves to B), both consume and commit
 * what they read, B leaves (A has everything again), A closes and C resumes from the
 * commits; the admin describes the group as a consumer group. With a fifth argument
 * `regex`, A subscribes by the broker-side pattern topic + ".*" (a SubscriptionPattern)
 * instead, and a topic created after it subscribed (topic + "-later") must reach it.
 * Prints ALONE/REVOKED/FINAL/AFTER lines of partitions, CONSUMED n, RESUMED n,
 * DESCRIBE type state members, LATER partitions, END.
 * Args: bootstrap topic group partitions [regex]
 */
public class ConsumerProtocolGroup {
    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final boolean regex;
        final Set<TopicPartition> held = ConcurrentHashMap.newKeySet();
        final Set<TopicPartition> revoked = ConcurrentHashMap.newKeySet();
        final Map<TopicPartition, Set<Long>> read = new ConcurrentHashMap<>();
        volatile boolean stop = false;
        volatile boolean leave = true;

        Member(String name, String bootstrap, String topic, String group, boolean regex) {
            this.name = name;
            this.topic = topic;
            this.regex = regex;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", "consumer");
            p.put("auto.offset.reset", "earliest");
            p.put("enable.auto.commit", "false");
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            consumer = new KafkaConsumer<>(p);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            consumer.commitSync();
            revoked.addAll(parts);
            held.removeAll(parts);
        }

        public void onPartitionsAssigned(Collection<TopicPartition> parts) { held.addAll(parts); }

        public void onPartitionsLost(Collection<TopicPartition> parts) {
            System.out.println("LOST " + name + " " + parts);
            held.removeAll(parts);
        }

        public void run() {
            // the broker-side regex (RE2J) of KIP-848; a java.util.regex.Pattern is matched
            // by the client itself against its metadata
            if (regex) consumer.subscribe(new SubscriptionPattern(topic + ".*"), this);
            else consumer.subscribe(List.of(topic), this);
            while (!stop) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    read.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                                         k -> ConcurrentHashMap.newKeySet()).add(r.offset());
                }
                consumer.commitSync();
            }
            consumer.close(leave ? CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                                 : CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.DEFAULT));
        }

        int count() { return read.values().stream().mapToInt(Set::size).sum(); }

        Set<Integer> of(String t) {
            Set<Integer> out = new TreeSet<>();
            for (TopicPartition tp : held) if (tp.topic().equals(t)) out.add(tp.partition());
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

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int partitions = Integer.parseInt(args[3]);
        boolean regex = args.length > 4 && args[4].equals("regex");
        long deadline = System.currentTimeMillis() + 150_000;
        produce(bootstrap, topic, 40, 0);
        Member a = new Member("A", bootstrap, topic, group, regex);
        Member b = new Member("B", bootstrap, topic, group, false);
        Thread ta = new Thread(a), tb = new Thread(b);
        ta.start();
        await("A alone", deadline, () -> a.of(topic).size() == partitions);
        System.out.println("ALONE A " + a.of(topic));
        tb.start();
        await("A and B", deadline, () -> !a.held.isEmpty() && !b.held.isEmpty()
                && a.held.size() + b.held.size() == partitions);
        await("all read", deadline, () -> a.count() + b.count() >= 40);
        Thread.sleep(1000);  // a wrong further revocation would show up now
        Set<Integer> revokedA = new TreeSet<>();
        for (TopicPartition tp : a.revoked) revokedA.add(tp.partition());
        System.out.println("REVOKED A " + revokedA);
        System.out.println("FINAL A " + a.of(topic));
        System.out.println("FINAL B " + b.of(topic));
        System.out.println("CONSUMED " + (a.count() + b.count()));
        b.stop = true;
        tb.join(30_000);
        await("A after B left", deadline, () -> a.of(topic).size() == partitions);
        System.out.println("AFTER A " + a.of(topic));
        if (regex) {
            try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
                admin.createTopics(List.of(new NewTopic(topic + "-later", 2, (short) 1))).all().get();
            }
            await("the later topic", deadline, () -> a.of(topic + "-later").size() == 2);
            System.out.println("LATER " + a.of(topic + "-later"));
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            System.out.println("DESCRIBE " + d.type() + " " + d.groupState() + " " + d.members().size());
        }
        a.stop = true;
        ta.join(30_000);
        produce(bootstrap, topic, 5, 40);
        Member c = new Member("C", bootstrap, topic, group, false);
        Thread tc = new Thread(c);
        tc.start();
        await("C resumed", deadline, () -> c.count() >= 5);
        Thread.sleep(1000);
        c.stop = true;
        tc.join(30_000);
        System.out.println("RESUMED " + c.count());
        System.out.println("END");
    }
}
