"""Checks of settings beyond their type: the read service's address forms, and what only a
file system can say (a directory that exists, a regular file). Standard library only: the
loader (loading.py) reads the site file through read_text() inside every job.

Two kinds of check:
  - forms (service_problems): what a value must look like; load() refuses a file that
    fails one, so every command says it in one line, not a traceback where it is used;
  - the file system (file_problems): whether what a path names is there and of the right
    kind; `jobmon config check` says them (a job's node may lack a login node's paths,
    so load() does not refuse them).
Nothing here opens a file that is not known to be a regular one: a FIFO never blocks."""
import os
import stat

MAX_CONFIG_BYTES = 1 << 20       # a site file is a few KiB; more is not a config
MIN_READ_LOG_BYTES = 64 << 10    # the read log's schema pages and a few hundred entries


class NotRegular(OSError):
    pass


def read_text(path, most=MAX_CONFIG_BYTES):
    """The text of a regular file, opened without blocking (a FIFO or a device given as
    the file would otherwise hold the caller in open() for ever: a job's end included).
    FileNotFoundError where there is none; NotRegular for anything but a regular file
    (or /dev/null, which reads as empty)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3):
            return ""                  # /dev/null: no settings, as its idiom says
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(0, f"not a regular file ({_kind(st.st_mode)})")
        chunks, left = [], most + 1
        while left > 0:
            data = os.read(fd, min(left, 1 << 16))
            if not data:
                break
            chunks.append(data)
            left -= len(data)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > most:
        raise NotRegular(0, f"larger than {most} bytes: not a configuration file")
    return data.decode("utf-8", "replace")


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a plain file"


def address_problem(address):
    """What is wrong with a reader's [service] address, or None: an absolute socket path
    (/run/jobmon/read.sock), or HOST:PORT (HOST a name, an IPv4 address or an [IPv6]
    address, PORT 1-65535)."""
    if address.startswith("/"):
        return None if "\0" not in address else f"a socket path without NUL, not {address!r}"
    return hostport_problem(address, host_needed=True)


def hostport_problem(text, host_needed):
    what = ("an absolute socket path (/run/jobmon/read.sock) or HOST:PORT" if host_needed
            else "HOST:PORT or :PORT")
    host, sep, port = text.rpartition(":")
    if not sep or not port:
        return f"must be {what}, not {text!r}"
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return f"must be {what} with PORT 1-65535, not {text!r}"
    if host.startswith("[") or host.endswith("]") or ":" in host:
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else None
        if inner is None or not _ipv6(inner):
            return f"must be [IPv6 ADDRESS]:PORT for an IPv6 address, not {text!r}"
        return None
    if host_needed and not host:
        return f"must be {what}, not {text!r}"
    if host and (not host.isascii() or any(not (c.isalnum() or c in "-._") for c in host)):
        return f"has a bad host name (letters, digits, - . _; xn-- for others): {text!r}"
    return None


def _ipv6(text):
    import ipaddress
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False


def service_problems(values):
    """[(key, problem)] of the [service] section's forms."""
    s, out = values["service"], []
    if s["address"]:
        problem = address_problem(s["address"])
        if problem:
            out.append(("address", f"service.address {problem}"))
    if s["listen"]:
        problem = hostport_problem(s["listen"], host_needed=False)
        if problem:
            out.append(("listen", f"service.listen {problem}"))
    if s["read_log"] and not s["read_log"].startswith("/"):
        out.append(("read_log", f"service.read_log must be an absolute path, not "
                                f"{s['read_log']!r}"))
    if not 0 < s["read_log_days"] < float("inf"):     # `not <`: NaN fails too
        out.append(("read_log_days", f"service.read_log_days must be a number of days "
                                     f"greater than 0, not {s['read_log_days']!r}"))
    if s["read_log_max_bytes"] < MIN_READ_LOG_BYTES:
        out.append(("read_log_max_bytes", f"service.read_log_max_bytes must be at least "
                                          f"{MIN_READ_LOG_BYTES}, not "
                                          f"{s['read_log_max_bytes']!r}"))
    return out


# (section, key, kind wanted, when it matters)
FILES = (("report", "card_dir", "directory", lambda v: v["report"]["card"] == "file"),
         ("service", "coordinators_file", "file", None),
         ("node_reader", "carbon_intensity_file", "file", None),
         ("actions", "warn_dir", "directory", lambda v: v["actions"]["warn"] == "file"),
         ("service", "munge_socket", "socket", lambda v: bool(v["service"]["listen"]) or (
             bool(v["service"]["address"]) and not v["service"]["address"].startswith("/"))))


def file_problems(values):
    """[(section.key, problem, fatal)]: paths that name nothing, or the wrong kind of thing.
    Only stat(), never open(). fatal: the setting is in use and would fail where used."""
    out = []
    for section, key, kind, used in FILES:
        path = values[section][key]
        if not path or not path.startswith("/"):
            continue
        name = f"{section}.{key}"
        fatal = used is None or used(values)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            out.append((name, f"{path} does not exist", fatal))
            continue
        except OSError as e:     # another user's directory: where it is used, it may be
            out.append((name, f"cannot look at {path}: {e.strerror}", False))
            continue
        test = {"directory": stat.S_ISDIR, "file": stat.S_ISREG,
                "socket": stat.S_ISSOCK}[kind]
        if not test(st.st_mode):
            got = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
            out.append((name, f"{path} is {got}, not a {kind}", fatal))
    return out


def url_problem(url):
    """What is wrong with an InfluxDB URL, or None for http(s)://HOST[:PORT][/PATH] that
    urllib and http.client take: HOST a name, an IPv4 address or an [IPv6] address. By
    hand: urllib.parse would cost every job that reads the config ~1 MiB."""
    scheme, sep, rest = url.partition("://")
    netloc = rest[:min([i for i in map(rest.find, "/?#") if i >= 0], default=len(rest))]
    if scheme.lower() not in ("http", "https") or not sep or not netloc:
        return f"must be http://HOST[:PORT] or https://..., not {url!r}"
    if not url.isascii() or any(c <= " " or c == "\x7f" for c in url):
        return (f"must be ASCII without spaces or control characters (a name in its xn-- "
                f"form, %-escapes in the path), not {url!r}")
    if "?" in url or "#" in url:
        return f"must not have a ?query or a #fragment, not {url!r}"
    if "@" in netloc:
        return f"must not hold credentials (influxdb.username, password_file), not {url!r}"
    if netloc.startswith("["):                 # [IPv6]:PORT
        host, bracket, after = netloc[1:].partition("]")
        if not bracket or after[:1] not in ("", ":") or not _ipv6(host):
            return f"has a bad IPv6 address (http://[ADDRESS]:PORT): {url!r}"
        port = after[1:]
    elif "[" in netloc or "]" in netloc:
        return f"has a bad IPv6 address (http://[ADDRESS]:PORT): {url!r}"
    else:
        host, _, port = netloc.partition(":")
    if not host:
        return f"must be http://HOST[:PORT] or https://..., not {url!r}"
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        return f"has a bad port: {url!r}"
    return None
