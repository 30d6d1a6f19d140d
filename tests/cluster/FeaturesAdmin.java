import java.util.*;
import org.apache.kafka.clients.admin.*;

/**
 * Kafka's Admin against a cluster: describeFeatures and updateFeatures, one line each.
 * A describe names the transaction.version level it waits for (bounded), since the broker
 * answering may see /feature change a moment after the controller wrote it.
 */
public class FeaturesAdmin {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        try (Admin admin = Admin.create(p)) {
            describe(admin, 0);
            update(admin, "transaction.version", (short) 2, FeatureUpdate.UpgradeType.UPGRADE, true);
            update(admin, "transaction.version", (short) 2, FeatureUpdate.UpgradeType.UPGRADE, false);
            describe(admin, 2);
            update(admin, "group.version", (short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
            update(admin, "transaction.version", (short) 0, FeatureUpdate.UpgradeType.SAFE_DOWNGRADE, false);
            describe(admin, 0);
        }
    }

    static void describe(Admin admin, int transactionVersion) throws Exception {
        FeatureMetadata m = admin.describeFeatures().featureMetadata().get();
        for (int i = 0; i < 100 && level(m, "transaction.version") != transactionVersion; i++) {
            Thread.sleep(100);
            m = admin.describeFeatures().featureMetadata().get();
        }
        StringBuilder sb = new StringBuilder("describe epoch=" + m.finalizedFeaturesEpoch().map(String::valueOf).orElse("-"));
        for (String name : new TreeSet<>(m.supportedFeatures().keySet())) {
            SupportedVersionRange r = m.supportedFeatures().get(name);
            FinalizedVersionRange f = m.finalizedFeatures().get(name);
            sb.append(" ").append(name).append("=").append(r.minVersion()).append("-").append(r.maxVersion())
              .append(":").append(f == null ? 0 : f.maxVersionLevel());
        }
        System.out.println(sb);
    }

    static int level(FeatureMetadata m, String name) {
        FinalizedVersionRange f = m.finalizedFeatures().get(name);
        return f == null ? 0 : f.maxVersionLevel();
    }

    static void update(Admin admin, String name, short level, FeatureUpdate.UpgradeType type, boolean dry) {
        try {
            admin.updateFeatures(Map.of(name, new FeatureUpdate(level, type)),
                new UpdateFeaturesOptions().validateOnly(dry)).all().get();
            System.out.println("update " + name + "=" + level + " ok");
        } catch (Exception e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            System.out.println("update " + name + "=" + level + " " + c.getClass().getSimpleName() + ": " + c.getMessage());
        }
    }
}
