// Kafka 3.9's own znode encoders (kafka.zk.ZkData) as an oracle for kafkapy's
// kafkapy/metadata/paths.py: run with Kafka's libs on the class path,
//   java -cp '<kafka>/libs/*' ZnodeOracle.java < requests
// One request per line, one encoded payload per line out (UTF-8):
//   T <topic id|-> <partitions> <adding> <removing>   maps as p=r,r/p=r,r or -
//   S <leader> <leader epoch> <isr r,r|-> <controller epoch> <leader recovery state>
//   F <version> <status> <features name=level,name=level|->
//   C <key=value,key=value,...>   (Properties set in this order)
//   B <host> <port> <endpoints LISTENER:PROTOCOL:host:port,...> <rack|->   (version 5)
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import kafka.api.LeaderAndIsr;
import kafka.controller.LeaderIsrAndControllerEpoch;
import kafka.controller.ReplicaAssignment;
import kafka.zk.FeatureZNode;
import kafka.zk.FeatureZNodeStatus;
import kafka.zk.TopicPartitionStateZNode;
import kafka.zk.TopicZNode;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.LeaderRecoveryState;
import scala.jdk.javaapi.CollectionConverters;

public class ZnodeOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ");
            byte[] out;
            switch (f[0]) {
                case "T": out = topic(f); break;
                case "S": out = state(f); break;
                case "F": out = feature(f); break;
                case "B": out = broker(f); break;
                case "C": out = config(f); break;
                default: throw new IllegalArgumentException(line);
            }
            System.out.println(new String(out, StandardCharsets.UTF_8));
        }
    }

    private static List<Integer> ints(String s) {
        List<Integer> out = new ArrayList<>();
        if (!s.equals("-") && !s.isEmpty())
            for (String x : s.split(",")) out.add(Integer.parseInt(x));
        return out;
    }

    private static Map<Integer, List<Integer>> pmap(String s) {
        Map<Integer, List<Integer>> out = new LinkedHashMap<>();
        if (s.equals("-")) return out;
        for (String e : s.split("/")) {
            String[] kv = e.split("=", -1);
            out.put(Integer.parseInt(kv[0]), ints(kv[1]));
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static scala.collection.immutable.Seq<Object> seq(List<Integer> l) {
        return (scala.collection.immutable.Seq<Object>) (Object)
            CollectionConverters.asScala((List<Object>) (Object) l).toList();
    }

    private static byte[] topic(String[] f) {
        scala.Option<Uuid> id = f[1].equals("-") ? scala.Option.empty() : scala.Option.apply(Uuid.fromString(f[1]));
        Map<Integer, List<Integer>> parts = pmap(f[2]), adding = pmap(f[3]), removing = pmap(f[4]);
        Map<TopicPartition, ReplicaAssignment> a = new LinkedHashMap<>();
        for (Map.Entry<Integer, List<Integer>> e : parts.entrySet()) {
            List<Integer> add = adding.getOrDefault(e.getKey(), new ArrayList<>());
            List<Integer> rem = removing.getOrDefault(e.getKey(), new ArrayList<>());
            a.put(new TopicPartition("t", e.getKey()),
                  ReplicaAssignment.apply(seq(e.getValue()), seq(add), seq(rem)));
        }
        return TopicZNode.encode(id, CollectionConverters.asScala(a));
    }

    private static byte[] state(String[] f) {
        @SuppressWarnings("unchecked")
        scala.collection.immutable.List<Object> isr = (scala.collection.immutable.List<Object>) (Object)
            CollectionConverters.asScala((List<Object>) (Object) ints(f[3])).toList();
        LeaderAndIsr lai = LeaderAndIsr.apply(Integer.parseInt(f[1]), Integer.parseInt(f[2]), isr,
            LeaderRecoveryState.of(Byte.parseByte(f[5])), 0);
        return TopicPartitionStateZNode.encode(new LeaderIsrAndControllerEpoch(lai, Integer.parseInt(f[4])));
    }

    private static byte[] config(String[] f) {
        java.util.Properties props = new java.util.Properties();
        for (String e : f[1].split(",")) {
            String[] kv = e.split("=", 2);
            props.setProperty(kv[0], kv[1]);
        }
        return kafka.zk.ConfigEntityZNode.encode(props);
    }

    private static byte[] broker(String[] f) {
        List<kafka.cluster.EndPoint> eps = new ArrayList<>();
        for (String e : f[3].split(",")) {
            String[] p = e.split(":");
            eps.add(new kafka.cluster.EndPoint(p[2], Integer.parseInt(p[3]),
                new org.apache.kafka.common.network.ListenerName(p[0]),
                org.apache.kafka.common.security.auth.SecurityProtocol.forName(p[1])));
        }
        scala.Option<String> rack = f[4].equals("-") ? scala.Option.empty() : scala.Option.apply(f[4]);
        return kafka.zk.BrokerIdZNode.encode(5, f[1], Integer.parseInt(f[2]),
            CollectionConverters.asScala(eps).toSeq(), -1, rack,
            org.apache.kafka.common.feature.Features.emptySupportedFeatures());
    }

    private static byte[] feature(String[] f) {
        Map<String, Object> feats = new LinkedHashMap<>();
        if (!f[3].equals("-"))
            for (String e : f[3].split(",")) {
                String[] kv = e.split("=");
                feats.put(kv[0], Short.parseShort(kv[1]));
            }
        @SuppressWarnings("unchecked")
        scala.collection.immutable.Map<String, Object> m = (scala.collection.immutable.Map<String, Object>)
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(feats));
        FeatureZNodeStatus status = FeatureZNodeStatus.withNameOpt(Integer.parseInt(f[2])).get();
        return FeatureZNode.encode(new FeatureZNode(Integer.parseInt(f[1]), status, (scala.collection.immutable.Map) m));
    }
}
