/*
 * A transactional producer that reports its producer id and epoch after every transaction
 * (compiled against kafka-clients 3.9.0 and 4.3.0 by tests/clients/test_transactions_v2.py).
 *
 * Usage: java TxnEpochs <bootstrap> <topic> <partitions> <transactional id> <transactions>
 *                       <group>
 *   After initTransactions, transaction i (0-based) writes one record "<txn id>-<i>" to
 *   every partition of <topic> and sends the offset i + 1 of <topic>-0 for <group>
 *   (sendOffsetsToTransaction); every third transaction (i % 3 == 2) is aborted after its
 *   records were flushed, the others are committed.
 * Output, one line each:
 *   "init <producer id> <epoch>"
 *   "txn <i> <commit|abort> <producer id> <epoch> <tv2>" after each transaction, where
 *   <tv2> is the client's own TransactionManager.isTransactionV2Enabled() (false for a
 *   client without it), read by reflection like the producer id and epoch;
 *   "done" at the end.  An exception is printed as "FAIL: <exception>" and exits 1.
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Collections;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnEpochs {
    public static void main(String[] args) {
        try {
            run(args[0], args[1], Integer.parseInt(args[2]), args[3], Integer.parseInt(args[4]),
                args[5]);
        } catch (Exception e) {
            System.out.println("FAIL: " + e);
            System.out.flush();
            System.exit(1);
        }
    }

    static void run(String bootstrap, String topic, int partitions, String txnId,
                    int transactions, String group) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            System.out.println("init " + idAndEpoch(producer));
            TopicPartition first = new TopicPartition(topic, 0);
            for (int i = 0; i < transactions; i++) {
                producer.beginTransaction();
                for (int part = 0; part < partitions; part++) {
                    producer.send(new ProducerRecord<>(topic, part, "k", txnId + "-" + i));
                }
                producer.sendOffsetsToTransaction(
                    Collections.singletonMap(first, new OffsetAndMetadata(i + 1)),
                    new ConsumerGroupMetadata(group));
                boolean abort = i % 3 == 2;
                if (abort) {
                    producer.flush();
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
                System.out.println("txn " + i + " " + (abort ? "abort" : "commit") + " "
                                   + idAndEpoch(producer) + " " + tv2(producer));
                System.out.flush();
            }
        }
        System.out.println("done");
    }

    static Object transactionManager(KafkaProducer<?, ?> producer) throws Exception {
        Field f = KafkaProducer.class.getDeclaredField("transactionManager");
        f.setAccessible(true);
        return f.get(producer);
    }

    static String idAndEpoch(KafkaProducer<?, ?> producer) throws Exception {
        Object manager = transactionManager(producer);
        Method m = manager.getClass().getDeclaredMethod("producerIdAndEpoch");
        m.setAccessible(true);
        Object idAndEpoch = m.invoke(manager);
        Field id = idAndEpoch.getClass().getField("producerId");
        Field epoch = idAndEpoch.getClass().getField("epoch");
        return id.get(idAndEpoch) + " " + epoch.get(idAndEpoch);
    }

    static boolean tv2(KafkaProducer<?, ?> producer) throws Exception {
        Object manager = transactionManager(producer);
        try {
            Method m = manager.getClass().getDeclaredMethod("isTransactionV2Enabled");
            m.setAccessible(true);
            return (Boolean) m.invoke(manager);
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
