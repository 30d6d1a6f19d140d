/*
 * The consumers of bench/bench_share.py (compiled by it at run time against the Kafka 4.3
 * client jars): CONSUMERS threads in one JVM, each its own consumer of GROUP on TOPIC, until
 * RECORDS records were acknowledged in all (or SECONDS passed).
 *
 * Usage: java ShareBench <bootstrap> <topic> <group> <mode> <consumers> <records> <seconds> [k=v ...]
 *   k=v  a consumer config added to every consumer's (e.g. fetch.max.wait.ms=100)
 *   mode share-explicit  KafkaShareConsumer, share.acknowledgement.mode=explicit: every record
 *                        of a poll acknowledged ACCEPT, then commitSync(); a record's
 *                        fetch-to-ack latency is from the poll's return to commitSync's return
 *        share-implicit  KafkaShareConsumer, implicit mode: the next poll acknowledges the
 *                        previous one's records (they ride on its ShareFetch); the latency is
 *                        from the poll's return to the acknowledgement commit callback naming
 *                        the record (run on the polling thread, in a later poll)
 *        classic         KafkaConsumer (classic protocol, range assignor), auto commit off,
 *                        commitSync() after every poll; latency from the poll's return to
 *                        commitSync's return
 *   Share modes set share.auto.offset.reset=earliest on the group (Admin incrementalAlterConfigs
 *   on the GROUP resource) first; classic uses auto.offset.reset=earliest.
 *
 * stdout, at the end, one line:
 *   RESULT acked=<n> first_ns=<t> all_flowing_ns=<t> last_ns=<t> acked_all_flowing=<n> redelivered=<n> errors=<n> p50_us=<x> p99_us=<x> max_us=<x> per_member=<a,b,...>
 * where first_ns is the first poll that returned records, all_flowing_ns the moment the last
 * consumer's first non-empty poll returned (-1: some consumer never got a record), last_ns the
 * last acknowledgement answered, acked_all_flowing the records acknowledged from all_flowing_ns on;
 * ERROR <text> lines before it.  Times are System.nanoTime().
 * Invariant: a record counts once, when its acknowledgement is answered without error.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareBench {
    static final AtomicLong ACKED = new AtomicLong();
    static final AtomicLong REDELIVERED = new AtomicLong();
    static final AtomicLong ERRORS = new AtomicLong();
    static final AtomicLong FIRST = new AtomicLong(Long.MAX_VALUE);
    static final AtomicLong LAST = new AtomicLong(Long.MIN_VALUE);
    static final Properties EXTRA = new Properties();
    static long target;
    static long deadline;

    static volatile boolean stop = false;

    static synchronized void error(String text) {
        ERRORS.incrementAndGet();
        System.out.println("ERROR " + text.replace('\n', ' '));
        System.out.flush();
    }

    static boolean done() {
        return stop || ACKED.get() >= target || System.nanoTime() > deadline;
    }

    /** One consumer's figures; written by its thread only, read after it ends. */
    static final class Member {
        final String name;
        long firstNs = Long.MAX_VALUE;
        long acked = 0;
        long[] latencies = new long[1 << 14];
        long[] ackTimes = new long[1 << 14];       // when each latency's acknowledgement was answered
        int n = 0;

        Member(String name) {
            this.name = name;
        }

        void polled(long now) {
            if (firstNs == Long.MAX_VALUE) firstNs = now;
            FIRST.accumulateAndGet(now, Math::min);
        }

        void acked(long polledNs, long ackNs, int count) {
            for (int i = 0; i < count; i++) {
                if (n == latencies.length) {
                    latencies = Arrays.copyOf(latencies, n * 2);
                    ackTimes = Arrays.copyOf(ackTimes, n * 2);
                }
                ackTimes[n] = ackNs;
                latencies[n++] = ackNs - polledNs;
            }
            acked += count;
            ACKED.addAndGet(count);
            LAST.accumulateAndGet(ackNs, Math::max);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], mode = args[3];
        int consumers = Integer.parseInt(args[4]);
        target = Long.parseLong(args[5]);
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[6]));
        for (int i = 7; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            EXTRA.put(kv[0], kv[1]);
        }
        if (mode.startsWith("share")) earliest(bootstrap, group);
        List<Member> members = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            Member m = new Member("m" + i);
            members.add(m);
            Runnable body = mode.equals("classic") ? () -> classic(bootstrap, topic, group, m)
                : () -> share(bootstrap, topic, group, m, mode.equals("share-explicit"));
            threads.add(new Thread(body, m.name));
        }
        threads.forEach(Thread::start);
        for (Thread t : threads) t.join();
        report(members);
        System.exit(0);
    }

    static void earliest(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(props)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            Collection<AlterConfigOp> ops = List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get(30, TimeUnit.SECONDS);
        }
    }

    static Properties common(String bootstrap, String group, Member m) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", m.name);
        props.putAll(EXTRA);
        return props;
    }

    static void share(String bootstrap, String topic, String group, Member m, boolean explicit) {
        Properties props = common(bootstrap, group, m);
        props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        Map<Long, Long> polledAt = new HashMap<>();   // implicit: offset -> its poll's return
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                 new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (!explicit) {
                consumer.setAcknowledgementCommitCallback((offsets, exception) -> {
                    long now = System.nanoTime();
                    if (exception != null) {
                        error(m.name + " ack " + exception);
                        offsets.values().forEach(set -> set.forEach(polledAt::remove));
                        return;
                    }
                    for (Set<Long> set : offsets.values()) {
                        for (Long offset : set) {
                            Long at = polledAt.remove(offset);
                            if (at != null) m.acked(at, now, 1);
                        }
                    }
                });
            }
            consumer.subscribe(List.of(topic));
            while (!done()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                if (records.isEmpty()) continue;
                m.polled(now);
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (r.deliveryCount().orElse((short) 1) > 1) REDELIVERED.incrementAndGet();
                    if (explicit) consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    else polledAt.put(r.offset(), now);
                }
                if (explicit) {
                    Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
                    long acked = System.nanoTime();
                    boolean failed = result.values().stream().anyMatch(Optional::isPresent);
                    if (failed) error(m.name + " commitSync " + result);
                    else m.acked(now, acked, records.count());
                }
            }
            if (!explicit) consumer.commitSync(Duration.ofSeconds(30));   // the callback counts the last poll's
        } catch (Exception e) {
            error(m.name + " " + e);
        }
    }

    static void classic(String bootstrap, String topic, String group, Member m) {
        Properties props = common(bootstrap, group, m);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (!done()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                long now = System.nanoTime();
                if (records.isEmpty()) continue;
                m.polled(now);
                try {
                    consumer.commitSync(Duration.ofSeconds(30));
                    m.acked(now, System.nanoTime(), records.count());
                } catch (Exception e) {
                    error(m.name + " commitSync " + e);   // a rebalance: the records come again
                }
            }
        } catch (Exception e) {
            error(m.name + " " + e);
        }
    }

    static void report(List<Member> members) {
        long allFlowing = members.stream().mapToLong(m -> m.firstNs).max().orElse(Long.MAX_VALUE);
        if (allFlowing == Long.MAX_VALUE) allFlowing = -1;    // some consumer never got a record
        long ackedAfter = 0;
        for (Member m : members) {
            for (int i = 0; i < m.n; i++) if (allFlowing >= 0 && m.ackTimes[i] >= allFlowing) ackedAfter++;
        }
        int total = members.stream().mapToInt(m -> m.n).sum();
        long[] all = new long[total];
        int at = 0;
        for (Member m : members) {
            System.arraycopy(m.latencies, 0, all, at, m.n);
            at += m.n;
        }
        Arrays.sort(all);
        StringBuilder per = new StringBuilder();
        for (Member m : members) per.append(per.length() == 0 ? "" : ",").append(m.acked);
        System.out.printf("RESULT acked=%d first_ns=%d all_flowing_ns=%d last_ns=%d acked_all_flowing=%d "
                + "redelivered=%d errors=%d p50_us=%.1f p99_us=%.1f max_us=%.1f per_member=%s%n",
            ACKED.get(), FIRST.get(), allFlowing, LAST.get(), ackedAfter, REDELIVERED.get(), ERRORS.get(),
            pct(all, 0.50), pct(all, 0.99), total == 0 ? 0.0 : all[total - 1] / 1e3, per);
        System.out.flush();
    }

    static double pct(long[] sorted, double q) {
        if (sorted.length == 0) return 0.0;
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e3;
    }
}
