"""The node shipper: spool -> InfluxDB. Runs outside jobs, as the shipper's service user.

  shipper.py    passes over the spool, batches in flight, retries, self-metrics
  spooldir.py   the spool directory as the shipper sees it (scan, delete, quarantine, limit)
  lines.py      whole, checked, stamped lines for a batch
  state.py      acknowledged offsets and counters, saved atomically
  transports/   how a batch reaches the server (v1 /write, v2 influxdb-client)
"""
