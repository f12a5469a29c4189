package cdc.lakehouse.harness;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;

import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Debezium's embedded engine producing every change event to Kafka, as Kafka Connect would.
 *
 * <p>The real-database harness (ingestion/lakehouse/local/debezium.py) runs this program so that
 * the lakehouse reads what a real Debezium deployment writes: the {@code Json} format (Kafka
 * Connect's JsonConverter, schemas enabled), the record's destination as the topic, the key and
 * the value as bytes, a tombstone as a null value. A batch's offsets are committed only after
 * Kafka acknowledged every record of it, so a restart replays (at least once) and never skips.
 *
 * <p>Usage: {@code DebeziumToKafka ENGINE_PROPERTIES BOOTSTRAP_SERVERS [UNTIL_IDLE_SECONDS]}. With
 * an idle time the program stops by itself once the connector streams (its snapshot is over) and
 * no event came for that long; without one it runs until SIGTERM. Progress goes to stderr.
 */
public final class DebeziumToKafka {

    private DebeziumToKafka() {
    }

    private static void progress(String message) {
        System.err.println("[debezium] " + message);
        System.err.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3) {
            System.err.println("usage: DebeziumToKafka ENGINE_PROPERTIES BOOTSTRAP_SERVERS [UNTIL_IDLE_SECONDS]");
            System.exit(2);
        }
        Properties engineProps = new Properties();
        try (InputStream in = Files.newInputStream(Path.of(args[0]))) {
            engineProps.load(in);
        }
        double idleSeconds = args.length == 3 ? Double.parseDouble(args[2]) : -1;
        // The binlog client logs each connection at INFO through java.util.logging onto stderr.
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
        System.exit(run(engineProps, args[1], idleSeconds));
    }

    private static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        // Idempotence keeps each partition's records in the order Debezium emitted them across retries.
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, String.valueOf(16 * 1024 * 1024));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static byte[] bytes(String text) {
        return text == null ? null : text.getBytes(StandardCharsets.UTF_8);
    }

    static int run(Properties engineProps, String bootstrap, double idleSeconds) throws Exception {
        AtomicLong produced = new AtomicLong();
        AtomicLong lastEventNanos = new AtomicLong(System.nanoTime());
        // A batch being produced is not idleness: the first send to a new topic waits for its creation.
        AtomicBoolean producing = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch finished = new CountDownLatch(1);
        KafkaProducer<byte[], byte[]> producer = producer(bootstrap);

        DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> consumer = (records, committer) -> {
            producing.set(true);
            List<Future<RecordMetadata>> sent = new ArrayList<>(records.size());
            for (ChangeEvent<String, String> event : records) {
                sent.add(producer.send(new ProducerRecord<>(event.destination(), bytes(event.key()), bytes(event.value()))));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                try {
                    f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new RuntimeException("producing to Kafka at " + bootstrap + " failed: " + e.getCause(), e.getCause());
                }
            }
            for (ChangeEvent<String, String> event : records) {
                committer.markProcessed(event);
            }
            committer.markBatchFinished();
            produced.addAndGet(records.size());
            lastEventNanos.set(System.nanoTime());
            producing.set(false);
        };

        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(engineProps)
                .notifying(consumer)
                .using((success, message, error) -> {
                    if (!success) {
                        failure.set(error != null ? error : new RuntimeException(message));
                        progress("the connector stopped with an error: " + message
                                + (error != null ? " (" + error + ")" : ""));
                    }
                    finished.countDown();
                })
                .build();

        ExecutorService executor = Executors.newSingleThreadExecutor();
        Thread hook = new Thread(() -> closeQuietly(engine));
        Runtime.getRuntime().addShutdownHook(hook);
        progress("connector " + engineProps.getProperty("connector.class") + " started, producing to " + bootstrap);
        executor.execute(engine);

        long lastReport = System.nanoTime();
        long reported = -1;
        boolean streaming = false;
        while (!finished.await(500, TimeUnit.MILLISECONDS)) {
            long now = System.nanoTime();
            if (!streaming && streamingConnected()) {
                streaming = true;
                // The idle clock starts when streaming starts: a snapshot can be silent for long.
                lastEventNanos.accumulateAndGet(now, Math::max);
                progress("snapshot done, streaming (" + produced.get() + " events so far)");
            }
            if (now - lastReport > TimeUnit.SECONDS.toNanos(10) && produced.get() != reported) {
                reported = produced.get();
                lastReport = now;
                progress(reported + " events produced");
            }
            if (idleSeconds >= 0 && streaming && !producing.get()
                    && now - lastEventNanos.get() > (long) (idleSeconds * 1_000_000_000L)) {
                progress("no event for " + idleSeconds + " s: stopping");
                break;
            }
        }
        closeQuietly(engine);
        finished.await(60, TimeUnit.SECONDS);
        executor.shutdown();
        executor.awaitTermination(60, TimeUnit.SECONDS);
        producer.close();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the JVM is already exiting (SIGTERM): the hook has closed the engine
        }
        progress("stopped: " + produced.get() + " events produced");
        return failure.get() == null ? 0 : 1;
    }

    /** True once a Debezium connector's streaming metrics say it is connected (snapshot over). */
    private static boolean streamingConnected() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            Set<ObjectName> names = server.queryNames(
                    new ObjectName("debezium.*:type=connector-metrics,context=streaming,*"), null);
            for (ObjectName name : names) {
                if (Boolean.TRUE.equals(server.getAttribute(name, "Connected"))) {
                    return true;
                }
            }
        } catch (Exception e) {
            return false;
        }
        return false;
    }

    private static void closeQuietly(DebeziumEngine<?> engine) {
        try {
            engine.close();
        } catch (IOException e) {
            progress("closing the engine failed: " + e);
        }
    }
}
