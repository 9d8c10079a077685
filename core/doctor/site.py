"""The doctor's checks that hold for every node: the site file, the store and its
credential, the spool and state directories, the shipper's last run, how a job would be
measured here, and the GPU reader on a GPU node."""
import grp
import os
import pwd
import stat
import time

from .. import config, schedulers
from ..job import job_user_check
from .check import FAIL, OK, WARN, Check

SHIPPER_STALE_SECONDS = 600     # a shipper (cron every minute, or --follow) runs more often
NO_AUTH = ("an InfluxDB without authentication needs username = \"\" and "
           "password_file = \"\" in [influxdb]")


def checks(node):
    out = [site_file(node)]
    if node.cfg is not None and node.cfg.uses_influxdb:
        out += [store(node), spool(node), state_dir(node), shipper(node)]
    elif node.cfg is not None and out[0].status == OK:
        out.append(Check("store", OK, "the embedded store, in each job user's home: no "
                                      "server, no spool, no shipper"))
    out += [measured_by(), gpus(node)]
    return out


def site_file(node):
    path = node.config_path
    try:
        node.cfg = config.load(path)
    except config.ConfigError as e:
        return Check("config", FAIL, str(e), "correct it (`jobmon config check` names the "
                                             "line), or point JOBMON_CONFIG at the right file")
    problem = job_user_check.site_file_problem(path, "check the file the node's jobs "
                                                     "read: jobmon doctor --config=FILE")
    if problem:   # every job's sampler reads it as the job's user
        return Check("config", FAIL, problem.reason, problem.fix)
    c = node.cfg
    what = f"store {c['store']['kind']}"
    if c.uses_influxdb:
        what += f", InfluxDB {c['influxdb']['api']} at {c['influxdb']['url']}, spool " \
                f"{c['spool']['dir']}"
    return Check("config", OK, f"{path}: {what}")


def shipper_uid(node):
    """The shipper's user: as given, else the owner of the state directory or the spool,
    the one that is not root where they differ (the shipper runs as a service user: a
    directory left to root is the one in the wrong), else None."""
    if node.shipper_user:
        try:
            return pwd.getpwnam(node.shipper_user).pw_uid
        except KeyError:
            return None
    owners = []
    for d in (node.cfg["shipper"]["state_dir"], node.cfg["spool"]["dir"]):
        try:
            owners.append(os.stat(d).st_uid)
        except OSError:
            pass
    return next((u for u in owners if u != 0), owners[0] if owners else None)


def shipper_name(node):
    """The shipper's user by name: as given or found (shipper_uid), else the service user
    the docs install it as: the account of a scheduler that runs jobs here and has one
    (its service_user), else `jobmon`."""
    if node.shipper_user:
        return node.shipper_user
    uid = shipper_uid(node)
    if uid is not None:
        return _name(uid)
    from .schedulers_here import found
    here = found(node)
    return next((s.service_user for s in schedulers.all() if s.tag in here and s.service_user),
                "jobmon")


def _name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return "the shipper's user"


def store(node):
    """The store answers with the configured credential: an empty write (the server
    checks the database and the credential, and stores nothing) and a read."""
    c = node.cfg["influxdb"]
    key = "token_file" if c["api"] == "v2" or c["token_file"] else "password_file"
    try:
        secret = node.cfg.secret(key)
    except config.ConfigError as e:
        fix = NO_AUTH if c[key] and not os.path.exists(c[key]) else \
            f"make it the shipper's, mode 0600: chown {shipper_name(node)} {c[key]}; " \
            f"chmod 600 {c[key]}"
        return Check("store", FAIL, str(e), fix)
    if c[key]:
        st = os.stat(c[key])
        uid = shipper_uid(node)
        if uid is not None and st.st_uid != uid:
            return Check("store", FAIL, f"{c[key]} belongs to {_name(st.st_uid)}, not to the "
                                        f"shipper ({_name(uid)}): the shipper cannot read it",
                         f"chown {_name(uid)} {c[key]}")
    try:
        write_nothing(node.cfg, secret)
        from ..stores.influx import InfluxStore
        InfluxStore.from_config(node.cfg).jobs(1)      # `jobmon list`'s own query
    except Exception as e:
        return Check("store", FAIL, f"{c['url']}: {e}", _store_fix(node.cfg, str(e)))
    who = f"as {c['username']!r}" if c["username"] else \
        ("with the token" if secret else "without credentials")
    return Check("store", OK, f"{c['url']} takes writes and answers queries {who} "
                              f"(database {', '.join(sorted(set(node.cfg.databases)))})")


