import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Kafka 4.3.1's share consumer (KIP-932), unmodified, in a group whose
 * share.auto.offset.reset is by_duration:PT1H: of three records stamped two hours ago and
 * three stamped now, the group's first fetch starts at the first record of the last hour,
 * so the member reads the three new ones only. A negative duration is refused.
 * Prints "REFUSED <exception>: <message>" and "READ v,v,v".
 */
public class ShareGroupByDuration {
    static void configure(Admin admin, String group, String reset) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        Collection<AlterConfigOp> ops = new ArrayList<>();
        ops.add(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", reset), AlterConfigOp.OpType.SET));
        admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            try {
                configure(admin, group, "by_duration:PT-1H");
                System.out.println("REFUSED nothing");
            } catch (ExecutionException e) {
                System.out.println("REFUSED " + e.getCause().getClass().getSimpleName());
            }
            configure(admin, group, "by_duration:PT1H");
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        pp.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        long now = System.currentTimeMillis();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, now - 7_200_000L, "k", "old" + i)).get();
            for (int i = 0; i < 3; i++) producer.send(new ProducerRecord<>(topic, 0, now, "k", "new" + i)).get();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        TreeSet<String> read = new TreeSet<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + 30_000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(end, quietUntil)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    read.add(r.value());
                    quietUntil = System.currentTimeMillis() + 3_000; // an old one would come by now
                }
            }
        }
        System.out.println("READ " + String.join(",", read));
    }
}
