import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A consumer validating its positions (KIP-320): it reads and commits (the commit
 * carries the records' leader epoch), a second member of the group resumes from the
 * commit (its position is validated with OffsetForLeaderEpoch before it fetches),
 * metadata is refreshed every 300 ms meanwhile, and a seek with an epoch is validated
 * again. Prints what it saw; warnings and errors of the client go to stdout too
 * (log4j2 config from the caller), so the caller can check there are none.
 *
 * Args: bootstrap topic group
 */
public class EpochValidation {
    static Properties consumerProps(String bootstrap, String group) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "none"); // a failed validation must not be hidden by a reset
        p.put("metadata.max.age.ms", "300");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return p;
    }

    static void produce(String bootstrap, String topic, int from, int to) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
            }
        }
    }

    static List<ConsumerRecord<String, String>> read(KafkaConsumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 60_000;
        while (out.size() < n && System.currentTimeMillis() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        return out;
    }

    static String offsets(List<ConsumerRecord<String, String>> records) {
        List<Long> out = new ArrayList<>();
        for (ConsumerRecord<String, String> r : records) out.add(r.offset());
        return out.toString();
    }

    static String epochs(List<ConsumerRecord<String, String>> records) {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<String, String> r : records) {
            String e = r.leaderEpoch().map(String::valueOf).orElse("none");
            if (!out.contains(e)) out.add(e);
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        TopicPartition tp = new TopicPartition(topic, 0);
        produce(bootstrap, topic, 0, 10);

        Properties first = consumerProps(bootstrap, group);
        first.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(first)) {
            a.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = read(a, 10);
            System.out.println("A " + offsets(got) + " EPOCHS " + epochs(got));
            a.commitSync();
            OffsetAndMetadata committed = a.committed(Set.of(tp)).get(tp);
            System.out.println("COMMITTED " + committed.offset() + " EPOCH "
                    + committed.leaderEpoch().map(String::valueOf).orElse("none"));
        }

        produce(bootstrap, topic, 10, 15);
        try (KafkaConsumer<String, String> b = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
            b.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = read(b, 5);
            System.out.println("B " + offsets(got));
            // Across several metadata refreshes, then a seek that carries an epoch.
            long until = System.currentTimeMillis() + 2_000;
            while (System.currentTimeMillis() < until) b.poll(Duration.ofMillis(200));
            b.seek(tp, new OffsetAndMetadata(12, Optional.of(0), ""));
            System.out.println("SEEK " + offsets(read(b, 3)));
            System.out.println("POSITION " + b.position(tp));
        }
        System.out.println("END");
    }
}
