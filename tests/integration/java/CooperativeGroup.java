import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/**
 * Two Java consumers with the cooperative-sticky assignor join one group in turn.
 * Prints what the first had to give up (REVOKED) and what each holds at the end
 * (FINAL), so the test can check that only the moved partitions were revoked.
 * Args: bootstrap topic group partitions
 */
public class CooperativeGroup {
    static final class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Set<Integer> held = ConcurrentHashMap.newKeySet();
        final Set<Integer> revoked = ConcurrentHashMap.newKeySet();
        volatile boolean stop = false;

        Member(String name, String bootstrap, String topic, String group) {
            this.name = name;
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("partition.assignment.strategy",
                  "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            consumer = new KafkaConsumer<>(p);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) { revoked.add(tp.partition()); held.remove(tp.partition()); }
        }

        public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            for (TopicPartition tp : parts) held.add(tp.partition());
        }

        public void onPartitionsLost(Collection<TopicPartition> parts) {
            System.out.println("LOST " + name + " " + parts);
            for (TopicPartition tp : parts) held.remove(tp.partition());
        }

        public void run() {
            consumer.subscribe(List.of(topic), this);
            while (!stop) consumer.poll(Duration.ofMillis(100));
            consumer.close();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int partitions = Integer.parseInt(args[3]);
        Member a = new Member("A", bootstrap, topic, group);
        Member b = new Member("B", bootstrap, topic, group);
        Thread ta = new Thread(a), tb = new Thread(b);
        ta.start();
        long deadline = System.currentTimeMillis() + 90_000;
        while (a.held.size() < partitions && System.currentTimeMillis() < deadline) Thread.sleep(100);
        System.out.println("ALONE A " + new TreeSet<>(a.held));
        tb.start();
        while (System.currentTimeMillis() < deadline) {
            Set<Integer> all = new HashSet<>(a.held);
            all.addAll(b.held);
            if (!a.held.isEmpty() && !b.held.isEmpty() && all.size() == partitions
                    && a.held.size() + b.held.size() == partitions) break;
            Thread.sleep(100);
        }
        Thread.sleep(2000);  // any further (wrong) revocation would show up now
        System.out.println("REVOKED A " + new TreeSet<>(a.revoked));
        System.out.println("FINAL A " + new TreeSet<>(a.held));
        System.out.println("FINAL B " + new TreeSet<>(b.held));
        a.stop = true;
        b.stop = true;
        ta.join(30_000);
        tb.join(30_000);
        System.out.println("END");
    }
}
