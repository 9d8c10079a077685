"""The wrapper's standard-library ClassAd reader against the real bindings (classad2), on
every ad fixture and on ads hypothesis makes; and the job's identity read from them."""
import math

import classad2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import fixture
from jobmon.plugins import SCHEDULERS, Identity, identify, load
from jobmon.plugins.condor import job as condor
from jobmon.plugins.condor import classad_text

OLD_ADS = [("htcondor", ".job.ad"), ("htcondor", ".machine.ad"),
           ("htcondor", "condor_q-long.4711.2-held.ad"),
           ("htcondor", "real-pool-25.14", ".job.ad"), ("htcondor", "real-pool-25.14", ".machine.ad"),
           ("htcondor", "real-pool-25.14", ".update.ad")]


def read(*parts):
    with open(fixture(*parts), encoding="utf-8") as f:
        return f.read()


def same(mine, theirs):
    """My value for one attribute equals what classad2 holds for it."""
    if isinstance(theirs, (classad2.ExprTree, classad2.ClassAd, list)):
        return isinstance(mine, classad_text.Expr)   # nested ads and lists: kept as text
    if theirs is classad2.Value.Undefined:
        return mine is None
    if isinstance(theirs, float) and math.isnan(theirs):
        return isinstance(mine, float) and math.isnan(mine)
    return type(mine) is type(theirs) and mine == theirs


def check_against_bindings(mine, ad):
    assert len(mine) == len(ad)
    for name in ad.keys():
        assert same(mine.get(name), ad[name]), (name, mine.get(name), ad[name])


@pytest.mark.parametrize("parts", OLD_ADS, ids=lambda p: "/".join(p[1:]))
def test_old_syntax_fixtures_read_as_classad2_reads_them(parts):
    text = read(*parts)
    check_against_bindings(classad_text.parse(text), classad2.parseOne(text, classad2.ParserType.Old))


def test_new_syntax_fixture():
    text = read("htcondor", "job.ad.new-syntax")
    mine = classad_text.parse(text)
    check_against_bindings(mine, classad2.parseOne(text, classad2.ParserType.New))
    assert mine["GlobalJobId"] == "ap01.example.org#4711.0#1760000000"
    assert mine["memoryusage"] == "((ResidentSetSize + 1023) / 1024)"   # any case, as ClassAds


def test_expressions_are_kept_as_text():
    ad = classad_text.parse(read("htcondor", ".job.ad"))
    assert isinstance(ad["MemoryUsage"], classad_text.Expr)
    assert ad["MemoryUsage"] == "((ResidentSetSize + 1023) / 1024)"
    assert ad["ExitBySignal"] is False and ad["RequestMemory"] == 2048
    assert ad["Rank"] == 0.0 and type(ad["Rank"]) is float
    machine = classad_text.parse(read("htcondor", "real-pool-25.14", ".machine.ad"))
    # a string holding escaped quotes, and an expression that only looks like a number
    assert machine["AddressV1"].startswith('{[ p="primary"; a="127.0.0.1";')
    assert machine["MachineMaxVacateTime"] == "10 * 60"


# printable text of any script, no line breaks: the old syntax cannot hold those
TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40)
VALUES = st.one_of(TEXT, st.integers(-2**62, 2**62), st.booleans(), st.none(),
                   st.floats(allow_nan=False, allow_infinity=False, width=64))
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)


def make_ad(attrs):
    ad = classad2.ClassAd()
    for name, value in attrs.items():
        ad[name] = classad2.ExprTree("undefined") if value is None else value
    return ad


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=8))
def test_any_ad_the_bindings_print_reads_back_the_same(attrs):
    """Both syntaxes as the bindings write them (old: printOld; new: the ad's repr)."""
    ad = make_ad(attrs)
    for text, parser in ((ad.printOld(), classad2.ParserType.Old),
                         (repr(ad), classad2.ParserType.New)):
        check_against_bindings(classad_text.parse(text), classad2.parseOne(text, parser))


def test_tricky_old_strings():
    cases = ['back\\slash', 'quote"in', 'ends with \\', 'bs before quote \\"x', '\\"', '\\\\',
             '"', '""', 'a = "b"; c', 'uni ü ✓', '']
    ad = make_ad({f"A{i}": s for i, s in enumerate(cases)})
    mine = classad_text.parse(ad.printOld())
    theirs = classad2.parseOne(ad.printOld(), classad2.ParserType.Old)
    for i, s in enumerate(cases):
        assert mine[f"A{i}"] == theirs[f"A{i}"] == s


# --- identity ------------------------------------------------------------------------------

def ads(*parts):
    base = fixture(*parts)
    return classad_text.read(f"{base}/.job.ad"), classad_text.read(f"{base}/.machine.ad")


