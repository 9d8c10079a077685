"""The node GPU reader (`jobmon gpu-reader`) on a recorded NVML: what it publishes, that it
publishes atomically, that it refuses what jobs would not trust, and the recorded source
itself. Tested with a recorded reader, not on a GPU (tests/test_gpu.py does that)."""
import json
import os
import stat
import subprocess
import time

import pytest

from gpu_node_site import GpuNode, load_snapshot
from helpers import JOBMON, fixture, needs_root

pytestmark = needs_root


@pytest.fixture
def node():
    n = GpuNode()
    yield n
    n.close()


def once(node, *extra):
    return subprocess.run([JOBMON, "gpu-reader", f"--dir={node.dir}",
                           f"--recorded={node.recording}", "--once", *extra],
                          capture_output=True, text=True, timeout=60)


def test_publishes_every_gpu_by_uuid_with_its_minor_number(node):
    r = once(node)
    assert r.returncode == 0, r.stderr
    st = os.stat(node.file)
    assert stat.S_IMODE(st.st_mode) == 0o644 and st.st_uid == os.geteuid()
    assert sorted(os.listdir(node.dir)) == [".lock", "gpus.json"]     # no temporary left
    snap = node.snapshot()
    assert snap["format"] == 1 and snap["period"] == 1.0 and snap["driver"] == "580.65.06"
    rec = node.rec["devices"]
    assert [(g["index"], g["uuid"], g["minor"]) for g in snap["gpus"]] == \
        [(0, rec[0]["uuid"], 1), (1, rec[1]["uuid"], 0)]      # minors differ from indices
    g0, g1 = snap["gpus"]
    assert (g0["util"], g1["util"]) == (37, 98)
    assert (g0["mem_total"], g0["mem_used"]) == tuple(rec[0]["memory"])
    assert g0["energy"][1] >= rec[0]["energy_mj"] and g0["energy_prev"] is None
    assert g0["procs"] == [] and g0["mig"] is False and "errors" not in g0
    pidns = os.stat("/proc/self/ns/pid")
    assert snap["pidns"] == [pidns.st_dev, pidns.st_ino]
    assert abs(snap["mono"] - time.monotonic()) < 30


def test_mig_instances_are_published_with_what_nvml_gives_per_instance():
    node = GpuNode("a100_mig.json")
    try:
        node.set_procs(0, [(os.getpid(), 1 << 30)], mig=1)
        assert once(node).returncode == 0
        mig, whole = node.snapshot()["gpus"]
    finally:
        node.close()
    assert mig["mig"] is True and mig["util"] is None
    assert "NOT_SUPPORTED" in mig["errors"]["utilization"]
    assert mig["energy"] is not None            # energy: the whole GPU only
    a, b = mig["instances"]
    assert (a["gi"], a["ci"], b["gi"], b["ci"]) == (1, 0, 5, 0)
    assert (b["mem_total"], b["mem_used"]) == (20937965568, 2147483648)
    assert a["procs"] == [] and b["util"] is None and "utilization" in b["errors"]
    assert b["procs"] == [{"pid": os.getpid(), "mem": 1 << 30, "gi": 5, "ci": 0}]
    assert mig["procs"] == b["procs"]           # the GPU's list: its instances' lists
    assert whole["mig"] is False and whole["util"] == 0 and "instances" not in whole


def test_memory_nvml_cannot_tell_is_published_as_unknown(node):
    node.set_procs(0, [(os.getpid(), (1 << 64) - 1)])    # NVML_VALUE_NOT_AVAILABLE
    assert once(node).returncode == 0
    assert node.snapshot()["gpus"][0]["procs"] == [{"pid": os.getpid(), "mem": None}]


def test_energy_readings_carry_the_previous_one_and_rise_at_the_recorded_power(node):
    node.start(period=0.2)
    first = node.wait_published()
    snap = node.wait_published(after_seq=first["seq"] + 2)
    g = snap["gpus"][1]
    (t0, e0), (t1, e1) = g["energy_prev"], g["energy"]
    assert 0.1 < t1 - t0 < 1.0
    assert (e1 - e0) / (t1 - t0) == pytest.approx(350000, rel=0.02)    # mJ/s = 350 W


