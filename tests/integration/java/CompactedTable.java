import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;

/**
 * Prints a topic's table as the official Java client reads it with readCompacted:
 * one line per message, "ROW key-hex value-hex" ("-" for a null value), then "END".
 * Usage: java -cp <pulsar lib>/* CompactedTable.java SERVICE_URL TOPIC
 */
public class CompactedTable {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        try (PulsarClient client = PulsarClient.builder().serviceUrl(args[0]).build();
             Reader<byte[]> reader = client.newReader()
                     .topic(args[1])
                     .startMessageId(MessageId.earliest)
                     .readCompacted(true)
                     .create()) {
            while (reader.hasMessageAvailable()) {
                Message<byte[]> m = reader.readNext(10, TimeUnit.SECONDS);
                if (m == null) {
                    break;
                }
                String value = m.getValue() == null ? "-" : hex.formatHex(m.getValue());
                System.out.println("ROW " + hex.formatHex(m.getKeyBytes()) + " " + value);
            }
        }
        System.out.println("END");
    }
}