def test_identity_from_the_synthetic_ads():
    job_ad, machine_ad = ads("htcondor")
    ident = condor.identity(job_ad, machine_ad, {"_CONDOR_SLOT": "slot1_1"})
    assert (ident.job, ident.scheduler, ident.run) == ("4711.0", "htcondor", 1)
    t = ident.tags
    assert t["account"] == "group_physics"              # an InfluxDB tag (docs/schema.md)
    assert t["GlobalJobId"] == "ap01.example.org#4711.0#1760000000"
    assert t["schedd"] == "ap01.example.org"
    assert (t["Owner"], t["AccountingGroup"], t["JobBatchName"]) == \
        ("alice", "group_physics.alice", "run042")
    assert (t["slot"], t["execute_host"]) == ("slot1_1@wn01.example.org", "wn01.example.org")
    assert (t["RequestCpus"], t["RequestMemory"], t["RequestDisk"]) == ("1", "2048", "4194304")
    assert (t["CpusProvisioned"], t["MemoryProvisioned"], t["DiskProvisioned"]) == \
        ("1", "2048", "4194304")
    assert t["run"] == "1" and "pilot" not in t
    assert all(isinstance(v, str) for v in t.values())


def test_identity_from_the_real_pool_ads():
    job_ad, machine_ad = ads("htcondor", "real-pool-25.14")
    ident = condor.identity(job_ad, machine_ad, {})
    assert (ident.job, ident.run) == ("5.0", 1)
    assert ident.tags["schedd"] == "vm" and ident.tags["slot"] == "slot1_1@vm"
    assert ident.tags["account"] == "group_physics"


def test_run_is_one_more_than_the_earlier_starts():
    """The .job.ad is a snapshot at the run's start: NumJobStarts counts the runs before.
    The real pool's job 5.0 started once: its ad at start says 0, its history 1."""
    job_ad, _ = ads("htcondor", "real-pool-25.14")
    assert job_ad["NumJobStarts"] == 0 and condor.run_number(job_ad) == 1
    with open(fixture("htcondor", "real-pool-25.14", "history")) as f:
        history = f.read()
    last = history.rstrip().rsplit("\n***", 1)[0].rsplit("***", 1)[-1]   # the record of 5.0
    final = classad_text.parse(last.split("\n", 1)[1])
    assert (final["ClusterId"], final["NumJobStarts"]) == (5, 1)
    assert condor.run_number(classad_text.Ad([("NumJobStarts", 2)])) == 3
    assert condor.run_number(classad_text.Ad()) is None


def test_accounting_group_without_acctgroup():
    ad = classad_text.Ad([("AccountingGroup", "group_cms.prod.bob"), ("Owner", "bob")])
    assert condor.accounting_group(ad) == "group_cms.prod"
    assert condor.accounting_group(classad_text.Ad([("AccountingGroup", "atlas")])) == "atlas"
    assert condor.accounting_group(classad_text.Ad()) is None


def test_glidein_payload_carries_the_pilot():
    job_ad, machine_ad = ads("htcondor")
    machine_ad["GLIDEIN_Site"] = "Site_X"
    machine_ad["GLIDEIN_ResourceName"] = "Site_X_CE1"
    machine_ad["GLIDEIN_Name"] = "gfactory_instance"
    ident = condor.identity(job_ad, machine_ad, {})
    assert ident.tags["pilot"] == "gfactory_instance"
    assert (ident.tags["GLIDEIN_Site"], ident.tags["GLIDEIN_ResourceName"]) == \
        ("Site_X", "Site_X_CE1")
    machine_ad["JobMonitorPilot"] = "pilot-17"   # what the pilot's own record is called
    assert condor.identity(job_ad, machine_ad, {}).tags["pilot"] == "pilot-17"


def test_request_expressions_keep_their_text():
    job_ad, machine_ad = ads("htcondor")
    job_ad["RequestMemory"] = classad_text.Expr("ifthenelse(MemoryUsage =!= undefined, "
                                                 "MAX({MemoryUsage * 3/2, 2048}), 2048)")
    tags = condor.identity(job_ad, machine_ad, {}).tags
    assert tags["RequestMemory"].startswith("ifthenelse(MemoryUsage")


def test_registered_and_detected_from_the_environment():
    assert SCHEDULERS["htcondor"] == ".condor"
    assert load("htcondor") is condor
    env = {"_CONDOR_JOB_AD": fixture("htcondor", ".job.ad"),
           "_CONDOR_MACHINE_AD": fixture("htcondor", ".machine.ad")}
    ident = identify(env)
    assert isinstance(ident, Identity) and ident.job == "4711.0"
    assert identify({}) is None
    # unreadable ads: still HTCondor, no id (the wrapper then names the run itself)
    lost = condor.identify({"_CONDOR_JOB_AD": "/nonexistent/.job.ad"})
    assert lost.job is None and lost.scheduler == "htcondor"


def test_wrapper_imports_no_read_side_and_nothing_heavy():
    """Statically, every module the wrapper can reach (the runtime check, as it really runs,
    is in test_condor_wrapper.py)."""
    from test_layout import GRAPH, HEAVY, reach, under
    mods = reach("jobmon.plugins.condor.wrapper")
    assert {"jobmon.job.runner", "jobmon.plugins.condor.classad_text"} <= mods
    for mod in mods:
        assert not (GRAPH[mod] & HEAVY), (mod, GRAPH[mod] & HEAVY)
        assert not under(mod, "jobmon.cli", "jobmon.report", "jobmon.render",
                         "jobmon.accounting", "jobmon.ship"), mod
