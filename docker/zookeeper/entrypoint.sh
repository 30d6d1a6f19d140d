#!/bin/sh
# Standalone ZooKeeper from Debian's jars, configured from ZOOKEEPER_* variables.
set -eu
cfg=/var/lib/zookeeper/zoo.cfg
tick=${ZOOKEEPER_TICK_TIME:-2000}
cat > "$cfg" <<CFG
tickTime=$tick
dataDir=/var/lib/zookeeper/data
clientPort=${ZOOKEEPER_CLIENT_PORT:-2181}
clientPortAddress=${ZOOKEEPER_CLIENT_PORT_ADDRESS:-127.0.0.1}
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat
CFG
cp=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar
for binding in slf4j-simple.jar slf4j-nop.jar; do
  if [ -e "/usr/share/java/$binding" ]; then cp="$cp:/usr/share/java/$binding"; break; fi
done
exec java -Xms32m "-Xmx${ZOOKEEPER_HEAP:-256m}" -XX:+UseSerialGC \
  -Dzookeeper.admin.enableServer=false -Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat \
  -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$cfg"
