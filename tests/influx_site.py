"""A jobmon node configured for InfluxDB, for the tests: config file, spool and state
dirs, a fresh database on the session's influxd, and `jobmon` runners."""
import os
import pwd
import re
import shutil
import subprocess
import tempfile

from helpers import JOBMON, PYTHON, as_user, shared_tmpdir

SERVICE_USER, SERVICE_GROUP = "nobody", "nogroup"   # a shipper that is not root
# a small real job: touches `argv[1]` MiB, busy for 0.8 s
SMALL_JOB = """
import sys, time
buf = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
t = time.time()
while time.time() - t < 0.8: pass
"""


class Site:
    """influxdb3=True: the node configured as for InfluxDB 3 (docs/influxdb3.md: version 3,
    a token on every request, the raw samples in a database of their own), against a real
    1.6.7 with authentication on that checks the token (Influx.token)."""

    def __init__(self, influx, tmp_path, name, samples_apart=False, influxdb3=False,
                 **shipper):
        self.influx = influx
        self.influxdb3 = influxdb3
        samples_apart = samples_apart or influxdb3
        # the spool must be reachable by the unprivileged test users
        self.dir = tempfile.mkdtemp(prefix="jobmon-site-")
        os.chmod(self.dir, 0o755)
        self.db = "t_" + re.sub(r"\W", "_", name)[:40]
        influx.create_db(self.db)
        self.samples_db = self.db      # the raw samples' database (InfluxDB 3's layout)
        if samples_apart:
            self.samples_db = self.db + "_raw"
            influx.create_db(self.samples_db)
        self.spool = os.path.join(self.dir, "spool")
        self.state = os.path.join(self.dir, "state")
        self.config = os.path.join(self.dir, "jobmon.toml")
        self.service = False          # True: the shipper runs as SERVICE_USER
        self.service_caps = ()        # ... with these capabilities (e.g. "fowner")
        self.token_file = ""
        if influxdb3:
            self.token_file = self.private_token(os.path.join(self.dir, "influxdb-token"))
        self.write_config(**shipper)

    def private_token(self, path, user=None):
        """A file holding a token for the server, readable by `user` alone (root: None)."""
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(self.influx.token("admin") + "\n")
        if user:
            pw = pwd.getpwnam(user)
            os.chown(path, pw.pw_uid, pw.pw_gid)
        return path

    def write_config(self, url=None, **shipper):
        shipper.setdefault("retry_initial_seconds", 0.05)
        shipper.setdefault("retry_max_seconds", 0.5)
        shipper.setdefault("poll_seconds", 0.1)
        max_bytes = shipper.pop("max_bytes", 1 << 30)
        per_user = shipper.pop("max_bytes_per_user", 0)
        extra = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in shipper.items())
        apart = f'samples_database = "{self.samples_db}"\n' if self.samples_db != self.db else ""
        if self.influxdb3:
            apart += f'version = 3\ntoken_file = "{self.token_file}"\n'
        with open(self.config, "w") as f:
            f.write(f'[store]\nkind = "influxdb"\n'
                    f'[influxdb]\nurl = "{url or self.influx.url}"\ndatabase = "{self.db}"\n'
                    f'{apart}'
                    f'[spool]\ndir = "{self.spool}"\nmax_bytes = {max_bytes}\n'
                    f'max_bytes_per_user = {per_user}\n'
                    f'[shipper]\nstate_dir = "{self.state}"\n{extra}')
        os.chmod(self.config, 0o644)

    @property
    def env(self):
        env = dict(os.environ, JOBMON_CONFIG=self.config)
        env.pop("JOBMON_STORE", None)
        return env

    def user_env(self, user):
        """The environment `user` runs jobmon in: with InfluxDB 3, a token of their own
        (docs/influxdb3.md: the site's token file is the shipper's alone)."""
        env = self.env
        if self.influxdb3 and user:
            env["JOBMON_INFLUXDB_TOKEN_FILE"] = self.private_token(
                os.path.join(self.dir, f"token-{user}"), user)
        return env

    def jobmon(self, *args, user=None, check=True, timeout=120, **kw):
        argv = [JOBMON, *args]
        r = subprocess.run(as_user(argv, user) if user else argv,
                           env=kw.pop("env", None) or self.user_env(user),
                           capture_output=True, text=True, timeout=timeout, **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"jobmon {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def run_small_job(self, job_id, user, mib, tags=()):
        """`jobmon run` of SMALL_JOB as `user`, sampled every 0.2 s, into the spool."""
        cwd = shared_tmpdir("jobmon-small-job-")
        try:
            r = self.jobmon("run", "--interval=0.2", f"--job-id={job_id}",
                            *[f"--tag={t}" for t in tags], "--", PYTHON, "-c", SMALL_JOB,
                            str(mib), user=user, check=False, cwd=cwd)
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
        assert r.returncode == 0, r.stderr

    def ship(self, *args, **kw):
        """`jobmon ship ARGS`, as the service user when the site has one."""
        if not self.service:
            return self.jobmon("ship", *args, **kw)
        check = kw.pop("check", True)
        r = subprocess.run(self.as_service([JOBMON, "ship", *args]), env=kw.pop("env", self.env),
                           capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
        if check and r.returncode != 0:
            raise AssertionError(f"jobmon ship {' '.join(args)} -> {r.returncode}\n{r.stderr}")
        return r

    def as_service(self, argv):
        caps = ",".join(f"+{c}" for c in self.service_caps)
        return [shutil.which("setpriv"), f"--reuid={SERVICE_USER}", f"--regid={SERVICE_GROUP}",
                "--clear-groups"] + ([f"--inh-caps={caps}", f"--ambient-caps={caps}"]
                                     if caps else []) + ["--"] + list(argv)

    def use_service_user(self):
        """Run the shipper as an unprivileged service user, as a site should: it owns the
        spool and its state, and cannot move or empty other users' directories."""
        self.service = True
        pw = pwd.getpwnam(SERVICE_USER)
        for d in (self.spool, self.state):
            os.makedirs(d, exist_ok=True)
            os.chown(d, pw.pw_uid, pw.pw_gid)
        if self.token_file:
            os.chown(self.token_file, pw.pw_uid, pw.pw_gid)

    def prepare(self):
        """What the shipper does on its first start: make the spool dir."""
        if self.service:
            subprocess.run(self.as_service([PYTHON, "-c", "import sys; from jobmon.ship."
                                            "spooldir import prepare_spool; prepare_spool("
                                            "sys.argv[1])", self.spool]), check=True)
            return
        from jobmon.ship.spooldir import prepare_spool
        prepare_spool(self.spool)

    def store(self):
        """The InfluxStore jobmon reads this site with (its databases, its credentials)."""
        from jobmon import config
        from jobmon.stores.influx import InfluxStore
        return InfluxStore.from_config(config.load(self.config))

    def rows(self, q):
        """Rows of q, from the database its measurement is kept in (docs/influxdb3.md)."""
        samples = re.search(r"\bFROM\s+\"?jobmon_(sample|procs)\b", q)
        return self.influx.rows(q, self.samples_db if samples else self.db)

    def close(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)
