"""What a scheduler is to jobmon: one object, defined in its plugin
(plugins/<name>/scheduler.py, SCHEDULER) and found through the registry (registry.py).
Core asks the object; it never names a scheduler itself (tests/test_scheduler_registry.py).

The parts, in the order a job meets them (docs/developing.md, "Add a scheduler"):
identity (the plugin's detect/identify, on the per-job path: standard library only),
cgroup layout, accounting source, outcome and "not yet" text, the report's figures, id
syntax and qualification, actions (`jobmon act`), doctor checks, install, and what the
read side shows of it (reports, messages, help texts: its own block below). Every method
imports what it needs when called, so holding the object costs nothing.
"""


def load(name):
    """The module `name` (dotted, absolute). __import__, not importlib: the objects are
    held beside jobs too (jobmon.summary.batches), where importlib would cost a start."""
    return __import__(name, fromlist=("__name__",))


class Scheduler:
    tag = ""                # as records and the plugins' table name it (Identity.scheduler)
    name = ""               # the name people know
    plugin = ""             # its plugin package, jobmon.plugins.<folder>
    accounting_module = ""  # its accounting source: a module with source(cfg) -> Source
    compare_module = ""     # compare(summary, record): where jobmon and it disagree, and why
    not_yet = ""            # where its record of a job is not there yet, and what to do
    id_pattern = ""         # a regular expression of the job ids it gives
    id_members = ()         # a bare number N also stands for the jobs N<sep>... (a group)
    job_env = ""            # an environment variable every job of it has
    daemons = ()            # the process names that show it runs jobs on a node
    doctor_module = ""      # a module with checks(node) -> [doctor Check]
    doctor_tool = ""        # a command of its that the doctor's checks need
    install_command = ""    # the console script that installs its entry points
    # {summary field: what this scheduler gives it}: docs/metrics.md adds it to the field's
    # meaning (jobmon.metrics_doc), which names no scheduler itself
    field_notes = {}

    def __repr__(self):
        return f"<Scheduler {self.tag}>"

    # --- identity (per-job path) ------------------------------------------------------
    def _plugin(self):
        return load(self.plugin + ".job")

    # what its entry point imports as the job's user (the rest of the per-job path is
    # imported from these, at once or once the job runs): the installers and the doctor
    # check that the job's user can import them (jobmon.job.job_user_check)
    per_job_modules = ()

    def detect(self, environ):
        """True when `environ` is one of its jobs' (or its hooks')."""
        return self._plugin().detect(environ)

    def identify(self, environ):
        """The job's jobmon.plugins.Identity: id, run, tags."""
        return self._plugin().identify(environ)

    def cgroup_names(self, environ):
        """{"wanted", "skip", "choose"} for jobmon.cgroups.search.find, where a job's
        cgroup is found by the names the scheduler gives its directories; None where
        jobmon runs inside the job's cgroup and reads it from /proc/self/cgroup."""
        return None

    # --- accounting (read side) -------------------------------------------------------
    def accounting(self):
        """Its accounting module: `source(cfg)` gives a jobmon.accounting.Source, or None
        where its tools are not on this host."""
        return load(self.accounting_module)

    def compare(self, summary, record):
        """Rows where jobmon's summary and its record of the run differ, with why."""
        return load(self.compare_module).compare(summary, record)

    def pick(self, records, job, run):
        """The record of run `run` (None: the latest) of `job` among its records."""
        run = int(run) if str(run or "").isdigit() else None
        mine = [r for r in records if r.job == job and (run is None or (r.run or 1) == run)]
        return max(mine, key=lambda r: r.run or 0) if mine else None

    # its memory figure among jobmon's (the report's memory rows): (row label, the label of
    # its figures() row that holds it, what it is and how it is measured)
    memory_figure = ("", "", "")

    def figures(self, record):
        """(label, value, unit) rows of what it recorded of a run, for the reports."""
        raise NotImplementedError

    def allocation(self, record):
        """What it says the run asked for and was given, in jobmon's field names."""
        raise NotImplementedError

    # --- outcome (how a run ended: jobmon.report.canonical's words) ------------------------
    state_names = {}        # {number: state} where its records may give a state as a number
    in_flight = ()          # its states of a run that is not over yet
    state_ends = {}         # {state: (cause, reason)} of the ends its state alone decides;
    #                         cause: "user", "site", "preemption" or "unknown"

    def code_cause(self, code, subcode=None):
        """Whose doing one of its hold or vacate codes is ("user", "site", "preemption",
        "unknown"), or None where it has no such codes."""
        return None

    # --- ids ----------------------------------------------------------------------------
    def global_id(self, text):
        """(job id, the id itself) when `text` is an id that names one submission across
        its instances (HTCondor's GlobalJobId), else None."""
        return None

    def short_id(self, job, width):
        """A shorter form of one of its ids (cleaned text) that fits `width` columns, for
        tables; None where it has none (the table keeps the id's head and tail)."""
        return None

    def lookup_id(self, record, job=None):
        """The id to ask its accounting about a record (default the record's job id)."""
        return job or record.get("job")

    def qualifier(self, record):
        """The instance a record's job id is of (HTCondor's schedd), or None."""
        return None

    def split_qualified(self, text):
        """(job id, instance) of an id a user qualified with its instance
        (`schedd#4711.0`); (text, None) where `text` is not one."""
        return text, None

    # --- actions (`jobmon act`) -----------------------------------------------------------
    actions_need = ""       # what `jobmon act` needs to ask it on this host
    action_texts = {}       # {its action: what it does, in the warning to the job's user}
    opt_out = ""            # how a job opts out of actions ({id}: the job's id)

    def actions(self, cfg):
        """Its jobmon.actions.Scheduler (its word on jobs now, and its action) where this
        host can ask it, else None."""
        return None

    # --- doctor and install ---------------------------------------------------------------
    def doctor_checks(self, node):
        """Its `jobmon doctor` checks of a node (jobmon.doctor.Check list)."""
        return load(self.doctor_module).checks(node)

    def install(self, argv=None):
        """Install its entry points on this node (what `install_command` runs)."""
        raise NotImplementedError

    # --- the site file, the stored tags, the setup (plain values: read by the doctor and
    # the stores without calling into the plugin) ----------------------------------------
    config_section = ""     # its section of the site file (its entry points' settings)
    # where else its entry points' warnings may go, as its section takes it: the doctor's
    # fix where nothing receives syslog
    warnings_elsewhere = ""
    # tags that say which of its instances a job id is of (two instances' ids can clash):
    # stored as tags of their own beside the job id (InfluxDB tags, `jobmon act`'s rows)
    qualifier_tags = ()
    # the account its packages make, that the docs run the shipper as where it runs jobs
    # ("" none: then the docs' own `jobmon`); and another way to start the shipper there
    # than `systemctl enable --now jobmon-ship` ("" none)
    service_user = ""
    shipper_start = ""

    # === what the read side shows of it: reports, messages, help texts ===================
    # (jobmon query, report, compare, watch, act and the renderers take these words and
    # figures from the object, so that no read-side module names a scheduler)
    accounting_tool = ""    # the command its accounting is read with, as users know it
    instance_name = ""      # what one such instance is called in messages ("" none)
    id_examples = ""        # its id forms as users type them (`jobmon query --help`)
    memory_field = ""       # the field of its record (as_dict) that holds memory_figure's
    #                         figure: the HTML report's "recorded" memory line
    keeps_script = False    # it keeps the job's script where the per-job path hashes it
    #                         (script_hash): its batch jobs are matched by script
    ship_from = ""          # where a node of it runs the one-shot `jobmon ship` at a job's
    #                         end, as its admins know it (`jobmon ship --help`)

    @property
    def qualifier_tag(self):
        """The one of qualifier_tags the store's flat rows and `jobmon act`'s records hold
        ("" where its ids need none: see qualifier())."""
        return self.qualifier_tags[0] if self.qualifier_tags else ""

    def request_line(self, resource, amount):
        """The statement that asks for `amount` of `resource` ("cores": N, "memory_bytes":
        B, "gpus": N) in its jobs' own submit syntax (the verdict's advice), or None where
        it has none."""
        return None

    def slot_resources(self, tags):
        """What it gave a job's slot, from the attributes its plugin copied into the job's
        tags: a jobmon.report.canonical.Resources, or None where they do not say (not
        even the cores)."""
        return None


