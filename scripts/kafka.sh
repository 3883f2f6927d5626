#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft, combined broker+controller) on 127.0.0.1 for
# tests, benchmarks and the demo, run from the jars that scripts/bootstrap.sh provisions.
#
#   bash scripts/kafka.sh start [--dir DIR] [--secure] [--keep] [--kafka-version V]
#   bash scripts/kafka.sh stop [--dir DIR]
#   bash scripts/kafka.sh status [--dir DIR]
#   bash scripts/kafka.sh create-topic NAME PARTITIONS [--dir DIR]
#   bash scripts/kafka.sh describe-topic NAME [--dir DIR]
#
# start    Formats DIR (default $KELT_ROOT/build/kafka) and starts the broker on free ports,
#          then waits until it answers a metadata request (KELT_KAFKA_START_TIMEOUT, 60 s).
#          A stopped DIR from an earlier run is wiped first unless --keep is given (--keep
#          reuses its data, ports, users and certificates). Prints KELT_KAFKA_BOOTSTRAP=...
#          (the PLAINTEXT listener) on stdout; DIR/env (mode 600, KEY=value lines) also holds
#          KELT_KAFKA_PID, KELT_KAFKA_DIR, KELT_KAFKA_BROKER_VERSION.
#          Use it with: set -a; source DIR/env; set +a
#          Already running in DIR: prints the same lines and exits 0.
# --secure (alias --scram) adds, next to PLAINTEXT (whose anonymous principal stays a super
#          user, for the topic commands and test data), three listeners that authenticate:
#            SASL_PLAINTEXT  SCRAM-SHA-256/512       KELT_KAFKA_SASL_BOOTSTRAP
#            SASL_SSL        SCRAM-SHA-256/512, TLS  KELT_KAFKA_SASL_SSL_BOOTSTRAP
#            SSL             mutual TLS (client certificate required; CN=kelt is User:kelt)
#                                                    KELT_KAFKA_SSL_BOOTSTRAP
#          and an authorizer (StandardAuthorizer). SCRAM user "kelt" (random password) may
#          use every topic, group and transactional id; user "kelt-denied" (random password)
#          has no ACLs at all. openssl makes DIR/tls/: a test CA, the broker's certificate
#          (localhost, 127.0.0.1), a client certificate (CN=kelt) and an unrelated CA that
#          signed nothing (for "untrusted" tests). DIR/env then also holds
#          KELT_KAFKA_SCRAM_USER/_PASSWORD, KELT_KAFKA_DENIED_USER/_PASSWORD,
#          KELT_KAFKA_CA_PEM, KELT_KAFKA_CLIENT_CERT_PEM, KELT_KAFKA_CLIENT_KEY_PEM and
#          KELT_KAFKA_OTHER_CA_PEM (paths); stdout has the bootstrap lines (no password).
# --kafka-version V  runs Kafka V (default $KELT_KAFKA_VERSION, the only one bootstrap.sh
#          provisions) from $KELT_CACHE/kafka/V/libs (KELT_KAFKA_VERSION=V bash
#          scripts/bootstrap.sh fetches it). The version is kept in DIR/kafka.version (--keep
#          reuses it) and in DIR/env as KELT_KAFKA_BROKER_VERSION.
# stop     SIGTERM, then SIGKILL after KELT_KAFKA_STOP_TIMEOUT (30 s). Fine when not running.
# status   Exit 0 printing the bootstrap lines when the broker of DIR runs, else exit 1.
# create-topic  Creates the topic (replication factor 1) unless it exists with that many
#          partitions; fails when it exists with another count. describe-topic prints
#          "NAME PARTITIONS". Both use a small Admin-client tool compiled once with javac
#          against the $KELT_KAFKA_VERSION client jars into $KELT_CACHE/kafka/kelt-admin/ (the
#          4.1.1 jars have no TopicCommand); it serves a broker of any version, over PLAINTEXT.
# DIR holds server.properties, kafka.version, data/ (log.dirs), broker.log, broker.pid, env,
# and with --secure tls/.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

