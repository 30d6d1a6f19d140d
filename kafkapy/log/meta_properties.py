"""``meta.properties`` in each log dir (ZooKeeper-mode version 0).

On disk: a Java properties file::

    #
    #<timestamp comment>
    version=0
    broker.id=<int>
    cluster.id=<cluster id>

(KRaft's version 1 uses ``node.id`` instead of ``broker.id``; both are read.)
Written atomically (tmp + fsync + rename).  Invariant: every log dir of a
broker carries the same cluster.id and broker id; a mismatch with the running
broker refuses startup with ``InconsistentMetaPropertiesError``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from kafkapy import java_properties
from kafkapy.log.checkpoint import atomic_write

META_PROPERTIES = "meta.properties"


class InconsistentMetaPropertiesError(Exception):
    """A log dir belongs to another cluster or broker (or is unreadable)."""


@dataclass(frozen=True)
class MetaProperties:
    version: int
    node_id: int | None
    cluster_id: str | None


def read_meta_properties(log_dir: str) -> MetaProperties | None:
    """The dir's meta.properties, or None when absent."""
    path = os.path.join(log_dir, META_PROPERTIES)
    try:
        with open(path, "rb") as f:
            props = java_properties.loads(f.read().decode("iso-8859-1"))
    except FileNotFoundError:
        return None
    if "version" not in props:
        # Kafka requires the key: a file without it is not a meta.properties, and a dir
        # must never be adopted into a cluster on the strength of garbage.
        raise InconsistentMetaPropertiesError(f"{path}: malformed meta.properties: no version")
    try:
        version = int(props["version"])
        if version == 0:
            node = props.get("broker.id")
        elif version == 1:
            node = props.get("node.id")
        else:
            raise InconsistentMetaPropertiesError(
                f"{path}: unsupported meta.properties version {version}")
        node_id = int(node) if node is not None else None
    except ValueError as e:
        raise InconsistentMetaPropertiesError(f"{path}: malformed meta.properties: {e}") from e
    return MetaProperties(version, node_id, props.get("cluster.id"))


def write_meta_properties(log_dir: str, meta: MetaProperties) -> None:
    lines = ["#", "#" + time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())]
    if meta.version == 0:
        if meta.cluster_id is not None:
            lines.append(f"cluster.id={meta.cluster_id}")
        lines.append("version=0")
        if meta.node_id is not None:
            lines.append(f"broker.id={meta.node_id}")
    else:
        lines += [f"cluster.id={meta.cluster_id}", f"node.id={meta.node_id}",
                  f"version={meta.version}"]
    atomic_write(os.path.join(log_dir, META_PROPERTIES), ("\n".join(lines) + "\n").encode())


def ensure_meta_properties(log_dirs: list[str], cluster_id: str, node_id: int) -> None:
    """Check (or create) meta.properties in every dir; raise on a mismatch.

    Missing files are written (version 0); an existing file without a
    cluster.id (very old brokers) is upgraded in place.
    """
    for d in log_dirs:
        meta = read_meta_properties(d)
        path = os.path.join(d, META_PROPERTIES)
        if meta is None:
            write_meta_properties(d, MetaProperties(0, node_id, cluster_id))
            continue
        if meta.cluster_id is not None and meta.cluster_id != cluster_id:
            raise InconsistentMetaPropertiesError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId "
                f"{meta.cluster_id} in {path}. The broker is trying to join the wrong "
                "cluster. Configured zookeeper.connect may be wrong.")
        if meta.node_id is not None and meta.node_id != node_id:
            raise InconsistentMetaPropertiesError(
                f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in "
                f"{path}. If you moved your data, make sure your configured node id matches. "
                "If you intend to create a new node, you should remove all data in your "
                "data directories.")
        if meta.cluster_id is None or meta.node_id is None:
            write_meta_properties(d, MetaProperties(meta.version, node_id, cluster_id))
