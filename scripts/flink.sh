#!/usr/bin/env bash
# A standalone Apache Flink session cluster on loopback (a JobManager and a TaskManager, each a
# process of its own, as `start-cluster.sh` starts them) and Beam's Flink job server pointed at
# it: what a team's Flink cluster runs the pipeline's Beam stages on (BEAM_RUNNER=flink).
#
# Usage: scripts/flink.sh install|installed|start|stop
#   install  Flink's distribution from its Python packages on PyPI (apache-flink-libraries
#            carries lib/, apache-flink bin/ and conf/: Maven Central serves no flink-dist),
#            and Beam's Flink runner with its dependencies from Maven Central (the
#            job-server jar itself is not served here: the runner's jar holds its main class).
#            Into .tools/flink/; once.
#   installed  exits 0 where install has run, 1 where it has not (the tests skip then).
#   start    the cluster and the job server; waits until both answer, prints their endpoints.
#   stop     both, and forgets their state (their logs stay in .tools/flink/run.log).
#
# Settings (environment):
#   FLINK_SLOTS        task slots of the TaskManager, and the jobs' default parallelism (1)
#   FLINK_TM_MEMORY    the TaskManager's process memory (3072m)
#   FLINK_TM_OFF_HEAP  its task off-heap memory (256m), where Beam's gRPC data channels to
#                      the SDK workers keep their buffers (16x IMDB needs 1g)
#   FLINK_REST_PORT    the JobManager's REST port, the job server's --flink-master (8081)
#   BEAM_JOB_PORT      the job server's job endpoint, BEAM_JOB_ENDPOINT (8099); its artifact
#                      endpoint is the next port
#
# Versions: Flink 1.19 (of those Beam's Flink runner supports, the newest whose runner Maven
# serves here), and that runner at the newest Beam release whose job-service dependency is
# served (2.62.0; the pipeline's Python SDK is the lock's, its workers the pipeline image).
set -euo pipefail
cd "$(dirname "$(realpath "$0")")/.."
source scripts/beam_runner.sh
flink_version=${FLINK_VERSION:-1.19.3}
runner_version=${BEAM_FLINK_RUNNER_VERSION:-2.62.0}
runner=beam-runners-flink-1.19
home=$PWD/.tools/flink/$flink_version
jobserver=$PWD/.tools/flink/$runner-$runner_version
state=$PWD/.tools/flink/run
rest_port=${FLINK_REST_PORT:-8081}
job_port=${BEAM_JOB_PORT:-8099}
slots=${FLINK_SLOTS:-1}
tm_memory=${FLINK_TM_MEMORY:-3072m}
tm_off_heap=${FLINK_TM_OFF_HEAP:-256m}

