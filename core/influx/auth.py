"""The Authorization header a site's InfluxDB takes, the same for writes and reads: a
token (InfluxDB 3: `Bearer`, the scheme its documentation gives; 1.8+/2.x: `Token`), else
a user and password (`Basic`), else none."""
import base64


def header(token="", username="", password="", version=1):
    """The header's value, "" where the server takes requests without one."""
    if token:
        return ("Bearer " if version == 3 else "Token ") + token
    if username or password:
        return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
    return ""


def from_config(cfg):
    c = cfg["influxdb"]
    return header(cfg.secret("token_file"), c["username"], cfg.secret("password_file"),
                  c["version"])
