"""issue 18: a profile as a DataFrame equals the CLI's --csv."""

import io
import json
import subprocess

import numpy as np
import pandas as pd
import pytest

import multios


def cli_csv(cli, *args):
    out = subprocess.run([cli, *args], capture_output=True, text=True, check=True).stdout
    return pd.read_csv(io.StringIO(out), na_values=["-"], keep_default_na=False)


def assert_frames_equal(df: pd.DataFrame, csv: pd.DataFrame) -> None:
    assert list(df.columns) == list(csv.columns)
    assert len(df) == len(csv)
    assert list(df["syscall"]) == list(csv["syscall"])
    assert list(df["n(s)"]) == list(csv["n(s)"])
    for col in ["g(s)", "mean", "min", "max"]:
        # the CLI prints exact seconds ({:e}, shortest round trip): equal to the bit
        np.testing.assert_array_equal(df[col].to_numpy(float), csv[col].to_numpy(float), err_msg=col)
    np.testing.assert_array_equal(df["errors"].to_numpy(float, na_value=np.nan), csv["errors"].to_numpy(float))
    # "% wall" is printed with 3 decimals
    np.testing.assert_allclose(df["% wall"], csv["% wall"], atol=5e-4 + 1e-12)


def test_issue_18_dataframe_equals_cli_csv_of_a_real_profile(cli, tmp_path):
    out = tmp_path / "p.json"
    csv = cli_csv(cli, "profile", "--csv", "-o", str(out), "--", "sh", "-c", "ls / >/dev/null; ls /proc >/dev/null")
    p = multios.load_profile(out)
    assert len(p.syscalls) > 5
    assert_frames_equal(p.syscalls, csv)
    raw = json.loads(out.read_text())
    assert len(p.threads) == len(raw.get("threads", []))
    assert (p.threads["syscalls"].sum()) == sum(t["syscalls"] for t in raw["threads"])


def test_issue_18_imported_profile_frame_matches_cli(cli, bzip2_profile, tmp_path):
    # The bundled strace summary imported by the CLI (no min/max, no threads): the CLI prints the profile.
    out = tmp_path / "m.json"
    src = bzip2_profile.parent / "strace-c-w-f.txt"
    csv = cli_csv(cli, "profile", "import", "--csv", "--strace-wall-clock", "--wall", "3s", "-o", str(out), str(src))
    p = multios.load_profile(out)
    assert_frames_equal(p.syscalls, csv)
    assert p.syscalls["min"].isna().all()


def test_issue_18_profile_errors_name_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 2, "command": []}')
    with pytest.raises(multios.MultiosError, match="bad.json"):
        multios.load_profile(bad)
    with pytest.raises(multios.MultiosError, match="schema_version|newer"):
        multios.parse_profile('{"schema_version": 99}', "future.json")
    with pytest.raises(multios.MultiosError, match="nope.json"):
        multios.load_profile(tmp_path / "nope.json")
