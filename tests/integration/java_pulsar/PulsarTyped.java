import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.api.schema.GenericSchema;
import org.apache.pulsar.common.schema.SchemaInfo;

/**
 * Pulsar's own Java client on a topic whose schema kop's registry set: it reads the
 * Kafka producer's records as typed values with the topic's schema (AUTO_CONSUME: Avro,
 * JSON, PROTOBUF_NATIVE), and, for Avro and JSON, writes one typed value with that
 * schema (a generic record of the version it read last) for the Kafka consumer.
 *
 * Usage: PulsarTyped <service url> <topic> <n> <field>=<value>[,<field>=<long>...]
 * Prints SCHEMA <type>, RECORD f1|f2... per message read (the fields in schema order),
 * then SENT when it wrote the value the last argument gives.
 */
public class PulsarTyped {
    public static void main(String[] args) throws Exception {
        String url = args[0], topic = args[1];
        int n = Integer.parseInt(args[2]);
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build()) {
            SchemaInfo info = null;  // the schema version of the last message read
            try (Consumer<GenericRecord> consumer = client.newConsumer(Schema.AUTO_CONSUME())
                    .topic(topic).subscriptionName("java-typed")
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                    .subscribe()) {
                for (int i = 0; i < n; i++) {
                    Message<GenericRecord> m = consumer.receive(30, TimeUnit.SECONDS);
                    if (m == null) throw new IllegalStateException("no message " + i);
                    GenericRecord r = m.getValue();
                    StringBuilder line = new StringBuilder("RECORD ");
                    for (int f = 0; f < r.getFields().size(); f++) {
                        line.append(f == 0 ? "" : "|").append(r.getField(r.getFields().get(f)));
                    }
                    System.out.println(line);
                    info = m.getReaderSchema().map(Schema::getSchemaInfo).orElse(null);
                    consumer.acknowledge(m);
                }
            }
            System.out.println("SCHEMA " + (info == null ? null : info.getType()));
            if (args.length < 4 || info == null) return;
            GenericSchema<GenericRecord> schema = Schema.generic(info);
            var builder = schema.newRecordBuilder();
            for (String pair : args[3].split(",")) {
                String[] kv = pair.split("=", 2);
                Object value = kv[1].matches("-?\\d+") ? (Object) Long.valueOf(kv[1]) : kv[1];
                builder.set(kv[0], value);
            }
            try (Producer<GenericRecord> producer = client.newProducer(schema).topic(topic).create()) {
                producer.send(builder.build());
            }
            System.out.println("SENT");
        }
    }
}
