"""Shared fixtures: the repository root, the bundled profile, the multios binary."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture
def bzip2_profile() -> pathlib.Path:
    return ROOT / "examples" / "bzip2" / "profile.json"


@pytest.fixture
def cli() -> str:
    """The release binary the tests compare against (MULTIOS_BIN overrides)."""
    b = os.environ.get("MULTIOS_BIN") or str(ROOT / "target" / "release" / "multios")
    if not os.access(b, os.X_OK):
        pytest.fail(f"{b} missing: build it first with `cargo build --release -p multios`")
    os.environ["MULTIOS_BIN"] = b
    return b
