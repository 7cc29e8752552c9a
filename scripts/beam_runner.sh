# What scripts/flink.sh and scripts/spark.sh share, sourced by both: Beam's runner for the
# engine fetched from Maven Central with its dependencies (the job-server jars are not served
# here; the runner's jar holds the job server's main class), and waiting for a daemon's port.

# fetch_runner ARTIFACT VERSION FOLDER: org.apache.beam:ARTIFACT:VERSION and its runtime
# dependencies into FOLDER/lib (a pom of its own, `mvn dependency:copy-dependencies`), once;
# FOLDER/classpath is written last, so that its presence means the fetch completed.
fetch_runner() {
  local artifact=$1 version=$2 folder=$3
  [ -f "$folder/classpath" ] && return 0
  command -v mvn >/dev/null || { echo "error: Beam's job server is fetched with Maven (mvn not found)" >&2; exit 1; }
  echo "fetching Beam's runner $artifact:$version and its dependencies (Maven)" >&2
  rm -rf "$folder"
  mkdir -p "$folder"
  cat > "$folder/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.tfx-transformers</groupId>
  <artifactId>$artifact-job-server</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>$artifact</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
  mvn -q -B -f "$folder/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$folder/lib" -DincludeScope=runtime >&2
  echo "$folder/lib/*" > "$folder/classpath"
}

# wait_for PORT WHAT LOGS: returns once PORT on loopback answers, or fails after 120 s.
wait_for() {
  local port=$1 what=$2 logs=$3
  for _ in $(seq 240); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "error: $what did not answer on port $port; logs in $logs" >&2
  exit 1
}

# keep_logs STATE: the stopped cluster's logs kept beside its state (STATE.log), for what went
# wrong, before the state goes.
keep_logs() {
  local state=$1
  if [ -d "$state/log" ]; then
    rm -rf "$state.log"
    mv "$state/log" "$state.log"
  fi
}
