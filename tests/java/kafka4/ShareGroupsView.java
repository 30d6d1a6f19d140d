/*
 * What Kafka 4.x's kafka-share-groups.sh prints, built from Kafka 4.3's own Admin client
 * (listGroups for share groups, describeShareGroups, listShareGroupOffsets,
 * alterShareGroupOffsets, deleteShareGroupOffsets, deleteShareGroups) and the tool's
 * printing rules (ShareGroupCommand: column widths, row orders, messages).  The oracle of
 * tests/cli/test_share_groups_tool.py, compiled there against kafka-clients 4.3.
 *
 * Usage: java ShareGroupsView <bootstrap> <command> [arg ...] [-- <command> [arg ...]] ...
 *   list                         the share group ids
 *   list-state [states]          the GROUP STATE table (states: comma-separated, or none)
 *   offsets|offsets-verbose g..  the start offsets view
 *   members|members-verbose g..  the members view
 *   state|state-verbose g..      the state view
 *   alter g topic:partition=offset ...   alterShareGroupOffsets, then one line per partition
 *   delete-offsets g topic ...   the TOPIC STATUS table of --delete-offsets
 *   delete g ...                 what --delete prints
 * Output: for each command a line "=== <command>", then exactly what the tool prints on
 * stdout for it (a failure: the tool's "Error: Executing share group command failed due
 * to ..." line).
 */

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.protocol.Errors;

