#!/bin/sh
# Create jobmon's databases and their retention on InfluxDB 1.x, or print the commands
# for 2.x and 3.x (docs/influxdb3.md, docs/scale.md). Usage:
#   create-influxdb.sh URL [DATABASE] [DURATION] [SAMPLES_DATABASE SAMPLES_DURATION]
#   create-influxdb.sh --v3 [URL]      (prints the InfluxDB 3 commands)
# e.g. create-influxdb.sh http://influxdb:8086 jobmon 180d            (one database)
#      create-influxdb.sh http://influxdb:8086 jobmon 730d jobmon_samples 30d
# With a samples database, set `samples_database` in jobmon.toml to its name.
# Credentials (1.x with auth): INFLUX_USER and INFLUX_PASSWORD_FILE in the environment.
# With JOBMON_USER and JOBMON_PASSWORD_FILE (a server with authentication) it also makes
# the shipper's user with that password, allowed to write and read the databases. It can
# be run again: what exists is left as it is (a user that exists with another password
# is refused, and so is a retention policy of another duration).
set -eu
if [ "${1:-}" = "--v3" ]; then
    cat <<EOT
InfluxDB 3 has no retention policies: one retention period per database, given when the
database is made (Core cannot change it later). As an admin (INFLUXDB3_AUTH_TOKEN set):
  influxdb3 create database --host ${2:-http://127.0.0.1:8181} --retention-period 30d jobmon_samples
  influxdb3 create database --host ${2:-http://127.0.0.1:8181} --retention-period 2y jobmon
Enterprise: a token that may only write them, for the shippers:
  influxdb3 create token --permission "db:jobmon,jobmon_samples:write" --name jobmon-ship
and in jobmon.toml: version = 3, database = "jobmon", samples_database = "jobmon_samples",
token_file = "/etc/jobmon/influxdb-token" (mode 0600, the shipper's user).
EOT
    exit 0
fi
url=${1:?usage: $0 URL [DATABASE] [DURATION] [SAMPLES_DATABASE SAMPLES_DURATION] | --v3 [URL]}
db=${2:-jobmon}
duration=${3:-180d}
samples_db=${4:-}
samples_duration=${5:-30d}
auth=""
if [ -n "${INFLUX_USER:-}" ]; then
    auth="-u ${INFLUX_USER}:$(cat "${INFLUX_PASSWORD_FILE:?set INFLUX_PASSWORD_FILE}")"
fi
# the server answers a refused statement with 200 and an "error": say so, and stop (a
# password is never shown)
q() {
    answer=$(curl -fsS $auth -XPOST "$url/query" --data-urlencode "q=$1")
    echo "$answer"
    case "$answer" in
        *'"error"'*) echo "$0: refused: ${1%% WITH PASSWORD*}" >&2; exit 1 ;;
    esac
}
# job ids are tags, so series come and go with jobs: a retention policy is what bounds
# the index (docs/schema.md, "Cardinality")
policy() {
    q "CREATE DATABASE \"$1\""
    q "CREATE RETENTION POLICY \"jobmon_$2\" ON \"$1\" DURATION $2 REPLICATION 1 SHARD DURATION 1d DEFAULT"
}
policy "$db" "$duration"
if [ -n "$samples_db" ]; then
    policy "$samples_db" "$samples_duration"
fi
if [ -n "${JOBMON_USER:-}" ]; then
    pw=$(tr -d '\n' < "${JOBMON_PASSWORD_FILE:?set JOBMON_PASSWORD_FILE}" | sed "s/'/\\\\'/g")
    q "CREATE USER \"$JOBMON_USER\" WITH PASSWORD '$pw'"
    q "GRANT ALL ON \"$db\" TO \"$JOBMON_USER\""
    [ -z "$samples_db" ] || q "GRANT ALL ON \"$samples_db\" TO \"$JOBMON_USER\""
fi
cat <<EOT
Done. For InfluxDB 2.x instead:
  influx bucket create --name $db --retention $duration
  influx v1 dbrp create --db $db --rp jobmon_$duration --bucket-id <id> --default
  (the DBRP mapping lets \`jobmon query\` read the bucket with InfluxQL; the same for a
  samples bucket, its DBRP --db named like the bucket). For InfluxDB 3: $0 --v3
EOT
