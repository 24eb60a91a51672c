"""multios from Python.

- :func:`load_profile` reads a multios profile (validated by the Rust loader) as a :class:`Profile`
  whose ``syscalls`` DataFrame has one row per system call (the CLI's ``--csv`` columns) and whose
  ``threads`` / ``ranks`` DataFrames have one row per thread / MPI rank where the profile has them.
- :mod:`multios.models` evaluates the speedup models (naive, refined, queue, sweep, fit, advise)
  with the Rust crate ``multios-model``: same numbers, same validation; refused inputs raise
  :class:`MultiosError`.
- :mod:`multios.results` reads the JSON of ``validate``, ``bench``, ``noise`` and ``lwk`` runs as
  DataFrames.
- :func:`profile`, :func:`emulate`, :func:`lwk_run` run the ``multios`` binary and return results.
"""

from ._native import MultiosError, SCHEMA_VERSION
from .profile import Profile, load_profile, parse_profile
from .models import naive, refined, queue, sweep, fit_gamma, accuracy, median, advise, Projection
from .results import read_result, read_validate, read_bench, read_noise, read_lwk
from .run import RunResult, binary, profile, emulate, lwk_run

__all__ = [
    "MultiosError",
    "SCHEMA_VERSION",
    "Profile",
    "load_profile",
    "parse_profile",
    "naive",
    "refined",
    "queue",
    "sweep",
    "fit_gamma",
    "accuracy",
    "median",
    "advise",
    "Projection",
    "read_result",
    "read_validate",
    "read_bench",
    "read_noise",
    "read_lwk",
    "RunResult",
    "binary",
    "profile",
    "emulate",
    "lwk_run",
]
