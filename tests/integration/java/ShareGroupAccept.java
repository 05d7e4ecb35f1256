import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka 4.3.1's share consumer (KIP-932), unmodified, in explicit acknowledgement mode:
 * `members` members of one share group accept every record they get and commit after
 * each poll, until a line arrives on stdin. What each saw, as it happens, one line each:
 * "GOT value deliveryCount" when a record arrives, then "OK value" once its acceptance
 * was committed, or "FAIL value" when the commit failed or did not answer for its
 * partition (the record may come again). Polls return at most `maxPollRecords` records
 * and each member pauses `pauseMs` after one, so a run lasts long enough to be cut.
 */
public class ShareGroupAccept {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void member(String bootstrap, String topic, String group, int maxPollRecords,
                       long pauseMs, AtomicBoolean stop) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", Integer.toString(maxPollRecords));
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (!stop.get()) {
                ConsumerRecords<String, String> got;
                try {
                    got = c.poll(Duration.ofMillis(500));
                } catch (KafkaException e) {
                    say("POLL-ERROR " + e.getClass().getSimpleName());
                    continue;
                }
                if (got.isEmpty()) continue;
                Map<TopicPartition, List<String>> byPartition = new HashMap<>();
                for (ConsumerRecord<String, String> r : got) {
                    say("GOT " + r.value() + " " + r.deliveryCount().orElse((short) -1));
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    byPartition.computeIfAbsent(new TopicPartition(r.topic(), r.partition()),
                        k -> new ArrayList<>()).add(r.value());
                }
                Map<TopicIdPartition, Optional<KafkaException>> result;
                try {
                    result = c.commitSync(Duration.ofSeconds(15));
                } catch (KafkaException e) {
                    result = Map.of();
                }
                Map<TopicPartition, Boolean> ok = new HashMap<>();
                result.forEach((tip, outcome) -> ok.put(tip.topicPartition(), outcome.isEmpty()));
                byPartition.forEach((tp, values) -> {
                    String verdict = ok.getOrDefault(tp, false) ? "OK " : "FAIL ";
                    for (String v : values) say(verdict + v);
                });
                try {
                    Thread.sleep(pauseMs);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int n = Integer.parseInt(args[3]);
        int maxPollRecords = Integer.parseInt(args[4]);
        long pauseMs = Long.parseLong(args[5]);
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] members = new Thread[n];
        for (int i = 0; i < n; i++) {
            members[i] = new Thread(() -> member(bootstrap, topic, group, maxPollRecords, pauseMs, stop));
            members[i].start();
        }
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        stop.set(true);
        for (Thread t : members) t.join();
        say("DONE");
    }
}
