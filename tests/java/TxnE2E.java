/*
 * Transactions with the stock Apache Kafka Java client (kafka-clients 3.9.x and 4.x;
 * compiled at test time by tests/clients/conftest.py).
 *
 * Usage: java TxnE2E <bootstrap> <topic>
 *   1. Admin.createTopics(topic, 1 partition);
 *   2. a transactional producer (transactional.id = topic + "-txn") commits 3
 *      transactions of 100 records ("commit-<i>") and aborts 2 of 50 ("abort-<i>",
 *      flushed before the abort so they are in the log); one committed transaction
 *      also sends offsets for group <topic>-group (sendOffsetsToTransaction);
 *   3. a second producer with the same transactional.id fences the first
 *      (ProducerFencedException / InvalidProducerEpochException on its next use);
 *   4. a read_committed consumer (assign + seekToBeginning) reads up to endOffsets
 *      (the LSO) and must see exactly the committed records, in order;
 *   5. Admin.listConsumerGroupOffsets returns the transactionally committed offset.
 * Prints one JSON summary line ("ok": true ...) and exits 0; "FAIL: ..." and 1 otherwise.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnE2E {
    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = topic + "-group";
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        int committed = 0, written = 0, n = 0;
        List<String> expected = new ArrayList<>();
        KafkaProducer<String, String> first = producer(bootstrap, topic + "-txn");
        first.initTransactions();
        for (int round = 0; round < 5; round++) {
            boolean commit = round % 2 == 0;
            int count = commit ? 100 : 50;
            first.beginTransaction();
            for (int i = 0; i < count; i++, n++) {
                String value = (commit ? "commit-" : "abort-") + n;
                first.send(new ProducerRecord<>(topic, 0, "k" + n, value));
                if (commit) expected.add(value);
            }
            written += count;
            if (commit) {
                if (round == 2) {
                    first.sendOffsetsToTransaction(
                        Collections.singletonMap(tp, new OffsetAndMetadata(42L)),
                        new ConsumerGroupMetadata(group));
                }
                first.commitTransaction();
                committed += count;
            } else {
                first.flush();
                first.abortTransaction();
            }
        }
        // Fencing: a second producer with the same transactional.id.
        KafkaProducer<String, String> second = producer(bootstrap, topic + "-txn");
        second.initTransactions();
        boolean fenced = false;
        try {
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, 0, "zombie", "zombie")).get();
            first.commitTransaction();
        } catch (Exception e) {
            fenced = true;
        }
        first.close(Duration.ofSeconds(5));
        if (!fenced) fail("the first producer was not fenced");
        second.beginTransaction();
        second.send(new ProducerRecord<>(topic, 0, "k", "commit-second"));
        second.commitTransaction();
        second.close();
        expected.add("commit-second");
        committed += 1;
        written += 1;

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            consumer.assign(Collections.singleton(tp));
            consumer.seekToBeginning(Collections.singleton(tp));
            long end = consumer.endOffsets(Collections.singleton(tp)).get(tp);
            int idle = 0;
            while (consumer.position(tp) < end && idle < 30) {
                int before = got.size();
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(1000))) {
                    got.add(r.value());
                }
                idle = got.size() == before ? idle + 1 : 0;
            }
        }
        if (!got.equals(expected)) {
            fail("read_committed saw " + got.size() + " records, expected " + expected.size()
                 + ": first differences " + (got.isEmpty() ? "[]" : got.subList(0, Math.min(5, got.size()))));
        }
        try (Admin admin = Admin.create(ap)) {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            OffsetAndMetadata om = offsets.get(tp);
            if (om == null || om.offset() != 42L) fail("transactional offset not committed: " + offsets);
        }
        System.out.println("{\"ok\": true, \"committed\": " + committed + ", \"read_committed\": "
                           + got.size() + ", \"written\": " + written + "}");
        System.exit(0);
    }
}
