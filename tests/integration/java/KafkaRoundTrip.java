import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.*;

/** The Java Kafka client, unmodified, against kop: admin, idempotent produce, consume,
 *  offsetsForTimes. Prints one line per record, "offset|key-hex|value-hex|ts|headers". */
public class KafkaRoundTrip {
    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], compression = args[2], format = args[3];
        int n = Integer.parseInt(args[4]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            NewTopic t = new NewTopic(topic, 1, (short) 1).configs(Map.of("kop.entry.format", format));
            admin.createTopics(List.of(t)).all().get();
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put("compression.type", compression);
        p.put("linger.ms", "5");
        p.put("acks", "all");  // idempotence is on by default in 3.x
        List<Long> offsets = new ArrayList<>();
        try (Producer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<java.util.concurrent.Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                byte[] key = i % 4 == 3 ? null : ("key-" + i).getBytes(StandardCharsets.UTF_8);
                byte[] value = i % 5 == 4 ? null : ("value-" + i).getBytes(StandardCharsets.UTF_8);
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, 1_700_000_000_000L + i * 10L, key, value);
                r.headers().add("h", new byte[] {(byte) i, (byte) 0xff});
                futures.add(producer.send(r));
            }
            for (var f : futures) offsets.add(f.get().offset());
        }
        System.out.println("PRODUCED " + offsets);
        Properties c = new Properties();
        c.putAll(common);
        c.put("enable.auto.commit", "false");
        try (Consumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    StringBuilder hs = new StringBuilder();
                    for (Header h : r.headers()) hs.append(h.key()).append('=').append(hex(h.value())).append(';');
                    System.out.println("RECORD " + r.offset() + "|" + hex(r.key()) + "|" + hex(r.value()) + "|" + r.timestamp() + "|" + hs);
                    seen++;
                }
            }
            var found = consumer.offsetsForTimes(Map.of(tp, 1_700_000_000_000L + 205L)).get(tp);
            System.out.println("TIME " + (found == null ? -1 : found.offset()));
            System.out.println("END " + consumer.endOffsets(List.of(tp)).get(tp));
        }
    }
}
