"""A scheduler is one object its plugin registers (jobmon.schedulers): the registry finds
both, each provides every part of the interface (real calls on recorded output of real
daemons, tests/fixtures/), and core names no scheduler outside the registry."""
import json
import os
import re
import subprocess
import sys

from helpers import PYTHON, REPO, fixture
from jobmon import config, schedulers
from jobmon.accounting import Source
from jobmon.doctor import FAIL, Check, Node
from jobmon.plugins import Identity

CORE = os.path.join(REPO, "core")
NAMES = re.compile(r"condor|slurm|sacct|pyslurm|schedd|classad|slurmd|slurmctld", re.I)
# the one place in core that may name them (it names none today: the plugins' own table)
REGISTRY = "schedulers/"


def naming():
    """Core's files (relative to core/) that name a scheduler."""
    out = set()
    for d, _dirs, files in os.walk(CORE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    if NAMES.search(fh.read()):
                        out.add(os.path.relpath(path, CORE).replace(os.sep, "/"))
    return out


def test_core_names_no_scheduler_outside_the_registry():
    found = sorted(f for f in naming() if not f.startswith(REGISTRY))
    assert not found, f"{found} name a scheduler: ask its object (jobmon.schedulers) instead"


# --- the registry ------------------------------------------------------------------------

def test_the_registry_finds_both_plugins():
    assert schedulers.tags() == ("htcondor", "slurm")
    found = schedulers.all()
    assert [s.tag for s in found] == ["htcondor", "slurm"]
    assert [s.name for s in found] == ["HTCondor", "Slurm"]
    assert all(isinstance(s, schedulers.Scheduler) for s in found)
    assert schedulers.get("slurm") is found[1] and schedulers.find("local") is None
    assert type(found[0]).__module__ == "jobmon.plugins.condor.scheduler"
    assert type(found[1]).__module__ == "jobmon.plugins.slurm.scheduler"


def test_the_registry_and_the_objects_load_only_the_standard_library():
    """The objects are held by what runs beside jobs: asking the registry for them loads
    nothing heavy, nor any of their read-side parts."""
    code = ("import sys; before = set(sys.modules)\n"
            "from jobmon import schedulers; s = schedulers.all()\n"
            "print(sorted(m for m in set(sys.modules) - before))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    foreign = {m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names
               and m.split(".")[0] != "jobmon" and not m.startswith("_")}
    assert not foreign, foreign
    assert "jobmon.plugins.condor.scheduler" in loaded
    assert not [m for m in loaded if ".accounting" in m or ".actions" in m], loaded


def test_the_site_files_scheduler_parts_load_no_plugin_module_and_are_the_objects():
    """What every job's start reads of the schedulers (each plugin's `settings`: its
    sections of the site file, the tags that qualify its ids) loads none of a plugin's
    other modules, nor `re`; and it is what the objects say."""
    code = ("import sys; before = set(sys.modules)\n"
            "from jobmon.config import schedulers as s; s.modules(); s.qualifier_tags()\n"
            "print(sorted(m for m in set(sys.modules) - before))")
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    assert "jobmon.plugins.condor.settings" in loaded and "jobmon.plugins.slurm.settings" in loaded
    # a plugin's package and its settings: nothing of its own beyond them
    assert not [m for m in loaded if m == "re" or m.startswith("jobmon.plugins.")
                and m.count(".") > 2 and not m.endswith(".settings")], loaded
    from jobmon.config import schedulers as site
    from jobmon.influx import schema
    assert site.qualifier_tags() == tuple(t for s in schedulers.all() for t in s.qualifier_tags)
    assert set(site.qualifier_tags()) <= set(schema.JOB_TAGS)
    for s, settings in zip(schedulers.all(), site.modules()):
        assert s.config_section in settings.SCHEMA
        for section, keys in settings.SCHEMA.items():
            assert keys.items() <= config.SCHEMA[section].items()
        assert settings.CHOICES.items() <= config.CHOICES.items()
        assert settings.POSITIVE <= config.POSITIVE and settings.NOT_NEGATIVE <= config.NOT_NEGATIVE


# --- every part, on each object ----------------------------------------------------------

def _env(path):
    with open(path) as f:
        return dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)


