"""The node shipper: spool -> InfluxDB. Runs outside jobs, as the shipper's service user.

  shipper.py    passes over the spool, batches in flight, retries, ended-job marks
  spooldir.py   the spool directory as the shipper sees it (scan, delete, quarantine,
                set aside, the limit)
  entries.py    what is in the spool, as the kernel says: real sizes, owners, bounded reads
  quota.py      which data goes when the spool is full: each user's share
  lines.py      whole, checked, stamped lines for a batch
  state.py      acknowledged offsets, counters, losses by user and reason, saved atomically
  health.py     `jobmon ship --status` and the jobmon_shipper self-metrics
  transports/   how a batch reaches the server (v1 /write, v2 influxdb-client)
"""
