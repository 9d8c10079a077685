"""The transport the site configuration asks for: v1 or v2, split where the raw samples
have their own database."""
from ...influx import auth
from .split import Split


def open_transport(cfg):
    c = cfg["influxdb"]
    token = cfg.secret("token_file")

    def to(database):
        if c["api"] == "v2":
            from .v2 import V2Transport
            return V2Transport(c["url"], c["org"], database, token, c["timeout_seconds"],
                               c["verify_tls"], cfg["shipper"]["gzip"])
        from .v1 import V1Transport
        return V1Transport(c["url"], database, c["retention_policy"], auth.from_config(cfg),
                           c["timeout_seconds"], c["verify_tls"], cfg["shipper"]["gzip"])

    summaries, samples = cfg.databases
    return to(summaries) if samples == summaries else Split(to(summaries), to(samples))
