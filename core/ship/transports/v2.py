"""`/api/v2/write` through influxdb-client's synchronous write API (InfluxDB 1.8+, 2.x,
3.x). The batch is already line protocol from jobmon's encoder, which a test proves
equal to influxdb-client's Point encoding; the client sends it as is."""
from .interface import SendError, Transport, failure


class V2Transport(Transport):
    def __init__(self, url, org, bucket, token, timeout=10.0, verify_tls=True, gzip=True):
        from influxdb_client import InfluxDBClient
        from influxdb_client.client.write_api import SYNCHRONOUS
        # the client must not retry on its own: the shipper retries with backoff and
        # keeps its offsets right
        self.client = InfluxDBClient(url=url, token=token or None, org=org,
                                     timeout=int(timeout * 1000), verify_ssl=verify_tls,
                                     enable_gzip=gzip, retries=0)
        self.api = self.client.write_api(write_options=SYNCHRONOUS)
        self.org, self.bucket = org, bucket

    def send(self, body):
        from influxdb_client.rest import ApiException
        from influxdb_client.domain.write_precision import WritePrecision
        try:
            self.api.write(bucket=self.bucket, org=self.org, record=body,
                           write_precision=WritePrecision.NS)
        except ApiException as e:
            raise failure(e.status, e.body or e.reason or "")
        except Exception as e:  # urllib3 connection errors and timeouts
            raise SendError(f"{type(e).__name__}: {e}")

    def close(self):
        self.client.close()
