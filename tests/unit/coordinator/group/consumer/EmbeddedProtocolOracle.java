// Kafka's own ConsumerProtocol (kafka-clients 3.9) as an oracle for
// kafkapy/coordinator/group/consumer/embedded.py:
//   java -cp '<kafka>/libs/*' EmbeddedProtocolOracle.java < requests
// One request per line, one answer per line.  Strings are "~" (null) or "x" + the hex of
// their UTF-8 bytes; a partition list is "-" (empty) or "<topic>:<p>,<p>/<topic>:<p>,...".
//   S  <version> <topics t,t | -> <owned> <generation> <rack>   -> the subscription's hex
//   A  <version> <partitions>                                   -> the assignment's hex
//   DS <hex>   -> "OK <topics> <owned> <generation> <rack>" (deserializeSubscription), or ERR
//   DA <hex>   -> "OK <partitions>" (deserializeAssignment), or ERR
// Decoded lists keep the order of the bytes.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

public class EmbeddedProtocolOracle {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            System.out.println(answer(line.trim().split(" ")));
        }
    }

    private static String answer(String[] f) {
        switch (f[0]) {
            case "S": {
                List<String> topics = f[2].equals("-") ? List.of()
                    : java.util.Arrays.stream(f[2].split(",")).map(EmbeddedProtocolOracle::str).collect(Collectors.toList());
                Subscription s = new Subscription(topics, null, partitions(f[3]),
                    Integer.parseInt(f[4]), Optional.ofNullable(str(f[5])));
                return hex(ConsumerProtocol.serializeSubscription(s, Short.parseShort(f[1])));
            }
            case "A":
                return hex(ConsumerProtocol.serializeAssignment(new Assignment(partitions(f[2])),
                    Short.parseShort(f[1])));
            case "DS":
                try {
                    Subscription s = ConsumerProtocol.deserializeSubscription(bytes(f[1]));
                    return "OK " + (s.topics().isEmpty() ? "-" : s.topics().stream()
                        .map(EmbeddedProtocolOracle::enc).collect(Collectors.joining(",")))
                        + " " + spec(s.ownedPartitions()) + " " + s.generationId().orElse(-1)
                        + " " + enc(s.rackId().orElse(null));
                } catch (Exception e) {
                    return "ERR";
                }
            case "DA":
                try {
                    return "OK " + spec(ConsumerProtocol.deserializeAssignment(bytes(f[1])).partitions());
                } catch (Exception e) {
                    return "ERR";
                }
            default:
                throw new IllegalArgumentException(f[0]);
        }
    }

    private static ByteBuffer bytes(String hex) {
        return ByteBuffer.wrap(hex.equals("-") ? new byte[0] : HEX.parseHex(hex));
    }

    private static String hex(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.get(out);
        return HEX.formatHex(out);
    }

    private static String str(String s) {
        return s.equals("~") ? null : new String(HEX.parseHex(s.substring(1)), StandardCharsets.UTF_8);
    }

    private static String enc(String s) {
        return s == null ? "~" : "x" + HEX.formatHex(s.getBytes(StandardCharsets.UTF_8));
    }

    private static List<TopicPartition> partitions(String spec) {
        List<TopicPartition> out = new ArrayList<>();
        if (spec.equals("-")) return out;
        for (String topic : spec.split("/")) {
            String[] tp = topic.split(":");
            for (String p : tp[1].split(",")) out.add(new TopicPartition(str(tp[0]), Integer.parseInt(p)));
        }
        return out;
    }

    private static String spec(List<TopicPartition> partitions) {
        if (partitions.isEmpty()) return "-";
        Map<String, List<String>> byTopic = new LinkedHashMap<>();
        for (TopicPartition tp : partitions)
            byTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(String.valueOf(tp.partition()));
        return byTopic.entrySet().stream().map(e -> enc(e.getKey()) + ":" + String.join(",", e.getValue()))
            .collect(Collectors.joining("/"));
    }
}