install() {
  command -v java >/dev/null || { echo "error: Flink needs Java 11 or 17 (java not found)" >&2; exit 1; }
  if [ ! -f "$home/lib/flink-dist-$flink_version.jar" ]; then
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    echo "fetching Flink $flink_version (apache-flink-libraries, apache-flink from PyPI)" >&2
    python3 -m pip download --quiet --no-deps -d "$scratch" \
      "apache-flink-libraries==$flink_version" "apache-flink==$flink_version" >&2
    tar -C "$scratch" -xzf "$scratch/apache-flink-libraries-$flink_version.tar.gz"
    python3 -m zipfile -e "$scratch"/apache_flink-"$flink_version"-*.whl "$scratch/wheel"
    rm -rf "$home.partial"
    mkdir -p "$home.partial"
    deps=$scratch/apache-flink-libraries-$flink_version/deps
    cp -r "$deps/lib" "$deps/opt" "$deps/plugins" "$home.partial/"
    cp -r "$scratch/wheel/pyflink/bin" "$scratch/wheel/pyflink/conf" "$home.partial/"
    cp "$deps/bin/bash-java-utils.jar" "$home.partial/bin/"
    chmod +x "$home.partial"/bin/*.sh "$home.partial/bin/flink"
    rm -rf "$home"
    mv "$home.partial" "$home"
  fi
  fetch_runner "$runner" "$runner_version" "$jobserver"
}

conf() {
  # The distribution's config.yaml with this cluster's addresses, slots and memory.
  mkdir -p "$state/conf" "$state/log"
  cp "$home"/conf/log4j*.properties "$state/conf/"
  # The module openings the distribution's own config gives every JVM on Java 17: without them
  # a failing task's error cannot even be reported, and the TaskManager shuts down.
  local java_opts
  java_opts=$(sed -n 's/^ *all: \(--add-.*\)$/\1/p' "$home/conf/config.yaml")
  cat > "$state/conf/config.yaml" <<EOF
env:
  java:
    opts:
      all: $java_opts
jobmanager:
  rpc:
    address: localhost
    port: 6123
  bind-host: localhost
  memory:
    process:
      size: 1024m
taskmanager:
  bind-host: localhost
  host: localhost
  numberOfTaskSlots: $slots
  memory:
    process:
      size: $tm_memory
    # Beam's data channels to the SDK workers are gRPC's, in direct memory, which Flink caps
    # at its off-heap sizes: without task off-heap memory, ExampleGen on 400,000 reviews dies
    # with "OutOfMemoryError: Direct buffer memory". Managed memory (Flink's sorts) stays at
    # 40%: each of a Transform's grouping stages gets its share, and one record, an
    # analyzer's accumulator, must fit in it ("Record too large" at a quarter, 16x IMDB).
    task:
      off-heap:
        size: $tm_off_heap
    # A Beam job is one Flink job of many stages, each holding its network buffers (a
    # sort-shuffle partition 512 by default): TFX's StatisticsGen and Transform ask for more
    # than the default 10% of the process gives.
    network:
      min: 512m
      max: 512m
  network:
    sort-shuffle:
      min-buffers: 64
parallelism:
  default: $slots
# Beam's classes (and their dependencies) from the TaskManager's own classpath, where start()
# puts the runner's jars, not from the job's: only then does an SDK worker outlive the stage
# that started it and serve the job's next one (--environment_cache_millis: Beam releases a
# context made by a job's class loader at once), rather than a new worker, importing
# TensorFlow again, for each of a Transform's dozen stages.
classloader:
  resolve-order: parent-first
rest:
  address: localhost
  bind-address: localhost
  port: $rest_port
EOF
}

installed() {
  [ -f "$home/lib/flink-dist-$flink_version.jar" ] && [ -f "$jobserver/classpath" ]
}

start() {
  install
  conf
  export FLINK_CONF_DIR=$state/conf FLINK_LOG_DIR=$state/log FLINK_PID_DIR=$state
  # The runner's jars after Flink's own (Flink's scripts append HADOOP_CLASSPATH to theirs),
  # less the Flink client jars it was built against.
  HADOOP_CLASSPATH=$(find "$jobserver/lib" -name '*.jar' ! -name 'flink-*' | sort | paste -sd: -)
  export HADOOP_CLASSPATH
  "$home/bin/jobmanager.sh" start >&2
  "$home/bin/taskmanager.sh" start >&2
  wait_for "$rest_port" "Flink's JobManager" "$state/log"
  nohup java -cp "$(cat "$jobserver/classpath")" org.apache.beam.runners.flink.FlinkJobServerDriver \
    --flink-master="localhost:$rest_port" --job-host=localhost --job-port="$job_port" \
    --artifact-port=$((job_port + 1)) --expansion-port=0 \
    > "$state/log/job-server.log" 2>&1 &
  echo $! > "$state/job-server.pid"
  wait_for "$job_port" "Beam's Flink job server" "$state/log"
  echo "flink: http://localhost:$rest_port  job server: localhost:$job_port"
}

stop() {
  if [ -f "$state/job-server.pid" ]; then
    kill "$(cat "$state/job-server.pid")" 2>/dev/null || true
  fi
  if [ -d "$state/conf" ]; then
    export FLINK_CONF_DIR=$state/conf FLINK_LOG_DIR=$state/log FLINK_PID_DIR=$state
    "$home/bin/taskmanager.sh" stop-all >&2 || true
    "$home/bin/jobmanager.sh" stop-all >&2 || true
  fi
  keep_logs "$state"
  rm -rf "$state"
}

case ${1:-} in
  install) install ;;
  installed) installed ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/flink.sh install|installed|start|stop" >&2; exit 2 ;;
esac