def test_a_reader_never_shows_half_a_file(node):
    """Readers of the file see whole snapshots only, at a refresh every 50 ms."""
    node.set_procs(0, [(p, 1 << 20) for p in range(100000, 100400)])   # ~20 KB
    node.start(period=0.05)
    seqs = []
    end = time.monotonic() + 3
    while time.monotonic() < end:
        snap = load_snapshot(node.file)        # a torn file would not parse
        assert len(snap["gpus"]) == 2 and len(snap["gpus"][0]["procs"]) == 400
        seqs.append(snap["seq"])
    assert seqs == sorted(seqs) and seqs[-1] - seqs[0] >= 20


def test_refreshes_stop_while_nvml_fails_and_resume(node):
    node.start(period=0.1)
    good = node.wait_published()
    node.rec["devices"][1]["uuid"] = "GPU_IS_LOST"          # the GPU fell off the bus
    node.write()
    time.sleep(0.6)
    stalled = node.snapshot()["seq"]
    time.sleep(0.5)
    assert node.snapshot()["seq"] == stalled                # nothing published meanwhile
    assert stalled - good["seq"] < 10
    node.rec = json.load(open(fixture("gpu", "h100x2.json")))
    node.write()
    assert node.wait_published(after_seq=stalled)["gpus"][1]["uuid"].startswith("GPU-b08d")
    node.stop()
    assert "NVML failed" in node.reader.stderr.read()
    assert not os.path.exists(node.file)    # a stopped reader takes its snapshot away


def test_a_reader_whose_nvml_keeps_failing_exits_to_be_restarted(node):
    node.start(period=0.05)
    node.rec["devices"][0]["uuid"] = "GPU_IS_LOST"
    node.write()
    assert node.reader.wait(20) == 1                   # 30 failed refreshes in a row
    assert "exiting so that the service starts a reader with NVML anew" in \
        node.reader.stderr.read()


def test_one_reader_per_directory(node):
    node.start(period=0.5)
    r = once(node)
    assert r.returncode == 2 and "another node reader" in r.stderr


def test_a_broken_site_file_does_not_stop_the_gpus(node, tmp_path):
    site = tmp_path / "jobmon.toml"
    site.write_text("[node_reader\nenergy_share = \n")         # not TOML
    r = subprocess.run([JOBMON, "gpu-reader", f"--dir={node.dir}", "--once",
                        f"--recorded={node.recording}", f"--config={site}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert len(node.snapshot()["gpus"]) == 2


def test_refuses_a_directory_others_may_write(node):
    os.chmod(node.dir, 0o777)
    r = once(node)
    assert r.returncode == 2 and "writable by it alone" in r.stderr
    assert not os.path.exists(node.file)


def test_warns_when_jobs_would_not_trust_the_directory(tmp_path):
    d = tmp_path / "gpu"           # below pytest's tmp: fine for root, but say so if not
    os.chmod(tmp_path, 0o777)
    r = subprocess.run([JOBMON, "gpu-reader", f"--dir={d}", "--once",
                        f"--recorded={fixture('gpu', 'h100x2.json')}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "jobs will not trust" in r.stderr and "writable by others" in r.stderr


def test_recorded_source_answers_like_nvml_and_records_itself(tmp_path):
    from jobmon.node.recorded import RecordedSource, record
    from jobmon.probes.nvml import NvmlError
    src = RecordedSource(fixture("gpu", "a100_mig.json"))
    h = src.handle(0)
    with pytest.raises(NvmlError) as e:
        src.utilization(h)
    assert e.value.rc == 3                                  # NVML_ERROR_NOT_SUPPORTED
    with pytest.raises(NvmlError) as e:
        src.process_list(h)
    assert e.value.rc == 4                                  # NO_PERMISSION in MIG mode
    assert src.mig_enabled(h) and len(src.mig_handles(h)) == 2
    assert src.instance_ids(src.mig_handles(h)[1]) == (5, 0)
    rec = record(src, seconds=0.3)                          # what --record writes on a GPU node
    orig = json.load(open(fixture("gpu", "a100_mig.json")))
    for got, want in zip(rec["devices"], orig["devices"]):
        for k in ("uuid", "minor", "name", "pci_bus_id", "memory", "utilization", "mig",
                  "processes"):
            assert got[k] == want[k], k
        assert got["power_mw"] == pytest.approx(want["power_mw"], rel=0.02)
        assert [m["uuid"] for m in got["mig_devices"]] == [m["uuid"] for m in want["mig_devices"]]
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(rec))
    again = RecordedSource(str(path))
    assert [again.uuid(again.handle(i)) for i in range(again.count())] == \
        [d["uuid"] for d in orig["devices"]]
