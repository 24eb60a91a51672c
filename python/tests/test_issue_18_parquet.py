"""issue 18: results with many rows come as Parquet beside the CSV, with the same rows.

- `multios profile --trace t.csv --trace t.parquet --trace t.json -- CMD`: every system call of one
  run as CSV, Parquet and Chrome trace JSON;
- `multios noise fwq --out DIR`: every sample in samples.csv and samples.parquet.

pandas reads the Parquet file (with pyarrow) into the same DataFrame, bit for bit, as the CSV.
"""

import json
import subprocess

import pandas as pd
import pyarrow.parquet as pq


def test_issue_18_profile_trace_parquet_has_the_csv_rows(cli, tmp_path):
    t = tmp_path / "t"
    p = subprocess.run(
        [cli, "--json", "profile", "-o", str(tmp_path / "p.json"),
         "--trace", f"{t}.csv", "--trace", f"{t}.parquet", "--trace", f"{t}.json",
         "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=3000"],
        capture_output=True, text=True, check=True).stdout
    calls = sum(s["count"] for s in json.loads(p)["syscalls"])
    assert calls > 6000
    csv = pd.read_csv(f"{t}.csv")
    parquet = pd.read_parquet(f"{t}.parquet")
    pd.testing.assert_frame_equal(parquet, csv, check_exact=True)
    assert len(parquet) == calls
    events = json.loads(open(f"{t}.json").read())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == calls
    schema = pq.read_schema(f"{t}.parquet")
    assert [(f.name, str(f.type)) for f in schema] == [
        ("tid", "int64"), ("pid", "int64"), ("comm", "string"), ("name", "string"), ("nr", "int64"),
        ("start_s", "double"), ("duration_s", "double"), ("error", "bool")]
    assert (parquet["name"] == "read").sum() >= 3000 and (parquet["name"] == "write").sum() >= 3000


def test_issue_18_noise_samples_parquet_has_the_csv_rows(cli, tmp_path):
    out = subprocess.run([cli, "--json", "noise", "fwq", "--quantum", "10us", "--duration", "100ms",
                          "--cpus", "0", "--out", str(tmp_path)], capture_output=True, text=True, check=True)
    csv = pd.read_csv(tmp_path / "samples.csv")
    parquet = pd.read_parquet(tmp_path / "samples.parquet")
    # one row per sample the run reports (≈ 10 000 on a quiet CPU, fewer when it is shared)
    assert len(csv) == sum(r["samples"] for r in json.loads(out.stdout)["reports"]) > 0
    pd.testing.assert_frame_equal(parquet, csv, check_exact=True)
    assert list(parquet.columns) == ["label", "cpu", "kind", "start_ns", "value"]
