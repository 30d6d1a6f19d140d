/*
 * What Kafka 4.x's kafka-configs.sh prints for groups (ConfigCommand with --entity-type groups),
 * built from Kafka 4.3's own Admin client (listGroups, listConfigResources for GROUP,
 * describeConfigs and incrementalAlterConfigs on ConfigResource.Type.GROUP) and the tool's
 * printing rules.  The oracle of tests/cli/test_configs_groups.py, compiled there against
 * kafka-clients 4.3 (Kafka 3.9's kafka-configs.sh refuses --entity-type groups).
 *
 * Usage: java GroupConfigsView <bootstrap> <command> [arg ...] [-- <command> [arg ...]] ...
 *   describe [g]             --describe (every group without g)
 *   describe-all g           --describe --all
 *   alter g [k=v | -k] ...   --alter: k=v set (--add-config), -k deleted (--delete-config)
 * Output: for each command a line "=== <command>", then what the tool prints on stdout for it;
 * a failure: "Error: <exception class of the cause>: <message>".
 */

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

public class GroupConfigsView {

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
                    run(admin, command);
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    System.out.println("Error: " + cause.getClass().getName() + ": " + cause.getMessage());
                }
            }
        }
    }

    static void run(Admin admin, List<String> command) throws Exception {
        String verb = command.get(0);
        List<String> rest = command.subList(1, command.size());
        switch (verb) {
            case "describe" -> describe(admin, rest.isEmpty() ? Optional.empty() : Optional.of(rest.get(0)), false);
            case "describe-all" -> describe(admin, Optional.of(rest.get(0)), true);
            case "alter" -> alter(admin, rest.get(0), rest.subList(1, rest.size()));
            default -> throw new IllegalArgumentException("unknown command " + verb);
        }
    }

    /** ConfigCommand.describeResourceConfig for the groups entity type. */
    static void describe(Admin admin, Optional<String> name, boolean describeAll) throws Exception {
        if (!describeAll && name.isPresent()) {
            String g = name.get();
            boolean noMatchInGroups = admin.listGroups().all().get().stream()
                    .noneMatch(group -> group.groupId().equals(g));
            boolean noMatchInResources = groupConfigResources(admin)
                    .map(resources -> resources.stream().noneMatch(r -> r.name().equals(g)))
                    .orElse(false);
            if (noMatchInGroups && noMatchInResources) {
                System.out.println("The group '" + g + "' doesn't exist and doesn't have dynamic config.");
                return;
            }
        }
        List<String> entities;
        if (name.isPresent()) {
            entities = List.of(name.get());
        } else {
            Set<String> groupIds = admin.listGroups().all().get().stream()
                    .map(GroupListing::groupId).collect(Collectors.toSet());
            Set<String> resources = groupConfigResources(admin)
                    .map(rs -> rs.stream().map(ConfigResource::name).collect(Collectors.toSet()))
                    .orElse(Set.of());
            Set<String> combined = new HashSet<>(groupIds);
            combined.addAll(resources);
            entities = new ArrayList<>(combined);
        }
        for (String entity : entities) {
            System.out.println((describeAll ? "All" : "Dynamic") + " configs for group " + entity + " are:");
            for (ConfigEntry entry : entries(admin, entity, true, describeAll)) {
                String synonyms = entry.synonyms().stream()
                        .map(s -> s.source() + ":" + s.name() + "=" + s.value())
                        .collect(Collectors.joining(", ", "{", "}"));
                System.out.println("  " + entry.name() + "=" + entry.value() + " sensitive=" + entry.isSensitive()
                        + " synonyms=" + synonyms);
            }
        }
    }

    /** ConfigCommand.alterResourceConfig for GROUP, then its success line. */
    static void alter(Admin admin, String group, List<String> changes) throws Exception {
        Map<String, String> added = new LinkedHashMap<>();
        List<String> deleted = new ArrayList<>();
        for (String change : changes) {
            if (change.startsWith("-")) {
                deleted.add(change.substring(1));
            } else {
                String[] kv = change.split("=", 2);
                added.put(kv[0], kv[1]);
            }
        }
        Set<String> current = entries(admin, group, false, false).stream()
                .map(ConfigEntry::name).collect(Collectors.toSet());
        List<String> invalid = deleted.stream().filter(k -> !current.contains(k)).toList();
        if (!invalid.isEmpty()) {
            System.out.println("Invalid config(s): " + String.join(",", invalid));
            return;
        }
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String k : deleted)
            ops.add(new AlterConfigOp(new ConfigEntry(k, ""), AlterConfigOp.OpType.DELETE));
        for (Map.Entry<String, String> e : added.entrySet())
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, ops), new AlterConfigsOptions().timeoutMs(30000))
                .all().get();
        System.out.println("Completed updating config for group " + group + ".");
    }

    static List<ConfigEntry> entries(Admin admin, String group, boolean synonyms, boolean describeAll)
            throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        Map<ConfigResource, Config> configs = admin.describeConfigs(Set.of(resource),
                new DescribeConfigsOptions().includeSynonyms(synonyms)).all().get();
        return configs.get(resource).entries().stream()
                .filter(e -> describeAll || e.source() == ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG)
                .sorted(Comparator.comparing(ConfigEntry::name))
                .toList();
    }

    static Optional<Collection<ConfigResource>> groupConfigResources(Admin admin) throws Exception {
        try {
            return Optional.of(admin.listConfigResources(Set.of(ConfigResource.Type.GROUP),
                    new ListConfigResourcesOptions()).all().get());
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnsupportedVersionException) return Optional.empty();
            if (e.getCause() instanceof ClusterAuthorizationException) return Optional.empty();
            throw e;
        }
    }
}
