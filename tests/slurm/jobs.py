"""Running Slurm commands against the cluster and following its jobs (mixed into
Cluster): submit as the test user, wait until sacct has the whole job, read back what the
harness' Prolog and Epilog recorded."""
import json
import os
import subprocess

from .common import TERMINAL, TEST_USER, ClusterError, which as _which
from .processes import wait_until


class JobCommands:
    """Needs from the class it is mixed into: env(), lay (Layout), node, node_state(),
    _alive(daemon name) and _seq (a counter for job script names)."""

    # seconds between looks at a job's state (each look runs Slurm commands: under
    # emulation each costs a large part of a second of the guest's CPU)
    poll = 0.1

    def run(self, argv, user=None, check=True, timeout=60, **kw):
        """subprocess.run of a Slurm command with the cluster's environment, as root or as
        `user` (no supplementary groups). Raises ClusterError with its output on failure."""
        if user and user != "root":
            argv = [_which("setpriv"), f"--reuid={user}", f"--regid={user}", "--clear-groups",
                    "--"] + list(argv)
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env(),
                           timeout=timeout, **kw)
        if check and r.returncode:
            raise ClusterError(f"{' '.join(argv)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return r

    def scontrol(self, *args, user=None):
        return self.run([_which("scontrol")] + list(args), user=user).stdout

    def sacctmgr(self, *args):
        return self.run([_which("sacctmgr"), "-i"] + list(args)).stdout

    def sacct(self, *args, user=None):
        """`sacct ARGS` text (as root unless user is given)."""
        return self.run([_which("sacct")] + list(args), user=user).stdout

    def sacct_json(self, job_id, *args):
        """`sacct --json -j JOB` parsed: the whole document ({"meta", "errors", "jobs"})."""
        return json.loads(self.sacct("--json", "-j", str(job_id), *args))

    def squeue_json(self, *args):
        return json.loads(self.run([_which("squeue"), "--json"] + list(args)).stdout)

    def scancel(self, *args):
        return self.run([_which("scancel")] + list(args)).stdout

    def submit(self, script, user=TEST_USER, **sbatch_opts):
        """Writes `script` into jobs_dir and submits it with sbatch as `user`; returns the
        job id (for an array, the array's job id). Keyword options become sbatch options:
        array="0-2" -> --array=0-2, job_name="x" -> --job-name=x, exclusive=True ->
        --exclusive. Output goes to jobs_dir/slurm-%j.out unless output= is given."""
        if not script.startswith("#!"):
            script = "#!/bin/sh\n" + script
        self._seq += 1
        path = os.path.join(self.lay.jobs, f"job-{self._seq}.sh")
        with open(path, "w") as f:
            f.write(script)
        os.chmod(path, 0o755)
        opts = {"chdir": self.lay.jobs}
        opts.update(sbatch_opts)
        argv = [_which("sbatch"), "--parsable"]
        for k, v in opts.items():
            flag = "--" + k.replace("_", "-")
            if v is True:
                argv.append(flag)
            elif v is not False and v is not None:
                argv.append(f"{flag}={v}")
        out = self.run(argv + [path], user=user).stdout.strip()
        return int(out.split(";")[0])

    def ctld_jobs(self, job_id):
        """The controller's records of a job ({key: value} of `scontrol show job`, one per
        array task); [] once it has forgotten the job (MinJobAge after its end)."""
        r = self.run([_which("scontrol"), "-o", "show", "job", str(job_id)], check=False)
        if r.returncode:
            if "Invalid job id" in r.stderr:
                return []
            raise ClusterError(f"scontrol show job {job_id}: {r.stderr}")
        return [dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
                for line in r.stdout.splitlines() if line.strip()]

    def wait_done(self, job_id, timeout=120):
        """Waits until the controller has the job (every array task) over and its Epilog
        done; returns its records there. Faster than wait(), which also waits for sacct."""
        recs = []

        def done():
            recs[:] = self.ctld_jobs(job_id)
            return bool(recs) and all(j.get("JobState") in TERMINAL for j in recs)
        try:
            wait_until(f"job {job_id} done", done, timeout, self._alive("slurmctld"),
                       poll=self.poll)
        except TimeoutError:
            raise ClusterError(f"job {job_id} not done within {timeout} s: controller says "
                               f"{[(j.get('JobId'), j.get('JobState')) for j in recs]}; "
                               f"node {self.node_state()}") from None
        return list(recs)

    def states(self, job_id):
        """{JobIDRaw: {JobID, State, Partition, JobName}} of every sacct record of the job:
        allocations ("7", one per array task) and steps ("7.batch", "7.extern", "7.0")."""
        keys = ("JobIDRaw", "JobID", "State", "Partition", "JobName")
        out = self.sacct("-n", "-P", "-j", str(job_id), "-o", ",".join(keys))
        rows = [dict(zip(keys, l.split("|"))) for l in out.splitlines() if l.count("|") == 4]
        return {r["JobIDRaw"]: r for r in rows}

    def wait(self, job_id, timeout=120):
        """Waits until the job (every task of an array) is over, its Epilog done, and sacct
        has all of it; returns the `sacct --json` job records.

        slurmdbd lags the controller, and not in order: just after a job ends sacct may
        list an array as one record without its tasks, or a job from its end message alone
        (JobName "allocation", UID 0, no Partition, no SubmitLine) before its start
        message arrives, or without its steps. So the controller says which records to
        expect, and a record counts once its Partition and JobName are there."""
        expect = {}

        def over():
            for j in self.ctld_jobs(job_id):
                if j.get("JobState") not in TERMINAL:
                    return False   # includes COMPLETING: the Epilog still runs
                expect[j["JobId"]] = j
            st = self.states(job_id)
            allocs = {k: v for k, v in st.items() if "." not in k}
            if not allocs or (expect and set(allocs) != set(expect)):
                return False
            for raw, rec in allocs.items():
                if rec["State"].split()[0] not in TERMINAL or "[" in rec["JobID"]:
                    return False
                if not rec["Partition"]:
                    return False
                ctld = expect.get(raw)
                if ctld and rec["JobName"] != ctld.get("JobName"):
                    return False
                ran = ctld and ctld.get("NodeList") not in (None, "", "(null)")
                # a het job's later components (12345+1) run no batch script
                later = "+" in rec["JobID"] and not rec["JobID"].endswith("+0")
                steps = ("extern",) if later else ("batch", "extern")
                if ran and not all(f"{raw}.{s}" in st for s in steps):
                    return False
            return all(r["State"].split()[0] in TERMINAL for r in st.values())
        try:
            wait_until(f"job {job_id} over in sacct", over, timeout, self._alive("slurmctld"),
                       poll=self.poll)
        except TimeoutError:
            raise ClusterError(f"job {job_id} not over within {timeout} s: controller says "
                               f"{[(j.get('JobId'), j.get('JobState')) for j in self.ctld_jobs(job_id)]}"
                               f", sacct says {self.states(job_id)}; node {self.node_state()}") from None
        return self.sacct_json(job_id)["jobs"]

    def wait_running(self, job_id, timeout=60):
        """Waits until the job is RUNNING and its batch step's processes exist; returns
        [(pid, step)] of those processes as `scontrol listpids` has them."""
        procs = []

        def running():
            out = self.run([_which("scontrol"), "listpids", str(job_id), self.node], check=False).stdout
            procs[:] = [(int(f[0]), f[2]) for f in (l.split() for l in out.splitlines()[1:])
                        if len(f) >= 3 and f[0].isdigit()]
            return any(step == "batch" for _, step in procs)
        wait_until(f"job {job_id} running", running, timeout, self._alive("slurmd"),
                   poll=self.poll)
        return procs

    def output(self, job_id):
        """What the job wrote to its default output file."""
        with open(os.path.join(self.lay.jobs, f"slurm-{job_id}.out")) as f:
            return f.read()

    def record(self, kind, job_id, timeout=60):
        """The environment ({name: value}) the harness' Prolog or Epilog ('prolog',
        'epilog') ran with for this job, waiting for it to be written."""
        path = os.path.join(self.lay.records, f"{kind}.{job_id}.env")
        wait_until(f"{kind} of job {job_id} recorded", lambda: os.path.exists(path), timeout)
        with open(path) as f:
            return dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)

    def record_file(self, kind, job_id, what):
        """What else the harness' Prolog or Epilog recorded for this job (call record()
        first, which waits): 'cgroup' (its /proc/self/cgroup) or 'uid' (its `id -u`)."""
        with open(os.path.join(self.lay.records, f"{kind}.{job_id}.{what}")) as f:
            return f.read()
