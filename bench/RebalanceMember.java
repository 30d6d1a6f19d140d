/*
 * One consumer-group member for bench/bench_rebalance.py (compiled by it at run time against
 * the Kafka 4.3 client jars).  It subscribes to one topic and reports, on stdout, what the
 * rebalance timing needs: its assignment changes and, per partition, the first record it
 * consumed since it acquired that partition (or since the mark, whichever is later).
 *
 * Usage: java RebalanceMember <bootstrap> <group> <topic> [--wait-go] [key=value ...]
 *   key=value   a consumer setting (group.protocol=consumer, group.remote.assignor=uniform,
 *               partition.assignment.strategy=..., ...); the rest are the client's defaults
 *               but auto.offset.reset=earliest
 *   --wait-go   construct the consumer, then subscribe only at the time a "go" line names
 *
 * stdin, one command a line:
 *   mark <ns>   from the first poll that returns at or after <ns>, every partition owned then
 *               reports its next record again (FIRST), as a newly acquired one does
 *   go <ns>     (--wait-go) sleep until <ns>, then subscribe
 *   stop        close the consumer (leaving the group) and exit; so does stdin's end
 *
 * stdout, one line an event, flushed; <ns> is System.nanoTime() (HotSpot on Linux reads
 * CLOCK_MONOTONIC, the clock Python's time.monotonic() reads: the driver checks that START
 * falls between its spawn of this process and its reading of the line); partitions are
 * numbers, comma-separated, sorted:
 *   START <ns>               the consumer is constructed
 *   SUBSCRIBE <ns>           subscribe() is called
 *   ASSIGNED <ns> <parts>    at the start of onPartitionsAssigned (the list may be empty)
 *   REVOKED <ns> <parts>     at the end of onPartitionsRevoked
 *   LOST <ns> <parts>        at the end of onPartitionsLost
 *   FIRST <ns> <part>        the poll that returned that record came back at <ns>
 *   CLOSED <ns>              consumer.close() returned
 *   ERROR <ns> <exception>   then exit 1
 * Invariant: a partition is reported FIRST at most once per acquisition (and once more per
 * mark while owned); callbacks and records are handled on the polling thread only.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class RebalanceMember {
    private static final Object OUT = new Object();
    private static final Set<Integer> PENDING = new HashSet<>();
    private static volatile long markNs = Long.MIN_VALUE;
    private static volatile long goNs = Long.MIN_VALUE;
    private static volatile boolean stop = false;

    private static void say(String kind, String rest) {
        synchronized (OUT) {
            System.out.println(kind + " " + System.nanoTime() + (rest.isEmpty() ? "" : " " + rest));
            System.out.flush();
        }
    }

    private static String numbers(Collection<TopicPartition> partitions) {
        return partitions.stream().map(TopicPartition::partition).sorted()
                .map(String::valueOf).collect(Collectors.joining(","));
    }

    private static final ConsumerRebalanceListener LISTENER = new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            say("ASSIGNED", numbers(partitions));
            for (TopicPartition tp : partitions) PENDING.add(tp.partition());
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) PENDING.remove(tp.partition());
            say("REVOKED", numbers(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            for (TopicPartition tp : partitions) PENDING.remove(tp.partition());
            say("LOST", numbers(partitions));
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
        settings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        settings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        String topic = args[2];
        boolean waitGo = false;
        for (String arg : Arrays.copyOfRange(args, 3, args.length)) {
            if (arg.equals("--wait-go")) {
                waitGo = true;
            } else {
                int eq = arg.indexOf('=');
                settings.put(arg.substring(0, eq), arg.substring(eq + 1));
            }
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings);
        watchStdin(consumer);
        say("START", "");
        if (waitGo) {
            while (!stop && goNs == Long.MIN_VALUE) Thread.sleep(1);
            while (!stop && System.nanoTime() < goNs) Thread.onSpinWait();
        }
        if (!stop) {
            say("SUBSCRIBE", "");
            consumer.subscribe(Arrays.asList(topic), LISTENER);
        }
        boolean marked = false;
        try {
            while (!stop) {
                var batch = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                if (!marked && markNs != Long.MIN_VALUE && now >= markNs) {
                    marked = true;
                    for (TopicPartition tp : consumer.assignment()) PENDING.add(tp.partition());
                }
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    if (PENDING.remove(r.partition())) say("FIRST", String.valueOf(r.partition()));
                }
            }
        } catch (WakeupException e) {
            // asked to stop
        }
        consumer.close(Duration.ofSeconds(10));
        say("CLOSED", "");
    }

    private static void watchStdin(KafkaConsumer<byte[], byte[]> consumer) {
        Thread watcher = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) {
                    String[] words = line.trim().split(" ");
                    if (words[0].equals("mark")) markNs = Long.parseLong(words[1]);
                    else if (words[0].equals("go")) goNs = Long.parseLong(words[1]);
                    else if (words[0].equals("stop")) break;
                }
            } catch (Exception e) {
                // stdin gone: stop as well
            }
            stop = true;
            consumer.wakeup();
        }, "stdin");
        watcher.setDaemon(true);
        watcher.start();
    }
}
