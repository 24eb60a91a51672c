"""issue 18: the models from Python give the CLI's numbers and refuse what the CLI refuses."""

import io
import json
import subprocess

import pandas as pd
import pytest

import multios


def cli_json(cli, *args):
    return json.loads(subprocess.run([cli, "--json", *args], capture_output=True, text=True, check=True).stdout)


def cli_csv(cli, *args):
    out = subprocess.run([cli, "--csv", *args], capture_output=True, text=True, check=True).stdout
    return pd.read_csv(io.StringIO(out))


def test_issue_18_refined_equals_cli_json(cli, bzip2_profile):
    py = multios.refined(bzip2_profile, gamma=2, fc="10us", policy="mckernel", fc_for=["write=40us"])
    want = cli_json(cli, "model", "refined", "--profile", str(bzip2_profile), "--gamma", "2", "--fc", "10us",
                    "--policy", "mckernel", "--fc-for", "write=40us")
    assert py.data == want
    assert py.speedup == want["speedup"]


def test_issue_18_models_accept_dataframes_and_lists(bzip2_profile):
    p = multios.load_profile(bzip2_profile)
    a = multios.refined(p, gamma=3, fc=1e-5)
    b = multios.refined(p.syscalls, c=p.compute_time_s, gamma=3, fc=1e-5)
    c = multios.refined(p.calls(), c=p.compute_time_s, gamma=3, fc=10e-6)
    assert a.data == b.data == c.data
    assert multios.naive(p.p, 2) == a.naive or multios.naive(p.p, 3) == a.naive
    assert multios.naive([0.1, 0.2], 2) == [multios.naive(0.1, 2), multios.naive(0.2, 2)]


def test_issue_18_sweep_advise_queue_fit_equal_cli(cli, bzip2_profile):
    prof = str(bzip2_profile)
    sw = multios.sweep(bzip2_profile, "fc", "1us", "1ms", 5, gamma=2)
    want = cli_csv(cli, "model", "sweep", "--profile", prof, "--gamma", "2", "--over", "fc", "--from", "1us",
                   "--to", "1ms", "--steps", "5")
    assert list(sw.columns) == list(want.columns)
    pd.testing.assert_series_equal(sw["fc_s"], want["fc_s"], check_exact=False, rtol=1e-12)
    pd.testing.assert_series_equal(sw["S_r"], want["S_r"], check_exact=False, atol=1e-6)

    port, adv = multios.advise(bzip2_profile, 3, gamma=2, fc="10us")
    assert adv == cli_json(cli, "model", "advise", "--profile", prof, "--gamma", "2", "--fc", "10us", "--budget", "3")
    assert list(port["name"]) == [i["name"] for i in adv["port"]]

    q = multios.queue([100.0, 250.0], 2e5, servers=2)
    assert q == cli_json(cli, "model", "queue", "--lambda", "100,250", "--mu", "200000", "--servers", "2")

    f = multios.fit_gamma(bzip2_profile, 1.5, fc="10us")
    assert f == cli_json(cli, "model", "fit", "--profile", prof, "--fc", "10us", "--measured", "1.5")


def test_issue_18_invalid_inputs_raise_the_cli_errors(bzip2_profile):
    with pytest.raises(multios.MultiosError, match="fc: '10 parsecs'"):
        multios.refined(bzip2_profile, fc="10 parsecs")
    with pytest.raises(multios.MultiosError, match="unknown system call 'nosuch'"):
        multios.refined([("nosuch", 1, 0.1)], c=1.0)
    with pytest.raises(multios.MultiosError, match="unknown policy 'bogus'"):
        multios.refined(bzip2_profile, policy="bogus")
    with pytest.raises(multios.MultiosError, match="fc_for"):
        multios.refined(bzip2_profile, fc_for=["nosuchcall=1us"])
    with pytest.raises(multios.MultiosError, match="γ|gamma"):
        multios.refined(bzip2_profile, gamma=-1)
    with pytest.raises(multios.MultiosError):
        multios.naive(1.5, 2)
    with pytest.raises(multios.MultiosError, match="c: the compute time"):
        multios.refined([("read", 1, 0.1)])
    with pytest.raises(multios.MultiosError, match="over"):
        multios.sweep(bzip2_profile, "temperature", 1, 2)
    # a MultiosError is a ValueError, so generic handlers catch it
    assert issubclass(multios.MultiosError, ValueError)


def test_issue_18_accuracy_and_median():
    assert multios.accuracy([1.0, 2.0], [1.0, 2.0]) == 100.0
    df = pd.DataFrame({"predicted": [1.1], "measured": [1.0]})
    assert abs(multios.accuracy(df) - 90.0) < 1e-9
    assert multios.median([3.0, 1.0, 2.0, 10.0]) == 2.5
    assert multios.median([]) is None
