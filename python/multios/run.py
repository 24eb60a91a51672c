"""Running the ``multios`` binary from Python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from . import _native
from .profile import Profile, load_profile


def binary() -> str:
    """The ``multios`` binary: ``$MULTIOS_BIN``, else ``multios`` on PATH, else
    ``target/release/multios`` in the current directory or one above it."""
    env = os.environ.get("MULTIOS_BIN")
    if env:
        return env
    found = shutil.which("multios")
    if found:
        return found
    here = Path.cwd().resolve()
    for d in [here, *here.parents]:
        cand = d / "target" / "release" / "multios"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    raise _native.MultiosError(
        "multios binary not found: put it on PATH, set MULTIOS_BIN, or build it with `cargo build --release -p multios`"
    )


@dataclass
class RunResult:
    """What one ``multios`` invocation gave: the command line, its exit code, stdout and stderr,
    the parsed JSON report when there was one, and the profile written (if any)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    report: Any = None
    profile: Profile | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self) -> "RunResult":
        """Raises MultiosError with stderr's tail when the command failed."""
        if self.returncode != 0:
            raise _native.MultiosError(
                f"`{' '.join(self.args)}` exited with {self.returncode}: {self.stderr.strip()[-2000:]}"
            )
        return self


def _run(args: list[str], check: bool) -> RunResult:
    p = subprocess.run(args, capture_output=True, text=True)
    r = RunResult(args=args, returncode=p.returncode, stdout=p.stdout, stderr=p.stderr)
    return r.check() if check else r


def _json_tail(text: str) -> Any:
    """The last top-level JSON object in ``text`` (e.g. a summary after the program's own output)."""
    start = text.rfind("\n{")
    start = 0 if start < 0 and text.startswith("{") else start + 1
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None


def profile(
    command: Sequence[str],
    output: str | os.PathLike[str] | None = None,
    *,
    backend: str | None = None,
    trace: str | os.PathLike[str] | None = None,
    check: bool = True,
) -> RunResult:
    """``multios profile -o OUTPUT -- COMMAND…``: runs and profiles ``command``; ``result.profile`` is
    the loaded profile. Without ``output`` the profile goes to a temporary file."""
    tmp = None
    if output is None:
        tmp = tempfile.NamedTemporaryFile(prefix="multios-profile-", suffix=".json", delete=False)
        tmp.close()
        output = tmp.name
    args = [binary(), "profile", "-o", os.fspath(output)]
    if backend:
        args += ["--backend", backend]
    if trace is not None:
        args += ["--trace", os.fspath(trace)]
    r = _run(args + ["--", *command], check)
    if r.returncode == 0 or Path(output).exists():
        r.profile = load_profile(output)
    return r


def emulate(
    command: Sequence[str],
    *,
    policy: str = "all",
    fc: str = "0ns",
    mechanism: str | None = None,
    compare: bool = False,
    runs: int | None = None,
    args: Sequence[str] = (),
    check: bool = True,
) -> RunResult:
    """``multios emulate --json --policy P --fc F [--mechanism M] [--compare --runs N] ARGS -- COMMAND…``;
    ``result.report`` is the JSON report."""
    a = [binary(), "emulate", "--json", "--policy", policy, "--fc", fc]
    if mechanism:
        a += ["--mechanism", mechanism]
    if compare:
        a.append("--compare")
    if runs is not None:
        a += ["--runs", str(runs)]
    a += list(args)
    r = _run(a + ["--", *command], check)
    r.report = _json_tail(r.stdout)
    return r


def lwk_run(
    command: Sequence[str],
    *,
    policy: str | None = None,
    profile_out: str | os.PathLike[str] | None = None,
    args: Sequence[str] = (),
    check: bool = True,
) -> RunResult:
    """``multios lwk run --json [--policy P] [--profile FILE] ARGS COMMAND…``: runs ``command`` in
    the LWK (needs /dev/kvm); ``result.report`` is the run's summary, ``result.profile`` the
    profile when ``profile_out`` is given."""
    a = [binary(), "lwk", "run", "--json"]
    if policy:
        a += ["--policy", policy]
    if profile_out is not None:
        a += ["--profile", os.fspath(profile_out)]
    a += list(args)
    r = _run(a + ["--", *command], check)
    r.report = _json_tail(r.stderr)
    if profile_out is not None and Path(profile_out).exists():
        r.profile = load_profile(profile_out)
    return r
