"""The speedup models, evaluated by the Rust crate ``multios-model`` (no Python re-implementation).

A *workload* is C (compute time, s) plus (name, n(s), g(s)) per system call. Every function here
takes it as any of: a :class:`~multios.Profile`, a path to a profile file, a DataFrame with columns
``syscall``/``name``, ``n(s)``/``count``/``n`` and ``g(s)``/``total_s``/``g`` (then pass ``c=``),
or a list of ``(name, n, g)`` tuples (then pass ``c=``).

Durations (``fc``, ``wait``, sweep bounds over ``fc``) are seconds as numbers, or text with a unit
as on the command line (``"10us"``, ``"750cycles@2.2GHz"``). ``policy`` is the CLI's policy text
(``all``, ``none``, ``mckernel``, ``mos``, ``mktrace``, ``list:FILE``, ``least:F``, ``most:F``,
``random:F[:SEED]``); ``fc_for`` and ``g_prime`` are lists of ``NAME=VALUE`` as ``--fc-for`` and
``--g-prime`` take them. Invalid inputs raise :class:`~multios.MultiosError` with the CLI's message.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence, Union

import pandas as pd

from . import _native
from .profile import Profile, load_profile

Duration = Union[float, int, str]
WorkloadLike = Union[Profile, str, "os.PathLike[str]", pd.DataFrame, Sequence[tuple[str, int, float]]]


def _pick(df: pd.DataFrame, names: Iterable[str]) -> str:
    for n in names:
        if n in df.columns:
            return n
    raise _native.MultiosError(
        f"workload DataFrame: no column among {list(names)} (columns are {list(df.columns)})"
    )


def _workload(workload: WorkloadLike, c: float | None) -> tuple[float, list[tuple[str, int, float]]]:
    if isinstance(workload, (str, os.PathLike)):
        workload = load_profile(workload)
    if isinstance(workload, Profile):
        return (workload.compute_time_s if c is None else float(c)), workload.calls()
    if c is None:
        raise _native.MultiosError("c: the compute time C (seconds) is required with a DataFrame or list workload")
    if isinstance(workload, pd.DataFrame):
        name = _pick(workload, ["syscall", "name"])
        n = _pick(workload, ["n(s)", "count", "n"])
        g = _pick(workload, ["g(s)", "total_s", "g"])
        rows = [(str(a), int(b), float(x)) for a, b, x in zip(workload[name], workload[n], workload[g])]
        return float(c), rows
    return float(c), [(str(a), int(b), float(x)) for a, b, x in workload]


def _params(gamma: float, fc: Duration, policy: str, fc_for: Sequence[str], g_prime: Sequence[str], wait: Duration) -> dict[str, Any]:
    return dict(
        gamma=float(gamma),
        fc=fc,
        policy=policy,
        fc_for=list(fc_for),
        g_prime=list(g_prime),
        wait=wait,
    )


@dataclass
class Projection:
    """The refined model's projection: ``speedup`` (S_r), ``naive`` (S_n), t_nd, t_d, … and the
    per-syscall ``breakdown`` (name, n, g, delegated, f, t_d). ``data`` is the full JSON as
    ``multios model refined --json`` prints it."""

    data: dict[str, Any]
    breakdown: pd.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.breakdown = pd.DataFrame(self.data.get("breakdown", []))

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def speedup(self) -> float:
        return float(self.data["speedup"])


def naive(p: float | Sequence[float], gamma: float | Sequence[float]) -> Any:
    """S_n = (p + (1−p)/γ)⁻¹ (eq. 3). Scalars give a float; sequences or arrays (broadcast
    against each other) give a list of floats."""
    ps = p if isinstance(p, (list, tuple)) or hasattr(p, "__len__") else None
    gs = gamma if isinstance(gamma, (list, tuple)) or hasattr(gamma, "__len__") else None
    if ps is None and gs is None:
        return _native.naive(float(p), float(gamma))  # type: ignore[arg-type]
    ps_l = [float(x) for x in ps] if ps is not None else None
    gs_l = [float(x) for x in gs] if gs is not None else None
    if ps_l is not None and gs_l is not None:
        if len(ps_l) != len(gs_l):
            raise _native.MultiosError(f"naive: p has {len(ps_l)} values, gamma {len(gs_l)}; give equal lengths or one scalar")
        return [_native.naive(a, b) for a, b in zip(ps_l, gs_l)]
    if ps_l is not None:
        return [_native.naive(a, float(gamma)) for a in ps_l]  # type: ignore[arg-type]
    return [_native.naive(float(p), b) for b in gs_l or []]  # type: ignore[arg-type]


def refined(
    workload: WorkloadLike,
    *,
    c: float | None = None,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = (),
    g_prime: Sequence[str] = (),
    wait: Duration = 0.0,
) -> Projection:
    """The refined model (eq. 4–11), as ``multios model refined``."""
    cc, calls = _workload(workload, c)
    return Projection(json.loads(_native.refined(cc, calls, **_params(gamma, fc, policy, fc_for, g_prime, wait))))


def queue(
    lambdas: Sequence[float] | None = None,
    mu: float | None = None,
    *,
    servers: int = 1,
    profile: str | os.PathLike[str] | None = None,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = (),
    g_prime: Sequence[str] = (),
    wait: Duration = 0.0,
) -> dict[str, Any]:
    """M/M/c delegation queue, as ``multios model queue``. With ``profile=``: λ_k and μ come from
    the profile's threads and delegated calls and the result has ``queue`` and ``projection``
    (S_r with W added); otherwise give ``lambdas`` and ``mu`` and get ``queue`` alone."""
    if profile is not None:
        return json.loads(
            _native.queue_profile(os.fspath(profile), servers, mu, **_params(gamma, fc, policy, fc_for, g_prime, wait))
        )
    if lambdas is None or mu is None:
        raise _native.MultiosError("queue: give lambdas=[…] and mu=…, or profile=FILE")
    return {"queue": json.loads(_native.queue([float(x) for x in lambdas], float(mu), servers)), "projection": None}


def sweep(
    workload: WorkloadLike,
    over: str,
    lo: Duration,
    hi: Duration,
    steps: int = 10,
    *,
    c: float | None = None,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = (),
    g_prime: Sequence[str] = (),
    wait: Duration = 0.0,
) -> pd.DataFrame:
    """S_r and S_n as one parameter varies (``over``: gamma, fc or fraction), as ``multios model
    sweep``: a DataFrame with columns (gamma|fc_s|fraction), S_r, S_n."""
    cc, calls = _workload(workload, c)
    pts = _native.sweep(cc, calls, over, lo, hi, steps, **_params(gamma, fc, policy, fc_for, g_prime, wait))
    x = {"gamma": "gamma", "fc": "fc_s", "fraction": "fraction"}[over]
    return pd.DataFrame(pts, columns=[x, "S_r", "S_n"])


def fit_gamma(
    workload: WorkloadLike,
    measured: float,
    *,
    c: float | None = None,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = (),
    g_prime: Sequence[str] = (),
    wait: Duration = 0.0,
) -> dict[str, float | None]:
    """γ that makes the models give the ``measured`` speedup, as ``multios model fit --measured``:
    ``{"gamma_refined": …, "gamma_naive": … or None}``."""
    cc, calls = _workload(workload, c)
    g = _native.fit_gamma_refined(cc, calls, float(measured), **_params(1.0, fc, policy, fc_for, g_prime, wait))
    total_g = sum(x[2] for x in calls)
    p = total_g / (cc + total_g) if cc + total_g > 0 else 0.0
    try:
        gn: float | None = _native.fit_gamma_naive(p, float(measured))
    except _native.MultiosError:
        gn = None
    return {"gamma_refined": g, "gamma_naive": gn}


def accuracy(predicted: Sequence[float] | pd.DataFrame, measured: Sequence[float] | None = None) -> float:
    """100 − MAPE over (predicted, measured) pairs (the paper's §5.3). Pass two sequences, or a
    DataFrame with columns ``predicted`` and ``measured``."""
    if isinstance(predicted, pd.DataFrame):
        measured = list(predicted["measured"])
        predicted = list(predicted["predicted"])
    if measured is None or len(predicted) != len(measured):
        raise _native.MultiosError("accuracy: give predicted and measured of equal length")
    return _native.accuracy([(float(a), float(b)) for a, b in zip(predicted, measured)])


def median(values: Sequence[float]) -> float | None:
    """multios-stats' median of the finite values (None when there is none)."""
    return _native.median([float(v) for v in values])


def advise(
    workload: WorkloadLike,
    budget: int,
    *,
    c: float | None = None,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = (),
    g_prime: Sequence[str] = (),
    wait: Duration = 0.0,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Which ``budget`` system calls to implement in the LWK, as ``multios model advise``: a
    DataFrame (name, n, saving, speedup_after) and the full advice (``before``, ``after``)."""
    cc, calls = _workload(workload, c)
    adv = json.loads(_native.advise(cc, calls, int(budget), **_params(gamma, fc, policy, fc_for, g_prime, wait)))
    return pd.DataFrame(adv["port"], columns=["name", "n", "saving", "speedup_after"]), adv