LOG4J="$KELT_ROOT/scripts/kafka/log4j2.properties"
START_TIMEOUT="${KELT_KAFKA_START_TIMEOUT:-60}"
STOP_TIMEOUT="${KELT_KAFKA_STOP_TIMEOUT:-30}"
ADMIN_TIMEOUT="${KELT_KAFKA_ADMIN_TIMEOUT:-30}"
SCRAM_USER=kelt          # --secure: the user with ACLs for everything
DENIED_USER=kelt-denied  # --secure: a user without any ACL
MARKER=.kelt-kafka   # a DIR holding this file (or an empty one) may be wiped by start
READY_LINE="Kafka Server started"
# Quick-starting JVM for the short-lived tools (format, admin).
TOOL_JVM=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx256m
          "-Dlog4j2.configurationFile=$LOG4J" -Dkelt.log.target=SYSTEM_ERR -Dkelt.log.level=warn)

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
say() { printf '[kafka] %s\n' "$*" >&2; }
die() { printf '[kafka] ERROR: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# ---- arguments ------------------------------------------------------------------------------
CMD="${1:-}"
[[ -n "$CMD" ]] || { usage >&2; exit 2; }
shift
DIR="$KELT_ROOT/build/kafka"
SECURE=0
KEEP=0
BROKER_VERSION=""   # --kafka-version (empty: the DIR's own with --keep, else KELT_KAFKA_VERSION)
POSITIONAL=()
while (($#)); do
  case "$1" in
    --dir) [[ $# -ge 2 && -n "$2" ]] || die "--dir needs a directory"; DIR="$2"; shift 2 ;;
    --dir=*) DIR="${1#--dir=}"; [[ -n "$DIR" ]] || die "--dir needs a directory"; shift ;;
    --secure|--scram) SECURE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --kafka-version)
      [[ $# -ge 2 && -n "$2" ]] || die "--kafka-version needs a version"
      BROKER_VERSION="$2"; shift 2 ;;
    --kafka-version=*)
      BROKER_VERSION="${1#--kafka-version=}"
      [[ -n "$BROKER_VERSION" ]] || die "--kafka-version needs a version"; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
for v in START_TIMEOUT STOP_TIMEOUT ADMIN_TIMEOUT; do
  if ! is_uint "${!v}" || ((${!v} == 0)); then
    die "KELT_KAFKA_${v} must be a positive number of seconds"
  fi
done

if [[ -n "$BROKER_VERSION" ]]; then
  [[ "$CMD" == start ]] || die "--kafka-version applies to start only"
  [[ "$BROKER_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
    || die "--kafka-version '$BROKER_VERSION': expected MAJOR.MINOR.PATCH, e.g. $KELT_KAFKA_VERSION"
fi

# The DIR path goes into server.properties, a Java @argfile and the env file unquoted.
[[ "$DIR" =~ ^[A-Za-z0-9._/+,:@=~-]+$ ]] \
  || die "--dir '$DIR': use a path without spaces, quotes, backslashes or other shell specials"
if [[ "$CMD" == start ]]; then
  mkdir -p -- "$DIR" || die "cannot create $DIR"
fi
if [[ -d "$DIR" ]]; then
  DIR="$(cd -- "$DIR" && pwd -P)"
elif [[ "$CMD" == stop || "$CMD" == status ]]; then
  say "not running ($DIR does not exist)"
  [[ "$CMD" == stop ]] && exit 0
  exit 1
elif [[ "$CMD" == *-topic ]]; then
  die "no broker runs in $DIR (start one: bash scripts/kafka.sh start)"
fi

PROPS="$DIR/server.properties"
DATA="$DIR/data"
LOG="$DIR/broker.log"
PIDFILE="$DIR/broker.pid"
ENVFILE="$DIR/env"
VERSIONFILE="$DIR/kafka.version"   # the Kafka version DIR was formatted with
TLS="$DIR/tls"   # --secure: certificates and keys (made by openssl at start)
BROKER_DUMP="$DIR/broker.jsa"   # a CDS dump the broker writes when it exits (first run only)

# ---- helpers --------------------------------------------------------------------------------
# alive PID: the process exists and is not a zombie (one that nobody reaped yet).
alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z ]]
}

# is_our_broker PID: PID is alive and runs kafka.Kafka with DIR's server.properties.
is_our_broker() {
  local cmdline
  alive "$1" || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *" kafka.Kafka $PROPS "* ]]
}