def test_identity_from_the_jobs_environment():
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    ads = fixture("htcondor")
    env = {"_CONDOR_JOB_AD": f"{ads}/.job.ad", "_CONDOR_MACHINE_AD": f"{ads}/.machine.ad"}
    assert condor.detect(env) and not slurm.detect(env)
    ident = condor.identify(env)
    assert isinstance(ident, Identity)
    assert (ident.job, ident.scheduler, ident.tags["schedd"]) == ("4711.0", "htcondor",
                                                                  "ap01.example.org")
    env = _env(fixture("slurm", "prolog", "plain.env"))
    assert slurm.detect(env) and not condor.detect(env)
    ident = slurm.identify(env)
    assert (ident.job, ident.scheduler) == (env["SLURM_JOB_ID"], "slurm")
    assert env[condor.job_env if condor.job_env in env else slurm.job_env] == env["SLURM_JOB_ID"]


def test_per_job_modules_are_the_entry_points_and_import():
    """What the installers and the doctor check the job's user can import (jobmon.job.
    job_user_check): the entry point first, every one of them importable."""
    import importlib
    for s, entry in ((schedulers.get("htcondor"), "jobmon.plugins.condor.wrapper"),
                     (schedulers.get("slurm"), "jobmon.plugins.slurm.sampler")):
        assert s.per_job_modules[0] == entry
        for m in s.per_job_modules:
            importlib.import_module(m)


def test_cgroup_layout():
    env = _env(fixture("slurm", "prolog", "plain.env"))
    names = schedulers.get("slurm").cgroup_names(env)
    assert names["wanted"] == {f"job_{env['SLURM_JOB_ID']}"}
    assert names["skip"]("job_99999") and not names["skip"]("system.slice")
    assert callable(names["choose"])
    assert schedulers.get("htcondor").cgroup_names({}) is None     # its own, /proc/self/cgroup


def test_accounting_of_htcondor_on_a_real_pools_history(tmp_path):
    s = schedulers.get("htcondor")
    site = tmp_path / "jobmon.toml"
    site.write_text(f'[condor]\nhistory = "{fixture("htcondor", "real-pool-25.14", "history")}"\n')
    src = s.accounting().source(config.load(str(site)))
    assert isinstance(src, Source)
    record = {"job": "1.0", "scheduler": "htcondor",
              "tags": {"GlobalJobId": "vm#1.0#1795333453", "schedd": "vm"}}
    assert s.lookup_id(record) == "vm#1.0#1795333453"
    assert s.lookup_id(dict(record, tags={"GlobalJobId": "vm#2.0#1795333453"})) == "1.0"
    records = src.lookup("1.0")
    rec = s.pick(records, "1.0", None)
    assert rec.job == "1.0" and rec.exit_code == 3
    figures = dict((label, value) for label, value, _unit in s.figures(rec))
    assert figures["CPU user + system"] == 13.0 and figures["exit"] == "exit code 3"
    assert s.allocation(rec)["cores_requested"] == 1
    rows = s.compare({"method": "cgroup-v2", "exit_code": 3, "signal": None,
                      "wall_seconds": 20.1, "cpu_user_seconds": 19.96,
                      "cpu_system_seconds": 0.02, "rss_peak_bytes": 317 << 20,
                      "mem_peak_bytes": 330 << 20}, rec)
    assert [r["field"] for r in rows] == ["cpu_seconds"] and rows[0]["htcondor"] == 13.0
    assert "leaves the queue" in s.not_yet
    label, row, meaning = s.memory_figure
    assert figures[row] == rec.memory_usage_bytes and "MemoryUsage" in label + meaning


def test_accounting_of_slurm_on_recorded_sacct():
    s = schedulers.get("slurm")
    with open(fixture("slurm", "sacct", "plain.json")) as f:
        records = s.accounting().records_from_json(json.load(f))
    rec = s.pick(records, records[0].job, None)
    assert rec.state == "COMPLETED" and rec.exit_code == 0
    figures = dict((label, value) for label, value, _unit in s.figures(rec))
    assert figures["exit"] == "exit code 0" and figures["state"] == "COMPLETED"
    assert s.allocation(rec)["cores_allocated"] == rec.alloc_cpus
    rows = s.compare({"exit_code": 1, "signal": None, "method": "cgroup-v1"}, rec)
    assert [(r["field"], r["slurm"]) for r in rows] == [("exit", "exit 0")]
    assert s.lookup_id({"job": "12345_7", "scheduler": "slurm"}) == "12345_7"
    assert "sacct" in s.not_yet
    label, row, meaning = s.memory_figure
    assert figures[row] == rec.max_rss_bytes and "MaxRSS" in label + meaning