# the end-of-job figures of a scheduler's own record of the run, applied by `jobmon reconcile`,
# declared (jobmon.metrics.declared)
FIGURES = (
    {"name": "reconciled", "unit": "count", "range": "flag", "method": "exact",
     "meaning": "1 once the scheduler's record of the run was applied (`jobmon reconcile`), or "
                "once it was clear there is none to apply; 0 until then"},
    {"name": "scheduler_state", "unit": "text", "range": None, "method": "recorded",
     "meaning": "how the scheduler says the run ended (reconciled), in its words; none: no "
                "record"},
    {"name": "scheduler_code", "unit": "", "range": "code", "method": "recorded",
     "meaning": "the scheduler's code of why it held or evicted the run (reconciled)"},
    {"name": "scheduler_subcode", "unit": "", "range": "code", "method": "recorded",
     "meaning": "the scheduler's finer code of that (reconciled)"},
    {"name": "cancelled_by", "unit": "text", "range": None, "method": "recorded",
     "meaning": "who cancelled the run (reconciled), as the scheduler names them"},
    {"name": "scheduler_user", "unit": "text", "range": None, "method": "recorded",
     "meaning": "whose job the scheduler says the run was (reconciled)"},
    {"name": "scheduler_memory_bytes", "unit": "bytes", "range": "memory", "method": "recorded",
     "meaning": "the scheduler's own memory figure of the run (reconciled)"},
    {"name": "scheduler_cpu_seconds", "unit": "s", "range": "cpu", "method": "recorded",
     "meaning": "the scheduler's own CPU figure of the run (reconciled)"},
)


def whole_memory(nbytes, unit):
    """nbytes as text for request_line(): whole GiB and unit[0] where it is a whole number
    of them, else whole MiB (rounded up) and unit[1]."""
    if nbytes % (1 << 30) == 0:
        return f"{nbytes >> 30}{unit[0]}"
    return f"{-(-nbytes // (1 << 20))}{unit[1]}"
