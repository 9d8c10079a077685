"""Write transports: send one batch of line protocol, return only once the server has
acknowledged it, raise SendError otherwise. One interface, two implementations:

  v1  /write: InfluxDB 1.x (database, retention policy, user/password), and 2.x/3.x's
      v1-compatible endpoint with a token
  v2  /api/v2/write through influxdb-client's synchronous API (org, bucket, token):
      InfluxDB 1.8+, 2.x, 3.x. Synchronous, so no failure can vanish into a callback.

and Split, which sends the raw samples to their own database (a short retention) and the
rest to the summaries' (a long one).

  interface.py  Transport, SendError and failure (a server's answer that is no success)
  split.py      Split
  opening.py    open_transport: the transport the site configuration asks for
  v1.py, v2.py  the two implementations
"""
from .interface import SCHEMA_LIMIT, SendError, Transport, brief, failure
from .opening import open_transport
from .split import Split

__all__ = ("SendError", "Transport", "brief", "SCHEMA_LIMIT", "failure", "Split",
           "open_transport")
