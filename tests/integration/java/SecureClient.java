import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/** The Java Kafka client, unmodified, with the security settings given as key=value
 *  arguments: produces n records (the topic made by auto-creation), reads them back.
 *  Prints "PRODUCED n", "READ value,value,...", or "FAILED <exception class>: message". */
public class SecureClient {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int n = Integer.parseInt(args[2]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            common.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        try {
            Properties p = new Properties();
            p.putAll(common);
            p.put("acks", "all");
            try (Producer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
            }
            System.out.println("PRODUCED " + n);
            Properties c = new Properties();
            c.putAll(common);
            c.put("group.id", "secure-" + topic);
            c.put("auto.offset.reset", "earliest");
            List<String> seen = new ArrayList<>();
            try (Consumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                while (seen.size() < n && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) seen.add(r.value());
                consumer.commitSync();
            }
            System.out.println("READ " + String.join(",", seen));
        } catch (Exception e) {
            Throwable t = e;
            while (t.getCause() != null) t = t.getCause();
            System.out.println("FAILED " + t.getClass().getSimpleName() + ": " + t.getMessage());
        }
    }
}
