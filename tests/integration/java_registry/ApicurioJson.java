import com.fasterxml.jackson.databind.JsonNode;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaDeserializer;
import io.apicurio.registry.serde.jsonschema.JsonSchemaKafkaSerializer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * An unmodified Java producer and consumer with Apicurio's JSON Schema serdes on kop's
 * registry (its Apicurio v2 face): the topic's JSON Schema is registered beforehand (by
 * a Python client, in the test); the serializer finds its latest version, validates each
 * value against it and frames it with its id; the deserializer fetches it by id.
 *
 * Usage: ApicurioJson <bootstrap> <registry url> <topic> <n>
 * Prints PRODUCED, then RECORD code|count per record read back, then REFUSED when a
 * value the schema does not allow was refused by the serializer.
 */
public class ApicurioJson {
    static Map<String, Object> serdes(String registry) {
        Map<String, Object> c = new HashMap<>();
        c.put("apicurio.registry.url", registry);
        c.put("apicurio.registry.auto-register", "false");
        c.put("apicurio.registry.find-latest", "true");
        c.put("apicurio.registry.as-confluent", "true");
        c.put("apicurio.registry.use-id", "contentId");
        c.put("apicurio.registry.headers.enabled", "false");
        c.put("apicurio.registry.serde.validation-enabled", "true");
        return c;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], registry = args[1], topic = args[2];
        int n = Integer.parseInt(args[3]);

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", JsonSchemaKafkaSerializer.class.getName());
        p.putAll(serdes(registry));
        try (KafkaProducer<String, Map<String, Object>> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("code", "j" + i);
                v.put("count", i);
                producer.send(new ProducerRecord<>(topic, "k" + i, v)).get();
            }
            System.out.println("PRODUCED " + n);
            Map<String, Object> bad = new LinkedHashMap<>();
            bad.put("code", 7);  // the schema says a string
            try {
                producer.send(new ProducerRecord<>(topic, "bad", bad)).get();
            } catch (Exception refused) {
                System.out.println("REFUSED");
            }
        }

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "apicurio-" + topic);
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", JsonSchemaKafkaDeserializer.class.getName());
        c.putAll(serdes(registry));
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, JsonNode> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, JsonNode> r : consumer.poll(Duration.ofMillis(500))) {
                    got.add(r.value().get("code").asText() + "|" + r.value().get("count").asInt());
                }
            }
        }
        for (String line : got) System.out.println("RECORD " + line);
    }
}
