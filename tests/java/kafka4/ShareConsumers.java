import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Share consumers (kafka-clients 4.x {@code KafkaShareConsumer}) in threads of one process, for
 * tests that count what each member got.
 *
 * <pre>
 * ShareConsumers BOOTSTRAP TOPIC GROUP CONSUMERS [option ...]
 *   mode=explicit|implicit   share.acknowledgement.mode (explicit by default)
 *   name=LABEL               members are LABEL-0 .. LABEL-(n-1) (default "c")
 *   group-config:K=V         set on the GROUP resource by Admin.incrementalAlterConfigs before
 *                            any consumer starts (repeatable)
 *   client:K=V               a consumer config (repeatable)
 *   hold                     each member stops polling after its first non-empty poll and keeps
 *                            its records acquired, unacknowledged
 *   watch                    print GROUP lines (Admin.describeShareGroups) when they change
 *   seconds=N                exit after N seconds at the latest (default 120)
 * </pre>
 *
 * In explicit mode the acknowledgement of a record follows its value: {@code releaseN...} is
 * RELEASEd while its delivery count is at most N, then ACCEPTed; {@code poison...} is always
 * RELEASEd; {@code reject...} is REJECTed; anything else ACCEPTed; each poll's records are
 * acknowledged, then {@code commitSync}.  In implicit mode the next poll accepts them.
 *
 * Output, one line each, times from System.nanoTime() in ms (CLOCK_MONOTONIC):
 * <pre>
 * CONFIGURED                                  group configs set (or none asked)
 * STARTED member                              subscribed
 * REC member partition offset deliveryCount action ms
 * COMMIT member ms records ok|partition:ExceptionClass,...
 * GROUP state member=partitions;...           (watch) the group as Admin describes it
 * ERROR member text
 * CLOSED member
 * </pre>
 * Stdin "quit" (or its end, or the time bound) closes every consumer, which commits pending
 * acknowledgements and leaves the group.
 */
