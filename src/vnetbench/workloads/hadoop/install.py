"""Where the Hadoop jars live: the cache filled by ``scripts/setup.sh --with hadoop``.

The cache (``VNETBENCH_HADOOP_HOME`` overrides ``/var/cache/vnetbench/hadoop-3.4.2``) holds
``jars/`` (Hadoop 3.4.2 and its dependencies from Maven Central), ``webapps/{hdfs,datanode,
secondary,journal}`` (empty: the Maven hadoop-hdfs jar lacks them and the HDFS daemons refuse
to start without), optionally ``hadoop.jsa``, a class-data-sharing archive (not used when
``VNETBENCH_HADOOP_CDS=0``), and ``namenode-formatted/``, a freshly formatted NameNode
directory that clusters copy instead of formatting their own (written by the first cluster
that formats).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from vnetbench.errors import MissingToolError

HADOOP_VERSION = "3.4.2"
DEFAULT_HOME = Path(f"/var/cache/vnetbench/hadoop-{HADOOP_VERSION}")
REQUIRED_JARS = (
    f"hadoop-common-{HADOOP_VERSION}.jar",
    f"hadoop-hdfs-{HADOOP_VERSION}.jar",
    f"hadoop-yarn-server-resourcemanager-{HADOOP_VERSION}.jar",
    f"hadoop-yarn-server-nodemanager-{HADOOP_VERSION}.jar",
    f"hadoop-mapreduce-client-jobclient-{HADOOP_VERSION}-tests.jar",
    f"hadoop-mapreduce-examples-{HADOOP_VERSION}.jar",
)
WEBAPPS = ("hdfs", "datanode", "secondary", "journal")


@dataclass(frozen=True)
class HadoopHome:
    root: Path
    java: str
    java_home: str

    @property
    def jar_dir(self) -> Path:
        return self.root / "jars"

    @property
    def webapps_parent(self) -> Path:
        """Directory put on the classpath so that ``webapps/hdfs`` etc. resolve."""
        return self.root

    @property
    def jars(self) -> tuple[str, ...]:
        """Every jar of the cache, sorted (the classpath order the CDS archive was made for)."""
        return tuple(sorted(str(p) for p in self.jar_dir.glob("*.jar")))

    @property
    def formatted_name_dir(self) -> Path:
        """Where a formatted (empty) NameNode directory is kept for clusters to copy."""
        return self.root / "namenode-formatted"

    @property
    def cds_archive(self) -> Path | None:
        """The archive, unless absent or ``VNETBENCH_HADOOP_CDS=0`` (run without it)."""
        path = self.root / "hadoop.jsa"
        wanted = os.environ.get("VNETBENCH_HADOOP_CDS", "1") != "0"
        return path if wanted and path.is_file() else None


def java_path() -> str:
    """The java binary the hadoop workload would use."""
    return find_java()[0]


def find_java() -> tuple[str, str]:
    """(java binary, JAVA_HOME); ``JAVA_HOME`` in the environment wins."""
    env_home = os.environ.get("JAVA_HOME")
    if env_home and Path(env_home, "bin", "java").is_file():
        return str(Path(env_home, "bin", "java")), env_home
    found = shutil.which("java")
    if not found:
        raise MissingToolError("java not found: the hadoop workload needs Java 17 "
                               "(apt-get install openjdk-17-jre-headless, or scripts/setup.sh --with hadoop)")
    real = Path(found).resolve()
    return str(real), str(real.parent.parent)


def hadoop_home() -> HadoopHome:
    """The jar cache, or MissingToolError saying how to fill it."""
    root = Path(os.environ.get("VNETBENCH_HADOOP_HOME", str(DEFAULT_HOME)))
    missing = [j for j in REQUIRED_JARS if not (root / "jars" / j).is_file()]
    missing += [f"webapps/{w}" for w in WEBAPPS if not (root / "webapps" / w).is_dir()]
    if missing:
        raise MissingToolError(f"Hadoop {HADOOP_VERSION} is not in {root} (missing "
                               f"{', '.join(missing[:3])}): run scripts/setup.sh --with hadoop "
                               "as root")
    java, java_home = find_java()
    return HadoopHome(root, java, java_home)
