/*
 * Position validation (KIP-320) with the stock Apache Kafka Java consumer
 * (kafka-clients 3.9.x and 4.x; compiled at test time by tests/clients/conftest.py).
 *
 * Usage: java EpochValidation <bootstrap> <topic>
 *   1. Admin.createTopics(topic, 1 partition); a producer writes 10 records;
 *   2. a consumer (auto.offset.reset=none) seeks to offset 5 with leader epoch 0:
 *      the consumer validates that position with OffsetForLeaderEpoch before it
 *      fetches, and must then read offsets 5..9;
 *   3. a second consumer seeks to offset 50 with leader epoch 0: epoch 0 ends at
 *      offset 10 on the broker, so validation must report log truncation
 *      (LogTruncationException, divergent offset 10) -- without the broker's
 *      answer the consumer would fetch and hit OFFSET_OUT_OF_RANGE instead.
 * Prints one JSON summary line and exits 0; "FAIL: ..." and 1 otherwise.
 */

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class EpochValidation {
    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        TopicPartition tp = new TopicPartition(topic, 0);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(Collections.singleton(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, "v" + i)).get();
            }
        }

        List<Long> offsets = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            c.assign(Collections.singleton(tp));
            c.seek(tp, new OffsetAndMetadata(5, Optional.of(0), ""));
            long deadline = System.currentTimeMillis() + 30000;
            while (offsets.size() < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    offsets.add(r.offset());
                }
            }
        }

        String truncation = "none";
        long divergent = -1;
        try (KafkaConsumer<String, String> c = consumer(bootstrap)) {
            c.assign(Collections.singleton(tp));
            c.seek(tp, new OffsetAndMetadata(50, Optional.of(0), ""));
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                try {
                    if (!c.poll(Duration.ofMillis(500)).isEmpty()) {
                        fail("records at offset 50 of a 10-record partition");
                    }
                } catch (LogTruncationException e) {
                    truncation = "LogTruncationException";
                    divergent = e.divergentOffsets().get(tp).offset();
                    break;
                } catch (RuntimeException e) {
                    truncation = e.getClass().getSimpleName();
                    break;
                }
            }
        }
        System.out.println("{\"ok\": true, \"offsets\": " + offsets + ", \"truncation\": \""
                + truncation + "\", \"divergent_offset\": " + divergent + "}");
    }
}
