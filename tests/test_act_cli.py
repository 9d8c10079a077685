"""`jobmon act --json` prints JSON whatever the pass has to say: with [actions] mode off
(the default) too, where it used to print a line of text; `--dry-run` makes a pass
whatever the mode says."""
import json
import os

from helpers import jobmon, jobmon_run


def test_act_json_with_actions_off_is_json(tmp_path):
    (tmp_path / "jobmon.toml").write_text("")
    env = dict(os.environ, JOBMON_CONFIG=str(tmp_path / "jobmon.toml"))
    env.pop("JOBMON_STORE", None)
    r = jobmon("act", "--json", f"--store={tmp_path / 'store.db'}", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "off" and doc["decisions"] == [] and doc["counts"] == {}
    assert "mode is off" in doc["note"]
    # a dry run makes its pass, mode off or not: over a store with one ended job
    assert jobmon_run(["--job-id=ended"], ["true"], store=str(tmp_path / "store.db"),
                      env=env).returncode == 0
    r = jobmon("act", "--dry-run", "--json", f"--store={tmp_path / 'store.db'}", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["decisions"] == [], r.stdout
    text = jobmon("act", f"--store={tmp_path / 'store.db'}", env=env)
    assert text.stdout.startswith("jobmon act: [actions] mode is off"), text.stdout
