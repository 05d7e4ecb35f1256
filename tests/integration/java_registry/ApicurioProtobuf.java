import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaDeserializer;
import io.apicurio.registry.serde.protobuf.ProtobufKafkaSerializer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
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
 * An unmodified Java producer and consumer with Apicurio's Protobuf serdes on kop's
 * registry (its Apicurio v2 face). The serializer registers the message's file as
 * `.proto` text (which kop compiles with protoc); the deserializer fetches the schema by
 * id, as the `.proto` text kop writes back from the descriptor, and parses it with its
 * own parser (Square's Wire) to read each record as a DynamicMessage.
 *
 * Usage: ApicurioProtobuf <bootstrap> <registry url> <topic> <n>
 * Prints PRODUCED, then RECORD sensor|value per record read back.
 */
public class ApicurioProtobuf {
    static Descriptor reading() throws Exception {
        FieldDescriptorProto.Label optional = FieldDescriptorProto.Label.LABEL_OPTIONAL;
        FileDescriptorProto file = FileDescriptorProto.newBuilder()
            .setName("kop/it/reading.proto").setPackage("kop.it").setSyntax("proto3")
            .addMessageType(DescriptorProto.newBuilder().setName("Reading")
                .addField(FieldDescriptorProto.newBuilder().setName("sensor").setNumber(1)
                    .setLabel(optional).setType(FieldDescriptorProto.Type.TYPE_STRING))
                .addField(FieldDescriptorProto.newBuilder().setName("value").setNumber(2)
                    .setLabel(optional).setType(FieldDescriptorProto.Type.TYPE_INT32)))
            .build();
        return FileDescriptor.buildFrom(file, new FileDescriptor[0]).findMessageTypeByName("Reading");
    }

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
        Descriptor type = reading();

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", ProtobufKafkaSerializer.class.getName());
        p.putAll(serdes(registry));
        try (KafkaProducer<String, DynamicMessage> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                DynamicMessage m = DynamicMessage.newBuilder(type)
                    .setField(type.findFieldByName("sensor"), "s" + i)
                    .setField(type.findFieldByName("value"), i * 10).build();
                producer.send(new ProducerRecord<>(topic, "k" + i, m)).get();
            }
        }
        System.out.println("PRODUCED " + n);

        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "apicurio-" + topic);
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", ProtobufKafkaDeserializer.class.getName());
        c.putAll(serdes(registry));
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, DynamicMessage> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (got.size() < n && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, DynamicMessage> r : consumer.poll(Duration.ofMillis(500))) {
                    Descriptor read = r.value().getDescriptorForType();
                    got.add(r.value().getField(read.findFieldByName("sensor")) + "|"
                        + r.value().getField(read.findFieldByName("value")));
                }
            }
        }
        for (String line : got) System.out.println("RECORD " + line);
    }
}
