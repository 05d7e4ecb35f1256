// Reference Pulsar client for the kop bench (Java, pulsar-client-original from the
// broker's own classpath): the same workload as bench/native_side.py without the
// Python client's per-message overhead. Run by bench/java_side.py:
//   java -cp '<pulsar>/lib/*' PulsarPerf.java produce|consume|latency|windows URL TOPIC N
//        VALUE_BYTES KEY_BYTES LINGER_MS BATCH_BYTES MAX_SECONDS [WARM_TOPIC WARM_N]
// (produce/consume first write/read WARM_N records of WARM_TOPIC, unmeasured, to warm the JIT;
// windows reads "N RATE" lines from stdin and for each sends N records at RATE a second,
// timing each after the first fifth: send -> ack, send -> a reader has it)
// Progress lines go to stderr; the last stdout line is
//   RESULT <records> <seconds> <errors> [latencies in ms, comma separated [e2e latencies]]
import java.util.ArrayList;
import java.util.Collections;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;

public class PulsarPerf {
    public static void main(String[] a) throws Exception {
        String mode = a[0], url = a[1], topic = a[2];
        int n = Integer.parseInt(a[3]), valueBytes = Integer.parseInt(a[4]);
        int keyBytes = Integer.parseInt(a[5]), lingerMs = Integer.parseInt(a[6]);
        int batchBytes = Integer.parseInt(a[7]);
        double maxSeconds = Double.parseDouble(a[8]);
        Random rnd = new Random(7);
        byte[][] values = new byte[257][valueBytes];
        for (byte[] v : values) rnd.nextBytes(v);
        String fmt = "%0" + keyBytes + "d";
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url)
                .ioThreads(1).listenerThreads(1).build()) {
            switch (mode) {
                case "produce" -> {
                    if (a.length > 10) {
                        produce(client, a[9], Integer.parseInt(a[10]), values, fmt, lingerMs, batchBytes,
                                maxSeconds, true);
                    }
                    produce(client, topic, n, values, fmt, lingerMs, batchBytes, maxSeconds, false);
                }
                case "consume" -> {
                    if (a.length > 10) consume(client, a[9], Integer.parseInt(a[10]), fmt, true);
                    consume(client, topic, n, fmt, false);
                }
                case "latency" -> latency(client, topic, n, values, fmt);
                case "windows" -> windows(client, topic, values, fmt, lingerMs, batchBytes);
                default -> throw new IllegalArgumentException(mode);
            }
        }
    }

    static void produce(PulsarClient client, String topic, int n, byte[][] values, String fmt,
                        int lingerMs, int batchBytes, double maxSeconds, boolean warm) throws Exception {
        Producer<byte[]> p = client.newProducer().topic(topic)
                .enableBatching(true).batchingMaxPublishDelay(lingerMs, TimeUnit.MILLISECONDS)
                .batchingMaxBytes(batchBytes).batchingMaxMessages(100_000)
                .blockIfQueueFull(true).maxPendingMessages(10_000)
                .compressionType(CompressionType.NONE).sendTimeout(120, TimeUnit.SECONDS).create();
        AtomicLong acked = new AtomicLong(), errors = new AtomicLong();
        long start = System.nanoTime(), lastPrint = start;
        int sent = 0;
        for (int i = 0; i < n; i++) {
            p.newMessage().key(String.format(fmt, i)).value(values[i % values.length]).sendAsync()
                    .whenComplete((id, ex) -> { if (ex == null) acked.incrementAndGet(); else errors.incrementAndGet(); });
            sent++;
            if ((i & 1023) == 0) {
                long now = System.nanoTime();
                if (now - lastPrint > 2_000_000_000L && !warm) {
                    System.err.println("PROGRESS " + acked.get());
                    lastPrint = now;
                }
                if ((now - start) / 1e9 > maxSeconds) break;
            }
        }
        p.flush();
        double secs = (System.nanoTime() - start) / 1e9;
        p.close();
        if (!warm) System.out.println("RESULT " + sent + " " + secs + " " + errors.get());
    }

    static void consume(PulsarClient client, String topic, int n, String fmt, boolean warm) throws Exception {
        long start = System.nanoTime(), lastPrint = start;
        Reader<byte[]> r = client.newReader().topic(topic).startMessageId(MessageId.earliest)
                .receiverQueueSize(1000).create();
        int got = 0, errors = 0;
        while (got < n) {
            Message<byte[]> m = r.readNext(30, TimeUnit.SECONDS);
            if (m == null) break;
            if (!m.getKey().equals(String.format(fmt, got))) errors++;
            got++;
            if ((got & 1023) == 0) {
                long now = System.nanoTime();
                if (now - lastPrint > 2_000_000_000L && !warm) {
                    System.err.println("PROGRESS " + got);
                    lastPrint = now;
                }
            }
        }
        double secs = (System.nanoTime() - start) / 1e9;
        r.close();
        if (!warm) System.out.println("RESULT " + got + " " + secs + " " + errors);
    }

    static void latency(PulsarClient client, String topic, int n, byte[][] values, String fmt) throws Exception {
        Producer<byte[]> p = client.newProducer().topic(topic).enableBatching(false).create();
        ArrayList<String> out = new ArrayList<>();
        int errors = 0;
        for (int i = 0; i < n + 20; i++) {
            long t0 = System.nanoTime();
            try {
                p.newMessage().key(String.format(fmt, i)).value(values[i % values.length]).send();
            } catch (Exception e) { errors++; continue; }
            if (i >= 20) out.add(String.valueOf((System.nanoTime() - t0) / 1e6));
        }
        p.close();
        System.out.println("RESULT " + out.size() + " 0 " + errors + " " + String.join(",", out));
    }

    // Offered load: N records at `rate` a second (a due-time schedule, so a stall is
    // followed by catch-up, as real producers behave), with batching as in produce.
    // Windows of it in one JVM, one producer and one reader: a stdin line
    // "N RATE" runs a window and prints its RESULT line; end of input ends. Taking turns
    // with other targets, the JIT stays warm between windows.
    static void windows(PulsarClient client, String topic, byte[][] values, String fmt,
                        int lingerMs, int batchBytes) throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        try (Producer<byte[]> p = loadedProducer(client, topic, lingerMs, batchBytes);
             Reader<byte[]> r = client.newReader().topic(topic).startMessageId(MessageId.latest)
                     .receiverQueueSize(1000).create()) {
            System.out.println("READY");
            System.out.flush();
            for (String line; (line = in.readLine()) != null && !line.isBlank(); ) {
                String[] f = line.trim().split(" ");
                System.out.println(window(p, r, Integer.parseInt(f[0]), values, fmt,
                        Double.parseDouble(f[1])));
                System.out.flush();
            }
        }
    }

    static Producer<byte[]> loadedProducer(PulsarClient client, String topic, int lingerMs,
                                           int batchBytes) throws Exception {
        return client.newProducer().topic(topic)
                .enableBatching(true).batchingMaxPublishDelay(lingerMs, TimeUnit.MILLISECONDS)
                .batchingMaxBytes(batchBytes).batchingMaxMessages(100_000)
                .blockIfQueueFull(true).maxPendingMessages(10_000)
                .compressionType(CompressionType.NONE).sendTimeout(120, TimeUnit.SECONDS).create();
    }

    // One window: the RESULT line (send -> ack and send -> the reader has it, in ms, for
    // the records after the first fifth).
    static String window(Producer<byte[]> p, Reader<byte[]> r, int n, byte[][] values,
                         String fmt, double rate) throws Exception {
        long[] sent = new long[n];
        double[] ack = new double[n], e2e = new double[n];
        AtomicLong errors = new AtomicLong();
        Thread reading = new Thread(() -> {
            try {
                for (int got = 0; got < n; got++) {
                    Message<byte[]> m = r.readNext(30, TimeUnit.SECONDS);
                    if (m == null) break;
                    int i = Integer.parseInt(m.getKey());
                    e2e[i] = (System.nanoTime() - sent[i]) / 1e6;
                }
            } catch (Exception e) { errors.incrementAndGet(); }
        });
        reading.start();
        long start = System.nanoTime();
        for (int i = 0; i < n; i++) {
            long due = start + (long) (i * 1e9 / rate);
            long wait = due - System.nanoTime();
            if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
            final int k = i;
            sent[k] = System.nanoTime();
            p.newMessage().key(String.format(fmt, k)).value(values[k % values.length]).sendAsync()
                    .whenComplete((id, ex) -> {
                        if (ex == null) ack[k] = (System.nanoTime() - sent[k]) / 1e6;
                        else errors.incrementAndGet();
                    });
        }
        p.flush();
        double secs = (System.nanoTime() - start) / 1e9;
        reading.join(60_000);
        ArrayList<String> acks = new ArrayList<>(), ends = new ArrayList<>();
        for (int i = n / 5; i < n; i++) {  // the first fifth is not reported
            if (ack[i] > 0) acks.add(String.format("%.3f", ack[i]));
            if (e2e[i] > 0) ends.add(String.format("%.3f", e2e[i]));
        }
        return "RESULT " + n + " " + secs + " " + errors.get() + " "
                + String.join(",", acks) + " " + String.join(",", ends);
    }
}
