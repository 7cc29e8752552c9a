#!/usr/bin/env bash
# A standalone Apache Spark cluster on loopback (a master and a worker, each a process of its
# own, started as Spark's sbin/start-master.sh and start-worker.sh start them: spark-daemon.sh
# with the Master and Worker classes) and Beam's Spark job server pointed at it: what a team's
# Spark cluster runs the pipeline's Beam stages on (BEAM_RUNNER=spark).
#
# Usage: scripts/spark.sh install|installed|start|stop
#   install  Spark's distribution from its Python package on PyPI (the pyspark sdist carries
#            jars/, bin/ and sbin/: the jars a Spark download has), and Beam's Spark runner
#            with its dependencies from Maven Central (the job-server jar itself is not served
#            here: the runner's jar holds its main class; Spark's own classes come from the
#            distribution, as a job server's image bundles them). Into .tools/spark/; once.
#   installed  exits 0 where install has run, 1 where it has not (the tests skip then).
#   start    the cluster and the job server; waits until both answer, prints their endpoints.
#   stop     all three, and forgets their state (their logs stay in .tools/spark/run.log).
#
# Settings (environment):
#   SPARK_CORES        cores the worker offers its executors (default 1), as Flink's task slots
#   SPARK_MASTER_PORT  the master's port, the job server's --spark-master-url (7077)
#   BEAM_JOB_PORT      the job server's job endpoint, BEAM_JOB_ENDPOINT (8099); its artifact
#                      endpoint is the next port
#
# Versions: Spark 3.5 (Scala 2.12, the line Beam's Spark 3 runner is built and tested for),
# and that runner at 2.62.0, the Beam release scripts/flink.sh takes, for the same reason (the
# newest whose job-service dependency Maven serves here).
set -euo pipefail
cd "$(dirname "$(realpath "$0")")/.."
source scripts/beam_runner.sh
spark_version=${SPARK_VERSION:-3.5.7}
runner_version=${BEAM_SPARK_RUNNER_VERSION:-2.62.0}
runner=beam-runners-spark-3
home=$PWD/.tools/spark/$spark_version
jobserver=$PWD/.tools/spark/$runner-$runner_version
state=$PWD/.tools/spark/run
master_port=${SPARK_MASTER_PORT:-7077}
job_port=${BEAM_JOB_PORT:-8099}
cores=${SPARK_CORES:-1}

install() {
  command -v java >/dev/null || { echo "error: Spark needs Java 17 (java not found)" >&2; exit 1; }
  if [ ! -f "$home/jars/spark-core_2.12-$spark_version.jar" ]; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    echo "fetching Spark $spark_version (the pyspark sdist from PyPI, 317 MB)" >&2
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$scratch" \
      "pyspark==$spark_version" >&2
    tar -C "$scratch" -xzf "$scratch/pyspark-$spark_version.tar.gz" \
      "pyspark-$spark_version/deps/jars" "pyspark-$spark_version/deps/bin" \
      "pyspark-$spark_version/deps/sbin"
    rm -rf "$home.partial"
    mkdir -p "$home.partial/conf"
    mv "$scratch/pyspark-$spark_version/deps"/{jars,bin,sbin} "$home.partial/"
    echo "Spark $spark_version (jars, bin and sbin of the pyspark $spark_version sdist)" \
      > "$home.partial/RELEASE"
    chmod +x "$home.partial"/bin/* "$home.partial"/sbin/*
    rm -rf "$home"
    mv "$home.partial" "$home"
  fi
  fetch_runner "$runner" "$runner_version" "$jobserver"
  # Spark's own classes from the cluster's distribution, after the runner's dependencies.
  grep -q "$home/jars" "$jobserver/classpath" \
    || echo "$jobserver/lib/*:$home/jars/*" > "$jobserver/classpath"
}

installed() {
  [ -f "$home/jars/spark-core_2.12-$spark_version.jar" ] && [ -f "$jobserver/classpath" ]
}

environment() {
  mkdir -p "$state/log" "$state/work" "$state/conf"
  export SPARK_HOME=$home SPARK_CONF_DIR=$state/conf SPARK_LOG_DIR=$state/log \
    SPARK_PID_DIR=$state SPARK_WORKER_DIR=$state/work SPARK_LOCAL_IP=127.0.0.1 \
    SPARK_LOCAL_DIRS=$state/work SPARK_IDENT_STRING=tfxt
}

start() {
  install
  environment
  "$home/sbin/spark-daemon.sh" start org.apache.spark.deploy.master.Master 1 \
    --host localhost --port "$master_port" --webui-port 0 >&2
  wait_for "$master_port" "Spark's master" "$state/log"
  "$home/sbin/spark-daemon.sh" start org.apache.spark.deploy.worker.Worker 1 \
    --webui-port 0 --cores "$cores" --memory 3g "spark://localhost:$master_port" >&2
  # The job server is the Spark driver: on Java 17 it needs the module openings Spark's own
  # launcher adds to every JVM it starts (org.apache.spark.launcher.JavaModuleOptions).
  local opens=(-XX:+IgnoreUnrecognizedVMOptions -Djdk.reflect.useDirectMethodHandle=false)
  for package in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util \
    java.util.concurrent java.util.concurrent.atomic jdk.internal.ref sun.nio.ch sun.nio.cs \
    sun.security.action sun.util.calendar; do
    opens+=("--add-opens=java.base/$package=ALL-UNNAMED")
  done
  opens+=(--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED)
  nohup java "${opens[@]}" -cp "$(cat "$jobserver/classpath")" \
    org.apache.beam.runners.spark.SparkJobServerDriver \
    --spark-master-url="spark://localhost:$master_port" --job-host=localhost \
    --job-port="$job_port" --artifact-port=$((job_port + 1)) --expansion-port=0 \
    > "$state/log/job-server.log" 2>&1 &
  echo $! > "$state/job-server.pid"
  wait_for "$job_port" "Beam's Spark job server" "$state/log"
  echo "spark: spark://localhost:$master_port  job server: localhost:$job_port"
}

stop() {
  if [ -f "$state/job-server.pid" ]; then
    kill "$(cat "$state/job-server.pid")" 2>/dev/null || true
  fi
  if [ -d "$state/log" ]; then
    environment
    "$home/sbin/spark-daemon.sh" stop org.apache.spark.deploy.worker.Worker 1 >&2 || true
    "$home/sbin/spark-daemon.sh" stop org.apache.spark.deploy.master.Master 1 >&2 || true
  fi
  keep_logs "$state"
  rm -rf "$state"
}

case ${1:-} in
  install) install ;;
  installed) installed ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/spark.sh install|installed|start|stop" >&2; exit 2 ;;
esac