# The pid of DIR's broker when it runs, else nothing and rc 1. Found by the pid file, or,
# when that is missing or stale, by its command line (so a lost pid file cannot make start
# wipe the data of a live broker).
running_pid() {
  local pid=""
  [[ -f "$PIDFILE" ]] && pid="$(<"$PIDFILE")"
  if ! is_uint "$pid" || ! is_our_broker "$pid"; then
    local re="kafka\.Kafka ${PROPS//./\\.}\$"
    pid="$(pgrep -o -f -- "${re//+/\\+}" 2>/dev/null)" || return 1
    is_our_broker "$pid" || return 1
    echo "$pid" >"$PIDFILE"
  fi
  echo "$pid"
}

# prop KEY: a value from DIR/server.properties (empty when absent, also without the file).
prop() { [[ ! -f "$PROPS" ]] || sed -n "s/^$1=//p" "$PROPS" | tail -n1; }
# envval KEY: a value from DIR/env (empty when absent, also without the file).
envval() { [[ ! -f "$ENVFILE" ]] || sed -n "s/^$1=//p" "$ENVFILE" | tail -n1; }
# port_of NAME: the port of listener NAME (PLAINTEXT, CONTROLLER, SASL_PLAINTEXT, SASL_SSL,
# SSL) in DIR; empty when DIR has no such listener.
port_of() { prop listeners | tr ',' '\n' | sed -n "s|^$1://127\.0\.0\.1:\([0-9]*\)\$|\1|p"; }
# is_secure_dir: DIR was formatted with --secure (by this kafka.sh: it has a SASL_SSL listener).
is_secure_dir() { [[ -n "$(port_of SASL_SSL)" ]]; }

# The lines start and status print (never a password).
print_bootstrap() {
  echo "KELT_KAFKA_BOOTSTRAP=127.0.0.1:$(port_of PLAINTEXT)"
  local name var port
  for name in SASL_PLAINTEXT:SASL SASL_SSL:SASL_SSL SSL:SSL; do
    var="${name#*:}"
    port="$(port_of "${name%%:*}")"
    [[ -z "$port" ]] || echo "KELT_KAFKA_${var}_BOOTSTRAP=127.0.0.1:$port"
  done
}

tcp_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# The Admin-client helper always runs from the $KELT_KAFKA_VERSION jars (any broker).
need_tools() {
  command -v java >/dev/null 2>&1 || die "java not found (run: bash scripts/bootstrap.sh)"
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
  if ((SECURE)) && [[ "$CMD" == start ]]; then
    command -v openssl >/dev/null 2>&1 || die "openssl not found (--secure makes certificates with it)"
  fi
  [[ -f "$KELT_KAFKA_LIBS/kafka_2.13-$KELT_KAFKA_VERSION.jar" ]] \
    || die "no Kafka $KELT_KAFKA_VERSION jars in $KELT_KAFKA_LIBS (run: bash scripts/bootstrap.sh)"
  [[ -f "$LOG4J" ]] || die "missing $LOG4J"
}

# libs_of VERSION: the directory of Kafka VERSION's jars.
libs_of() {
  if [[ "$1" == "$KELT_KAFKA_VERSION" ]]; then echo "$KELT_KAFKA_LIBS"
  else echo "$KELT_CACHE/kafka/$1/libs"
  fi
}

# The Kafka version DIR was formatted with (a DIR from before kafka.version: the default).
dir_version() {
  local v=""
  [[ -f "$VERSIONFILE" ]] && v="$(<"$VERSIONFILE")"
  echo "${v:-$KELT_KAFKA_VERSION}"
}

# use_version VERSION: the broker and StorageTool run from BROKER_LIBS, Kafka VERSION's jars.
BROKER_LIBS=""
use_version() {
  BROKER_VERSION="$1"
  BROKER_LIBS="$(libs_of "$1")"
  [[ -f "$BROKER_LIBS/kafka_2.13-$1.jar" ]] && return 0
  if [[ "$1" == "$KELT_KAFKA_VERSION" ]]; then
    die "no Kafka $1 jars in $BROKER_LIBS (run: bash scripts/bootstrap.sh)"
  fi
  die "no Kafka $1 jars in $BROKER_LIBS (bootstrap.sh provides $KELT_KAFKA_VERSION; for $1:" \
      "KELT_KAFKA_VERSION=$1 bash scripts/bootstrap.sh)"
}
broker_major() { echo "${BROKER_VERSION%%.*}"; }

# Holds a lock on DIR (fd 9) so that two start/stop calls on one DIR do not interleave.
# Every process started below closes fd 9 (9<&-) so that the broker does not keep it.
lock_dir() {
  exec 9<"$DIR"
  flock -w "$((START_TIMEOUT + STOP_TIMEOUT + 30))" 9 \
    || die "another kafka.sh holds $DIR (timed out waiting for it)"
}

# ---- the Admin-client tool ------------------------------------------------------------------
# Kafka 4.1.1's kafka_2.13 jars have no TopicCommand / BrokerApiVersionsCommand (they live in
# the kafka-tools artifact), so a tiny Admin-client program does the metadata check and the
# topic commands. Compiled once per source/jars into $KELT_CACHE/kafka/kelt-admin/<hash>/.
admin_source() {
  cat <<'EOF'
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/** kelt's helper for scripts/kafka.sh: check | create-topic | describe-topic. */
public final class KeltKafkaAdmin {
  /** The cluster operations the ACLs of `start --secure` give the SCRAM user. */
  private static final Set<AclOperation> GRANTED_CLUSTER_OPS =
      Set.of(AclOperation.DESCRIBE, AclOperation.IDEMPOTENT_WRITE);

  /** How to reach a listener: protocol, SCRAM mechanism and user (null: none). */
  private record Login(String bootstrap, String protocol, String mechanism, String user,
                       String password) {
    static Login anonymous(String bootstrap) {
      return new Login(bootstrap, "PLAINTEXT", null, null, null);
    }
    String describe() {
      return bootstrap + (protocol.equals("PLAINTEXT") ? "" : " " + protocol)
          + (mechanism == null ? "" : " " + mechanism)
          + (user == null ? "" : " as " + user)
          + (protocol.equals("SSL") ? " (client certificate)" : "");
    }
  }

  private static String env(String name) {
    String v = System.getenv(name);
    if (v == null || v.isEmpty()) throw new IllegalStateException(name + " is not set");
    return v;
  }

  private static String read(String envName) throws Exception {
    return Files.readString(Path.of(env(envName)));
  }

  private static Admin open(Login login, int timeoutMs) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", login.bootstrap());
    p.put("client.id", "kelt-kafka-sh");
    p.put("default.api.timeout.ms", Integer.toString(timeoutMs));
    p.put("request.timeout.ms", Integer.toString(Math.min(timeoutMs, 15000)));
    // Poll a broker that is still starting often: its listeners open when it is ready.
    p.put("reconnect.backoff.ms", "50");
    p.put("reconnect.backoff.max.ms", "200");
    p.put("retry.backoff.ms", "50");
    p.put("retry.backoff.max.ms", "200");
    p.put("security.protocol", login.protocol());
    if (login.mechanism() != null) {
      p.put("sasl.mechanism", login.mechanism());
      p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
          + " username=\"" + login.user() + "\" password=\"" + login.password() + "\";");
    }
    if (login.protocol().endsWith("SSL")) {
      // The broker's certificate is checked against the test CA, and its name (127.0.0.1)
      // against the certificate's subjectAltName (endpoint identification is on by default).
      p.put("ssl.truststore.type", "PEM");
      p.put("ssl.truststore.location", env("KELT_KAFKA_CA_PEM"));
    }
    if (login.protocol().equals("SSL")) {
      p.put("ssl.keystore.type", "PEM");
      p.put("ssl.keystore.certificate.chain", read("KELT_KAFKA_CLIENT_CERT_PEM"));
      p.put("ssl.keystore.key", read("KELT_KAFKA_CLIENT_KEY_PEM"));
    }
    return Admin.create(p);
  }

  /**
   * A Metadata request (listTopics) and a DescribeCluster; returns a one-line summary. With
   * wantOps, also waits (until the deadline) until the principal's authorized cluster
   * operations are exactly wantOps: ACLs made just before take effect asynchronously.
   */
  private static String check(Login login, int timeoutMs, Set<AclOperation> wantOps)
      throws Exception {
    long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
    try (Admin admin = open(login, timeoutMs)) {
      DescribeClusterOptions options = new DescribeClusterOptions();
      if (wantOps != null) options.includeAuthorizedOperations(true);
      while (true) {
        DescribeClusterResult cluster = admin.describeCluster(options);
        String clusterId = cluster.clusterId().get();
        int nodes = cluster.nodes().get().size();
        int topics = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get().size();
        String line = login.describe() + ": cluster " + clusterId + ", " + nodes + " broker(s), "
            + topics + " topic(s)";
        if (wantOps == null) return line;
        Set<AclOperation> ops = cluster.authorizedOperations().get();
        Set<String> names = new TreeSet<>();
        if (ops != null) ops.forEach(op -> names.add(op.name()));
        line += ", cluster operations " + names;
        if (ops != null && ops.equals(wantOps)) return line;
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(line + ", not " + new TreeSet<>(wantOps));
        }
        Thread.sleep(50);
      }
    }
  }

  /** ACLs for user: everything on every topic, group and transactional id; the cluster
   *  operations of GRANTED_CLUSTER_OPS (an idempotent producer's IDEMPOTENT_WRITE). */
  private static void grant(String bootstrap, String user, int timeoutMs) throws Exception {
    String principal = "User:" + user;
    List<AclBinding> acls = new ArrayList<>();
    for (ResourceType type :
         List.of(ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)) {
      acls.add(new AclBinding(
          new ResourcePattern(type, ResourcePattern.WILDCARD_RESOURCE, PatternType.LITERAL),
          new AccessControlEntry(principal, "*", AclOperation.ALL, AclPermissionType.ALLOW)));
    }
    for (AclOperation op : GRANTED_CLUSTER_OPS) {
      acls.add(new AclBinding(
          new ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
          new AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW)));
    }
    try (Admin admin = open(Login.anonymous(bootstrap), timeoutMs)) {
      admin.createAcls(acls).all().get();   // already there (--keep): still success
    }
  }

  private static TopicDescription describe(Admin admin, String name) throws Exception {
    return admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
  }

  public static void main(String[] args) throws Exception {
    try {
      int timeoutMs = Integer.parseInt(args[1]) * 1000;
      String bootstrap = args[2];
      switch (args[0]) {
        case "check": {
          // check T PLAINTEXT [SASL_PLAINTEXT SASL_SSL SSL]: the latter for --secure, with
          // the users, passwords and PEM paths in the environment (KELT_KAFKA_*, as DIR/env).
          System.out.println(check(Login.anonymous(bootstrap), timeoutMs, null));
          if (args.length > 3) {
            String user = env("KELT_KAFKA_SCRAM_USER");
            String password = env("KELT_KAFKA_SCRAM_PASSWORD");
            grant(bootstrap, user, timeoutMs);
            List<Login> logins = new ArrayList<>();
            for (String protocol : new String[] {"SASL_PLAINTEXT", "SASL_SSL"}) {
              String b = protocol.equals("SASL_PLAINTEXT") ? args[3] : args[4];
              for (String mechanism : new String[] {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
                logins.add(new Login(b, protocol, mechanism, user, password));
              }
            }
            logins.add(new Login(args[5], "SSL", null, null, null));
            Login denied = new Login(args[4], "SASL_SSL", "SCRAM-SHA-512",
                env("KELT_KAFKA_DENIED_USER"), env("KELT_KAFKA_DENIED_PASSWORD"));
            // All at once (each its own Admin client): about 1 s less than one by one.
            ExecutorService pool = Executors.newFixedThreadPool(logins.size() + 1);
            try {
              List<Future<String>> lines = new ArrayList<>();
              for (Login login : logins) {
                lines.add(pool.submit(() -> check(login, timeoutMs, GRANTED_CLUSTER_OPS)));
              }
              lines.add(pool.submit(() -> check(denied, timeoutMs, Set.of())));
              for (Future<String> line : lines) System.out.println(line.get());
            } finally {
              pool.shutdownNow();
            }
          }
          break;
        }
        case "create-topic": {
          String name = args[3];
          int partitions = Integer.parseInt(args[4]);
          try (Admin admin = open(Login.anonymous(bootstrap), timeoutMs)) {
            try {
              admin.createTopics(List.of(new NewTopic(name, Optional.of(partitions), Optional.empty())))
                  .all().get();
              System.out.println("created topic " + name + " with " + partitions + " partition(s)");
            } catch (ExecutionException e) {
              if (!(e.getCause() instanceof TopicExistsException)) throw e;
              int have = describe(admin, name).partitions().size();
              if (have != partitions) {
                System.err.println("topic " + name + " already exists with " + have
                    + " partition(s), not " + partitions);
                System.exit(3);
              }
              System.out.println("topic " + name + " already exists with " + have + " partition(s)");
            }
          }
          break;
        }
        case "describe-topic": {
          try (Admin admin = open(Login.anonymous(bootstrap), timeoutMs)) {
            System.out.println(args[3] + " " + describe(admin, args[3]).partitions().size());
          }
          break;
        }
        default:
          throw new IllegalArgumentException("unknown command " + args[0]);
      }
    } catch (Exception e) {
      Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
      System.err.println(t.getClass().getSimpleName() + ": " + t.getMessage());
      System.exit(1);
    }
  }
}
EOF
}

