/*
 * What Kafka 4.x's kafka-consumer-groups.sh prints for groups, built from Kafka 4.3's own
 * Admin client (describeConsumerGroups: ConsumerGroupDescribe, DescribeGroups for classic
 * groups; listConsumerGroupOffsets; listOffsets; listGroups) and the tool's printing rules
 * (ConsumerGroupCommand: column widths, row orders from the same Java collections, the
 * epochs and assignments of KIP-1099).  The oracle of tests/cli/test_consumer_groups_kip848.py,
 * compiled there against kafka-clients 4.3.
 *
 * Usage: java ConsumerGroupsView <bootstrap> <view> [group ...]
 *   views: offsets, offsets-verbose, members, members-verbose, state, state-verbose,
 *          list, list-type, list-type-state
 * Output: exactly what the tool prints on stdout for that view (stderr: its notes).
 */

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

public class ConsumerGroupsView {
    static final String MISSING = "-";

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        String view = args[1];
        List<String> groups = new ArrayList<>();
        for (int i = 2; i < args.length; i++) groups.add(args[i]);
        try (Admin admin = Admin.create(p)) {
            if (view.startsWith("list")) {
                list(admin, view);
                return;
            }
            Map<String, ConsumerGroupDescription> described = new TreeMap<>();
            for (Map.Entry<String, org.apache.kafka.common.KafkaFuture<ConsumerGroupDescription>> e
                    : admin.describeConsumerGroups(groups).describedGroups().entrySet())
                described.put(e.getKey(), e.getValue().get());
            boolean verbose = view.endsWith("-verbose");
            for (ConsumerGroupDescription d : described.values()) {
                if (view.startsWith("offsets")) offsets(admin, d, verbose);
                else if (view.startsWith("members")) members(d, verbose);
                else state(d, verbose);
            }
        }
    }

    // -- --list [--type] [--state] -------------------------------------------------------

    static void list(Admin admin, String view) throws Exception {
        Collection<GroupListing> listings = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get();
        if (view.equals("list")) {
            for (GroupListing g : listings) System.out.println(g.groupId());
            return;
        }
        int width = listings.stream().mapToInt(g -> Math.max(15, g.groupId().length())).max().orElse(15) + 10;
        boolean withState = view.equals("list-type-state");
        String format = "%-" + width + "s %-20s" + (withState ? " %-20s" : "") + "%n";
        if (withState) System.out.printf(format, "GROUP", "TYPE", "STATE");
        else System.out.printf(format, "GROUP", "TYPE");
        for (GroupListing g : listings) {
            String type = g.type().orElse(GroupType.UNKNOWN).toString();
            String state = g.groupState().orElse(GroupState.UNKNOWN).toString();
            if (withState) System.out.printf(format, g.groupId(), type, state);
            else System.out.printf(format, g.groupId(), type);
        }
    }

    // -- shouldPrintMemberState --------------------------------------------------------------

    static boolean worthPrinting(String group, GroupState state, int rows) {
        switch (state) {
            case DEAD:
                System.out.println("\nError: Consumer group '" + group + "' does not exist.");
                break;
            case EMPTY:
                System.err.println("\nConsumer group '" + group + "' has no active members.");
                break;
            case PREPARING_REBALANCE:
            case COMPLETING_REBALANCE:
            case ASSIGNING:
            case RECONCILING:
                System.err.println("\nWarning: Consumer group '" + group + "' is rebalancing.");
                break;
            default:
                break;
        }
        return state != GroupState.DEAD && rows > 0;
    }

    // -- --describe (--offsets) ---------------------------------------------------------------

    static final class Row {
        final String group, topic, partition, epoch, offset, end, lag, id, host, client;
        Row(String group, TopicPartition tp, Optional<OffsetAndMetadata> committed, Optional<Long> end,
            String id, String host, String client) {
            this.group = group;
            this.topic = tp.topic();
            this.partition = String.valueOf(tp.partition());
            this.epoch = committed.flatMap(OffsetAndMetadata::leaderEpoch).map(Object::toString).orElse(MISSING);
            Optional<Long> offset = committed.map(OffsetAndMetadata::offset);
            this.offset = offset.map(Object::toString).orElse(MISSING);
            this.end = end.map(Object::toString).orElse(MISSING);
            this.lag = offset.filter(o -> o != -1).flatMap(o -> end.map(e -> e - o))
                .map(Object::toString).orElse(MISSING);
            this.id = id;
            this.host = host;
            this.client = client;
        }
    }

    static void offsets(Admin admin, ConsumerGroupDescription d, boolean verbose) throws Exception {
        String group = d.groupId();
        Map<TopicPartition, OffsetAndMetadata> committed =
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        List<Row> rows = new ArrayList<>();
        List<TopicPartition> assigned = new ArrayList<>();
        Comparator<MemberDescription> bySize =
            Comparator.<MemberDescription>comparingInt(m -> m.assignment().topicPartitions().size()).reversed();
        List<MemberDescription> members = d.members().stream()
            .filter(m -> !m.assignment().topicPartitions().isEmpty()).sorted(bySize).collect(Collectors.toList());
        for (MemberDescription m : members) {
            Set<TopicPartition> tps = m.assignment().topicPartitions();
            assigned.addAll(tps);
            rows.addAll(partitionRows(admin, group, tps, committed, m.consumerId(), m.host(), m.clientId()));
        }
        Map<TopicPartition, OffsetAndMetadata> unassigned = new HashMap<>();
        committed.entrySet().stream().filter(e -> !assigned.contains(e.getKey()))
            .forEach(e -> unassigned.put(e.getKey(), e.getValue()));
        if (!unassigned.isEmpty())
            rows.addAll(partitionRows(admin, group, unassigned.keySet(), committed, MISSING, MISSING, MISSING));
        if (!worthPrinting(group, d.groupState(), rows.size())) return;
        int g = 15, t = 15, c = 15, h = 15;
        for (Row r : rows) {
            g = Math.max(g, r.group.length());
            t = Math.max(t, r.topic.length());
            c = Math.max(c, r.id.length());
            h = Math.max(h, r.host.length());
        }
        String format = verbose
            ? "\n%-" + g + "s %-" + t + "s %-10s %-15s %-15s %-15s %-15s %-" + c + "s %-" + h + "s %s"
            : "\n%-" + g + "s %-" + t + "s %-10s %-15s %-15s %-15s %-" + c + "s %-" + h + "s %s";
        if (verbose) {
            System.out.printf(format, "GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET",
                "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID");
            for (Row r : rows)
                System.out.printf(format, r.group, r.topic, r.partition, r.epoch, r.offset, r.end, r.lag,
                    r.id, r.host, r.client);
        } else {
            System.out.printf(format, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID");
            for (Row r : rows)
                System.out.printf(format, r.group, r.topic, r.partition, r.offset, r.end, r.lag, r.id,
                    r.host, r.client);
        }
        System.out.println();
    }

    /** The tool's describePartitions: sorted by partition, then a HashMap of log end offsets. */
    static List<Row> partitionRows(Admin admin, String group, Collection<TopicPartition> tps,
                                   Map<TopicPartition, OffsetAndMetadata> committed,
                                   String id, String host, String client) throws Exception {
        List<TopicPartition> sorted = tps.stream()
            .sorted(Comparator.comparingInt(TopicPartition::partition)).collect(Collectors.toList());
        Map<TopicPartition, OffsetSpec> latest = sorted.stream()
            .collect(Collectors.toMap(Function.identity(), tp -> OffsetSpec.latest()));
        Map<TopicPartition, ListOffsetsResultInfo> found = admin.listOffsets(latest).all().get();
        Map<TopicPartition, Optional<Long>> ends = sorted.stream().collect(Collectors.toMap(
            Function.identity(),
            tp -> found.containsKey(tp) ? Optional.of(found.get(tp).offset()) : Optional.empty()));
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<TopicPartition, Optional<Long>> e : ends.entrySet())
            rows.add(new Row(group, e.getKey(), Optional.ofNullable(committed.get(e.getKey())), e.getValue(),
                id, host, client));
        return rows;
    }

    // -- --describe --members [--verbose] ------------------------------------------------------

    static String assignmentText(Collection<TopicPartition> tps) {
        if (tps.isEmpty()) return MISSING;
        Map<String, List<TopicPartition>> grouped = new HashMap<>();
        tps.forEach(tp -> grouped.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp));
        return grouped.entrySet().stream().map(e -> e.getValue().stream().map(TopicPartition::partition)
                .map(Object::toString).sorted().collect(Collectors.joining(",", e.getKey() + ":", "")))
            .sorted().collect(Collectors.joining(";"));
    }

    static void members(ConsumerGroupDescription d, boolean verbose) {
        String group = d.groupId();
        Collection<MemberDescription> members = d.members();
        worthPrinting(group, d.groupState(), members.size());
        boolean consumer = d.type() == GroupType.CONSUMER;
        int g = 15, c = 15, i = 17, h = 15, cl = 15, width = 20;
        boolean withInstance = false, classicMember = false;
        for (MemberDescription m : members) {
            g = Math.max(g, group.length());
            c = Math.max(c, m.consumerId().length());
            i = Math.max(i, m.groupInstanceId().orElse("").length());
            h = Math.max(h, m.host().length());
            cl = Math.max(cl, m.clientId().length());
            withInstance |= m.groupInstanceId().isPresent() && !m.groupInstanceId().get().isEmpty();
            width = Math.max(width, assignmentText(m.assignment().topicPartitions()).length());
            classicMember |= m.upgraded().isPresent() && !m.upgraded().get();
        }
        String format = withInstance
            ? "%-" + g + "s %-" + c + "s %-" + i + "s %-" + h + "s %-" + cl + "s %-15s "
            : "%-" + g + "s %-" + c + "s %-" + h + "s %-" + cl + "s %-15s ";
        String extra = "%-15s %-" + width + "s %-15s %-20s" + (classicMember ? " %s" : "");
        if (withInstance)
            System.out.printf("\n" + format, "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS");
        else
            System.out.printf("\n" + format, "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS");
        if (verbose) {
            if (classicMember)
                System.out.printf(extra, "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED");
            else
                System.out.printf(extra, "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT");
        }
        System.out.println();
        for (MemberDescription m : members) {
            int count = m.assignment().topicPartitions().size();
            if (withInstance)
                System.out.printf(format, group, m.consumerId(), m.groupInstanceId().orElse(""), m.host(), m.clientId(), count);
            else
                System.out.printf(format, group, m.consumerId(), m.host(), m.clientId(), count);
            if (verbose) {
                String epoch = consumer ? m.memberEpoch().map(Object::toString).orElse(MISSING) : MISSING;
                String targetEpoch = consumer ? d.targetAssignmentEpoch().map(Object::toString).orElse(MISSING) : MISSING;
                String target = m.targetAssignment().map(a -> assignmentText(a.topicPartitions())).orElse(MISSING);
                String current = assignmentText(m.assignment().topicPartitions());
                if (classicMember)
                    System.out.printf(extra, epoch, current, targetEpoch, target,
                        m.upgraded().map(Object::toString).orElse(MISSING));
                else
                    System.out.printf(extra, epoch, current, targetEpoch, target);
            }
            System.out.println();
        }
    }

    // -- --describe --state [--verbose] ---------------------------------------------------------

    static void state(ConsumerGroupDescription d, boolean verbose) {
        if (!worthPrinting(d.groupId(), d.groupState(), 1)) return;
        String coordinator = d.coordinator().host() + ":" + d.coordinator().port() + "  (" + d.coordinator().idString() + ")";
        int g = Math.max(15, d.groupId().length()), c = Math.max(25, coordinator.length());
        boolean consumer = d.type() == GroupType.CONSUMER;
        if (verbose) {
            String format = "\n%-" + g + "s %-" + c + "s %-20s %-20s %-15s %-25s %s";
            System.out.printf(format, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS");
            System.out.printf(format, d.groupId(), coordinator, d.partitionAssignor(), d.groupState(),
                consumer ? d.groupEpoch().map(Object::toString).orElse(MISSING) : MISSING,
                consumer ? d.targetAssignmentEpoch().map(Object::toString).orElse(MISSING) : MISSING,
                d.members().size());
        } else {
            String format = "\n%-" + g + "s %-" + c + "s %-20s %-20s %s";
            System.out.printf(format, "GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS");
            System.out.printf(format, d.groupId(), coordinator, d.partitionAssignor(), d.groupState(),
                d.members().size());
        }
        System.out.println();
    }
}
