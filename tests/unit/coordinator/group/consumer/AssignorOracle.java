import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.SubscribedTopicDescriberImpl;
import org.apache.kafka.coordinator.group.modern.TopicMetadata;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka's own server-side assignors over cases read from stdin, one JSON object a line:
 * {"assignor": "uniform"|"range", "topics": [{"id", "name", "partitions"}],
 *  "members": [{"id", "instance", "rack", "topics": [names], "assigned": [[topic id, [partitions]]]}]}
 * (topic ids in Kafka's base64 form).  Prints one line per case: {member: {topic id: [partitions]}}
 * with every member, partitions ascending, or {"error": message} when the assignor throws.
 *
 * Inputs are built as Kafka's coordinator holds them after loading a group: the member specs
 * a HashMap filled in the given order (TargetAssignmentBuilder), a member's subscribed names
 * a HashSet of the given list (ConsumerGroupMember) resolved to ids in that set's order
 * (TopicIds), its target a HashMap of HashSets of the given lists (Assignment.fromRecord);
 * the group is homogeneous when every member names the same topics (ModernGroup).
 */
public class AssignorOracle {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer;
            try {
                answer = assign(JSON.readTree(line));
            } catch (RuntimeException e) {
                answer = JSON.createObjectNode().put("error", String.valueOf(e.getMessage()));
            }
            out.println(JSON.writeValueAsString(answer));
        }
        out.flush();
    }

    private static ObjectNode assign(JsonNode testCase) {
        Map<String, Uuid> idsByName = new HashMap<>();
        Map<Uuid, TopicMetadata> topics = new HashMap<>();
        for (JsonNode topic : testCase.get("topics")) {
            Uuid id = Uuid.fromString(topic.get("id").asText());
            String name = topic.get("name").asText();
            idsByName.put(name, id);
            topics.put(id, new TopicMetadata(id, name, topic.get("partitions").asInt(), Collections.emptyMap()));
        }

        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<String>> subscriptions = new HashSet<>();
        for (JsonNode member : testCase.get("members")) {
            String memberId = member.get("id").asText();
            List<String> names = new ArrayList<>();
            member.get("topics").forEach(name -> names.add(name.asText()));
            Set<String> nameSet = new HashSet<>(names);
            subscriptions.add(nameSet);
            Set<Uuid> topicIds = new LinkedHashSet<>();
            for (String name : nameSet) {
                Uuid id = idsByName.get(name);
                if (id != null) topicIds.add(id);
            }

            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (JsonNode pair : member.get("assigned")) {
                Uuid id = Uuid.fromString(pair.get(0).asText());
                List<Integer> partitions = new ArrayList<>();
                pair.get(1).forEach(p -> partitions.add(p.asInt()));
                assigned.put(id, new HashSet<>(partitions));
                for (int p : partitions) inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, memberId);
            }

            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                Optional.ofNullable(text(member.get("rack"))),
                Optional.ofNullable(text(member.get("instance"))),
                topicIds,
                new Assignment(assigned)));
        }

        SubscriptionType type = subscriptions.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        ConsumerGroupPartitionAssignor assignor = "range".equals(testCase.get("assignor").asText())
            ? new RangeAssignor() : new UniformAssignor();
        GroupAssignment result = assignor.assign(
            new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted),
            new SubscribedTopicDescriberImpl(topics));

        ObjectNode answer = JSON.createObjectNode();
        for (String memberId : new TreeSet<>(members.keySet())) {
            ObjectNode byTopic = answer.putObject(memberId);
            MemberAssignment assignment = result.members().get(memberId);
            if (assignment == null) continue;
            Map<String, Set<Integer>> sorted = new TreeMap<>();
            assignment.partitions().forEach((id, partitions) -> sorted.put(id.toString(), new TreeSet<>(partitions)));
            sorted.forEach((id, partitions) -> {
                if (partitions.isEmpty()) return;
                ArrayNode list = byTopic.putArray(id);
                partitions.forEach(list::add);
            });
        }
        return answer;
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }
}
