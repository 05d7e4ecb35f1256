import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

/**
 * How long a group of kafka-clients 4.3 consumers takes to settle, with the classic
 * protocol (the Java consumer's default assignors: range, eager) or the KIP-848 consumer
 * protocol (the broker's default assignor). Three phases, each timed from its cause until
 * the group is settled: every partition held by exactly one member, every member holding
 * at least one, unchanged for SETTLED_MS (the time reported is when that stretch began).
 *   start:  members-1 consumers subscribe at once
 *   joins:  one more subscribes
 *   leaves: one of them closes (leaving the group)
 * Prints "PHASE name members ms" (or "PHASE name members TIMEOUT"), then END.
 * Args: bootstrap topic partitions members classic|consumer timeout-s
 */
public class RebalanceTimer {
    static final long SETTLED_MS = 1000;

    static final class Member implements Runnable, ConsumerRebalanceListener {
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Set<TopicPartition> held = ConcurrentHashMap.newKeySet();
        volatile boolean stop = false;
        final Thread thread = new Thread(this);

        Member(String bootstrap, String topic, String group, String protocol) {
            this.topic = topic;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", protocol);
            p.put("enable.auto.commit", "false");
            p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            consumer = new KafkaConsumer<>(p);
        }

        public void onPartitionsRevoked(Collection<TopicPartition> parts) { held.removeAll(parts); }
        public void onPartitionsAssigned(Collection<TopicPartition> parts) { held.addAll(parts); }
        public void onPartitionsLost(Collection<TopicPartition> parts) { held.removeAll(parts); }

        public void run() {
            consumer.subscribe(List.of(topic), this);
            while (!stop) consumer.poll(Duration.ofMillis(50));
            consumer.close();
        }
    }

    static boolean settled(List<Member> members, int partitions) {
        Set<TopicPartition> all = new HashSet<>();
        int total = 0;
        for (Member m : members) {
            Set<TopicPartition> mine = new HashSet<>(m.held);
            if (mine.isEmpty()) return false;
            total += mine.size();
            all.addAll(mine);
        }
        return total == partitions && all.size() == partitions;
    }

    /** Milliseconds from `since` until the group settled (-1: not within the timeout). */
    static long until(List<Member> members, int partitions, long since, long timeoutMs)
            throws InterruptedException {
        long settledAt = -1;
        while (System.nanoTime() - since < timeoutMs * 1_000_000L) {
            long now = System.nanoTime();
            if (settled(members, partitions)) {
                if (settledAt < 0) settledAt = now;
                if (now - settledAt >= SETTLED_MS * 1_000_000L) return (settledAt - since) / 1_000_000L;
            } else {
                settledAt = -1;
            }
            Thread.sleep(5);
        }
        return -1;
    }

    static void report(String phase, int members, long ms) {
        System.out.println("PHASE " + phase + " " + members + " " + (ms < 0 ? "TIMEOUT" : Long.toString(ms)));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], protocol = args[4];
        int partitions = Integer.parseInt(args[2]), n = Integer.parseInt(args[3]);
        long timeoutMs = Long.parseLong(args[5]) * 1000L;
        String group = "bench-rebalance-" + protocol + "-" + UUID.randomUUID().toString().substring(0, 8);
        List<Member> members = new ArrayList<>();
        for (int i = 0; i < n; i++) members.add(new Member(bootstrap, topic, group, protocol));
        List<Member> live = new ArrayList<>(members.subList(0, n - 1));

        long t0 = System.nanoTime();
        for (Member m : live) m.thread.start();
        report("start", live.size(), until(live, partitions, t0, timeoutMs));

        Member last = members.get(n - 1);
        live.add(last);
        t0 = System.nanoTime();
        last.thread.start();
        report("joins", live.size(), until(live, partitions, t0, timeoutMs));

        Member leaving = live.remove(0);
        t0 = System.nanoTime();
        leaving.stop = true;
        report("leaves", live.size(), until(live, partitions, t0, timeoutMs));

        for (Member m : live) m.stop = true;
        leaving.thread.join(30_000);
        for (Member m : live) m.thread.join(30_000);
        System.out.println("END");
    }
}
