/*
 * Members of one consumer-protocol group (group.protocol=consumer, KIP-848) in one JVM, for
 * tests/cluster/test_consumer_protocol_failover.py; compiled at test time against
 * kafka-clients 4.3.
 *
 * Usage:
 *   java GroupProtocolMembers <bootstrap> <topic> <group> <members>
 *       starts <members> consumers (client.id member-<i>, one thread each) subscribed to
 *       <topic>, auto.offset.reset=earliest, committing synchronously after every non-empty
 *       poll.  Commands on stdin, one a line: "add" starts one more member, "quit" closes
 *       every member (leaving the group) and exits.
 *
 * Output, one line per event on stdout (flushed):
 *   MEMBER <i> <member id> <member epoch>   whenever the member's id or epoch changes
 *   ASSIGNED <i> <p,p,...>                  partitions given by the rebalance listener
 *   REVOKED <i> <p,p,...>                   partitions taken back (revoked)
 *   LOST <i> <p,p,...>                      partitions lost (the member was fenced)
 *   REC <i> <partition> <offset> <value>    every record consumed
 *   COMMITFAIL <i> <exception>              a commit that failed
 *   CLOSED <i>
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupProtocolMembers {
    static final AtomicBoolean STOP = new AtomicBoolean(false);
    static final List<KafkaConsumer<String, String>> CONSUMERS = new ArrayList<>();

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> tps) {
        return tps.stream().map(TopicPartition::partition).sorted()
            .map(String::valueOf).collect(Collectors.joining(","));
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int initial = Integer.parseInt(args[3]);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < initial; i++) threads.add(start(bootstrap, topic, group, i));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("add")) threads.add(start(bootstrap, topic, group, threads.size()));
            else if (line.trim().equals("quit")) break;
        }
        STOP.set(true);
        synchronized (CONSUMERS) {
            for (KafkaConsumer<String, String> c : CONSUMERS) c.wakeup();
        }
        for (Thread t : threads) t.join(30000);
        System.exit(0);
    }

    static Thread start(String bootstrap, String topic, String group, int index) {
        Thread t = new Thread(() -> run(bootstrap, topic, group, index), "member-" + index);
        t.start();
        return t;
    }

    static void run(String bootstrap, String topic, String group, int index) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("client.id", "member-" + index);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        synchronized (CONSUMERS) {
            CONSUMERS.add(c);
        }
        c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                if (!tps.isEmpty()) say("REVOKED " + index + " " + partitions(tps));
            }
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                if (!tps.isEmpty()) say("ASSIGNED " + index + " " + partitions(tps));
            }
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                say("LOST " + index + " " + partitions(tps));
            }
        });
        String seen = "";
        try {
            while (!STOP.get()) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
                String now = c.groupMetadata().memberId() + " " + c.groupMetadata().generationId();
                if (!now.equals(seen)) {
                    seen = now;
                    say("MEMBER " + index + " " + now);
                }
                for (ConsumerRecord<String, String> r : records)
                    say("REC " + index + " " + r.partition() + " " + r.offset() + " " + r.value());
                if (!records.isEmpty()) {
                    try {
                        c.commitSync(Duration.ofSeconds(30));
                    } catch (WakeupException e) {
                        break;
                    } catch (Exception e) {
                        say("COMMITFAIL " + index + " " + e.toString().replace('\n', ' '));
                    }
                }
            }
        } catch (WakeupException e) {
            // quit
        } finally {
            c.close(Duration.ofSeconds(10));
            say("CLOSED " + index);
        }
    }
}
