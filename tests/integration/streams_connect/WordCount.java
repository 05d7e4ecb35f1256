import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * An unmodified Kafka Streams 4.3.1 application, as users write them: word count.
 *
 * <p>Lines from the input topic are split into words, re-keyed by word (groupBy: a
 * repartition topic) and counted in a persistent RocksDB store (a compacted changelog
 * topic); every count update goes to the output topic (word -> count as a long).
 * The record cache is off so each update is emitted at once, while offsets are
 * committed only every commit.interval.ms: a SIGKILL then loses uncommitted progress
 * and at_least_once reprocesses it (counts may be over, never under).
 *
 * <p>Args: bootstrap application.id input output state.dir [processing.guarantee, default
 * at_least_once]. Prints "STATE new old" on every state change and "FATAL ..." on an
 * uncaught exception; exits 1 in state ERROR.
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
              args.length > 5 ? args[5] : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 2000);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // A SIGKILLed member is replaced after this, not after the 45 s default.
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(args[2]);
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.as("words"))
            .count(Materialized.as("counts"))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        KafkaStreams.State[] last = {KafkaStreams.State.CREATED};
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now + " " + before);
            last[0] = now;
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("FATAL " + e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(20))));
        streams.start();
        done.await();
        if (last[0] == KafkaStreams.State.ERROR) {
            // halt, not exit: exit would wait for the shutdown hook's close, which waits on us
            Runtime.getRuntime().halt(1);
        }
    }
}