def test_outcome_words_classify_recorded_ends():
    """Each object's states and codes, as jobmon.report.canonical reads them from a real
    record of each scheduler."""
    from jobmon.report import canonical
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    assert condor.state_names[5] == "held" and not slurm.state_names
    assert "pending" in slurm.in_flight and "transferring_output" in condor.in_flight
    assert (condor.code_cause(1), condor.code_cause(12, 2), condor.code_cause(12),
            condor.code_cause(1010), condor.code_cause(99999)) == \
        ("user", "user", "site", "preemption", "unknown")
    assert slurm.code_cause(1) is None and "removed" not in slurm.state_ends
    with open(fixture("slurm", "sacct", "cancelled.json")) as f:
        (rec,) = slurm.accounting().records_from_json(json.load(f))
    c = canonical.classify(canonical.run_end(None, rec.as_dict()))
    assert (c.outcome, c.cause) == ("badput", "user") and c.reason.startswith(
        slurm.state_ends["cancelled"][1])
    held = {"status": 5, "hold_code": 1, "hold_reason": "via condor_hold", "run": 1}
    c = canonical.classify(canonical.run_end(None, held))
    assert (c.outcome, c.cause) == ("badput", "user") and "held (code 1)" in c.reason


def test_id_syntax_and_qualification():
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    assert condor.global_id("ap01#4711.0#1700000000") == ("4711.0", "ap01#4711.0#1700000000")
    assert condor.global_id("4711.0") is None and slurm.global_id("4711.0") is None
    assert condor.split_qualified("ap01#4711.0") == ("4711.0", "ap01")
    assert slurm.split_qualified("ap01#4711.0") == ("ap01#4711.0", None)
    assert condor.qualifier({"tags": {"schedd": "ap01"}}) == "ap01"
    assert slurm.qualifier({"tags": {"schedd": "ap01"}}) is None
    assert (condor.id_members, slurm.id_members) == ((".",), ("_",))
    long = "submit-node.example.org#4711.0#1700000000"
    assert condor.short_id(long, 16) == "submit-n…#4711.0" and slurm.short_id(long, 16) is None
    assert condor.short_id(long, 8) is None and condor.short_id("ap01#4711.0#1", 16) == \
        "ap01#4711.0"
    for s, good, bad in ((condor, ("4711", "4711.0", "ap#1.0#2"), ("12345_7",)),
                         (slurm, ("12345", "12345_7", "12345+0"), ("4711.0",))):
        assert all(re.fullmatch(s.id_pattern, t) for t in good), s
        assert not any(re.fullmatch(s.id_pattern, t) for t in bad), s


def test_actions(tmp_path):
    site = tmp_path / "jobmon.toml"
    site.write_text('[condor]\nschedd = "ap01.example.org"\n')
    cfg = config.load(str(site))
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    act = condor.actions(cfg)
    assert (act.name, act.action) == ("htcondor", "hold") and act.action in condor.action_texts
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert condor.actions(config.load(str(empty))) is None
    act = slurm.actions(cfg)
    if act is not None:          # squeue on PATH
        assert act.name == "slurm" and act.action in slurm.action_texts
    assert set(slurm.action_texts) == {"requeuehold", "cancel"}
    assert "{id}" in condor.opt_out and "{id}" in slurm.opt_out
    assert condor.actions_need and slurm.actions_need


def test_doctor_checks_and_install_without_the_schedulers_tools(tmp_path):
    node = Node(config_path=str(tmp_path / "none.toml"), env={"PATH": str(tmp_path)})
    for s in schedulers.all():
        checks = s.doctor_checks(node)
        assert checks and all(isinstance(c, Check) for c in checks)
        assert (checks[0].name, checks[0].status) == (s.tag, FAIL), checks[0].as_dict()
        assert s.doctor_tool and s.daemons and s.job_env
        # a usage error: wired to the installer, and nothing is written
        assert s.install(["--no-such-option"]) == 2, s
        assert s.install_command


# --- the site file, the stored tags, the setup -------------------------------------------

def test_site_file_sections_and_where_else_warnings_go(tmp_path):
    """Each object's section is the site file's, and the doctor's other way for its
    warnings is a setting that section takes (`jobmon config check` accepts it)."""
    from jobmon.doctor import warnings_to
    for s in schedulers.all():
        assert s.config_section in config.SCHEMA and "warnings" in config.SCHEMA[s.config_section]
        setting = s.warnings_elsewhere.split(" (")[0].split(", a file")[0]
        assert setting.startswith(f"[{s.config_section}] warnings = "), s
        key, value = setting.split("] ", 1)[1].split(" = ")
        site = tmp_path / f"{s.tag}.toml"
        site.write_text(f"[{s.config_section}]\n{key} = {value}\n")
        assert config.load(str(site))[s.config_section]["warnings"] == value.strip('"')
        c = warnings_to("warnings", "syslog", Node("/nonexistent"), syslog=str(tmp_path / "no"),
                        section=s.config_section)
        assert c.status == FAIL and s.warnings_elsewhere in c.fix, c.fix


