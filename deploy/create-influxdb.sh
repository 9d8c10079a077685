#!/bin/sh
# Create jobmon's database and retention policy on InfluxDB 1.x (or print the 2.x
# equivalent). Usage:  create-influxdb.sh URL [DATABASE] [DURATION]
#   e.g. create-influxdb.sh http://influxdb:8086 jobmon 180d
# Credentials (1.x with auth): INFLUX_USER and INFLUX_PASSWORD_FILE in the environment.
set -eu
url=${1:?usage: $0 URL [DATABASE] [DURATION]}
db=${2:-jobmon}
duration=${3:-180d}
auth=""
if [ -n "${INFLUX_USER:-}" ]; then
    auth="-u ${INFLUX_USER}:$(cat "${INFLUX_PASSWORD_FILE:?set INFLUX_PASSWORD_FILE}")"
fi
q() { curl -fsS $auth -XPOST "$url/query" --data-urlencode "q=$1"; echo; }
q "CREATE DATABASE \"$db\""
# one policy for everything jobmon writes; job ids are tags, so series come and go with
# jobs: a retention policy is what bounds the index (docs/schema.md, "Cardinality")
q "CREATE RETENTION POLICY \"jobmon_$duration\" ON \"$db\" DURATION $duration REPLICATION 1 SHARD DURATION 1d DEFAULT"
cat <<EOT
Done. For InfluxDB 2.x instead:
  influx bucket create --name $db --retention $duration
  influx v1 dbrp create --db $db --rp jobmon_$duration --bucket-id <id> --default
  (the DBRP mapping lets \`jobmon query\` read the bucket with InfluxQL)
EOT