ADMIN_JAR=""
ADMIN_KEY=""
admin_prepare() {
  local root staging
  ADMIN_KEY="$( { admin_source; echo "$KELT_KAFKA_LIBS $KELT_KAFKA_VERSION"; } | sha256sum | cut -c1-16)"
  root="$KELT_CACHE/kafka/kelt-admin"
  ADMIN_JAR="$root/$ADMIN_KEY/kelt-kafka-admin.jar"
  [[ -f "$ADMIN_JAR" ]] && return 0
  command -v javac >/dev/null 2>&1 || die "javac not found (the JDK; run: bash scripts/bootstrap.sh)"
  mkdir -p "$root"
  staging="$(mktemp -d "$root/.tmp.XXXXXX")"
  mkdir "$staging/classes"
  admin_source >"$staging/KeltKafkaAdmin.java"
  if ! { timeout 120 javac -nowarn -cp "$KELT_KAFKA_LIBS/*" -d "$staging/classes" \
           "$staging/KeltKafkaAdmin.java" \
         && jar cf "$staging/kelt-kafka-admin.jar" -C "$staging/classes" .; } \
       >"$staging/javac.log" 2>&1 9<&-; then
    cat "$staging/javac.log" >&2
    rm -rf "$staging"
    die "could not compile the Admin-client helper"
  fi
  # Another kafka.sh may have won the race; either copy is fine.
  mv -T "$staging" "$root/$ADMIN_KEY" 2>/dev/null || rm -rf "$staging"
  [[ -f "$ADMIN_JAR" ]] || die "Admin-client helper missing after compile"
}

# admin_argv TIMEOUT_SECONDS COMMAND ARGS...: sets ADMIN_ARGV to the bounded helper command.
admin_argv() {
  local t="$1" dump="$DIR/.admin-$$.jsa"
  cds_use "admin-$ADMIN_KEY" "$dump" "$KELT_KAFKA_LIBS"
  ADMIN_ARGV=(timeout "$((t + 15))" java "${TOOL_JVM[@]}" "${CDS_FLAGS[@]}"
              -cp "$ADMIN_JAR:$KELT_KAFKA_LIBS/*" KeltKafkaAdmin "$2" "$t" "${@:3}")
  ADMIN_DUMP="$dump"
}