def test_qualifier_tags_are_what_identity_tags_and_qualifier_reads():
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    ads = fixture("htcondor")
    env = {"_CONDOR_JOB_AD": f"{ads}/.job.ad", "_CONDOR_MACHINE_AD": f"{ads}/.machine.ad"}
    tags = condor.identify(env).tags
    (tag,) = condor.qualifier_tags
    assert condor.qualifier({"tags": tags}) == tags[tag] == "ap01.example.org"
    assert slurm.qualifier_tags == ()


def test_the_shipper_service_user_and_other_start_where_a_scheduler_runs_jobs(tmp_path):
    from jobmon.doctor import site
    site_file = tmp_path / "jobmon.toml"
    site_file.write_text(f'[spool]\ndir = "{tmp_path}/spool"\n\n'
                         f'[shipper]\nstate_dir = "{tmp_path}/state"\n')
    condor = schedulers.get("htcondor")
    ads = fixture("htcondor")
    node = Node(str(site_file), env={"_CONDOR_JOB_AD": f"{ads}/.job.ad", "PATH": "/nonexistent"})
    node.cfg = config.load(str(site_file))
    assert site.shipper_name(node) == condor.service_user == "condor"
    check = site.shipper(node)
    assert check.status == FAIL and check.fix.endswith(f", or {condor.shipper_start}"), check.fix
    assert not schedulers.get("slurm").service_user and not schedulers.get("slurm").shipper_start


def test_batches_name_instances_and_clusters_as_the_objects_say():
    """The batch a job is in (jobmon.summary.batches) takes the qualifier tags and which
    ids are a cluster's members from the registered objects, or from the wrapper's own,
    which say the same; a real job ad's job is in its batch, else its schedd's cluster."""
    from jobmon.plugins.condor import job as condor_plugin
    from jobmon.summary import batches
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    known = batches.registered()
    assert known.qualifiers == condor.qualifier_tags + slurm.qualifier_tags
    assert known.clustered == {"htcondor"} and "." in condor.id_members
    wrapper = batches.Known(condor_plugin.QUALIFIER_TAGS, (condor_plugin.SCHEDULER,))
    ads = fixture("htcondor")
    ident = condor.identify({"_CONDOR_JOB_AD": f"{ads}/.job.ad",
                             "_CONDOR_MACHINE_AD": f"{ads}/.machine.ad"})
    record = {"job": ident.job, "scheduler": ident.scheduler, "tags": ident.tags}
    assert batches.batch_text(record) == f"batch {ident.tags['JobBatchName']}"
    record["tags"] = {k: v for k, v in ident.tags.items() if k != "JobBatchName"}
    for k in (None, known, wrapper):
        assert batches.batch_text(record, k) == "cluster ap01.example.org#4711"
    assert batches.batch_of(dict(record, scheduler="slurm")) is None
    assert batches.batch_of(dict(record, scheduler=None, tags={})) == ("cluster", "4711")
    env = _env(fixture("slurm", "prolog", "plain.env"))
    ident = slurm.identify(env)
    assert batches.batch_of({"job": f"{ident.job}_3", "scheduler": "slurm",
                             "tags": ident.tags}) == ("array", ident.job)


# --- what the read side shows of it: words and figures of reports, messages, help -------

def test_memory_field_holds_its_memory_figure_on_real_records(tmp_path):
    """The HTML report's "recorded" memory line reads the record's memory_field: the same
    figure as the memory_figure row of figures(), on each scheduler's real record."""
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    site = tmp_path / "jobmon.toml"
    site.write_text(f'[condor]\nhistory = "{fixture("htcondor", "real-pool-25.14", "history")}"\n')
    (rec,) = [r for r in condor.accounting().source(config.load(str(site))).lookup("1.0")]
    with open(fixture("slurm", "sacct", "plain.json")) as f:
        srec = slurm.accounting().records_from_json(json.load(f))[0]
    for s, r in ((condor, rec), (slurm, srec)):
        value = r.as_dict()[s.memory_field]
        assert value and dict((lb, v) for lb, v, _u in s.figures(r))[s.memory_figure[1]] == value
    from jobmon.render.html import REFERENCES
    (recorded,) = [names for plot, kind, names in REFERENCES if kind == "recorded"]
    assert recorded == (("memory_usage_bytes", "HTCondor MemoryUsage"),
                        ("max_rss_bytes", "Slurm MaxRSS"))