public class ShareGroupsView {
    static final String MISSING = "-";

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        List<List<String>> commands = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--")) {
                commands.add(current);
                current = new ArrayList<>();
            } else {
                current.add(args[i]);
            }
        }
        commands.add(current);
        try (Admin admin = Admin.create(p)) {
            for (List<String> command : commands) {
                System.out.println("=== " + String.join(" ", command));
                try {
                    run(admin, command.get(0), command.subList(1, command.size()));
                } catch (Throwable e) {
                    System.out.println("\nError: Executing share group command failed due to " + e.getMessage());
                }
                System.out.flush();
            }
        }
    }

    static void run(Admin admin, String view, List<String> args) throws Exception {
        switch (view) {
            case "list" -> listShareGroups(admin).forEach(g -> System.out.println(g.groupId()));
            case "list-state" -> listStates(admin, args.isEmpty() ? "" : args.get(0));
            case "alter" -> alter(admin, args.get(0), args.subList(1, args.size()));
            case "delete-offsets" -> deleteOffsets(admin, args.get(0), args.subList(1, args.size()));
            case "delete" -> delete(admin, args);
            default -> describe(admin, view, args);
        }
    }

    static List<GroupListing> listShareGroups(Admin admin) throws Exception {
        return new ArrayList<>(admin.listGroups(ListGroupsOptions.forShareGroups()).all().get());
    }

    static void listStates(Admin admin, String text) throws Exception {
        Set<GroupState> states = text.isEmpty() ? Set.of()
            : Arrays.stream(text.split(",")).map(s -> GroupState.parse(s.trim())).collect(Collectors.toSet());
        List<GroupListing> groups = new ArrayList<>(admin.listGroups(
            ListGroupsOptions.forShareGroups().inGroupStates(states)).all().get());
        int width = 15;
        for (GroupListing g : groups) width = Math.max(width, g.groupId().length());
        System.out.printf("%" + (-width) + "s %s\n", "GROUP", "STATE");
        for (GroupListing g : groups)
            System.out.printf("%" + (-width) + "s %s\n", g.groupId(), g.groupState().orElse(GroupState.UNKNOWN));
    }

    static Map<String, ShareGroupDescription> describeShareGroups(Admin admin, Collection<String> groups) throws Exception {
        Map<String, ShareGroupDescription> res = new HashMap<>();
        for (Map.Entry<String, KafkaFuture<ShareGroupDescription>> e
                : admin.describeShareGroups(groups).describedGroups().entrySet())
            res.put(e.getKey(), e.getValue().get());
        return res;
    }

    static void describe(Admin admin, String view, List<String> groups) throws Exception {
        boolean verbose = view.endsWith("-verbose");
        Map<String, ShareGroupDescription> found = describeShareGroups(admin, groups);
        TreeMap<String, ShareGroupDescription> described = new TreeMap<>(found);
        if (view.startsWith("offsets")) {
            Map<String, Map<TopicPartition, SharePartitionOffsetInfo>> offsets = new HashMap<>();
            for (String g : found.keySet()) {
                try {
                    offsets.put(g, admin.listShareGroupOffsets(Map.of(g, new ListShareGroupOffsetsSpec())).all().get().get(g));
                } catch (ExecutionException e) {
                    throw (Exception) e.getCause();
                }
            }
            for (String g : described.keySet()) printOffsets(g, offsets.get(g), verbose);
        } else if (view.startsWith("members")) {
            for (ShareGroupDescription d : described.values()) printMembers(d, verbose);
        } else {
            for (ShareGroupDescription d : described.values()) printState(d, verbose);
        }
    }

    static boolean worthPrinting(String group, GroupState state, int rows) {
        if (state == GroupState.DEAD) {
            System.out.println("\nError: Share group '" + group + "' does not exist.");
        } else if (state == GroupState.EMPTY) {
            System.err.println("\nShare group '" + group + "' has no active members.");
        }
        return state != GroupState.DEAD && rows > 0;
    }

    static void printOffsets(String group, Map<TopicPartition, SharePartitionOffsetInfo> offsets, boolean verbose) {
        List<Map.Entry<TopicPartition, SharePartitionOffsetInfo>> rows = offsets.entrySet().stream()
            .sorted(Comparator.comparing((Map.Entry<TopicPartition, SharePartitionOffsetInfo> e) -> e.getKey().topic())
                .thenComparingInt(e -> e.getKey().partition()))
            .toList();
        if (rows.isEmpty()) {
            System.out.println("\nShare group '" + group + "' has no offset information.");
            return;
        }
        int topicLen = 15;
        for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : rows) topicLen = Math.max(topicLen, e.getKey().topic().length());
        String fmt = "\n%" + (-Math.max(15, group.length())) + "s %" + (-topicLen) + "s %-10s "
            + (verbose ? "%-13s %-13s %s" : "%-13s %s");
        if (verbose) System.out.printf(fmt, "GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG");
        else System.out.printf(fmt, "GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG");
        for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : rows) {
            SharePartitionOffsetInfo info = e.getValue();
            String offset = info == null ? MISSING : Long.toString(info.startOffset());
            String epoch = info == null ? MISSING : info.leaderEpoch().map(Object::toString).orElse(MISSING);
            String lag = info == null ? MISSING : info.lag().map(Object::toString).orElse(MISSING);
            if (verbose) System.out.printf(fmt, group, e.getKey().topic(), e.getKey().partition(), epoch, offset, lag);
            else System.out.printf(fmt, group, e.getKey().topic(), e.getKey().partition(), offset, lag);
        }
        System.out.println();
    }

    static void printState(ShareGroupDescription d, boolean verbose) {
        String group = d.groupId();
        worthPrinting(group, d.groupState(), 1);
        String coordinator = d.coordinator().host() + ":" + d.coordinator().port() + "  (" + d.coordinator().idString() + ")";
        String head = "\n%" + (-Math.max(15, group.length())) + "s %" + (-Math.max(25, coordinator.length())) + "s %-15s ";
        if (verbose) {
            String fmt = head + "%-12s %-17s %s";
            System.out.printf(fmt, "GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS");
            System.out.printf(fmt, group, coordinator, d.groupState().toString(), d.groupEpoch(),
                d.targetAssignmentEpoch(), d.members().size());
        } else {
            String fmt = head + "%s";
            System.out.printf(fmt, "GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS");
            System.out.printf(fmt, group, coordinator, d.groupState().toString(), d.members().size());
        }
        System.out.println();
    }

    static void printMembers(ShareGroupDescription d, boolean verbose) {
        String group = d.groupId();
        List<ShareMemberDescription> members = d.members().stream()
            .sorted(Comparator.comparing(ShareMemberDescription::consumerId)).toList();
        if (!worthPrinting(group, d.groupState(), members.size())) return;
        int idLen = 15, hostLen = 15, clientLen = 15;
        for (ShareMemberDescription m : members) {
            idLen = Math.max(idLen, m.consumerId().length());
            hostLen = Math.max(hostLen, m.host().length());
            clientLen = Math.max(clientLen, m.clientId().length());
        }
        String head = "\n%" + (-Math.max(15, group.length())) + "s %" + (-idLen) + "s %" + (-hostLen) + "s %" + (-clientLen) + "s %-12s ";
        if (verbose) {
            String fmt = head + "%-13s %s";
            System.out.printf(fmt, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT");
            for (ShareMemberDescription m : members)
                System.out.printf(fmt, group, m.consumerId(), m.host(), m.clientId(),
                    m.assignment().topicPartitions().size(), m.memberEpoch(), assignment(m));
        } else {
            String fmt = head + "%s";
            System.out.printf(fmt, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT");
            for (ShareMemberDescription m : members)
                System.out.printf(fmt, group, m.consumerId(), m.host(), m.clientId(),
                    m.assignment().topicPartitions().size(), assignment(m));
        }
        System.out.println();
    }

    static String assignment(ShareMemberDescription m) {
        Map<String, List<Integer>> byTopic = new HashMap<>();
        for (TopicPartition tp : m.assignment().topicPartitions())
            byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        return byTopic.entrySet().stream()
            .map(e -> e.getValue().stream().sorted().map(Object::toString)
                .collect(Collectors.joining(",", e.getKey() + ":", "")))
            .sorted().collect(Collectors.joining(";"));
    }

    static void alter(Admin admin, String group, List<String> specs) throws Exception {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (String spec : specs) {
            String[] tpAndOffset = spec.split("=");
            int colon = tpAndOffset[0].lastIndexOf(':');
            offsets.put(new TopicPartition(tpAndOffset[0].substring(0, colon),
                Integer.parseInt(tpAndOffset[0].substring(colon + 1))), Long.parseLong(tpAndOffset[1]));
        }
        var result = admin.alterShareGroupOffsets(group, offsets);
        for (TopicPartition tp : new TreeMap<String, TopicPartition>(offsets.keySet().stream()
                .collect(Collectors.toMap(TopicPartition::toString, t -> t))).values()) {
            try {
                result.partitionResult(tp).get();
                System.out.println(tp + " OK");
            } catch (ExecutionException e) {
                System.out.println(tp + " " + e.getCause());
            }
        }
        try {
            result.all().get();
        } catch (ExecutionException e) {
            System.out.println("all: " + e.getCause().getMessage());
        }
    }

    static void deleteOffsets(Admin admin, String group, List<String> topics) {
        Set<String> asked = new HashSet<>(topics);
        DeleteShareGroupOffsetsResult result = admin.deleteShareGroupOffsets(group, asked);
        Throwable top = null;
        try {
            result.all().get();
        } catch (Exception e) {
            top = e.getCause();
        }
        Map<String, Throwable> perTopic = new HashMap<>();
        for (String topic : asked) {
            try {
                result.topicResult(topic).get();
                perTopic.put(topic, null);
            } catch (Exception e) {
                perTopic.put(topic, e.getCause());
            }
        }
        if (top != null) {
            switch (Errors.forException(top)) {
                case INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED, NON_EMPTY_GROUP ->
                    System.out.println("\nError: " + top.getMessage());
                case TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION -> { }
                default -> System.out.println("\nError: Encounter some unknown error: " + top);
            }
        }
        int width = 15;
        for (String t : perTopic.keySet()) width = Math.max(width, t.length());
        String fmt = "%n%" + (-width) + "s %s";
        System.out.printf(fmt, "TOPIC", "STATUS");
        perTopic.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e ->
            System.out.printf(fmt, e.getKey(), e.getValue() != null ? "Error: " + e.getValue().getMessage() : "Successful"));
        System.out.println();
    }

    static void delete(Admin admin, List<String> groups) throws Exception {
        List<GroupListing> listed = listShareGroups(admin);
        LinkedHashSet<String> wanted = new LinkedHashSet<>(groups);
        Map<String, Throwable> failed = new HashMap<>();
        for (String g : wanted) {
            Optional<GroupListing> listing = listed.stream().filter(l -> l.groupId().equals(g)).findAny();
            if (listing.isEmpty()) {
                failed.put(g, new GroupIdNotFoundException("Group '" + g + "' is not a share group."));
            } else {
                listing.get().groupState().ifPresent(state -> {
                    if (state == GroupState.DEAD)
                        failed.put(g, new IllegalStateException("Share group '" + g + "' group state is DEAD."));
                    else if (state != GroupState.EMPTY)
                        failed.put(g, new GroupNotEmptyException("Share group '" + g + "' is not EMPTY."));
                });
            }
        }
        wanted.removeAll(failed.keySet());
        Map<String, Throwable> success = new HashMap<>();
        if (!wanted.isEmpty()) {
            for (Map.Entry<String, KafkaFuture<Void>> e
                    : admin.deleteShareGroups(new ArrayList<>(wanted)).deletedGroups().entrySet()) {
                try {
                    e.getValue().get();
                    success.put(e.getKey(), null);
                } catch (ExecutionException err) {
                    failed.put(e.getKey(), err.getCause());
                }
            }
        }
        if (failed.isEmpty()) {
            System.out.println("Deletion of requested share groups (" + success.keySet().stream()
                .map(g -> "'" + g + "'").collect(Collectors.joining(", ")) + ") was successful.");
        } else {
            System.out.println("\nError: Deletion of some share groups failed:");
            failed.forEach((g, error) -> System.out.println("* Group '" + g + "' could not be deleted due to: " + error));
            if (!success.isEmpty())
                System.out.println("\nThese share groups were deleted successfully: " + success.keySet().stream()
                    .map(g -> "'" + g + "'").collect(Collectors.joining(", ")));
        }
    }
}
