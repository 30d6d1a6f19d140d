/*
 * One short consumer-group session with the stock Java consumer and the consumer group
 * protocol (group.protocol=consumer): join, consume every record, commit, leave.  Run once
 * against Kafka 3.9 (KRaft, the protocol's preview) and once against kafkapy by
 * tests/conformance/test_consumer_protocol.py, which compares the two outputs; compiled there
 * against kafka-clients 4.3.
 *
 * Usage: java ConsumerSession <bootstrap> <group> <topics, comma-separated> <records> <timeout ms>
 *
 * Output (stdout), in this order, partitions as "topic:partition" sorted:
 *   EVENT ASSIGNED|REVOKED|LOST <partitions>   each rebalance callback, in order
 *   RECORDS <topic:partition> <offset>=<value>,...   per partition, every record read
 *   EPOCH <n>                the member epoch (groupMetadata().generationId()) after the reads
 *   COMMITTED <topic:partition> <offset>   what committed() reads back after commitSync()
 *   ASSIGNMENT <partitions>  the assignment before close
 *   CLOSED                   after close() returned (the member left the group)
 *   ERROR <exception>        then exit 1 (also when <records> are not read within the timeout)
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ConsumerSession {
    public static void main(String[] args) {
        try {
            run(args[0], args[1], Arrays.asList(args[2].split(",")), Integer.parseInt(args[3]),
                Long.parseLong(args[4]));
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.out.flush();
            System.exit(1);
        }
    }

    static String names(Collection<TopicPartition> partitions) {
        return partitions.stream().map(tp -> tp.topic() + ":" + tp.partition()).sorted()
            .collect(Collectors.joining(","));
    }

    static void run(String bootstrap, String group, List<String> topics, int expected,
                    long timeoutMs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("client.id", "conformance-session");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        List<String> events = new ArrayList<>();
        Map<String, List<String>> records = new TreeMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    events.add("EVENT REVOKED " + names(partitions));
                }
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    events.add("EVENT ASSIGNED " + names(partitions));
                }
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    events.add("EVENT LOST " + names(partitions));
                }
            });
            long deadline = System.currentTimeMillis() + timeoutMs;
            int read = 0;
            while (read < expected) {
                if (System.currentTimeMillis() > deadline)
                    throw new IllegalStateException("read " + read + " of " + expected + " records");
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    records.computeIfAbsent(r.topic() + ":" + r.partition(), k -> new ArrayList<>())
                        .add(r.offset() + "=" + r.value());
                    read++;
                }
            }
            for (String e : events) System.out.println(e);
            for (Map.Entry<String, List<String>> e : records.entrySet())
                System.out.println("RECORDS " + e.getKey() + " " + String.join(",", e.getValue()));
            System.out.println("EPOCH " + consumer.groupMetadata().generationId());
            consumer.commitSync(Duration.ofMillis(timeoutMs));
            Set<TopicPartition> assigned = consumer.assignment();
            Map<TopicPartition, OffsetAndMetadata> committed =
                consumer.committed(assigned, Duration.ofMillis(timeoutMs));
            committed.entrySet().stream()
                .map(e -> "COMMITTED " + e.getKey().topic() + ":" + e.getKey().partition() + " "
                    + (e.getValue() == null ? "none" : e.getValue().offset()))
                .sorted().forEach(System.out::println);
            System.out.println("ASSIGNMENT " + names(assigned));
        }
        System.out.println("CLOSED");
        System.out.flush();
    }
}