# admin TIMEOUT_SECONDS COMMAND ARGS...: runs the helper (bounded).
admin() {
  local rc=0
  admin_argv "$@"
  "${ADMIN_ARGV[@]}" 9<&- || rc=$?
  cds_install "admin-$ADMIN_KEY" "$ADMIN_DUMP" "$KELT_KAFKA_LIBS"
  return "$rc"
}

# ---- class-data sharing ---------------------------------------------------------------------
# A JVM start loads thousands of classes from the jars; a dynamic CDS archive of them (made
# at the exit of the first run, kept in $KELT_CACHE/kafka/cds/) makes later starts faster:
# the broker by about 2 s, StorageTool format by about 1 s. KELT_KAFKA_CDS=0 turns it off.
# A stale or unreadable archive is ignored by the JVM (-Xshare:auto), and the key changes
# with the JDK and the jars of the class path (one directory per Kafka version).
CDS_DIR=""
CDS_FLAGS=()
declare -A CDS_DIRS=()
# cds_init LIBS: sets CDS_DIR, the archives of JVMs that run from the jars in LIBS.
cds_init() {
  local libs="$1"
  CDS_DIR=""
  [[ "${KELT_KAFKA_CDS:-1}" != 0 ]] || return 0
  if [[ -z "${CDS_DIRS[$libs]:-}" ]]; then
    CDS_DIRS[$libs]="$KELT_CACHE/kafka/cds/$( { java -version 2>&1; ls -l --time-style=+%s "$libs"; } \
                                               | sha256sum | cut -c1-16)"
  fi
  CDS_DIR="${CDS_DIRS[$libs]}"
}
# cds_use NAME DUMP LIBS: sets CDS_FLAGS to use archive NAME, or to dump one into DUMP at exit.
cds_use() {
  local name="$1" dump="$2"
  CDS_FLAGS=()
  [[ "${KELT_KAFKA_CDS:-1}" != 0 ]] || return 0
  cds_init "$3"
  if [[ -s "$CDS_DIR/$name.jsa" ]]; then
    CDS_FLAGS=("-XX:SharedArchiveFile=$CDS_DIR/$name.jsa" -Xshare:auto "-Xlog:cds*=off")
  else
    rm -f "$dump"
    CDS_FLAGS=("-XX:ArchiveClassesAtExit=$dump" "-Xlog:cds*=off")
  fi
}
# cds_install NAME DUMP LIBS: puts a dump made at a JVM's exit into the cache (atomically).
cds_install() {
  local name="$1" dump="$2" tmp
  [[ -f "$dump" ]] || return 0
  cds_init "$3"
  [[ -n "$CDS_DIR" ]] || return 0
  if [[ -s "$dump" && ! -s "$CDS_DIR/$name.jsa" ]] && mkdir -p "$CDS_DIR" \
     && tmp="$(mktemp "$CDS_DIR/.tmp.XXXXXX")"; then
    if cp "$dump" "$tmp" && chmod 444 "$tmp" && mv -f "$tmp" "$CDS_DIR/$name.jsa"; then :; else rm -f "$tmp"; fi
  fi
  rm -f "$dump"
}

