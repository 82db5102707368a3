#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft) on loopback, from Apache Kafka's own jars on Maven Central.
#
#   scripts/kafka-local.sh start|stop|status|restart|fetch|classpath
#
# Environment (all optional):
#   KAFKA_HOME_DIR        cache for the jars (default ~/.cache/relay-kafka)
#   KAFKA_DATA_DIR        log dirs, config, pid and server.log (default $KAFKA_HOME_DIR/node-<port>)
#   KAFKA_PORT            PLAINTEXT listener (default 9092)
#   KAFKA_CONTROLLER_PORT CONTROLLER listener (default KAFKA_PORT + 1)
#   KAFKA_HEAP_OPTS       JVM heap (default -Xms256m -Xmx768m)
#   KAFKA_EXTRA_LISTENERS space-separated NAME:PORT:ADVERTISED_PORT: more PLAINTEXT listeners on
#                         127.0.0.1:PORT, each advertising 127.0.0.1:ADVERTISED_PORT (a proxy in front
#                         of it): clients that bootstrap through the proxy then reach the broker only
#                         through it (the fault suite cuts one Relay instance off from Kafka this way)
#   KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS
#                         how long an empty consumer group waits for more members before its
#                         first assignment (default 0 here; Kafka's own default is 3000, see
#                         docs/kafka-startup.md)
# start is idempotent (a running broker is left alone) and returns once the broker answers.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_VERSION=3.9.2
home="${KAFKA_HOME_DIR:-$HOME/.cache/relay-kafka}"
libs="$home/kafka-$KAFKA_VERSION/libs"
port="${KAFKA_PORT:-9092}"
controller_port="${KAFKA_CONTROLLER_PORT:-$((port + 1))}"
data="${KAFKA_DATA_DIR:-$home/node-$port}"
pid_file="$data/kafka.pid"
log_dir="$data/logs"

say() { echo "kafka-local: $*" >&2; }

fetch() {
  if [[ -f "$libs/.complete" ]]; then return; fi
  say "fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $libs"
  mkdir -p "$libs"
  mvn -q -B -Dstyle.color=never -f "$here/kafka/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$libs"
  touch "$libs/.complete"
}

running() {
  [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

write_config() {
  mkdir -p "$data/kraft" "$log_dir"
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
  local advertised="PLAINTEXT://127.0.0.1:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  local extra name rest listen_port advertised_port
  for extra in ${KAFKA_EXTRA_LISTENERS:-}; do
    name="${extra%%:*}"; rest="${extra#*:}"; listen_port="${rest%%:*}"; advertised_port="${rest#*:}"
    listeners="$listeners,$name://127.0.0.1:$listen_port"
    advertised="$advertised,$name://127.0.0.1:$advertised_port"
    protocols="$protocols,$name:PLAINTEXT"
  done
  cat >"$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$data/kraft
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=${KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS:-0}
auto.create.topics.enable=true
log.retention.hours=168
PROPS
}

start() {
  if running; then
    say "already running (pid $(cat "$pid_file")) on 127.0.0.1:$port"
    return
  fi
  fetch
  write_config
  if [[ ! -f "$data/kraft/meta.properties" ]]; then
    local cluster_id
    cluster_id="$(java -cp "$libs/*" -Dlog4j.configuration="file:$here/kafka/log4j.properties" -Dkafka.logs.dir="$log_dir" kafka.tools.StorageTool random-uuid)"
    java -cp "$libs/*" -Dlog4j.configuration="file:$here/kafka/log4j.properties" -Dkafka.logs.dir="$log_dir" \
      kafka.tools.StorageTool format -t "$cluster_id" -c "$data/server.properties" -g >/dev/null
  fi
  say "starting on 127.0.0.1:$port (data in $data)"
  # A partition holds a file open (and maps two): with a topic per app, this limit bounds the apps
  # the broker can carry (README, "On Kafka"). Said, not raised: raising it needs privileges.
  say "open-files limit $(ulimit -n) (a partition holds one), vm.max_map_count $(cat /proc/sys/vm/max_map_count 2>/dev/null || echo unknown) (a partition maps two)"
  # shellcheck disable=SC2086
  nohup java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx768m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Dlog4j.configuration="file:$here/kafka/log4j.properties" \
    -Dkafka.logs.dir="$log_dir" -cp "$libs/*" kafka.Kafka "$data/server.properties" \
    >"$log_dir/stdout.log" 2>&1 9>&- &
  echo $! >"$pid_file"
  for _ in $(seq 1 240); do
    if ! running; then
      say "the broker exited; last lines of $log_dir:"
      tail -n 30 "$log_dir/stdout.log" "$log_dir/server.log" >&2 2>/dev/null || true
      exit 1
    fi
    if answers && grep -q 'Kafka Server started' "$log_dir/server.log" 2>/dev/null; then
      say "ready on 127.0.0.1:$port"
      return
    fi
    sleep 0.25
  done
  say "not ready after 60 s; see $log_dir/server.log"
  exit 1
}

stop() {
  if ! running; then
    say "not running"
    rm -f "$pid_file"
    return
  fi
  local pid
  pid="$(cat "$pid_file")"
  kill -TERM "$pid"
  for _ in $(seq 1 120); do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pid_file"
      say "stopped"
      return
    fi
    sleep 0.25
  done
  say "still running after 30 s: killing"
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pid_file"
}

status() {
  if running && answers; then
    echo "running (pid $(cat "$pid_file")) on 127.0.0.1:$port"
  elif running; then
    echo "starting (pid $(cat "$pid_file"))"
    exit 3
  else
    echo "stopped"
    exit 3
  fi
}

# One start or stop at a time per node (two test projects may ask at once).
mkdir -p "$data"
exec 9>"$data/.lock"
flock 9

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) status ;;
  fetch) fetch ;;
  classpath) fetch; echo "$libs/*" ;;
  *) echo "usage: $0 start|stop|status|restart|fetch|classpath" >&2; exit 2 ;;
esac
