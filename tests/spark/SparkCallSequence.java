// Spark's Kafka source, call for call, against a broker (kafka-clients 3.9.0, as bundled by Spark 4.0).
//
// Usage: java SparkCallSequence <bootstrap> <spec file> <topic prefix>
//
// Driver side (KafkaOffsetReaderAdmin + ConsumerStrategy): an Admin created
// with Spark's driver parameters calls describeTopics(...).allTopicNames()
// (DescribeTopicPartitions, or Metadata when the broker does not list it),
// listTopics().listings() for subscribePattern, and listOffsets with
// OffsetSpec.earliest()/latest()/forTimestamp() and ListOffsetsOptions(isolation
// level). Executor side (InternalKafkaConsumer + KafkaDataConsumer): one
// KafkaConsumer per partition with Spark's executor parameters (group.id set,
// never joined; auto.offset.reset=none; no auto commit) doing assign, then per
// fetch seek + poll + position, and seekToBeginning/seekToEnd + position for
// the available range; the record-by-record logic of KafkaDataConsumer.get /
// fetchRecord (skip offsets the consumer reports as invisible, data loss when
// a record is missing and the offset is still in range, the OffsetOutOfRange
// recovery) is re-implemented below from its documented behaviour, and every
// poll is checked against what the spec says is in the log.
//
// Spec file (tab-separated lines, written by tests/spark/gap_logs.py):
//   range   <topic> <partition> <log start> <high watermark>
//   visible <topic> <partition> <read_committed|read_uncommitted> <offset,offset,...>
//   tsq     <topic> <partition> <timestamp> <expected offset or -1>
// Records of spec partitions have value "v<offset>" and timestamp
// 1767225600000 + 1000 * offset.
//
// Prints one JSON line {"ok": ..., "checks": [{"name", "ok", "detail"}...]}.
// Exit code 0 when the program ran to the end (check results are in the JSON),
// 1 on an unexpected crash.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SparkCallSequence {
    static final long UNKNOWN_OFFSET = -2L;       // KafkaDataConsumer.UNKNOWN_OFFSET
    static final long EARLIEST = -2L, LATEST = -1L; // KafkaOffsetRangeLimit
    static final long SPEC_BASE_TS = 1_767_225_600_000L;
    static final long POLL_TIMEOUT_MS = 10_000L;    // Spark: kafkaConsumer.pollTimeoutMs

    static final long START = System.nanoTime();
    static String bootstrap;
    static final List<String> checkJson = new ArrayList<>();
    static boolean allOk = true;

    // ------------------------------------------------------------------ checks / JSON

    static String js(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static void check(String name, boolean ok, String detail) {
        if (!ok) allOk = false;
        if (detail.length() > 1500) detail = detail.substring(0, 1500) + "...";
        checkJson.add("{\"name\":" + js(name) + ",\"ok\":" + ok + ",\"detail\":" + js(detail) + "}");
        System.err.printf("%8.1fs %s %s%s%n", (System.nanoTime() - START) / 1e9, ok ? "ok  " : "FAIL", name,
                          ok ? "" : ": " + detail);
    }

    static void checkEq(String name, Object expected, Object actual) {
        boolean ok = Objects.equals(expected, actual);
        check(name, ok, ok ? String.valueOf(actual) : "expected " + expected + ", got " + actual);
    }

    interface Body { void run() throws Exception; }

    static void guarded(String name, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            check(name, false, "threw " + t);
            t.printStackTrace();
        }
    }

    // ------------------------------------------------------------------ Spark's parameters

    /** KafkaSourceProvider.kafkaParamsForDriver, handed to Admin.create (ConsumerStrategy.createAdmin). */
    static Properties driverParams() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", 1);
        p.put("receive.buffer.bytes", 65536);
        return p;
    }

    /** KafkaSourceProvider.kafkaParamsForExecutors. */
    static Properties executorParams(String isolation) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "none");
        p.put("group.id", "spark-kafka-source-" + UUID.randomUUID() + "-executor");
        p.put("enable.auto.commit", "false");
        p.put("receive.buffer.bytes", 65536);
        p.put("isolation.level", isolation);
        return p;
    }

    /**
     * Spark's executor parameters plus kafka.fetch.max.wait.ms=50, for the loops that
     * read hundreds of ranges: after a range that ends at the log end the consumer's
     * next fetch waits at the broker for fetch.max.wait.ms (500 ms by default) before
     * the next seek can fetch. Only latency changes, not what is returned.
     */
    static Properties fastExecutorParams(String isolation) {
        Properties p = executorParams(isolation);
        p.put("fetch.max.wait.ms", 50);
        return p;
    }

    /** KafkaSourceProvider producer params for the sink (KafkaWriter): serializers only. */
    static Properties producerParams() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return p;
    }

    // ------------------------------------------------------------------ driver: the offset reader

    static Map<TopicPartition, Long> listOffsets(Admin admin, Map<TopicPartition, OffsetSpec> specs,
                                                 IsolationLevel level) throws Exception {
        Map<TopicPartition, Long> out = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e :
                admin.listOffsets(specs, new ListOffsetsOptions(level)).all().get().entrySet())
            out.put(e.getKey(), e.getValue().offset());
        return out;
    }

    /** ConsumerStrategy.retrieveAllPartitions. */
    static Set<TopicPartition> retrieveAllPartitions(Admin admin, Set<String> topics) throws Exception {
        Set<TopicPartition> out = new TreeSet<>(Comparator.comparing(TopicPartition::toString));
        for (Map.Entry<String, TopicDescription> e : admin.describeTopics(topics).allTopicNames().get().entrySet()) {
            if (e.getValue().isInternal()) continue;
            for (TopicPartitionInfo info : e.getValue().partitions())
                out.add(new TopicPartition(e.getKey(), info.partition()));
        }
        return out;
    }

    /** SubscribePatternStrategy.assignedTopicPartitions. */
    static Set<TopicPartition> patternPartitions(Admin admin, String regex) throws Exception {
        Pattern p = Pattern.compile(regex);
        Set<String> topics = new TreeSet<>();
        for (TopicListing l : admin.listTopics().listings().get())
            if (p.matcher(l.name()).find()) topics.add(l.name());
        return retrieveAllPartitions(admin, topics);
    }

    // ------------------------------------------------------------------ executor: the data reader

    static class DataLossException extends RuntimeException {
        DataLossException(String m, Throwable cause) { super(m, cause); }
    }

    /** InternalKafkaConsumer + KafkaDataConsumer + FetchedData for one partition. */
    static class SparkReader implements AutoCloseable {
        final TopicPartition tp;
        final Properties params;
        KafkaConsumer<byte[], byte[]> consumer;
        // FetchedData
        ListIterator<ConsumerRecord<byte[], byte[]>> records = Collections.emptyListIterator();
        long nextOffsetInFetchedData = UNKNOWN_OFFSET;
        long offsetAfterPoll = UNKNOWN_OFFSET;
        long[] availableRange = {UNKNOWN_OFFSET, UNKNOWN_OFFSET};
        // what the poll checker compares against (null: no expectation)
        NavigableSet<Long> visible;
        final List<String> pollViolations = new ArrayList<>();
        int polls, dataLoss, offsetOutOfRange, consumersCreated;

        SparkReader(TopicPartition tp, Properties params, NavigableSet<Long> visible) {
            this.tp = tp;
            this.params = params;
            this.visible = visible;
            newConsumer();
        }

        void newConsumer() {
            if (consumer != null) consumer.close();
            consumer = new KafkaConsumer<>(params);
            consumer.assign(Collections.singletonList(tp));
            consumersCreated++;
        }

        long[] getAvailableOffsetRange() {
            consumer.seekToBeginning(Collections.singleton(tp));
            long earliest = consumer.position(tp);
            consumer.seekToEnd(Collections.singleton(tp));
            long latest = consumer.position(tp);
            return new long[] {earliest, latest};
        }

        /** InternalKafkaConsumer.fetch then FetchedData.withNewPoll. */
        void fetchData(long offset) throws TimeoutException {
            consumer.seek(tp, offset);
            List<ConsumerRecord<byte[], byte[]>> r = consumer.poll(Duration.ofMillis(POLL_TIMEOUT_MS)).records(tp);
            polls++;
            long after = consumer.position(tp);
            long[] range = getAvailableOffsetRange();
            checkPoll(offset, r, after, range);
            if (r.isEmpty()) {
                if (offset < range[0] || offset >= range[1])
                    throw new OffsetOutOfRangeException(Collections.singletonMap(tp, offset));
                else if (offset == after)
                    throw new TimeoutException("Cannot fetch record for offset " + offset + " in " + POLL_TIMEOUT_MS + " ms");
            }
            records = new ArrayList<>(r).listIterator();
            nextOffsetInFetchedData = UNKNOWN_OFFSET;
            offsetAfterPoll = after;
            availableRange = range;
        }

        /** What one poll must look like: exactly the visible records of [offset, position). */
        void checkPoll(long offset, List<ConsumerRecord<byte[], byte[]>> r, long after, long[] range) {
            if (visible == null) return;
            List<Long> got = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> rec : r) got.add(rec.offset());
            List<Long> want = after > offset ? new ArrayList<>(visible.subSet(offset, true, after, false))
                                             : Collections.emptyList();
            String where = "poll from " + offset + " (position after " + after + ", range " + range[0] + ".." + range[1] + ")";
            if (!got.equals(want)) pollViolations.add(where + ": records " + got + ", expected " + want);
            if (after < offset) pollViolations.add(where + ": position moved backwards");
            Long nextVisible = visible.ceiling(offset);
            if (r.isEmpty() && nextVisible != null && after > nextVisible)
                pollViolations.add(where + ": position skipped visible offset " + nextVisible);
            for (ConsumerRecord<byte[], byte[]> rec : r) {
                String v = new String(rec.value(), StandardCharsets.UTF_8);
                if (!v.equals("v" + rec.offset())) pollViolations.add(where + ": offset " + rec.offset() + " has value " + v);
                if (rec.timestamp() != SPEC_BASE_TS + 1000 * rec.offset())
                    pollViolations.add(where + ": offset " + rec.offset() + " has timestamp " + rec.timestamp());
            }
        }

        void reset() {
            records = Collections.emptyListIterator();
            nextOffsetInFetchedData = UNKNOWN_OFFSET;
            offsetAfterPoll = UNKNOWN_OFFSET;
            availableRange = new long[] {UNKNOWN_OFFSET, UNKNOWN_OFFSET};
        }

        ConsumerRecord<byte[], byte[]> nextRecord() {
            ConsumerRecord<byte[], byte[]> r = records.next();
            nextOffsetInFetchedData = r.offset() + 1;
            return r;
        }

        void previousRecord() {
            ConsumerRecord<byte[], byte[]> r = records.previous();
            nextOffsetInFetchedData = r.offset();
        }

        /** KafkaDataConsumer.fetchRecord: {record or null, next offset to fetch}. */
        Object[] fetchRecord(long offset, long untilOffset, boolean failOnDataLoss) throws TimeoutException {
            if (offset != nextOffsetInFetchedData) {
                fetchData(offset);
            } else if (!records.hasNext()) {
                if (offset < offsetAfterPoll) {
                    long next = offsetAfterPoll;
                    reset();
                    return new Object[] {null, next};
                } else {
                    fetchData(offset);
                }
            }
            if (!records.hasNext()) {
                if (offset > offsetAfterPoll)
                    throw new IllegalStateException("seek to " + offset + " and poll but the offset was reset to " + offsetAfterPoll);
                return new Object[] {null, offsetAfterPoll};
            }
            ConsumerRecord<byte[], byte[]> record = nextRecord();
            if (record.offset() > offset) {
                if (availableRange[0] <= offset) {
                    previousRecord();
                    return new Object[] {null, record.offset()};
                }
                if (failOnDataLoss) {
                    dataLoss++;
                    throw new DataLossException("Cannot fetch offsets " + offset + ".." + record.offset(), null);
                } else if (record.offset() >= untilOffset) {
                    dataLoss++;
                    return new Object[] {null, untilOffset};
                } else {
                    dataLoss++;
                    return new Object[] {record, nextOffsetInFetchedData};
                }
            } else if (record.offset() < offset) {
                throw new IllegalStateException("Tried to fetch " + offset + " but the returned record offset was " + record.offset());
            }
            return new Object[] {record, nextOffsetInFetchedData};
        }

        /** KafkaDataConsumer.get. */
        @SuppressWarnings("unchecked")
        ConsumerRecord<byte[], byte[]> get(long offset, long untilOffset, boolean failOnDataLoss) throws TimeoutException {
            if (offset >= untilOffset) throw new IllegalArgumentException("offset must be < untilOffset");
            long toFetch = offset;
            while (toFetch != UNKNOWN_OFFSET) {
                try {
                    Object[] fr = fetchRecord(toFetch, untilOffset, failOnDataLoss);
                    if (fr[0] != null) return (ConsumerRecord<byte[], byte[]>) fr[0];
                    toFetch = (Long) fr[1];
                    if (toFetch >= untilOffset) {
                        reset();
                        toFetch = UNKNOWN_OFFSET;
                    }
                } catch (OffsetOutOfRangeException e) {
                    // Spark hands the consumer back to its pool here and drops the fetched data.
                    reset();
                    if (failOnDataLoss) {
                        dataLoss++;
                        throw new DataLossException("Cannot fetch offset " + toFetch, e);
                    }
                    dataLoss++;
                    long old = toFetch;
                    toFetch = earliestAvailableOffsetBetween(toFetch, untilOffset);
                    offsetOutOfRange += (toFetch == UNKNOWN_OFFSET ? untilOffset : toFetch) - old;
                }
            }
            reset();
            return null;
        }

        long earliestAvailableOffsetBetween(long offset, long untilOffset) {
            long[] range = getAvailableOffsetRange();
            if (offset >= range[1] || range[0] >= untilOffset) return UNKNOWN_OFFSET;
            if (offset >= range[0]) return offset;
            return range[0];
        }

        /** KafkaBatchPartitionReader: resolveRange + next() until untilOffset. */
        List<ConsumerRecord<byte[], byte[]>> readRange(long from, long until, boolean failOnDataLoss) throws TimeoutException {
            if (from < 0 || until < 0) {
                long[] range = getAvailableOffsetRange();
                if (from == EARLIEST) from = range[0];
                if (until == LATEST) until = range[1];
            }
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            long next = from;
            while (next < until) {
                ConsumerRecord<byte[], byte[]> r = get(next, until, failOnDataLoss);
                if (r == null) break;
                out.add(r);
                next = r.offset() + 1;
            }
            return out;
        }

        @Override public void close() { consumer.close(); }
    }

    static List<Long> offsets(List<ConsumerRecord<byte[], byte[]>> records) {
        List<Long> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) out.add(r.offset());
        return out;
    }

    // ------------------------------------------------------------------ spec

    static class PartSpec {
        TopicPartition tp;
        long logStart, hw;
        Map<String, NavigableSet<Long>> visible = new HashMap<>();
        List<long[]> tsQueries = new ArrayList<>();
    }

    static Map<String, PartSpec> readSpec(String path) throws IOException {
        Map<String, PartSpec> specs = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(path))) {
            if (line.isBlank()) continue;
            String[] f = line.split("\t", -1);
            TopicPartition tp = new TopicPartition(f[1], Integer.parseInt(f[2]));
            PartSpec s = specs.computeIfAbsent(tp.toString(), k -> { PartSpec n = new PartSpec(); n.tp = tp; return n; });
            switch (f[0]) {
                case "range": s.logStart = Long.parseLong(f[3]); s.hw = Long.parseLong(f[4]); break;
                case "visible": {
                    NavigableSet<Long> set = new TreeSet<>();
                    for (String o : f[4].split(",")) if (!o.isEmpty()) set.add(Long.parseLong(o));
                    s.visible.put(f[3], set);
                    break;
                }
                case "tsq": s.tsQueries.add(new long[] {Long.parseLong(f[3]), Long.parseLong(f[4])}); break;
                default: throw new IllegalArgumentException("bad spec line: " + line);
            }
        }
        return specs;
    }

    // ------------------------------------------------------------------ the scenarios

    static final int[] PLAIN_COUNTS = {1000, 700, 0};
    static final long PLAIN_BASE_TS = 1_767_000_000_000L;

    static long plainTs(int partition, int i) { return PLAIN_BASE_TS + 10L * i + partition; }

    static void producePlain(String topic) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerParams())) {
            for (int p = 0; p < PLAIN_COUNTS.length; p++)
                for (int i = 0; i < PLAIN_COUNTS[p]; i++) {
                    ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, p, plainTs(p, i),
                            ("k" + i).getBytes(StandardCharsets.UTF_8),
                            ("{\"event_id\":\"" + p + "-" + i + "\"}").getBytes(StandardCharsets.UTF_8));
                    rec.headers().add("source", ("p" + p).getBytes(StandardCharsets.UTF_8));
                    producer.send(rec);
                }
            producer.flush();
        }
    }

    static void driverChecks(Admin admin, String plain, String prefix, Map<String, PartSpec> specs) throws Exception {
        Set<String> specTopics = new TreeSet<>();
        for (PartSpec s : specs.values()) specTopics.add(s.tp.topic());
        Set<String> all = new TreeSet<>(specTopics);
        all.add(plain);

        guarded("driver.describeTopics", () -> {
            Map<String, TopicDescription> d = admin.describeTopics(all).allTopicNames().get();
            StringBuilder bad = new StringBuilder();
            for (String t : all) {
                TopicDescription td = d.get(t);
                if (td == null) { bad.append(t).append(" missing; "); continue; }
                if (td.isInternal()) bad.append(t).append(" internal; ");
                for (TopicPartitionInfo info : td.partitions())
                    if (info.leader() == null || info.leader().isEmpty()) bad.append(t).append("-").append(info.partition()).append(" no leader; ");
            }
            check("driver.describeTopics", bad.length() == 0 && d.get(plain).partitions().size() == 3,
                  bad.length() == 0 ? "partitions " + d.get(plain).partitions().size() : bad.toString());
        });

        guarded("driver.subscribe.partitions", () -> {
            Set<TopicPartition> tps = retrieveAllPartitions(admin, Collections.singleton(plain));
            checkEq("driver.subscribe.partitions", "[" + plain + "-0, " + plain + "-1, " + plain + "-2]", tps.toString());
        });

        guarded("driver.assign.partitions", () -> {
            // AssignStrategy: describe the topics, keep the assigned partitions.
            Set<TopicPartition> wanted = new HashSet<>(Arrays.asList(new TopicPartition(plain, 0), new TopicPartition(plain, 2)));
            Set<TopicPartition> got = retrieveAllPartitions(admin, Collections.singleton(plain));
            got.retainAll(wanted);
            checkEq("driver.assign.partitions", 2, got.size());
        });

        guarded("driver.subscribePattern.listTopics", () -> {
            Set<TopicPartition> tps = patternPartitions(admin, "^" + Pattern.quote(prefix) + ".*");
            Set<String> topics = new TreeSet<>();
            for (TopicPartition tp : tps) topics.add(tp.topic());
            checkEq("driver.subscribePattern.listTopics", all, topics);
            boolean internal = false;
            for (TopicListing l : admin.listTopics().listings().get()) internal |= l.isInternal() || l.name().startsWith("__");
            check("driver.listTopics.no_internal_topics", !internal, "listTopics() must not list internal topics by default");
        });

        guarded("driver.describeTopics.unknown_topic", () -> {
            String missing = prefix + "-does-not-exist";
            try {
                admin.describeTopics(Collections.singleton(missing)).allTopicNames().get();
                check("driver.describeTopics.unknown_topic", false, "no error for a missing topic");
            } catch (ExecutionException e) {
                check("driver.describeTopics.unknown_topic", e.getCause() instanceof UnknownTopicOrPartitionException,
                      String.valueOf(e.getCause()));
            }
            Thread.sleep(300);
            boolean created = admin.listTopics().names().get().contains(missing);
            check("driver.describeTopics.no_auto_create", !created, created ? missing + " was auto-created" : "not created");
        });

        for (IsolationLevel level : IsolationLevel.values()) {
            String lv = level.toString().toLowerCase(Locale.ROOT);
            guarded("driver.listOffsets.plain." + lv, () -> {
                Map<TopicPartition, OffsetSpec> e = new HashMap<>(), l = new HashMap<>();
                for (int p = 0; p < 3; p++) { e.put(new TopicPartition(plain, p), OffsetSpec.earliest()); l.put(new TopicPartition(plain, p), OffsetSpec.latest()); }
                Map<TopicPartition, Long> earliest = listOffsets(admin, e, level), latest = listOffsets(admin, l, level);
                List<Long> ge = new ArrayList<>(), gl = new ArrayList<>(), wl = new ArrayList<>();
                for (int p = 0; p < 3; p++) { ge.add(earliest.get(new TopicPartition(plain, p))); gl.add(latest.get(new TopicPartition(plain, p))); wl.add((long) PLAIN_COUNTS[p]); }
                checkEq("driver.listOffsets.plain." + lv + ".earliest", Arrays.asList(0L, 0L, 0L), ge);
                checkEq("driver.listOffsets.plain." + lv + ".latest", wl, gl);
            });
            for (PartSpec s : specs.values()) {
                String n = "driver.listOffsets." + s.tp + "." + lv;
                guarded(n, () -> {
                    long earliest = listOffsets(admin, Collections.singletonMap(s.tp, OffsetSpec.earliest()), level).get(s.tp);
                    long latest = listOffsets(admin, Collections.singletonMap(s.tp, OffsetSpec.latest()), level).get(s.tp);
                    checkEq(n, s.logStart + ".." + s.hw, earliest + ".." + latest);
                });
            }
        }

        guarded("driver.listOffsets.forTimestamp.plain", () -> {
            // Spark: fetchGlobalTimestampBasedOffsets / fetchSpecificTimestampBasedOffsets
            TopicPartition tp = new TopicPartition(plain, 0);
            long[][] cases = {
                {plainTs(0, 0) - 5, 0}, {plainTs(0, 0), 0}, {plainTs(0, 5), 5}, {plainTs(0, 5) + 1, 6},
                {plainTs(0, 999), 999}, {plainTs(0, 999) + 1, -1},
            };
            StringBuilder bad = new StringBuilder();
            for (IsolationLevel level : IsolationLevel.values())
                for (long[] c : cases) {
                    ListOffsetsResult.ListOffsetsResultInfo info = admin.listOffsets(
                            Collections.singletonMap(tp, OffsetSpec.forTimestamp(c[0])), new ListOffsetsOptions(level))
                            .partitionResult(tp).get();
                    if (info.offset() != c[1]) bad.append(level).append(" ts ").append(c[0]).append(": offset ").append(info.offset()).append(" want ").append(c[1]).append("; ");
                    else if (c[1] >= 0 && info.timestamp() != plainTs(0, (int) c[1])) bad.append(" ts ").append(c[0]).append(": timestamp ").append(info.timestamp()).append("; ");
                }
            // The empty partition has no offset for any timestamp.
            TopicPartition empty = new TopicPartition(plain, 2);
            long off = admin.listOffsets(Collections.singletonMap(empty, OffsetSpec.forTimestamp(0L))).partitionResult(empty).get().offset();
            if (off != -1) bad.append("empty partition: offset ").append(off);
            check("driver.listOffsets.forTimestamp.plain", bad.length() == 0, bad.length() == 0 ? cases.length * 2 + 1 + " lookups" : bad.toString());
        });

        for (PartSpec s : specs.values()) {
            String n = "driver.listOffsets.forTimestamp." + s.tp;
            guarded(n, () -> {
                StringBuilder bad = new StringBuilder();
                for (long[] q : s.tsQueries) {
                    long got = admin.listOffsets(Collections.singletonMap(s.tp, OffsetSpec.forTimestamp(q[0])),
                            new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).partitionResult(s.tp).get().offset();
                    if (got != q[1]) bad.append("ts ").append(q[0] - SPEC_BASE_TS).append(": ").append(got).append(" want ").append(q[1]).append("; ");
                }
                check(n, bad.length() == 0, bad.length() == 0 ? s.tsQueries.size() + " lookups" : bad.toString());
            });
        }

        guarded("driver.fetchLatestOffsets.monotonic", () -> {
            // KafkaOffsetReaderAdmin.fetchLatestOffsets(knownOffsets): a latest offset
            // below a known one makes Spark retry and then report data loss.
            Map<TopicPartition, OffsetSpec> l = new HashMap<>();
            for (TopicPartition tp : retrieveAllPartitions(admin, all)) l.put(tp, OffsetSpec.latest());
            Map<TopicPartition, Long> first = listOffsets(admin, l, IsolationLevel.READ_COMMITTED);
            Map<TopicPartition, Long> second = listOffsets(admin, l, IsolationLevel.READ_COMMITTED);
            checkEq("driver.fetchLatestOffsets.monotonic", first, second);
        });
    }

    static void plainExecutorChecks(String plain) throws Exception {
        for (int p = 0; p < 2; p++) {
            final int part = p;
            TopicPartition tp = new TopicPartition(plain, p);
            String n = "executor.plain." + tp;
            guarded(n, () -> {
                try (SparkReader r = new SparkReader(tp, executorParams("read_committed"), null)) {
                    // Late-bound range (EARLIEST..LATEST), then rate-limited micro-batches
                    // (maxOffsetsPerTrigger) on the same cached consumer.
                    List<ConsumerRecord<byte[], byte[]>> all = r.readRange(EARLIEST, LATEST, true);
                    StringBuilder bad = new StringBuilder();
                    if (all.size() != PLAIN_COUNTS[part]) bad.append("read ").append(all.size()).append(" records; ");
                    for (int i = 0; i < all.size(); i++) {
                        ConsumerRecord<byte[], byte[]> rec = all.get(i);
                        Header h = rec.headers().lastHeader("source");
                        if (rec.offset() != i || rec.timestamp() != plainTs(part, i)
                                || !new String(rec.key(), StandardCharsets.UTF_8).equals("k" + i)
                                || h == null || !new String(h.value(), StandardCharsets.UTF_8).equals("p" + part)) {
                            bad.append("record ").append(i).append(" is ").append(rec).append("; ");
                            break;
                        }
                    }
                    List<Long> batched = new ArrayList<>();
                    for (long from = 0; from < PLAIN_COUNTS[part]; from += 333)
                        batched.addAll(offsets(r.readRange(from, Math.min(from + 333, PLAIN_COUNTS[part]), true)));
                    List<Long> want = new ArrayList<>();
                    for (long i = 0; i < PLAIN_COUNTS[part]; i++) want.add(i);
                    if (!batched.equals(want)) bad.append("micro-batches read ").append(batched.size()).append(" offsets, not each once; ");
                    if (r.dataLoss != 0) bad.append("data loss counted ").append(r.dataLoss);
                    check(n, bad.length() == 0, bad.length() == 0 ? all.size() + " records, " + r.polls + " polls" : bad.toString());
                }
            });
        }
        TopicPartition empty = new TopicPartition(plain, 2);
        guarded("executor.plain.empty_partition", () -> {
            try (SparkReader r = new SparkReader(empty, executorParams("read_uncommitted"), null)) {
                long[] range = r.getAvailableOffsetRange();
                checkEq("executor.plain.empty_partition", "0..0", range[0] + ".." + range[1]);
            }
        });
    }

    static void gapExecutorChecks(PartSpec s) {
        for (String level : new String[] {"read_uncommitted", "read_committed"}) {
            NavigableSet<Long> visible = s.visible.get(level);
            String base = "executor.gaps." + s.tp + "." + level;
            guarded(base + ".range", () -> {
                try (SparkReader r = new SparkReader(s.tp, fastExecutorParams(level), visible)) {
                    long[] range = r.getAvailableOffsetRange();
                    checkEq(base + ".available_range", s.logStart + ".." + s.hw, range[0] + ".." + range[1]);
                    // Every start offset to the end, and every end offset from the start,
                    // with failOnDataLoss=true: no gap may look like data loss.
                    StringBuilder bad = new StringBuilder();
                    long step = s.hw - s.logStart > 30 ? 7 : 1;  // long logs: a sample of ranges
                    for (long from = s.logStart; from < s.hw; from += step) {
                        List<Long> got = offsets(r.readRange(from, s.hw, true));
                        List<Long> want = new ArrayList<>(visible.subSet(from, true, s.hw, false));
                        if (!got.equals(want)) bad.append("[").append(from).append(",").append(s.hw).append("): ").append(got).append(" want ").append(want).append("; ");
                    }
                    for (long until = s.logStart + 1; until <= s.hw; until += step) {
                        List<Long> got = offsets(r.readRange(s.logStart, until, true));
                        List<Long> want = new ArrayList<>(visible.subSet(s.logStart, true, until, false));
                        if (!got.equals(want)) bad.append("[").append(s.logStart).append(",").append(until).append("): ").append(got).append(" want ").append(want).append("; ");
                    }
                    check(base + ".read_ranges", bad.length() == 0, bad.length() == 0 ? r.polls + " polls, every range exact" : bad.toString());
                    check(base + ".polls", r.pollViolations.isEmpty(), r.pollViolations.isEmpty() ? r.polls + " polls" : r.pollViolations.toString());
                    check(base + ".no_data_loss", r.dataLoss == 0 && r.offsetOutOfRange == 0,
                          "dataLoss=" + r.dataLoss + " offsetOutOfRange=" + r.offsetOutOfRange);
                } catch (DataLossException e) {
                    check(base + ".read_ranges", false, "Spark would fail the query: " + e.getMessage());
                }
            });
        }
    }

    static void outOfRangeChecks(PartSpec s) {
        // s: a partition whose log starts above 0.
        String base = "executor.out_of_range." + s.tp;
        NavigableSet<Long> visible = s.visible.get("read_uncommitted");
        guarded(base, () -> {
            long below = s.logStart / 2, above = s.hw + 10;
            try (SparkReader r = new SparkReader(s.tp, executorParams("read_uncommitted"), null)) {
                // Raw consumer: seek below the log start / past the end; poll must throw
                // OffsetOutOfRangeException naming the offset (auto.offset.reset=none).
                for (long off : new long[] {below, s.hw + 1}) {
                    r.consumer.seek(s.tp, off);
                    try {
                        ConsumerRecords<byte[], byte[]> got = r.consumer.poll(Duration.ofMillis(POLL_TIMEOUT_MS));
                        check(base + ".poll_throws." + (off < s.logStart ? "below_start" : "past_end"), false,
                              "poll from " + off + " returned " + got.count() + " records, position " + r.consumer.position(s.tp));
                    } catch (OffsetOutOfRangeException e) {
                        checkEq(base + ".poll_throws." + (off < s.logStart ? "below_start" : "past_end"),
                                Collections.singletonMap(s.tp, off), e.offsetOutOfRangePartitions());
                    }
                }
                r.newConsumer();
                // At the log end: an empty poll, no error, position unchanged.
                r.consumer.seek(s.tp, s.hw);
                int n = r.consumer.poll(Duration.ofMillis(500)).count();
                checkEq(base + ".poll_at_end", "0 records, position " + s.hw, n + " records, position " + r.consumer.position(s.tp));
            }
            // failOnDataLoss=true: Spark fails the query (the data really is gone).
            try (SparkReader r = new SparkReader(s.tp, executorParams("read_uncommitted"), null)) {
                try {
                    r.readRange(below, s.hw, true);
                    check(base + ".fail_on_data_loss", false, "no data loss reported for offsets below the log start");
                } catch (DataLossException e) {
                    check(base + ".fail_on_data_loss", e.getCause() instanceof OffsetOutOfRangeException, String.valueOf(e.getCause()));
                }
            }
            // failOnDataLoss=false: Spark resumes at the log start and reads everything there is.
            try (SparkReader r = new SparkReader(s.tp, executorParams("read_uncommitted"), null)) {
                List<Long> got = offsets(r.readRange(below, s.hw, false));
                checkEq(base + ".skip_to_log_start", new ArrayList<>(visible), got);
                checkEq(base + ".offset_out_of_range_counted", s.logStart - below, (long) r.offsetOutOfRange);
                List<Long> past = offsets(r.readRange(s.hw + 1, above, false));
                checkEq(base + ".past_end_skipped", Collections.emptyList(), past);
            }
        });
    }

    static void sinkChecks(Admin admin, String topic) {
        guarded("sink.produce_and_read_back", () -> {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
            int n = 250;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerParams())) {
                for (int i = 0; i < n; i++) {
                    ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, null,
                            ("kind@" + i).getBytes(StandardCharsets.UTF_8), ("{\"events\":" + i + "}").getBytes(StandardCharsets.UTF_8));
                    rec.headers().add("producer", "kafkapy-pipeline".getBytes(StandardCharsets.UTF_8));
                    producer.send(rec);
                }
                producer.flush();
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            try (SparkReader r = new SparkReader(tp, executorParams("read_committed"), null)) {
                List<ConsumerRecord<byte[], byte[]>> got = r.readRange(EARLIEST, LATEST, true);
                boolean ok = got.size() == n;
                for (int i = 0; ok && i < n; i++)
                    ok = got.get(i).offset() == i && new String(got.get(i).key(), StandardCharsets.UTF_8).equals("kind@" + i)
                         && got.get(i).headers().lastHeader("producer") != null;
                check("sink.produce_and_read_back", ok, got.size() + " records read back");
            }
        });
    }

    static List<String> values(List<ConsumerRecord<byte[], byte[]>> records) {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) out.add(new String(r.value(), StandardCharsets.UTF_8));
        return out;
    }

    static long latest(Admin admin, TopicPartition tp, IsolationLevel level) throws Exception {
        return listOffsets(admin, Collections.singletonMap(tp, OffsetSpec.latest()), level).get(tp);
    }

    /** Real transactions: committed, aborted and open ones, with Spark's read_committed ranges. */
    static void liveTransactionChecks(Admin admin, String topic) {
        guarded("live_txn", () -> {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
            TopicPartition tp = new TopicPartition(topic, 0);
            Properties tpp = producerParams();
            tpp.put("transactional.id", "spark-harness-" + UUID.randomUUID());
            try (KafkaProducer<byte[], byte[]> tx = new KafkaProducer<>(tpp);
                 KafkaProducer<byte[], byte[]> plain = new KafkaProducer<>(producerParams())) {
                tx.initTransactions();
                tx.beginTransaction();
                for (String v : new String[] {"c0", "c1", "c2"}) tx.send(new ProducerRecord<>(topic, 0, null, v.getBytes(StandardCharsets.UTF_8)));
                tx.commitTransaction();
                tx.beginTransaction();
                for (String v : new String[] {"a0", "a1"}) tx.send(new ProducerRecord<>(topic, 0, null, v.getBytes(StandardCharsets.UTF_8)));
                tx.flush();
                tx.abortTransaction();
                plain.send(new ProducerRecord<>(topic, 0, null, "p0".getBytes(StandardCharsets.UTF_8))).get();
                tx.beginTransaction();
                for (String v : new String[] {"o0", "o1"}) tx.send(new ProducerRecord<>(topic, 0, null, v.getBytes(StandardCharsets.UTF_8)));
                tx.flush();

                long lso = latest(admin, tp, IsolationLevel.READ_COMMITTED);
                long hw = latest(admin, tp, IsolationLevel.READ_UNCOMMITTED);
                try (SparkReader all = new SparkReader(tp, executorParams("read_uncommitted"), null);
                     SparkReader committed = new SparkReader(tp, executorParams("read_committed"), null)) {
                    List<ConsumerRecord<byte[], byte[]>> everything = all.readRange(0, hw, true);
                    checkEq("live_txn.read_uncommitted", Arrays.asList("c0", "c1", "c2", "a0", "a1", "p0", "o0", "o1"), values(everything));
                    long openStart = everything.isEmpty() ? -1 : everything.get(everything.size() - 2).offset();
                    checkEq("live_txn.lso_is_first_offset_of_open_txn", openStart + ".." + hw, lso + ".." + hw);
                    // A read_committed micro-batch ends at the LSO (Spark's latest offset).
                    checkEq("live_txn.read_committed_to_lso", Arrays.asList("c0", "c1", "c2", "p0"), values(committed.readRange(0, lso, true)));
                    tx.commitTransaction();
                    long lsoAfter = latest(admin, tp, IsolationLevel.READ_COMMITTED);
                    long hwAfter = latest(admin, tp, IsolationLevel.READ_UNCOMMITTED);
                    checkEq("live_txn.lso_after_commit", hwAfter + "", lsoAfter + "");
                    // The next micro-batch: [previous end, new end), ending on the commit marker.
                    checkEq("live_txn.next_batch_after_commit", Arrays.asList("o0", "o1"), values(committed.readRange(lso, lsoAfter, true)));
                    check("live_txn.no_data_loss", all.dataLoss + committed.dataLoss == 0,
                          "dataLoss=" + (all.dataLoss + committed.dataLoss));
                }
            }
        });
    }

    /** Admin.deleteRecords moves the log start: Spark's earliest and its out-of-range recovery. */
    static void deleteRecordsChecks(Admin admin, String plain) {
        guarded("delete_records", () -> {
            TopicPartition tp = new TopicPartition(plain, 1);
            long low = admin.deleteRecords(Collections.singletonMap(tp, RecordsToDelete.beforeOffset(100)))
                    .lowWatermarks().get(tp).get().lowWatermark();
            checkEq("delete_records.low_watermark", 100L, low);
            long earliest = listOffsets(admin, Collections.singletonMap(tp, OffsetSpec.earliest()), IsolationLevel.READ_COMMITTED).get(tp);
            checkEq("delete_records.earliest", 100L, earliest);
            try (SparkReader r = new SparkReader(tp, executorParams("read_committed"), null)) {
                List<Long> got = offsets(r.readRange(0, PLAIN_COUNTS[1], false));
                boolean ok = got.size() == PLAIN_COUNTS[1] - 100 && got.get(0) == 100L && got.get(got.size() - 1) == PLAIN_COUNTS[1] - 1;
                check("delete_records.resume_at_log_start", ok && r.offsetOutOfRange == 100,
                      got.size() + " records from " + (got.isEmpty() ? "-" : got.get(0)) + ", offsetOutOfRange=" + r.offsetOutOfRange);
                try {
                    r.readRange(50, PLAIN_COUNTS[1], true);
                    check("delete_records.fail_on_data_loss", false, "no data loss reported");
                } catch (DataLossException e) {
                    check("delete_records.fail_on_data_loss", e.getCause() instanceof OffsetOutOfRangeException, String.valueOf(e.getCause()));
                }
            }
        });
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        Map<String, PartSpec> specs = readSpec(args[1]);
        String prefix = args[2];
        String plain = prefix + "-events";
        try (Admin admin = Admin.create(driverParams())) {
            guarded("setup.plain_topic", () -> {
                admin.createTopics(Collections.singleton(new NewTopic(plain, 3, (short) 1))).all().get();
                producePlain(plain);
            });
            driverChecks(admin, plain, prefix, specs);
            plainExecutorChecks(plain);
            for (PartSpec s : specs.values()) {
                gapExecutorChecks(s);
                if (s.logStart > 0) outOfRangeChecks(s);
            }
            sinkChecks(admin, prefix + "-sink");
            if (!Arrays.asList(args).contains("--no-transactions")) liveTransactionChecks(admin, prefix + "-txn");
            deleteRecordsChecks(admin, plain);
        }
        System.out.println("{\"ok\":" + allOk + ",\"client_version\":" + js(org.apache.kafka.common.utils.AppInfoParser.getVersion())
                           + ",\"checks\":[" + String.join(",", checkJson) + "]}");
        System.out.flush();
        System.exit(0);
    }
}
