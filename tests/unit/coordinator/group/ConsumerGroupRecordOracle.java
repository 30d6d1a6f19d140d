// Kafka 3.9's own consumer group records (CoordinatorRecordHelpers, serialized by
// CoordinatorRecordSerde) as an oracle for kafkapy/coordinator/group/consumer/records.py:
//   java -cp '<kafka>/libs/*' ConsumerGroupRecordOracle.java < requests
// One request per line, one record out per line: "<key hex> <value hex|->".
// Strings are "~" (null) or "x" + the hex of their UTF-8 bytes; bytes are "x" + hex;
// a topic id is "<most significant bits>:<least significant bits>" (signed longs);
// lists are "-" when empty. Maps and sets keep the order of the request.
//   E  <group> <epoch>                     ET <group>
//   P  <group> <topic>,<topic>,...         PT <group>
//        topic = <id>:<name>:<partitions>:<racks>, racks = - | <p>=<rack>+<rack>/<p>=...
//   M  <group> <member> <instance> <rack> <client> <host> <topics s,s> <regex>
//      <rebalance timeout> <assignor> <classic: ~ | <session timeout>/<name>=<bytes>;...>
//   MT <group> <member>
//   A  <group> <assignment epoch>          AT <group>
//   T  <group> <member> <assignment>       TT <group> <member>
//        assignment = - | <id>:<p>,<p>/<id>:<p>,...
//   C  <group> <member> <epoch> <previous epoch> <state> <assigned> <pending revocation>
//   CT <group> <member>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.CoordinatorRecord;
import org.apache.kafka.coordinator.group.CoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.modern.MemberState;
import org.apache.kafka.coordinator.group.modern.TopicMetadata;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;

public class ConsumerGroupRecordOracle {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        CoordinatorRecordSerde serde = new CoordinatorRecordSerde();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            CoordinatorRecord record = record(line.trim().split(" "));
            byte[] value = serde.serializeValue(record);
            System.out.println(HEX.formatHex(serde.serializeKey(record)) + " "
                + (value == null ? "-" : HEX.formatHex(value)));
        }
    }

    private static CoordinatorRecord record(String[] f) {
        String group = str(f[1]);
        switch (f[0]) {
            case "E": return CoordinatorRecordHelpers.newGroupEpochRecord(group, Integer.parseInt(f[2]));
            case "ET": return CoordinatorRecordHelpers.newGroupEpochTombstoneRecord(group);
            case "P": return CoordinatorRecordHelpers.newGroupSubscriptionMetadataRecord(group, topics(f[2]));
            case "PT": return CoordinatorRecordHelpers.newGroupSubscriptionMetadataTombstoneRecord(group);
            case "M": return CoordinatorRecordHelpers.newMemberSubscriptionRecord(group, subscription(f));
            case "MT": return CoordinatorRecordHelpers.newMemberSubscriptionTombstoneRecord(group, str(f[2]));
            case "A": return CoordinatorRecordHelpers.newTargetAssignmentEpochRecord(group, Integer.parseInt(f[2]));
            case "AT": return CoordinatorRecordHelpers.newTargetAssignmentEpochTombstoneRecord(group);
            case "T": return CoordinatorRecordHelpers.newTargetAssignmentRecord(group, str(f[2]), assignment(f[3]));
            case "TT": return CoordinatorRecordHelpers.newTargetAssignmentTombstoneRecord(group, str(f[2]));
            case "C": return CoordinatorRecordHelpers.newCurrentAssignmentRecord(group, current(f));
            case "CT": return CoordinatorRecordHelpers.newCurrentAssignmentTombstoneRecord(group, str(f[2]));
            default: throw new IllegalArgumentException(f[0]);
        }
    }

    private static String str(String s) {
        if (s.equals("~")) return null;
        return new String(HEX.parseHex(s.substring(1)), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return HEX.parseHex(s.substring(1));
    }

    private static Uuid uuid(String msb, String lsb) {
        return new Uuid(Long.parseLong(msb), Long.parseLong(lsb));
    }

    private static Map<String, TopicMetadata> topics(String s) {
        Map<String, TopicMetadata> out = new LinkedHashMap<>();
        if (s.equals("-")) return out;
        for (String t : s.split(",")) {
            String[] p = t.split(":", -1);
            Map<Integer, Set<String>> racks = new LinkedHashMap<>();
            if (!p[4].equals("-")) {
                for (String pr : p[4].split("/")) {
                    String[] kv = pr.split("=", -1);
                    Set<String> names = new LinkedHashSet<>();
                    if (!kv[1].isEmpty())
                        for (String r : kv[1].split("\\+")) names.add(str(r));
                    racks.put(Integer.parseInt(kv[0]), names);
                }
            }
            String name = str(p[2]);
            out.put(name, new TopicMetadata(uuid(p[0], p[1]), name, Integer.parseInt(p[3]), racks));
        }
        return out;
    }

    private static ConsumerGroupMember subscription(String[] f) {
        List<String> topics = new ArrayList<>();
        if (!f[7].equals("-"))
            for (String t : f[7].split(",")) topics.add(str(t));
        return new ConsumerGroupMember.Builder(str(f[2]))
            .setInstanceId(str(f[3]))
            .setRackId(str(f[4]))
            .setClientId(str(f[5]))
            .setClientHost(str(f[6]))
            .setSubscribedTopicNames(topics)
            .setSubscribedTopicRegex(str(f[8]))
            .setRebalanceTimeoutMs(Integer.parseInt(f[9]))
            .setServerAssignorName(str(f[10]))
            .setClassicMemberMetadata(classic(f[11]))
            .build();
    }

    private static ConsumerGroupMemberMetadataValue.ClassicMemberMetadata classic(String s) {
        if (s.equals("~")) return null;
        String[] p = s.split("/", -1);
        List<ConsumerGroupMemberMetadataValue.ClassicProtocol> protocols = new ArrayList<>();
        if (!p[1].isEmpty()) {
            for (String proto : p[1].split(";")) {
                String[] nm = proto.split("=", -1);
                protocols.add(new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                    .setName(str(nm[0])).setMetadata(bytes(nm[1])));
            }
        }
        return new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
            .setSessionTimeoutMs(Integer.parseInt(p[0]))
            .setSupportedProtocols(protocols);
    }

    private static Map<Uuid, Set<Integer>> assignment(String s) {
        Map<Uuid, Set<Integer>> out = new LinkedHashMap<>();
        if (s.equals("-")) return out;
        for (String t : s.split("/")) {
            String[] p = t.split(":", -1);
            Set<Integer> partitions = new LinkedHashSet<>();
            if (!p[2].isEmpty())
                for (String x : p[2].split(",")) partitions.add(Integer.parseInt(x));
            out.put(uuid(p[0], p[1]), partitions);
        }
        return out;
    }

    private static ConsumerGroupMember current(String[] f) {
        return new ConsumerGroupMember.Builder(str(f[2]))
            .setMemberEpoch(Integer.parseInt(f[3]))
            .setPreviousMemberEpoch(Integer.parseInt(f[4]))
            .setState(MemberState.fromValue(Byte.parseByte(f[5])))
            .setAssignedPartitions(assignment(f[6]))
            .setPartitionsPendingRevocation(assignment(f[7]))
            .build();
    }
}
