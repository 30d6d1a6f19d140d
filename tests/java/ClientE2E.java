/*
 * End-to-end check of a broker with the stock Apache Kafka Java client
 * (kafka-clients 3.9.x and 4.x; compiled at test time by tests/clients/conftest.py).
 *
 * Usage: java ClientE2E <bootstrap> <topicPrefix> <mode> [records]
 *   mode: "assign" or "assign+group" (also consume once via a consumer group
 *         subscription and commit; groups are optional until the broker has them).
 *
 * For each codec (none, gzip, snappy, lz4, zstd), topic <topicPrefix>-<codec>:
 *   1. Admin.createTopics (1 partition, so order is total) and describeTopics;
 *   2. produce <records> (default 10,000) records with the producer's defaults
 *      (idempotence on, acks=all) plus compression.type, each with a key, two
 *      headers and an explicit CreateTime; every ack must carry offset i and the
 *      timestamp sent;
 *   3. consume them all with assign + seekToBeginning and check offset, key,
 *      value, headers, timestamp and timestamp type, in order; optionally the
 *      same through subscribe() in a group, then commitSync/committed;
 *   4. Consumer.beginningOffsets/endOffsets/offsetsForTimes and
 *      Admin.listOffsets earliest/latest/maxTimestamp/forTimestamp.
 * Records are generated exactly like tests/support/client_common.py (the Python side
 * re-reads the topics and checks them with its own generator).
 *
 * Prints one JSON summary line ("ok": true ...) on stdout and exits 0; on any
 * mismatch prints "FAIL: ..." on stderr and exits 1.
 */

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class ClientE2E {
    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};
    static final int MAX_TS_INDEX = 7000;
    static final long MAX_TS_DELTA = 20000;
    static final byte[] ALPHABET =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:".getBytes(StandardCharsets.US_ASCII);
    static final long IDLE_LIMIT_MS = 60_000;

    static final class Mismatch extends RuntimeException {
        Mismatch(String msg) { super(msg); }
    }

    static void check(boolean ok, String msg) {
        if (!ok) throw new Mismatch(msg);
    }

    // ---- record generation: must match tests/support/client_common.py ----
    static byte[] key(int i) {
        return String.format("key-%05d", i).getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] value(int i) {
        int size = (i % 997 == 0) ? 8192 + i % 7 : 16 + (i * 7919) % 600;
        byte[] head = String.format("value-%05d-", i).getBytes(StandardCharsets.US_ASCII);
        int rot = i % ALPHABET.length;
        byte[] out = new byte[Math.max(size, head.length)];
        System.arraycopy(head, 0, out, 0, head.length);
        for (int p = head.length, j = 0; p < out.length; p++, j++) {
            out[p] = ALPHABET[(rot + j) % ALPHABET.length];
        }
        return out;
    }

    static List<Header> headers(int i, String codec) {
        List<Header> hs = new ArrayList<>();
        hs.add(new RecordHeader("e2e-index", String.format("%05d", i).getBytes(StandardCharsets.US_ASCII)));
        hs.add(new RecordHeader("e2e-codec", codec.getBytes(StandardCharsets.US_ASCII)));
        return hs;
    }

    static long timestamp(long base, int i) {
        return base + (i == MAX_TS_INDEX ? MAX_TS_DELTA : i);
    }

    static String hs(Iterable<Header> headers) {
        StringBuilder sb = new StringBuilder("[");
        for (Header h : headers) {
            if (sb.length() > 1) sb.append(", ");
            sb.append(h.key()).append('=')
              .append(h.value() == null ? "null" : new String(h.value(), StandardCharsets.ISO_8859_1));
        }
        return sb.append(']').toString();
    }

    static String preview(byte[] b) {
        if (b == null) return "null";
        String s = new String(b, 0, Math.min(b.length, 40), StandardCharsets.ISO_8859_1);
        return b.length + " bytes '" + s + (b.length > 40 ? "...'" : "'");
    }

    // ---- clients ----
    final String bootstrap;
    final String prefix;
    final boolean useGroup;
    final int n;
    final long base;

    ClientE2E(String bootstrap, String prefix, boolean useGroup, int n) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.useGroup = useGroup;
        this.n = n;
        this.base = (System.currentTimeMillis() / 1000 - 600) * 1000;
    }

    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "e2e-java-admin");
        return Admin.create(p);
    }

    KafkaConsumer<byte[], byte[]> consumer(String clientId, String groupId) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (groupId != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        } else {
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        }
        return new KafkaConsumer<>(p);
    }

    void createTopic(Admin admin, String topic) throws Exception {
        admin.createTopics(Collections.singletonList(new NewTopic(topic, 1, (short) 1)))
             .all().get(60, TimeUnit.SECONDS);
        TopicDescription d = null;
        for (int attempt = 0; attempt < 100; attempt++) {   // metadata may lag the create
            try {
                d = admin.describeTopics(Collections.singletonList(topic)).allTopicNames()
                         .get(60, TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == 1 && d.partitions().get(0).leader() != null) break;
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) throw e;
            }
            Thread.sleep(100);
        }
        check(d != null, topic + ": describeTopics never found the topic");
        check(d.partitions().size() == 1, topic + ": " + d.partitions().size() + " partitions, expected 1");
        TopicPartitionInfo p0 = d.partitions().get(0);
        check(p0.partition() == 0 && p0.leader() != null, topic + ": partition 0 has no leader: " + p0);
    }

    void produce(String topic, String codec) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "e2e-java-producer-" + codec);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        List<Future<RecordMetadata>> futures = new ArrayList<>(n);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                futures.add(producer.send(new ProducerRecord<>(topic, 0, timestamp(base, i), key(i), value(i),
                                                               headers(i, codec))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = futures.get(i).get(120, TimeUnit.SECONDS);
                check(md.partition() == 0 && md.offset() == i,
                      topic + ": send #" + i + " acked at partition " + md.partition() + " offset " + md.offset()
                      + ", expected partition 0 offset " + i);
                check(md.timestamp() == timestamp(base, i),
                      topic + ": send #" + i + " acked timestamp " + md.timestamp() + ", expected " + timestamp(base, i));
            }
        }
    }

    void checkRecord(String what, ConsumerRecord<byte[], byte[]> r, int i, String codec) {
        check(r.offset() == i, what + ": record #" + i + " has offset " + r.offset());
        check(Arrays.equals(r.key(), key(i)), what + ": offset " + i + " key " + preview(r.key())
              + ", expected " + preview(key(i)));
        check(Arrays.equals(r.value(), value(i)), what + ": offset " + i + " value " + preview(r.value())
              + ", expected " + preview(value(i)));
        List<Header> got = new ArrayList<>();
        r.headers().forEach(got::add);
        List<Header> want = headers(i, codec);
        boolean same = got.size() == want.size();
        for (int h = 0; same && h < got.size(); h++) {
            same = got.get(h).key().equals(want.get(h).key()) && Arrays.equals(got.get(h).value(), want.get(h).value());
        }
        check(same, what + ": offset " + i + " headers " + hs(got) + ", expected " + hs(want));
        check(r.timestampType() == TimestampType.CREATE_TIME,
              what + ": offset " + i + " timestamp type " + r.timestampType() + ", expected CreateTime");
        check(r.timestamp() == timestamp(base, i),
              what + ": offset " + i + " timestamp " + r.timestamp() + ", expected " + timestamp(base, i));
    }

    /** Polls until n records or IDLE_LIMIT_MS without progress; checks each record as it comes. */
    int drain(String what, KafkaConsumer<byte[], byte[]> c, String topic, String codec) {
        int count = 0;
        long lastProgress = System.currentTimeMillis();
        while (count < n && System.currentTimeMillis() - lastProgress < IDLE_LIMIT_MS) {
            ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(1000));
            for (ConsumerRecord<byte[], byte[]> r : recs) {
                check(r.topic().equals(topic) && r.partition() == 0, what + ": record from " + r.topic() + "-" + r.partition());
                check(count < n, what + ": more than " + n + " records (offset " + r.offset() + ")");
                checkRecord(what, r, count, codec);
                count++;
            }
            if (!recs.isEmpty()) lastProgress = System.currentTimeMillis();
        }
        check(count == n, what + ": consumed " + count + " records, expected " + n);
        check(c.poll(Duration.ofMillis(500)).isEmpty(), what + ": records past the end");
        return count;
    }

    void consumeAssigned(String topic, String codec) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = consumer("e2e-java-consumer-" + codec, null)) {
            c.assign(Collections.singletonList(tp));
            c.seekToBeginning(Collections.singletonList(tp));
            drain(topic + " (assign)", c, topic, codec);
            check(c.position(tp) == n, topic + ": position " + c.position(tp) + " after consuming, expected " + n);
        }
    }

    void consumeGroup(String topic, String codec) {
        TopicPartition tp = new TopicPartition(topic, 0);
        String group = prefix + "-group-" + codec;
        try (KafkaConsumer<byte[], byte[]> c = consumer("e2e-java-group-" + codec, group)) {
            c.subscribe(Collections.singletonList(topic));
            drain(topic + " (group " + group + ")", c, topic, codec);
            c.commitSync(Duration.ofSeconds(60));
            OffsetAndMetadata om = c.committed(Collections.singleton(tp), Duration.ofSeconds(60)).get(tp);
            check(om != null && om.offset() == n, topic + ": committed offset " + om + ", expected " + n);
        }
    }

    void checkOffsets(Admin admin, String topic) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        int mid = n / 2;
        long maxTs = base + MAX_TS_DELTA;
        // target timestamp -> expected {offset, timestamp}, or null for "no such offset"
        Map<Long, long[]> byTs = new LinkedHashMap<>();
        byTs.put(base - 1000, new long[] {0, base});
        byTs.put(base, new long[] {0, base});
        byTs.put(base + mid, new long[] {mid, base + mid});
        byTs.put(maxTs - 1, new long[] {MAX_TS_INDEX, maxTs});
        byTs.put(maxTs + 1, null);

        try (KafkaConsumer<byte[], byte[]> c = consumer("e2e-java-offsets", null)) {
            List<TopicPartition> tps = Collections.singletonList(tp);
            long begin = c.beginningOffsets(tps, Duration.ofSeconds(60)).get(tp);
            long end = c.endOffsets(tps, Duration.ofSeconds(60)).get(tp);
            check(begin == 0, topic + ": beginningOffsets " + begin + ", expected 0");
            check(end == n, topic + ": endOffsets " + end + ", expected " + n);
            for (Map.Entry<Long, long[]> e : byTs.entrySet()) {
                Map<TopicPartition, Long> q = new HashMap<>();
                q.put(tp, e.getKey());
                OffsetAndTimestamp got = c.offsetsForTimes(q, Duration.ofSeconds(60)).get(tp);
                String what = topic + ": offsetsForTimes(base" + String.format("%+d", e.getKey() - base) + ")";
                if (e.getValue() == null) {
                    check(got == null, what + " = " + got + ", expected null");
                } else {
                    check(got != null && got.offset() == e.getValue()[0] && got.timestamp() == e.getValue()[1],
                          what + " = " + got + ", expected offset " + e.getValue()[0] + " timestamp " + e.getValue()[1]);
                }
            }
        }

        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        Map<String, long[]> want = new HashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        want.put("earliest", new long[] {0, -2});
        specs.put("latest", OffsetSpec.latest());
        want.put("latest", new long[] {n, -2});
        specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
        want.put("maxTimestamp", new long[] {MAX_TS_INDEX, maxTs});
        for (Map.Entry<Long, long[]> e : byTs.entrySet()) {
            String name = "forTimestamp(base" + String.format("%+d", e.getKey() - base) + ")";
            specs.put(name, OffsetSpec.forTimestamp(e.getKey()));
            want.put(name, e.getValue() == null ? new long[] {-1, -2} : e.getValue());
        }
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet()) {
            ListOffsetsResult.ListOffsetsResultInfo info =
                admin.listOffsets(Collections.singletonMap(tp, e.getValue())).partitionResult(tp).get(60, TimeUnit.SECONDS);
            long[] w = want.get(e.getKey());
            check(info.offset() == w[0], topic + ": listOffsets " + e.getKey() + " offset " + info.offset() + ", expected " + w[0]);
            check(w[1] == -2 || info.timestamp() == w[1],
                  topic + ": listOffsets " + e.getKey() + " timestamp " + info.timestamp() + ", expected " + w[1]);
        }
    }

    String run() throws Exception {
        List<String> topics = new ArrayList<>();
        try (Admin admin = admin()) {
            for (String codec : CODECS) {
                String topic = prefix + "-" + codec;
                createTopic(admin, topic);
                produce(topic, codec);
                consumeAssigned(topic, codec);
                if (useGroup) consumeGroup(topic, codec);
                checkOffsets(admin, topic);
                topics.add("\"" + topic + "\"");
                System.err.println("ClientE2E: " + topic + " ok");
            }
        }
        return "{\"ok\": true, \"client_version\": \"" + AppInfoParser.getVersion() + "\", \"bootstrap\": \""
            + bootstrap + "\", \"base_timestamp\": " + base + ", \"records\": " + n + ", \"group\": " + useGroup
            + ", \"topics\": [" + String.join(", ", topics) + "]}";
    }

    public static void main(String[] args) {
        if (args.length < 3 || !(args[2].equals("assign") || args[2].equals("assign+group"))) {
            System.err.println("usage: ClientE2E <bootstrap> <topicPrefix> assign|assign+group [records]");
            System.exit(2);
        }
        int n = args.length > 3 ? Integer.parseInt(args[3]) : 10_000;
        if (n <= MAX_TS_INDEX + 1) {
            System.err.println("records must be > " + (MAX_TS_INDEX + 1));
            System.exit(2);
        }
        try {
            String summary = new ClientE2E(args[0], args[1], args[2].equals("assign+group"), n).run();
            System.out.println(summary);
            System.out.flush();
            System.exit(0);
        } catch (Mismatch m) {
            System.err.println("FAIL: " + m.getMessage());
        } catch (Throwable t) {
            System.err.println("FAIL: " + t);
            t.printStackTrace();
        }
        System.exit(1);
    }
}