# ---- start ----------------------------------------------------------------------------------
# Prints "<plaintext> <controller> <sasl_plaintext> <sasl_ssl> <ssl> <cluster id>": five free
# loopback ports (held together, so distinct; the last three are used with --secure only)
# and a cluster id in Kafka's Uuid form (22 chars of url-safe base64, not starting with
# '-'), as StorageTool random-uuid makes, without a JVM start.
fresh_ports_and_id() {
  python3 - <<'EOF'
import base64, os, socket
socks = []
for _ in range(5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
while True:
    cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
    if not cid.startswith("-"):
        break
print(*ports, cid)
EOF
}

random_password() {
  local pw=""
  while ((${#pw} < 32)); do
    pw+="$(LC_ALL=C tr -dc 'A-Za-z0-9' < <(head -c 256 /dev/urandom))"
  done
  printf '%s' "${pw:0:32}"
}

# Empties DIR (only a DIR that kafka.sh made, or an empty one).
wipe_dir() {
  if [[ -n "$(ls -A -- "$DIR")" && ! -f "$DIR/$MARKER" ]]; then
    die "$DIR is not empty and was not made by kafka.sh (no $MARKER); refusing to wipe it"
  fi
  find "$DIR" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
  : >"$DIR/$MARKER"
}

# The files of DIR/tls that --secure makes (make_tls) and the broker and clients use.
TLS_FILES=(ca.pem ca.key broker-keystore.pem client.pem client.key other-ca.pem)

# make_tls: the test PKI of --secure, made with the openssl CLI into DIR/tls (EC P-256 keys,
# so it takes a few tens of milliseconds; valid for 10 years):
#   ca.pem, ca.key                   the test CA, which the broker and the clients trust
#   broker.pem, broker.key           the broker's certificate (CN=localhost, subjectAltName
#                                    DNS:localhost and IP:127.0.0.1), signed by the CA
#   broker-keystore.pem              its key and certificate in one file (Kafka's PEM key store)
#   client.pem, client.key           a client certificate (CN=kelt, which
#                                    ssl.principal.mapping.rules makes User:kelt), signed by the CA
#   other-ca.pem, other-ca.key       an unrelated CA that signed nothing here ("untrusted" tests)
# Keys (unencrypted PKCS#8) are mode 600; certificates 644.
make_tls() {
  local log="$TLS/openssl.log"
  rm -rf "$TLS"
  mkdir -p "$TLS"
  cat >"$TLS/openssl.cnf" <<'EOF'
# Written by scripts/kafka.sh (make_tls); the subjects are given with -subj.
[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[broker_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
  # (In an if condition errexit is off, also in the subshell: every step checks itself.)
  if ! (
    umask 077
    cd "$TLS" || exit 1
    newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    # ca NAME SUBJECT: a self-signed CA certificate NAME.pem with key NAME.key.
    ca() {
      openssl req -x509 -config openssl.cnf -extensions ca_ext "${newkey[@]}" -keyout "$1.key" \
        -out "$1.pem" -days 3650 -subj "$2"
    }
    # leaf NAME SUBJECT EXTENSIONS: a certificate NAME.pem with key NAME.key, signed by ca.
    leaf() {
      openssl req -new -config openssl.cnf "${newkey[@]}" -keyout "$1.key" -out "$1.csr" \
        -subj "$2" \
      && openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAserial ca.srl \
           -CAcreateserial -days 3650 -extfile openssl.cnf -extensions "$3" -out "$1.pem" \
      && rm -f "$1.csr"
    }
    ca ca "/CN=kelt test CA" \
      && leaf broker "/CN=localhost" broker_ext \
      && leaf client "/CN=kelt" client_ext \
      && ca other-ca "/CN=kelt other CA (trusted by nothing)" \
      && cat broker.key broker.pem >broker-keystore.pem \
      && chmod 644 ./*.pem \
      && chmod 600 ./*.key broker-keystore.pem \
      && rm -f ca.srl openssl.cnf
  ) >"$log" 2>&1; then
    cat "$log" >&2
    die "openssl could not make the certificates in $TLS"
  fi
  rm -f "$log"
}

# tls_present: DIR/tls has every file the broker and the env file refer to.
tls_present() {
  local f
  for f in "${TLS_FILES[@]}"; do [[ -s "$TLS/$f" ]] || return 1; done
}

write_props() {
  local plain="$1" ctrl="$2" sasl="$3" sasl_ssl="$4" ssl="$5"
  local listeners="PLAINTEXT://127.0.0.1:$plain,CONTROLLER://127.0.0.1:$ctrl"
  local advertised="PLAINTEXT://127.0.0.1:$plain,CONTROLLER://127.0.0.1:$ctrl"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if ((SECURE)); then
    local more="SASL_PLAINTEXT://127.0.0.1:$sasl,SASL_SSL://127.0.0.1:$sasl_ssl,SSL://127.0.0.1:$ssl"
    listeners+=",$more"
    advertised+=",$more"
    protocols+=",SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
  fi
  cat >"$PROPS" <<EOF
# Written by scripts/kafka.sh: single-node KRaft broker+controller on loopback, for tests.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$ctrl
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$DATA
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
EOF
  # The share-group coordinator (KIP-932) is new in 4.0; 3.x would warn about unknown keys.
  if (($(broker_major) >= 4)); then
    cat >>"$PROPS" <<'EOF'
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# KIP-848 groups (group_protocol consumer): the broker owns their session timeout (45 s
# by default, and at least 45 s). Tests kill members and wait for their sessions to end:
# 10 s here, heartbeats every second.
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000
EOF
  fi
  if ((SECURE)); then
    # ACLs decide; the anonymous principal of the PLAINTEXT and CONTROLLER listeners (the
    # broker itself, kafka.sh's Admin client, tests that make topics and test data) may do
    # anything. SCRAM users are made at format time, their ACLs by the readiness check.
    # TLS: PEM key and trust stores (no keytool); a client certificate is required on the
    # SSL listener only, and its subject CN=NAME becomes the principal User:NAME.
    cat >>"$PROPS" <<EOF
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=$TLS/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS/ca.pem
listener.name.ssl.ssl.client.auth=required
EOF
    # shellcheck disable=SC2016  # $1 is the rule's back-reference, not a shell variable
    printf '%s\n' 'ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/,DEFAULT' >>"$PROPS"
  fi
}

# format_storage CLUSTER_ID: StorageTool format --standalone (a single-voter dynamic quorum
# found through controller.quorum.bootstrap.servers, KIP-853: 3.9 and later). With --secure
# it also makes the SCRAM users (SHA-256 and SHA-512 credentials each): their arguments
# (with the passwords) go through a mode-600 Java @argfile so that they never show on a
# command line.
format_storage() {
  local cid="$1" argfile="$DIR/.format-args" out
  trap 'rm -f "$DIR/.format-args"' EXIT
  (
    umask 077
    printf '%s\n' kafka.tools.StorageTool format --standalone -t "$cid" -c "$PROPS" >"$argfile"
    if ((SECURE)); then
      local m
      for m in SCRAM-SHA-256 SCRAM-SHA-512; do
        printf '%s\n' --add-scram "$m=[name=$SCRAM_USER,password=$PW]" \
          --add-scram "$m=[name=$DENIED_USER,password=$DENIED_PW]"
      done >>"$argfile"
    fi
  )
  cds_use format "$DIR/.format.jsa" "$BROKER_LIBS"
  if ! out="$(timeout 120 java "${TOOL_JVM[@]}" "${CDS_FLAGS[@]}" -cp "$BROKER_LIBS/*" \
                "@$argfile" 2>&1 9<&-)"; then
    rm -f "$argfile" "$DIR/.format.jsa"
    printf '%s\n' "$out" >&2
    die "StorageTool format (Kafka $BROKER_VERSION) failed"
  fi
  rm -f "$argfile"
  cds_install format "$DIR/.format.jsa" "$BROKER_LIBS"
}

# secure_env: the KEY=value lines of a --secure DIR that the readiness check and DIR/env share.
secure_env() {
  echo "KELT_KAFKA_SCRAM_USER=$SCRAM_USER"
  echo "KELT_KAFKA_SCRAM_PASSWORD=$PW"
  echo "KELT_KAFKA_DENIED_USER=$DENIED_USER"
  echo "KELT_KAFKA_DENIED_PASSWORD=$DENIED_PW"
  echo "KELT_KAFKA_CA_PEM=$TLS/ca.pem"
  echo "KELT_KAFKA_CLIENT_CERT_PEM=$TLS/client.pem"
  echo "KELT_KAFKA_CLIENT_KEY_PEM=$TLS/client.key"
  echo "KELT_KAFKA_OTHER_CA_PEM=$TLS/other-ca.pem"
}

write_env() {
  local pid="$1" tmp="$ENVFILE.tmp.$$"
  (
    umask 077
    {
      echo "KELT_KAFKA_BOOTSTRAP=127.0.0.1:$(port_of PLAINTEXT)"
      echo "KELT_KAFKA_PID=$pid"
      echo "KELT_KAFKA_DIR=$DIR"
      echo "KELT_KAFKA_BROKER_VERSION=$BROKER_VERSION"
      if is_secure_dir; then
        print_bootstrap | grep -v '^KELT_KAFKA_BOOTSTRAP='
        secure_env
      fi
    } >"$tmp"
  )
  chmod 600 "$tmp"
  mv -f "$tmp" "$ENVFILE"
}

show_log_tail() {
  if [[ -f "$LOG" ]]; then
    printf '[kafka] last 40 lines of %s:\n' "$LOG" >&2
    tail -n 40 "$LOG" >&2
  fi
}

# Kills a broker that did not come up (SIGKILL: it is of no use half-started).
kill_broker() {
  local pid="$1" i
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
  rm -f "$PIDFILE"
}

# launch_and_wait: starts the broker and waits until it answers. Returns 0 when ready (pid
# in BROKER_PID), 2 when it died of a port that was taken meanwhile (the caller retries),
# else 1. (Called in a || list, so errexit is off in here: check every step.)
BROKER_PID=""
launch_and_wait() {
  local pid check_pid check_rc t0 deadline line
  local check_log="$DIR/ready-check.log"
  : >"$LOG"
  t0="$(now_ms)"
  deadline=$((t0 + START_TIMEOUT * 1000))
  # setsid: the broker leaves our process group, so ^C or a test runner's group kill
  # of this script does not take it down; `stop` does.
  # The subshell exits at once, so the broker is not our child: no job messages, and once
  # it dies it is reaped by init (a zombie would still pass kill -0).
  local extra=()
  read -r -a extra <<<"${KELT_KAFKA_JVM_OPTS:-}"
  cds_use broker "$BROKER_DUMP" "$BROKER_LIBS"   # a dump is made when `stop` ends this broker
  (
    setsid nohup java -Xms256m -Xmx512m -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      "-XX:ErrorFile=$DIR/hs_err_%p.log" "-Dlog4j2.configurationFile=$LOG4J" \
      "${CDS_FLAGS[@]}" "${extra[@]}" \
      -cp "$BROKER_LIBS/*" kafka.Kafka "$PROPS" >"$LOG" 2>&1 </dev/null 9<&- &
    echo "$!" >"$PIDFILE"
  )
  pid="$(<"$PIDFILE")"

  # Ready = a real metadata request answered. With --secure the check then also grants the
  # ACLs of user kelt (over PLAINTEXT), and logs in to every secure listener (SCRAM-SHA-256
  # and -512 on SASL_PLAINTEXT and SASL_SSL, the client certificate on SSL) until kelt has
  # its cluster operations there, and once as kelt-denied (which must have none). The Admin
  # client starts now, alongside the broker, and retries until the listeners accept, so the
  # JVM's start-up overlaps the broker's. The broker opens its client listeners only once it
  # is unfenced and serving, just before "Kafka Server started".
  local check_args=("127.0.0.1:$(port_of PLAINTEXT)")
  if is_secure_dir; then
    check_args+=("127.0.0.1:$(port_of SASL_PLAINTEXT)" "127.0.0.1:$(port_of SASL_SSL)"
                 "127.0.0.1:$(port_of SSL)")
  fi
  admin_argv "$START_TIMEOUT" check "${check_args[@]}"
  (
    exec 9<&-
    if is_secure_dir; then
      while IFS= read -r line; do export "${line?}"; done < <(secure_env)
    fi
    exec "${ADMIN_ARGV[@]}"
  ) >"$check_log" 2>&1 &
  check_pid=$!

  while :; do
    if ! alive "$pid"; then
      kill "$check_pid" 2>/dev/null || true
      wait "$check_pid" 2>/dev/null || true
      rm -f "$PIDFILE" "$ADMIN_DUMP"
      if grep -q 'BindException\|Address already in use' "$LOG"; then return 2; fi
      say "the broker exited during startup"
      show_log_tail
      return 1
    fi
    if ! kill -0 "$check_pid" 2>/dev/null; then
      check_rc=0
      wait "$check_pid" || check_rc=$?
      cds_install "admin-$ADMIN_KEY" "$ADMIN_DUMP" "$KELT_KAFKA_LIBS"
      ((check_rc == 0)) && break
      grep -v '^[0-9:.]* WARN ' "$check_log" >&2 || true
      say "the broker did not answer a metadata request (exit $check_rc; $check_log)"
      show_log_tail
      kill_broker "$pid"
      return 1
    fi
    if (($(now_ms) > deadline + 5000)); then
      kill "$check_pid" 2>/dev/null || true
      wait "$check_pid" 2>/dev/null || true
      rm -f "$ADMIN_DUMP"
      say "the broker did not answer within ${START_TIMEOUT}s"
      show_log_tail
      kill_broker "$pid"
      return 1
    fi
    sleep 0.1
  done
  while IFS= read -r line; do say "ready: $line"; done < <(grep '^127\.0\.0\.1:' "$check_log")
  grep -q "$READY_LINE" "$LOG" || say "note: the broker answers but has not logged \"$READY_LINE\" yet"
  say "broker pid $pid (Kafka $BROKER_VERSION) up in $(secs_since "$t0")s (log: $LOG)"
  BROKER_PID="$pid"
}

PW=""          # --secure: the passwords of SCRAM_USER and DENIED_USER
DENIED_PW=""
cmd_start() {
  ((${#POSITIONAL[@]} == 0)) || die "start takes no arguments besides options"
  need_tools
  lock_dir
  local t0 pid attempt rc admin_pid keep_dir=0 have
  t0="$(now_ms)"
  if pid="$(running_pid)"; then
    if ((SECURE)) && ! is_secure_dir; then
      die "a broker without --secure already runs in $DIR (pid $pid); stop it first"
    fi
    have="$(dir_version)"
    if [[ -n "$BROKER_VERSION" && "$BROKER_VERSION" != "$have" ]]; then
      die "a Kafka $have broker already runs in $DIR (pid $pid), not $BROKER_VERSION; stop it first"
    fi
    say "already running in $DIR (pid $pid, Kafka $have)"
    print_bootstrap
    return 0
  fi
  rm -f "$PIDFILE"

  # --keep reuses DIR's data, so also the Kafka version that formatted it.
  ((KEEP)) && [[ -f "$PROPS" && -f "$DATA/meta.properties" ]] && keep_dir=1
  if ((keep_dir)); then
    have="$(dir_version)"
    [[ -z "$BROKER_VERSION" || "$BROKER_VERSION" == "$have" ]] \
      || die "--keep: $DIR holds Kafka $have data, not $BROKER_VERSION (start it without --keep)"
    use_version "$have"
  else
    use_version "${BROKER_VERSION:-$KELT_KAFKA_VERSION}"
  fi

  # The helper compiles (first time only) while the broker starts.
  admin_prepare 9<&- &
  admin_pid=$!

  if ((keep_dir)); then
    # The DIR decides: a --secure one stays secure (its users live in the metadata log).
    if is_secure_dir; then
      SECURE=1
      PW="$(envval KELT_KAFKA_SCRAM_PASSWORD)"
      DENIED_PW="$(envval KELT_KAFKA_DENIED_PASSWORD)"
      [[ -n "$PW" && -n "$DENIED_PW" ]] || die "--keep: $DIR is --secure but $ENVFILE lacks its passwords"
      tls_present || die "--keep: $DIR is --secure but $TLS lacks some of: ${TLS_FILES[*]}"
    elif [[ -n "$(port_of SASL_PLAINTEXT)" ]]; then
      die "--keep: $DIR is from an older kafka.sh --scram (no TLS listeners); start it without --keep"
    elif ((SECURE)); then
      die "--keep: $DIR was formatted without --secure (SCRAM users are made at format time)"
    fi
    wait "$admin_pid" || die "could not prepare the Admin-client helper"
    admin_prepare
    say "keeping $DIR (same ports and data)"
    launch_and_wait || { rc=$?; ((rc != 2)) || show_log_tail; die "start failed"; }
  else
    if ((SECURE)); then
      PW="$(random_password)"
      DENIED_PW="$(random_password)"
    fi
    for attempt in 1 2 3; do
      local ids plain ctrl sasl sasl_ssl ssl cid
      wipe_dir
      echo "$BROKER_VERSION" >"$VERSIONFILE"
      ids="$(fresh_ports_and_id)" || die "could not pick free ports (python3)"
      read -r plain ctrl sasl sasl_ssl ssl cid <<<"$ids"
      write_props "$plain" "$ctrl" "$sasl" "$sasl_ssl" "$ssl"
      ((SECURE)) && make_tls
      format_storage "$cid"
      if ((attempt == 1)); then
        wait "$admin_pid" || die "could not prepare the Admin-client helper"
        admin_prepare   # sets ADMIN_JAR in this shell (already compiled)
      fi
      rc=0
      launch_and_wait || rc=$?
      ((rc == 2)) || break
      say "a port was taken meanwhile (attempt $attempt); trying new ports"
    done
    if ((rc == 2)); then show_log_tail; die "start failed: ports kept being taken"; fi
    ((rc == 0)) || die "start failed"
  fi
  write_env "$BROKER_PID"
  say "start took $(secs_since "$t0")s in total"
  print_bootstrap
}

# ---- stop / status / topics -----------------------------------------------------------------
cmd_stop() {
  ((${#POSITIONAL[@]} == 0)) || die "stop takes no arguments besides options"
  lock_dir
  local pid i killed=0
  if ! pid="$(running_pid)"; then
    rm -f "$PIDFILE"
    say "not running ($DIR)"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    say "pid $pid still running after ${STOP_TIMEOUT}s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    killed=1
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && die "pid $pid survives SIGKILL"
  fi
  rm -f "$PIDFILE"
  # The broker writes its CDS dump (first run only) as it exits; a killed one, maybe half.
  if ((killed)); then
    rm -f "$BROKER_DUMP"
  else
    cds_install broker "$BROKER_DUMP" "$(libs_of "$(dir_version)")"
  fi
  say "stopped (pid $pid)"
}

cmd_status() {
  ((${#POSITIONAL[@]} == 0)) || die "status takes no arguments besides options"
  local pid
  if pid="$(running_pid)" && tcp_open "$(port_of PLAINTEXT)"; then
    print_bootstrap
    return 0
  fi
  say "not running ($DIR)"
  return 1
}

running_bootstrap() {
  running_pid >/dev/null || die "no broker runs in $DIR (start one: bash scripts/kafka.sh start)"
  echo "127.0.0.1:$(port_of PLAINTEXT)"
}

valid_topic() {
  [[ "$1" =~ ^[A-Za-z0-9._-]{1,249}$ && "$1" != . && "$1" != .. ]] \
    || die "invalid topic name '$1' (letters, digits, '.', '_', '-'; at most 249)"
}

cmd_create_topic() {
  ((${#POSITIONAL[@]} == 2)) || die "usage: kafka.sh create-topic NAME PARTITIONS [--dir DIR]"
  local name="${POSITIONAL[0]}" parts="${POSITIONAL[1]}" bootstrap
  valid_topic "$name"
  if ! is_uint "$parts" || ((parts == 0)); then
    die "PARTITIONS must be a positive integer, not '$parts'"
  fi
  need_tools
  bootstrap="$(running_bootstrap)"
  admin_prepare
  admin "$ADMIN_TIMEOUT" create-topic "$bootstrap" "$name" "$parts" >&2
}

cmd_describe_topic() {
  ((${#POSITIONAL[@]} == 1)) || die "usage: kafka.sh describe-topic NAME [--dir DIR]"
  local name="${POSITIONAL[0]}" bootstrap
  valid_topic "$name"
  need_tools
  bootstrap="$(running_bootstrap)"
  admin_prepare
  admin "$ADMIN_TIMEOUT" describe-topic "$bootstrap" "$name"
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  create-topic) cmd_create_topic ;;
  describe-topic) cmd_describe_topic ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
