/*
 * One consumer-group member for the rolling migration between the classic and the consumer
 * group protocols (tests/clients/test_protocol_migration.py).  Compiled at test time against
 * kafka-clients 3.9.x and 4.x by tests/clients/conftest.py.
 *
 * Usage: java RollingMember <bootstrap> <topic> <group> <classic|consumer>
 *   classic   the classic protocol with the client's default assignors (range first, then
 *             cooperative-sticky), session timeout 6 s, heartbeats every 500 ms
 *   consumer  group.protocol=consumer (the broker's assignor, session and heartbeats)
 * It reads at most 20 records a poll, prints each and commits synchronously after every
 * non-empty batch (a failed commit is printed and consumption goes on: at-least-once).
 *
 * Output, one line per event, flushed, <ms> = System.currentTimeMillis():
 *   ASSIGNED <ms> <p,p,...>   at the start of onPartitionsAssigned
 *   REVOKED <ms> <p,p,...>    at the end of onPartitionsRevoked
 *   LOST <ms> <p,p,...>       at the end of onPartitionsLost
 *   REC <ms> <partition> <offset> <value>
 *   COMMIT_FAILED <ms> <exception>
 *   CLOSED <ms>               after close() returned (it left the group)
 *   ERROR <ms> <exception>    then exit 1
 * It runs until a line "stop" on stdin or stdin's end.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class RollingMember {
    private static final Object OUT = new Object();

    private static void say(String kind, String rest) {
        synchronized (OUT) {
            System.out.println(kind + " " + System.currentTimeMillis() + (rest.isEmpty() ? "" : " " + rest));
            System.out.flush();
        }
    }

    private static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::partition).sorted().map(String::valueOf)
                .collect(Collectors.joining(","));
    }

    private static final ConsumerRebalanceListener LISTENER = new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            say("ASSIGNED", partitions(tps));
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            say("REVOKED", partitions(tps));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> tps) {
            say("LOST", partitions(tps));
        }
    };

    public static void main(String[] args) {
        try {
            run(args[0], args[1], args[2], args[3]);
        } catch (Throwable t) {
            say("ERROR", t.toString().replace('\n', ' '));
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(String bootstrap, String topic, String group, String protocol) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "20");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        if (protocol.equals("consumer")) {
            p.put("group.protocol", "consumer");
        } else {
            p.put("session.timeout.ms", "6000");
            p.put("heartbeat.interval.ms", "500");
        }
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
        AtomicBoolean stop = new AtomicBoolean(false);
        watchStdin(stop, consumer);
        consumer.subscribe(Collections.singletonList(topic), LISTENER);
        try {
            while (!stop.get()) {
                ConsumerRecords<String, String> batch = consumer.poll(Duration.ofMillis(100));
                if (batch.isEmpty()) continue;
                for (ConsumerRecord<String, String> r : batch)
                    say("REC", r.partition() + " " + r.offset() + " " + r.value());
                try {
                    consumer.commitSync();
                } catch (WakeupException e) {
                    throw e;
                } catch (KafkaException e) {
                    say("COMMIT_FAILED", e.toString().replace('\n', ' '));
                }
            }
        } catch (WakeupException e) {
            // asked to stop
        }
        consumer.close(Duration.ofSeconds(10));
        say("CLOSED", "");
    }

    private static void watchStdin(AtomicBoolean stop, KafkaConsumer<String, String> consumer) {
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