def test_instance_qualifier_tag_of_a_real_ad():
    """The stored tag naming a job's instance (its flat field in the store's latest rows
    and `jobmon act`'s records) is the one the wrapper writes from the real job ad."""
    from jobmon.stores.ids import instance_in, instance_of
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    ads = fixture("htcondor", "real-pool-25.14")
    tags = condor.identify({"_CONDOR_JOB_AD": f"{ads}/.job.ad",
                            "_CONDOR_MACHINE_AD": f"{ads}/.machine.ad"}).tags
    assert tags[condor.qualifier_tag] == "vm" == instance_of({"tags": tags})
    assert instance_in(dict(tags)) == "vm" and instance_in({"job": "1"}) is None
    assert condor.instance_name == "schedd" and not slurm.qualifier_tag
    ident = slurm.identify(_env(fixture("slurm", "prolog", "plain.env")))
    assert instance_in(ident.tags) is None and instance_of({"tags": ident.tags}) is None


def test_id_examples_are_ids_it_takes():
    """Every id the help text shows is one its object's id syntax takes (a qualified one
    through split_qualified)."""
    for s in schedulers.all():
        shown = [t for t in re.findall(r"[\w#.+]+", s.id_examples) if re.search(r"\d", t)]
        assert len(shown) >= 3, s
        for t in shown:
            job, instance = s.split_qualified(t)
            assert re.fullmatch(s.id_pattern, job) and (instance or job == t), (s, t)


def test_request_lines_in_each_submit_syntax():
    condor, slurm = schedulers.get("htcondor"), schedulers.get("slurm")
    gib = 1 << 30
    assert condor.request_line("cores", 4) == "request_cpus = 4"
    assert condor.request_line("memory_bytes", 3 * gib) == "request_memory = 3 GB"
    assert condor.request_line("memory_bytes", gib + 1) == "request_memory = 1025 MB"
    assert condor.request_line("gpus", 1) == "request_gpus = 1"
    assert slurm.request_line("cores", 4) == "#SBATCH --cpus-per-task=4"
    assert slurm.request_line("memory_bytes", 3 * gib // 2) == "#SBATCH --mem=1536M"
    assert slurm.request_line("gpus", 0) == "no #SBATCH --gpus or --gres=gpu"
    assert condor.request_line("disk", 1) is None and slurm.request_line("disk", 1) is None
    from jobmon.report.verdict import submit_syntax
    ask = {"cores": 2, "memory_bytes": 2 * gib}
    assert submit_syntax("slurm", ask) == ["#SBATCH --cpus-per-task=2", "#SBATCH --mem=2G"]
    assert submit_syntax("local", ask) == ["--tag request_cpus=2", "--tag request_memory=2GiB"]


def test_slot_resources_of_a_real_ad():
    from jobmon.report.canonical import Resources
    condor = schedulers.get("htcondor")
    ads = fixture("htcondor", "real-pool-25.14")
    tags = condor.identify({"_CONDOR_JOB_AD": f"{ads}/.job.ad",
                            "_CONDOR_MACHINE_AD": f"{ads}/.machine.ad"}).tags
    assert condor.slot_resources(tags) == Resources(1.0, 512 << 20, 0.0)
    assert schedulers.get("slurm").slot_resources(tags) is None


def test_help_texts_name_every_scheduler_from_its_object():
    """The commands' help texts built from the objects read as they did when they named
    the two schedulers themselves."""
    import typer.main
    from jobmon.cli import app
    cmds = typer.main.get_command(app).commands
    helps = {(c, p.name): p.help for c in ("query", "compare", "report")
             for p in cmds[c].params if getattr(p, "help", None)}
    assert "what HTCondor or Slurm recorded beside jobmon's figures (condor_history, " \
        "sacct)" in helps["query", "scheduler"]
    assert "with what HTCondor or Slurm recorded (condor_history, sacct)" in \
        helps["compare", "scheduler"]
    assert "show what HTCondor or Slurm recorded beside jobmon's figures (condor_history, " \
        "sacct); without" in helps["report", "scheduler"]
    for s in schedulers.all():
        assert f"{s.name}: {s.id_examples}" in helps["query", "job_id"]
    assert "One-shot by default (cron, HTCondor STARTD_CRON, a Slurm epilog): ships" in \
        cmds["ship"].help
    assert [s.tag for s in schedulers.all() if s.keeps_script] == ["slurm"]
