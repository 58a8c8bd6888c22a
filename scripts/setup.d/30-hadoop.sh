#!/usr/bin/env bash
# Hadoop 3.4.2 for the `hadoop` workload: a JDK and Maven (Debian's, when none is on PATH),
# then the jars (and their dependencies) fetched from Maven Central into the cache once, the
# empty webapps/ directories the HDFS daemons need (the Maven hadoop-hdfs jar lacks them), and
# a class-data-sharing archive (AppCDS) that cuts JVM start-up: the part `hadoop`
# (scripts/setup.sh --with hadoop). Idempotent; run as root, after scripts/setup-python.sh.
# VNETBENCH_HADOOP_HOME overrides the cache directory (default /var/cache/vnetbench/hadoop-3.4.2).
set -euo pipefail
cd "$(dirname "$0")/../.."

HOME_DIR="${VNETBENCH_HADOOP_HOME:-/var/cache/vnetbench/hadoop-3.4.2}"
POM="$PWD/src/vnetbench/workloads/hadoop/pom.xml"
MARKER="$HOME_DIR/jars/hadoop-mapreduce-examples-3.4.2.jar"

. scripts/lib.sh
# A JDK (java runs the daemons and builds the CDS archive) and Maven (fetches the jars): Debian's
# unless some java / mvn is already on PATH.
command -v java >/dev/null || apt_install 30-hadoop openjdk-17-jdk-headless
command -v mvn >/dev/null || apt_install 30-hadoop maven
require 30-hadoop java "apt-get install openjdk-17-jdk-headless" -version
require 30-hadoop mvn "apt-get install maven" -v

mkdir -p "$HOME_DIR"
if [ ! -f "$MARKER" ] || [ "$POM" -nt "$HOME_DIR/jars/.complete" ]; then
  echo "30-hadoop: fetching Hadoop 3.4.2 jars into $HOME_DIR/jars (Maven Central)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  cp "$POM" "$tmp/pom.xml"
  (cd "$tmp" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime \
     -DoutputDirectory="$tmp/jars")
  rm -rf "$HOME_DIR/jars.new"
  mv "$tmp/jars" "$HOME_DIR/jars.new"
  rm -rf "$HOME_DIR/jars"
  mv "$HOME_DIR/jars.new" "$HOME_DIR/jars"
  touch "$HOME_DIR/jars/.complete"
  rm -rf "$HOME_DIR/hadoop.jsa" "$HOME_DIR/namenode-formatted"
fi
for app in hdfs datanode secondary journal; do
  mkdir -p "$HOME_DIR/webapps/$app"
done

# AppCDS: a training cluster on 127.0.0.1 records the classes the daemons and clients load;
# they are dumped into hadoop.jsa, which every daemon and client maps (-Xshare:auto, so a
# mismatch only loses the speed-up). VNETBENCH_HADOOP_CDS=0 skips it.
if [ ! -f "$HOME_DIR/hadoop.jsa" ] && [ "${VNETBENCH_HADOOP_CDS:-1}" = 1 ]; then
  echo "30-hadoop: building the class-data-sharing archive (about a minute)"
  py=$(venv_python 30-hadoop)
  "$py" -m vnetbench.workloads.hadoop.cds "$HOME_DIR" \
    || echo "30-hadoop: CDS archive skipped (the hadoop workload runs without it)" >&2
fi
echo "30-hadoop: $(ls "$HOME_DIR"/jars/*.jar | wc -l) jars in $HOME_DIR/jars"
