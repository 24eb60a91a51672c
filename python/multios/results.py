"""Readers for the JSON that ``multios … --json`` prints (validate, bench, noise, lwk)."""

from __future__ import annotations

import json
import os
from typing import Any, Union

import pandas as pd

from . import _native

Source = Union[str, "os.PathLike[str]", dict[str, Any], list[Any]]

# Per kind: the field holding one record per row, in order of preference.
_ROWS = {
    "validate": ["points"],
    "noise": ["reports", "medians", "points"],
    "bench": ["rows", "results", "points", "runs", "cases", "pairs"],
    "lwk": ["runs", "rows"],
}


def _load(src: Source) -> Any:
    if isinstance(src, (dict, list)):
        return src
    path = os.fspath(src)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise _native.MultiosError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _native.MultiosError(
            f"{path}: not JSON ({e.msg} at line {e.lineno}); write it with `multios … --json > FILE`"
        ) from None


def _frame(data: Any, keys: list[str], what: str) -> pd.DataFrame:
    if isinstance(data, list):
        return pd.json_normalize(data)
    for k in keys:
        v = data.get(k)
        if isinstance(v, list) and (not v or isinstance(v[0], dict)):
            return pd.json_normalize(v)
    # Otherwise: the first list of records anywhere at the top level, else the object as one row.
    for k, v in data.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return pd.json_normalize(v)
    return pd.json_normalize(data)


def read_result(src: Source, kind: str | None = None) -> pd.DataFrame:
    """The rows of a result (one per point, report, run or case), flattened with
    ``pandas.json_normalize`` (nested fields become ``a.b`` columns). ``kind`` is validate, bench,
    noise or lwk; by default every kind's row fields are tried."""
    data = _load(src)
    keys = _ROWS.get(kind or "", sum(_ROWS.values(), []))
    return _frame(data, keys, kind or "result")


def read_validate(src: Source) -> pd.DataFrame:
    """``multios validate --json``: one row per (γ, policy, f_c) point with measured, naive,
    refined_* and accuracy."""
    return read_result(src, "validate")


def read_bench(src: Source) -> pd.DataFrame:
    """``multios bench … --json``: one row per measured case."""
    return read_result(src, "bench")


def read_noise(src: Source) -> pd.DataFrame:
    """``multios noise measure --json`` (one row per run report) or ``noise scale`` output."""
    return read_result(src, "noise")


def read_lwk(src: Source) -> pd.DataFrame:
    """``multios lwk run --json`` summaries (one row per summary) or ``lwk validate``/``bench lwk``
    JSON (one row per run)."""
    return read_result(src, "lwk")
