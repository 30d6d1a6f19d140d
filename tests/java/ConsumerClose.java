/*
 * A stock Java consumer that fetches and then closes (kafka-clients 3.9.x and 4.x; compiled at
 * test time by tests/clients/conftest.py).  On close the consumer sends each broker a Fetch that
 * names no partitions (it ends its fetch session), which the broker must answer at once.
 *
 * Usage: java ConsumerClose <bootstrap> <topic>
 *   a producer writes 5 records; a consumer assigned to partition 0 polls until it has them,
 *   then closes.  Prints {"ok": true, "records": 5} and exits 0; "FAIL: ..." and 1 otherwise.
 */

import java.time.Duration;
import java.util.Collections;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ConsumerClose {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
            }
        }
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "500");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        int got = 0;
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
        consumer.assign(Collections.singletonList(new TopicPartition(topic, 0)));
        long deadline = System.currentTimeMillis() + 30000;
        while (got < 5 && System.currentTimeMillis() < deadline) {
            got += consumer.poll(Duration.ofMillis(500)).count();
        }
        // One more poll leaves a fetch in flight, as a consumer that is stopped mid-work has.
        consumer.poll(Duration.ofMillis(100));
        consumer.close(Duration.ofSeconds(10));
        if (got != 5) {
            System.err.println("FAIL: read " + got + " of 5 records");
            System.exit(1);
        }
        System.out.println("{\"ok\": true, \"records\": " + got + "}");
    }
}
