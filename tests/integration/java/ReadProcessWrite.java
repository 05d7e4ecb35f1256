import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * The exactly-once loop of a Kafka application: consume (read_committed), transform,
 * produce, sendOffsetsToTransaction, commit. Any failure (the gateway killed under
 * it included) aborts what it can and starts over with a new producer and consumer,
 * which resume from the group's committed offsets: the standard recovery of a
 * transactional application. Ends once the group's committed offsets reach the end
 * of the input, and prints DONE with the number of restarts.
 * Args: bootstrap input output group transactional.id pause-ms (inside each
 * transaction, before its offsets and commit: where a crash hurts most)
 */
public class ReadProcessWrite {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3], txnId = args[4];
        long pause = Long.parseLong(args[5]);
        int restarts = 0;
        while (true) {
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap, group);
                 KafkaProducer<byte[], byte[]> producer = producer(bootstrap, txnId)) {
                producer.initTransactions();
                consumer.subscribe(List.of(input));
                if (run(consumer, producer, input, output, pause)) {
                    System.out.println("DONE " + restarts);
                    return;
                }
            } catch (KafkaException | IllegalStateException e) {
                restarts++;
                System.out.println("RESTART " + e.getClass().getSimpleName() + ": " + e.getMessage());
                Thread.sleep(500);
            }
        }
    }

    /** True once everything is committed; throws on any failure. */
    static boolean run(KafkaConsumer<byte[], byte[]> consumer, KafkaProducer<byte[], byte[]> producer,
                       String input, String output, long pause) {
        int idle = 0;
        while (true) {
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                if (++idle % 4 == 0 && caughtUp(consumer, input)) return true;
                continue;
            }
            producer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                byte[] out = ("out-" + new String(r.value())).getBytes();
                producer.send(new ProducerRecord<>(output, r.partition(), r.key(), out));
                next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
            }
            sleep(pause);
            producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
            producer.commitTransaction();
        }
    }

    static void sleep(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }

    static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, String input) {
        List<TopicPartition> parts = new ArrayList<>();
        consumer.partitionsFor(input).forEach(p -> parts.add(new TopicPartition(input, p.partition())));
        Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(parts));
        for (TopicPartition tp : parts) {
            OffsetAndMetadata c = committed.get(tp);
            if (c == null || c.offset() < ends.get(tp)) return false;
        }
        return true;
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("max.poll.records", "100");
        // a consumer of an application that started over never left the group: its
        // place is given up after this long (Kafka's default is 45 s)
        p.put("session.timeout.ms", "8000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("default.api.timeout.ms", "20000");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        return new KafkaConsumer<>(p);
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("transaction.timeout.ms", "30000");
        p.put("max.block.ms", "20000");
        p.put("request.timeout.ms", "10000");
        p.put("delivery.timeout.ms", "20000");
        p.put("linger.ms", "5");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        return new KafkaProducer<>(p);
    }
}
