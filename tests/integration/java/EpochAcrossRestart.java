import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * One consumer kept open across a restart of kop, which takes the partition in a
 * newer leader epoch: the consumer is fenced, refreshes its metadata, validates its
 * position (offset and epoch of the last record it read) with OffsetForLeaderEpoch,
 * and reads on from where it was, with no reset (auto.offset.reset=none: a failed
 * validation throws). Records are produced by the caller (EpochValidation.produce).
 *
 * Args: bootstrap topic. Prints "RESTART" after the first 10 records and waits for a
 * line on stdin (the caller restarts kop and produces 5 more meanwhile).
 */
public class EpochAcrossRestart {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        TopicPartition tp = new TopicPartition(topic, 0);
        EpochValidation.produce(bootstrap, topic, 0, 10);
        Properties p = EpochValidation.consumerProps(bootstrap, "unused");
        p.remove("group.id");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            List<ConsumerRecord<String, String>> got = EpochValidation.read(c, 10);
            System.out.println("A " + EpochValidation.offsets(got) + " EPOCHS "
                    + EpochValidation.epochs(got));
            System.out.println("RESTART");
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            got = EpochValidation.read(c, 5);
            System.out.println("B " + EpochValidation.offsets(got));
            System.out.println("POSITION " + c.position(tp));
        }
        System.out.println("END");
    }
}
