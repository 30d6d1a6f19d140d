/*
 * Consumer-group checks with the stock Apache Kafka Java client (kafka-clients 3.9.x / 4.x),
 * compiled at test time by tests/clients/test_consumer_groups.py.
 *
 * Usage:
 *   java GroupClients consume <bootstrap> <topic> <group> <assignor>
 *       subscribe with partition.assignment.strategy=<assignor> (range, roundrobin, sticky,
 *       cooperative-sticky), commit synchronously after each batch, print
 *       "ASSIGN p,p,..." on every assignment change and "REC <partition> <offset> <value>"
 *       per record; runs until SIGTERM (then closes, leaving the group).
 *   java GroupClients admin <bootstrap> <group> <topic>
 *       Admin: list groups, describe the group, list its offsets, compute the lag against
 *       the latest offsets, delete the offsets of partition 0, delete the group; prints one
 *       "KEY value" line per fact.
 */

import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupClients {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("consume")) consume(args[1], args[2], args[3], args[4]);
        else admin(args[1], args[2], args[3]);
    }

    static String strategy(String name) {
        switch (name) {
            case "range": return RangeAssignor.class.getName();
            case "roundrobin": return RoundRobinAssignor.class.getName();
            case "sticky": return StickyAssignor.class.getName();
            default: return CooperativeStickyAssignor.class.getName();
        }
    }

    static void consume(String bootstrap, String topic, String group, String assignor) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "500");
        p.put("partition.assignment.strategy", strategy(assignor));
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread main = Thread.currentThread();
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.set(true);
            c.wakeup();
            try { main.join(10000); } catch (InterruptedException e) { }
        }));
        c.subscribe(Collections.singletonList(topic));
        String last = null;
        try {
            while (!stop.get()) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                String now = c.assignment().stream().map(TopicPartition::partition).sorted()
                        .map(String::valueOf).collect(Collectors.joining(","));
                if (!now.equals(last)) { System.out.println("ASSIGN " + now); last = now; }
                for (ConsumerRecord<String, String> r : recs)
                    System.out.println("REC " + r.partition() + " " + r.offset() + " " + r.value());
                System.out.flush();
                if (!recs.isEmpty()) c.commitSync();
            }
        } catch (org.apache.kafka.common.errors.WakeupException e) {
            // shutting down
        } finally {
            c.close(Duration.ofSeconds(5));
        }
    }

    static void admin(String bootstrap, String group, String topic) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin a = Admin.create(p)) {
            Collection<ConsumerGroupListing> groups = a.listConsumerGroups().all().get();
            System.out.println("LISTED " + groups.stream().map(ConsumerGroupListing::groupId)
                    .sorted().collect(Collectors.joining(",")));
            ConsumerGroupDescription d = a.describeConsumerGroups(Collections.singleton(group))
                    .describedGroups().get(group).get();
            System.out.println("STATE " + d.state());
            System.out.println("MEMBERS " + d.members().size());
            Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed =
                    a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : committed.keySet()) latest.put(tp, OffsetSpec.latest());
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = a.listOffsets(latest).all().get();
            long lag = 0;
            for (Map.Entry<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> e : committed.entrySet())
                lag += ends.get(e.getKey()).offset() - e.getValue().offset();
            System.out.println("COMMITTED " + committed.size());
            System.out.println("LAG " + lag);
            a.deleteConsumerGroupOffsets(group, Collections.singleton(new TopicPartition(topic, 0))).all().get();
            System.out.println("AFTER_DELETE_OFFSETS " + a.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get().size());
            a.deleteConsumerGroups(Collections.singleton(group)).all().get();
            System.out.println("DELETED " + group);
            System.out.println("LISTED_AFTER " + a.listConsumerGroups().all().get().stream()
                    .map(ConsumerGroupListing::groupId).sorted().collect(Collectors.joining(",")));
        }
    }
}
