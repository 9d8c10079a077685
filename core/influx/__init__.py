"""jobmon's InfluxDB format: line protocol, the schema and the spool-line grammar.

Standard library only: the per-job spool writer uses it inside every job.
"""
