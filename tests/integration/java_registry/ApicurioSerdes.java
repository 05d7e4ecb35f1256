import io.apicurio.registry.serde.avro.AvroKafkaDeserializer;
import io.apicurio.registry.serde.avro.AvroKafkaSerializer;
import io.apicurio.registry.utils.converter.AvroConverter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;

/**
 * An unmodified Java producer and consumer with Apicurio's Avro serdes, and Kafka
 * Connect's AvroConverter, pointed at kop's registry (its Apicurio v2 face) with
 * Confluent's framing in the value: `as-confluent`, ids in the payload, not in headers.
 *
 * Usage: ApicurioSerdes <bootstrap> <registry url> <topic> <n> <connect topic>
 * Prints PRODUCED, then RECORD sensor|value per record read back, then CONNECT lines.
 */
public class ApicurioSerdes {
    static final String SCHEMA = "{\"type\":\"record\",\"name\":\"Reading\",\"namespace\":\"kop.it\","
        + "\"fields\":[{\"name\":\"sensor\",\"type\":\"string\"},{\"name\":\"value\",\"type\":\"int\"}]}";

    static Map<String, Object> serdes(String registry) {
        Map<String, Object> c = new HashMap<>();
        c.put("apicurio.registry.url", registry);
        c.put("apicurio.registry.auto-register", "true");
        c.put("apicurio.registry.as-confluent", "true");
        c.put("apicurio.registry.use-id", "contentId");
        c.put("apicurio.registry.headers.enabled", "false");
        return c;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], registry = args[1], topic = args[2];
        int n = Integer.parseInt(args[3]);
        Schema schema = new Schema.Parser().parse(SCHEMA);

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", AvroKafkaSerializer.class.getName());
        p.putAll(serdes(registry));
        try (KafkaProducer<String, GenericRecord> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                GenericRecord r = new GenericData.Record(schema);
                r.put("sensor", "s" + i);
                r.put("value", i * 10);
                producer.send(new ProducerRecord<>(topic, "k" + i, r)).get();
            }
        }
        System.out.println("PRODUCED " + n);

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "apicurio-" + topic);
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", AvroKafkaDeserializer.class.getName());
        c.putAll(serdes(registry));
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, GenericRecord> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, GenericRecord> r : consumer.poll(Duration.ofMillis(500))) {
                    got.add(r.value().get("sensor") + "|" + r.value().get("value"));
                }
            }
        }
        for (String line : got) System.out.println("RECORD " + line);

        // Kafka Connect's converter, as a connector's worker calls it
        AvroConverter converter = new AvroConverter();
        converter.configure(serdes(registry), false);
        org.apache.kafka.connect.data.Schema connectSchema = SchemaBuilder.struct().name("kop.it.Reading")
            .field("sensor", org.apache.kafka.connect.data.Schema.STRING_SCHEMA)
            .field("value", org.apache.kafka.connect.data.Schema.INT32_SCHEMA).build();
        Struct struct = new Struct(connectSchema).put("sensor", "c1").put("value", 7);
        byte[] bytes = converter.fromConnectData(args[4], connectSchema, struct);
        System.out.printf("CONNECT BYTES %02x%02x%02x%02x%02x%n", bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]);
        AvroConverter reader = new AvroConverter();
        reader.configure(serdes(registry), false);
        SchemaAndValue back = reader.toConnectData(args[4], bytes);
        Struct value = (Struct) back.value();
        System.out.println("CONNECT " + value.get("sensor") + "|" + value.get("value"));
    }
}