public class ShareConsumers {
    private static final AtomicBoolean STOP = new AtomicBoolean();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int consumers = Integer.parseInt(args[3]);
        String mode = "explicit";
        String label = "c";
        boolean hold = false;
        boolean watch = false;
        long seconds = 120;
        Map<String, String> groupConfigs = new TreeMap<>();
        Properties client = new Properties();
        for (int i = 4; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("mode=")) mode = a.substring(5);
            else if (a.startsWith("name=")) label = a.substring(5);
            else if (a.startsWith("seconds=")) seconds = Long.parseLong(a.substring(8));
            else if (a.equals("hold")) hold = true;
            else if (a.equals("watch")) watch = true;
            else if (a.startsWith("group-config:")) put(groupConfigs, a.substring(13));
            else if (a.startsWith("client:")) {
                String[] kv = a.substring(7).split("=", 2);
                client.put(kv[0], kv[1]);
            } else throw new IllegalArgumentException("unknown option " + a);
        }
        if (!groupConfigs.isEmpty()) alterGroup(bootstrap, group, groupConfigs);
        emit("CONFIGURED");

        List<Thread> threads = new ArrayList<>();
        List<KafkaShareConsumer<String, String>> all = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            Properties props = new Properties();
            props.put("bootstrap.servers", bootstrap);
            props.put("group.id", group);
            props.put("client.id", label + "-" + i);
            props.put("share.acknowledgement.mode", mode);
            props.putAll(client);
            KafkaShareConsumer<String, String> consumer =
                new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
            all.add(consumer);
            Member member = new Member(label + "-" + i, consumer, topic, mode.equals("explicit"), hold);
            Thread t = new Thread(member::run, member.name);
            threads.add(t);
        }
        threads.forEach(Thread::start);
        Thread watcher = null;
        if (watch) {
            watcher = new Thread(() -> watchGroup(bootstrap, group), "watch");
            watcher.setDaemon(true);
            watcher.start();
        }
        Thread stdin = new Thread(ShareConsumers::readStdin, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!STOP.get() && System.nanoTime() < deadline) Thread.sleep(50);
        STOP.set(true);
        all.forEach(KafkaShareConsumer::wakeup);
        for (Thread t : threads) t.join(60_000);
        System.out.flush();
        System.exit(0);
    }

    private static void put(Map<String, String> into, String kv) {
        String[] parts = kv.split("=", 2);
        into.put(parts[0], parts[1]);
    }

    private static void readStdin() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.trim().equals("quit")) break;
            }
        } catch (Exception e) {
            emit("ERROR stdin " + e);
        }
        STOP.set(true);
    }

    private static Admin admin(String bootstrap) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "share-consumers-admin");
        return Admin.create(props);
    }

    private static void alterGroup(String bootstrap, String group, Map<String, String> configs) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            List<AlterConfigOp> ops = new ArrayList<>();
            configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, (Collection<AlterConfigOp>) ops)).all().get(30, TimeUnit.SECONDS);
        }
    }

    private static void watchGroup(String bootstrap, String group) {
        String last = "";
        try (Admin admin = admin(bootstrap)) {
            while (!STOP.get()) {
                String now;
                try {
                    ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all()
                        .get(10, TimeUnit.SECONDS).get(group);
                    StringBuilder sb = new StringBuilder(String.valueOf(d.groupState()));
                    TreeMap<String, String> members = new TreeMap<>();
                    for (ShareMemberDescription m : d.members()) {
                        members.put(m.clientId() + "/" + m.consumerId(), m.assignment().topicPartitions().toString().replace(" ", ""));
                    }
                    members.forEach((k, v) -> sb.append(' ').append(k).append('=').append(v));
                    now = "GROUP " + sb;
                } catch (Exception e) {
                    now = "GROUP error " + rootCause(e);
                }
                if (!now.equals(last)) emit(now);
                last = now;
                Thread.sleep(200);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String rootCause(Throwable e) {
        while (e.getCause() != null) e = e.getCause();
        return e.getClass().getSimpleName();
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static double ms() {
        return System.nanoTime() / 1e6;
    }

    static final class Member {
        final String name;
        final KafkaShareConsumer<String, String> consumer;
        final String topic;
        final boolean explicit;
        final boolean hold;

        Member(String name, KafkaShareConsumer<String, String> consumer, String topic, boolean explicit, boolean hold) {
            this.name = name;
            this.consumer = consumer;
            this.topic = topic;
            this.explicit = explicit;
            this.hold = hold;
        }

        void run() {
            try {
                consumer.subscribe(List.of(topic));
                emit("STARTED " + name);
                while (!STOP.get()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) continue;
                    double at = ms();
                    for (ConsumerRecord<String, String> r : records) {
                        AcknowledgeType action = explicit ? action(r) : null;
                        emit(String.format("REC %s %d %d %d %s %.3f", name, r.partition(), r.offset(),
                            r.deliveryCount().map(Short::intValue).orElse(-1),
                            hold ? "HOLD" : action == null ? "IMPLICIT" : action.name(), at));
                        if (action != null && !hold) consumer.acknowledge(r, action);
                    }
                    if (hold) {
                        while (!STOP.get()) Thread.sleep(50);
                        break;
                    }
                    if (explicit) commit(records.count());
                }
            } catch (WakeupException e) {
                // stopping
            } catch (Exception e) {
                emit("ERROR " + name + " " + e.toString().replace('\n', ' '));
            } finally {
                try {
                    if (!hold) consumer.close(Duration.ofSeconds(20));
                } catch (Exception e) {
                    emit("ERROR " + name + " close " + e.toString().replace('\n', ' '));
                }
                emit("CLOSED " + name);
            }
        }

        private void commit(int count) {
            Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync(Duration.ofSeconds(30));
            StringBuilder errors = new StringBuilder();
            result.forEach((tp, error) -> error.ifPresent(e -> errors.append(errors.length() == 0 ? "" : ",")
                .append(tp.partition()).append(':').append(e.getClass().getSimpleName())));
            emit(String.format("COMMIT %s %.3f %d %s", name, ms(), count, errors.length() == 0 ? "ok" : errors));
        }

        private static AcknowledgeType action(ConsumerRecord<String, String> r) {
            String value = r.value() == null ? "" : r.value();
            int count = r.deliveryCount().map(Short::intValue).orElse(1);
            if (value.startsWith("reject")) return AcknowledgeType.REJECT;
            if (value.startsWith("poison")) return AcknowledgeType.RELEASE;
            if (value.startsWith("release")) {
                int end = 7;
                while (end < value.length() && Character.isDigit(value.charAt(end))) end++;
                int times = Integer.parseInt(value.substring(7, end));
                return count <= times ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
            }
            return AcknowledgeType.ACCEPT;
        }
    }
}