def write_nothing(cfg, secret):
    """POST an empty body to the write endpoint of each database jobmon writes: 204 means
    the database exists and the credential may write; nothing is stored."""
    c = cfg["influxdb"]
    if c["api"] == "v1":
        from ..ship.transports import Split, open_transport
        t = open_transport(cfg)
        try:
            for part in (t.summaries, t.samples) if isinstance(t, Split) else (t,):
                part.send(b"")
        finally:
            t.close()
        return
    import urllib.parse
    import urllib.request
    for bucket in set(cfg.databases):
        q = urllib.parse.urlencode({"org": c["org"], "bucket": bucket, "precision": "ns"})
        req = urllib.request.Request(c["url"].rstrip("/") + "/api/v2/write?" + q, data=b"",
                                     headers={"Authorization": f"Token {secret}"})
        with urllib.request.urlopen(req, timeout=c["timeout_seconds"]):
            pass


def _store_fix(cfg, err):
    c = cfg["influxdb"]
    if "401" in err or "authorization" in err or "authentication" in err:
        if not c["username"] and c["api"] == "v1":
            return ("the server wants credentials: set influxdb.username and "
                    "influxdb.password_file (a file of the shipper's, mode 0600)")
        return "check the user and its password (or token): it needs WRITE and READ"
    if "403" in err:
        return "grant the user WRITE and READ on the database"
    if "not found" in err or "404" in err:
        return (f"create the database: deploy/create-influxdb.sh {c['url']} "
                f"{c['database'] or c['bucket']}")
    return "is the server running, and is influxdb.url right?"


def _owned_dir(name, d, mode, node, missing):
    """(Check or None, stat): `d` exists, is a directory and is the shipper's; None when
    it is, else the failing Check with the command that makes it right."""
    uid = shipper_uid(node)
    user = shipper_name(node)
    try:
        group = grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except KeyError:
        group = user
    make = f"install -d -o {user} -g {group} -m {mode:o} {d}"
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return Check(name, FAIL, f"{d} does not exist: {missing}", make), None
    if not stat.S_ISDIR(st.st_mode):
        return Check(name, FAIL, f"{d} is not a directory", f"rm {d}; {make}"), st
    if uid is not None and st.st_uid != uid:
        return Check(name, FAIL, f"{d} belongs to {_name(st.st_uid)}, not to the shipper "
                                 f"({_name(uid)})", f"chown {user}:{group} {d}"), st
    return None, st


def spool(node):
    d = node.cfg["spool"]["dir"]
    bad, st = _owned_dir("spool", d, 0o3733, node, "every job's samples go to the embedded "
                                                   "store instead, and nothing is shipped")
    if bad:
        return bad
    if stat.S_IMODE(st.st_mode) != 0o3733:
        return Check("spool", FAIL, f"{d} is mode {stat.S_IMODE(st.st_mode):04o}, not 3733 "
                                    "(jobs write there; only its owner lists it)",
                     f"chmod 3733 {d}")
    return Check("spool", OK, f"{d}: mode 3733, the shipper's ({_name(st.st_uid)})")


def state_dir(node):
    d = node.cfg["shipper"]["state_dir"]
    bad, st = _owned_dir("state", d, 0o700, node, "the shipper keeps its offsets there")
    if bad:
        return bad
    if st.st_mode & 0o077:
        return Check("state", WARN, f"{d} is mode {stat.S_IMODE(st.st_mode):04o}: others "
                                    "can read the shipper's state", f"chmod 700 {d}")
    return Check("state", OK, f"{d}: the shipper's ({_name(st.st_uid)}), private")


