"""Profiles as pandas DataFrames."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from . import _native

#: The columns of ``multios profile … --csv``, in order.
CLI_COLUMNS = ["syscall", "n(s)", "g(s)", "mean", "min", "max", "errors", "% wall"]


@dataclass
class Profile:
    """A validated multios profile.

    ``data`` is the profile's JSON as a dict (``docs/PROFILE-FORMAT.md``); the DataFrames are views
    of it: ``syscalls`` (one row per system call, largest g(s) first, the CLI's ``--csv`` columns:
    syscall, n(s), g(s), mean, min, max, errors, % wall; times in seconds, a missing min/max is
    NaN), ``threads`` (tid, pid, rank, syscalls, syscall_time_s, lifetime_s, rate_hz) and
    ``ranks`` (per-rank summaries of a merged MPI profile).
    """

    data: dict[str, Any]
    source: str = ""
    syscalls: pd.DataFrame = field(init=False, repr=False)
    threads: pd.DataFrame = field(init=False, repr=False)
    ranks: pd.DataFrame = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.syscalls = _syscalls_frame(self.data)
        self.threads = _threads_frame(self.data)
        self.ranks = pd.DataFrame(self.data.get("ranks", []))

    @property
    def compute_time_s(self) -> float:
        """C: time outside system calls."""
        return float(self.data["compute_time_s"])

    @property
    def wall_time_s(self) -> float:
        return float(self.data["wall_time_s"])

    @property
    def syscall_time_s(self) -> float:
        """Σ g(s)."""
        return float(sum(s["total_s"] for s in self.data["syscalls"]))

    @property
    def p(self) -> float:
        """p = Σg / (C + Σg): the share of time in system calls (the naive model's p)."""
        g = self.syscall_time_s
        t = self.compute_time_s + g
        return g / t if t > 0 else 0.0

    @property
    def command(self) -> list[str]:
        return list(self.data["command"])

    def calls(self) -> list[tuple[str, int, float]]:
        """(name, n(s), g(s)) per system call: the models' workload rows."""
        return [(s["name"], int(s["count"]), float(s["total_s"])) for s in self.data["syscalls"]]


def _records(data: dict[str, Any], field_name: str) -> bool:
    cov = data.get("collection", {}).get("coverage")
    return cov is None or field_name not in cov.get("not_recorded", [])


def _syscalls_frame(data: dict[str, Any]) -> pd.DataFrame:
    wall = float(data["wall_time_s"])
    errors_recorded = _records(data, "syscalls[].errors")
    rows = []
    for s in data["syscalls"]:
        n, g = int(s["count"]), float(s["total_s"])
        rows.append(
            {
                "syscall": s["name"],
                "n(s)": n,
                "g(s)": g,
                "mean": g / n if n else 0.0,
                "min": s.get("min_s", float("nan")),
                "max": s.get("max_s", float("nan")),
                "errors": int(s.get("errors", 0)) if errors_recorded else pd.NA,
                "% wall": 100.0 * g / wall if wall > 0 else 0.0,
            }
        )
    df = pd.DataFrame(rows, columns=CLI_COLUMNS)
    df["errors"] = df["errors"].astype("Int64")
    return df


def _threads_frame(data: dict[str, Any]) -> pd.DataFrame:
    cols = ["tid", "pid", "rank", "syscalls", "syscall_time_s", "lifetime_s", "rate_hz"]
    rows = []
    for t in data.get("threads", []):
        life = float(t["lifetime_s"])
        rows.append(
            {
                "tid": t["tid"],
                "pid": t.get("pid"),
                "rank": t.get("rank"),
                "syscalls": int(t["syscalls"]),
                "syscall_time_s": float(t["syscall_time_s"]),
                "lifetime_s": life,
                "rate_hz": int(t["syscalls"]) / life if life > 0 else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Loads and validates a profile file (the CLI's loader); raises MultiosError naming the field."""
    return Profile(json.loads(_native.load_profile(os.fspath(path))), source=os.fspath(path))


def parse_profile(text: str, source: str = "<string>") -> Profile:
    """Validates profile JSON text; ``source`` names it in error messages."""
    return Profile(json.loads(_native.parse_profile(text, source)), source=source)
