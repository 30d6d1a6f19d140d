/*
 * One consumer-group member, for the real-client tests of the consumer group protocol
 * (tests/clients/test_consumer_protocol.py).  Compiled at test time against kafka-clients
 * 3.9.x and 4.x by tests/clients/conftest.py; 4.x's SubscriptionPattern is reached through
 * reflection so the program compiles against 3.9 too (where it runs classic members only).
 *
 * Usage: java ConsumerProtocol <bootstrap> <group> <subscription> [option | key=value ...]
 *   <subscription>  comma-separated topic names, or with --pattern one broker-side regular
 *                   expression (4.x: consumer.subscribe(new SubscriptionPattern(...)))
 *   key=value       a consumer setting, e.g. group.protocol=consumer, group.remote.assignor=range,
 *                   group.instance.id=s1, max.poll.records=20
 *   --pattern       see above
 *   --records       print every record and commitSync after each non-empty batch
 *   --stop-after=N  (with --records) close once N records were read
 *
 * Output, one line per event, flushed, <ms> from System.currentTimeMillis() (the wall clock the
 * test's other processes share), <partitions> "topic:partition" comma-separated and sorted:
 *   ASSIGNED <ms> <partitions>   taken at the start of onPartitionsAssigned
 *   REVOKED <ms> <partitions>    taken at the end of onPartitionsRevoked (the partitions are
 *                                owned until the callback returns)
 *   LOST <ms> <partitions>       taken at the end of onPartitionsLost
 *   REC <ms> <topic:partition> <offset>
 *   CLOSED <ms>                  after consumer.close() returned
 *   ERROR <ms> <exception>       then exit 1
 * It runs until a line "stop" on stdin or stdin's end (then closes the consumer, which leaves
 * the group: epoch -1, or -2 for a static member of a consumer-protocol group), or SIGKILL.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumerProtocol {
    private static final Object OUT = new Object();

    private static void say(String kind, String rest) {
        synchronized (OUT) {
            String tail = rest.isEmpty() ? "" : " " + rest;
            System.out.println(kind + " " + System.currentTimeMillis() + tail);
            System.out.flush();
        }
    }

    private static String names(Collection<TopicPartition> partitions) {
        return partitions.stream()
                .sorted(Comparator.comparing(TopicPartition::topic)
                        .thenComparingInt(TopicPartition::partition))
                .map(tp -> tp.topic() + ":" + tp.partition())
                .collect(Collectors.joining(","));
    }

    private static final ConsumerRebalanceListener LISTENER = new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            say("ASSIGNED", names(partitions));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            say("REVOKED", names(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            say("LOST", names(partitions));
        }
    };

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            say("ERROR", t.toString().replace('\n', ' '));
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(String[] args) throws Exception {
        Properties settings = new Properties();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        settings.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        settings.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        String bytes = ByteArrayDeserializer.class.getName();
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, bytes);
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, bytes);
        String subscription = args[2];
        boolean pattern = false;
        boolean records = false;
        long stopAfter = -1;
        for (String arg : Arrays.copyOfRange(args, 3, args.length)) {
            if (arg.equals("--pattern")) pattern = true;
            else if (arg.equals("--records")) records = true;
            else if (arg.startsWith("--stop-after=")) stopAfter = Long.parseLong(arg.substring(13));
            else {
                int eq = arg.indexOf('=');
                settings.put(arg.substring(0, eq), arg.substring(eq + 1));
            }
        }
        AtomicBoolean stop = new AtomicBoolean(false);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings);
        watchStdin(stop, consumer);
        if (pattern) subscribePattern(consumer, subscription);
        else consumer.subscribe(Arrays.asList(subscription.split(",")), LISTENER);
        long read = 0;
        try {
            while (!stop.get() && (stopAfter < 0 || read < stopAfter)) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                if (!records || batch.isEmpty()) continue;
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    say("REC", r.topic() + ":" + r.partition() + " " + r.offset());
                    read++;
                }
                consumer.commitSync();
            }
        } catch (WakeupException e) {
            // asked to stop
        }
        consumer.close(Duration.ofSeconds(10));
        say("CLOSED", "");
    }

    /** 4.x's broker-side regular expression subscription, through reflection (see the header). */
    private static void subscribePattern(KafkaConsumer<byte[], byte[]> consumer, String regex)
            throws Exception {
        Class<?> cls = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
        Object subscriptionPattern = cls.getConstructor(String.class).newInstance(regex);
        KafkaConsumer.class.getMethod("subscribe", cls, ConsumerRebalanceListener.class)
                .invoke(consumer, subscriptionPattern, LISTENER);
    }

    private static void watchStdin(AtomicBoolean stop, KafkaConsumer<byte[], byte[]> consumer) {
        Thread watcher = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { }
            } catch (Exception e) {
                // stdin gone: stop as well
            }
            stop.set(true);
            consumer.wakeup();
        });
        watcher.setDaemon(true);
        watcher.start();
    }
}