def shipper(node):
    """When the shipper last ran and what it last said."""
    from ..ship.state import STATE_FILE, State
    d = node.cfg["shipper"]["state_dir"]
    try:
        state = State(d)
        mtime = os.stat(os.path.join(d, STATE_FILE)).st_mtime
    except FileNotFoundError:
        return Check("shipper", FAIL, f"the shipper has not run yet (no state in {d})",
                     "start it: `systemctl enable --now jobmon-ship`" + "".join(
                         f", or {s.shipper_start}" for s in schedulers.all() if s.shipper_start))
    except OSError as e:
        return Check("shipper", WARN, f"cannot read its state: {e}", "run the doctor as root")
    ran = max(state.last_run or 0, mtime)
    ago = time.time() - ran
    said = ""
    if state.last_error and (not state.last_success or
                             state.last_error[:19] > _stamp(state.last_success)):
        said = f"; its last attempt failed: {state.last_error}"
    elif state.last_success:
        said = f"; last shipped at {_stamp(state.last_success)}"
    if ago > SHIPPER_STALE_SECONDS:
        return Check("shipper", FAIL, f"the shipper last ran {ago / 60:.0f} min ago{said}",
                     "is its cron job or service still running? (`jobmon ship --status`)")
    status = WARN if said.startswith("; its last attempt failed") else OK
    return Check("shipper", status, f"the shipper ran {ago:.0f} s ago{said}",
                 "see `jobmon ship --status`" if status != OK else "")


def _stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def measured_by():
    """What a job here would be measured by (jobmon run, or a scheduler's job cgroup)."""
    from ..cgroups import search as cgroup_search
    roots = cgroup_search.roots()
    if "v2" in roots:
        return Check("measured", OK, f"cgroup v2 at {roots['v2']} (a job's cgroup where "
                                     "the scheduler makes one, else its process tree)")
    if "cpuacct" in roots and "memory" in roots:
        return Check("measured", OK, "cgroup v1 (" + ", ".join(
            f"{c} {p}" for c, p in sorted(roots.items())) + "): a scheduler's job cgroup, "
            "or a transient one as root; else the process tree in /proc")
    return Check("measured", WARN, "no cgroup hierarchy jobmon can read: every job is "
                                   "measured through /proc (no memory peak from the kernel's "
                                   "cgroup, daemons that leave the tree are not counted)",
                 "mount cgroup v2 with its controllers, or v1 cpuacct and memory")


def gpus(node):
    """On a GPU node, the GPU reader's snapshot must be there, trusted and fresh (the
    device and reader directories as the samplers find them)."""
    dev_dir = node.env.get("JOBMON_GPU_DEV", "/dev")
    if not any(n.startswith("nvidia") and n[6:].isdigit() for n in _listdir(dev_dir)):
        return Check("gpu", OK, "no NVIDIA GPUs on this node")
    from ..probes import node_dir
    from ..probes.gpu_published import MAX_AGE_PERIODS, Published
    d = node_dir(node.env)
    start = "systemctl enable --now jobmon-node-reader (deploy/jobmon-node-reader.service)"
    try:
        pub = Published(d)
        try:
            snap = pub.read()
        finally:
            pub.close()
        age = time.monotonic() - snap["mono"]
    except FileNotFoundError:
        return Check("gpu", FAIL, f"GPUs here, and no GPU reader publishing in {d}: jobs get "
                                  "no GPU figures", start)
    except Exception as e:
        return Check("gpu", FAIL, f"the GPU reader's snapshot in {d} is unusable: {e}", start)
    if age > MAX_AGE_PERIODS * snap["period"]:
        return Check("gpu", FAIL, f"the GPU reader's last snapshot is {age:.0f} s old: "
                                  "stopped?", start)
    return Check("gpu", OK, f"{len(snap.gpus())} GPU(s), published by the GPU reader "
                            f"{age:.1f} s ago in {d}")


def _listdir(d):
    try:
        return os.listdir(d)
    except OSError:
        return []
