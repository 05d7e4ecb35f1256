import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/**
 * KIP-345 and KIP-814 with the Java client: static members A (the group's leader,
 * it joins first) and B settle; A closes (a static member does not leave) and a new
 * A with the same group.instance.id starts. Prints what B had revoked meanwhile
 * (REVOKED B) and what each holds at the end (FINAL), so the test can check that
 * the restart moved nothing.
 * Args: bootstrap topic group partitions
 */
public class StaticRestart {
    static final class Member implements Runnable, ConsumerRebalanceListener {
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Set<Integer> held = ConcurrentHashMap.newKeySet();
        final List<Integer> revoked = Collections.synchronizedList(new ArrayList<>());
        volatile boolean stop = false;

        Member(String instance, String bootstrap, String topic, String group) {
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.instance.id", instance);
            p.put("session.timeout.ms", "30000");
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

        public void run() {
            consumer.subscribe(List.of(topic), this);
            while (!stop) consumer.poll(Duration.ofMillis(100));
            consumer.close();
        }
    }

    static boolean split(Member a, Member b, int partitions) {
        Set<Integer> all = new HashSet<>(a.held);
        all.addAll(b.held);
        return !a.held.isEmpty() && !b.held.isEmpty() && all.size() == partitions
            && a.held.size() + b.held.size() == partitions;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int partitions = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 120_000;
        Member a = new Member("a", bootstrap, topic, group);
        Thread ta = new Thread(a);
        ta.start();
        while (a.held.size() < partitions && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Member b = new Member("b", bootstrap, topic, group);
        Thread tb = new Thread(b);
        tb.start();
        while (!split(a, b, partitions) && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Thread.sleep(1000);
        System.out.println("BEFORE A " + new TreeSet<>(a.held));
        System.out.println("BEFORE B " + new TreeSet<>(b.held));
        b.revoked.clear();
        a.stop = true;
        ta.join(30_000);  // closed without leaving: it is static
        Member again = new Member("a", bootstrap, topic, group);
        Thread tagain = new Thread(again);
        tagain.start();
        while (!split(again, b, partitions) && System.currentTimeMillis() < deadline) Thread.sleep(100);
        Thread.sleep(3000);  // a rebalance the restart started would show up now
        System.out.println("REVOKED B " + new TreeSet<>(b.revoked));
        System.out.println("FINAL A " + new TreeSet<>(again.held));
        System.out.println("FINAL B " + new TreeSet<>(b.held));
        again.stop = true;
        b.stop = true;
        tagain.join(30_000);
        tb.join(30_000);
        System.out.println("END");
    }
}
