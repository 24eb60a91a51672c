"""issue 18: running profile/emulate/lwk from Python; reading validate/noise/lwk JSON as DataFrames."""

import json
import subprocess

import pytest

import multios


def test_issue_18_profile_emulate_lwk_run_return_results(cli, tmp_path):
    r = multios.profile(["sh", "-c", "ls / >/dev/null"], tmp_path / "p.json")
    assert r.returncode == 0 and r.profile is not None
    assert "execve" in set(r.profile.syscalls["syscall"]) or len(r.profile.syscalls) > 3

    t = multios.profile(["sh", "-c", "true"], tmp_path / "t.json", trace=tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == int(t.profile.syscalls["n(s)"].sum())

    e = multios.emulate(["/bin/true"], policy="all", fc="1us")
    assert e.returncode == 0 and e.report["policy"] == "all" and e.report["exit"] == {"code": 0}

    # the LWK needs /dev/kvm: without it this fails loudly, as the other LWK tests do
    lw = multios.lwk_run(["/bin/true"], profile_out=tmp_path / "lwk.json")
    assert lw.returncode == 0 and lw.report["status"] == "Code(0)"
    assert lw.profile is not None and lw.profile.data["collection"]["tool"] == "multios-lwk"
    assert lw.report["syscalls"] == int(lw.profile.syscalls["n(s)"].sum())


def test_issue_18_failed_runs_raise_with_stderr(cli):
    with pytest.raises(multios.MultiosError, match="exited with"):
        multios.emulate(["/bin/true"], policy="bogus-policy")
    r = multios.emulate(["/bin/true"], policy="bogus-policy", check=False)
    assert r.returncode != 0 and "bogus-policy" in r.stderr


def test_issue_18_readers_give_one_row_per_point_and_report(cli, tmp_path):
    v = subprocess.run(
        [cli, "--json", "validate", "--iters", "20000", "--phases", "2", "--repeat", "1", "--gamma", "1,2",
         "--policy", "all", "--fc", "10us", "--out", str(tmp_path / "v")],
        capture_output=True, text=True, check=True).stdout
    (tmp_path / "v.json").write_text(v)
    df = multios.read_validate(tmp_path / "v.json")
    raw = json.loads(v)
    assert len(df) == len(raw["points"]) == 2
    assert list(df["measured"]) == [p["measured"] for p in raw["points"]]
    assert "round_trip.median" in df.columns

    n = subprocess.run([cli, "--json", "noise", "fwq", "--duration", "200ms", "--cpus", "0"],
                       capture_output=True, text=True, check=True).stdout
    nd = multios.read_noise(json.loads(n))
    assert len(nd) == len(json.loads(n)["reports"]) and "noise_pct" in nd.columns

    with pytest.raises(multios.MultiosError, match="not JSON"):
        (tmp_path / "x.json").write_text("table output")
        multios.read_bench(tmp_path / "x.json")
