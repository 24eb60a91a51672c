"""Type stubs of the native module (Rust, PyO3). Results are JSON text unless noted."""

from typing import Sequence, Union

Duration = Union[float, str]
Calls = Sequence[tuple[str, int, float]]

SCHEMA_VERSION: int

class MultiosError(ValueError):
    """An input multios refuses; the message names the file, field or argument and the fix."""

def load_profile(path: str) -> str: ...
def parse_profile(text: str, source: str) -> str: ...
def naive(p: float, gamma: float) -> float: ...
def refined(
    c: float,
    calls: Calls,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = ...,
    g_prime: Sequence[str] = ...,
    wait: Duration = 0.0,
) -> str: ...
def queue(lambdas: Sequence[float], mu: float, servers: int = 1) -> str: ...
def queue_profile(
    path: str,
    servers: int = 1,
    mu: float | None = None,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = ...,
    g_prime: Sequence[str] = ...,
    wait: Duration = 0.0,
) -> str: ...
def sweep(
    c: float,
    calls: Calls,
    over: str,
    lo: Duration,
    hi: Duration,
    steps: int = 10,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = ...,
    g_prime: Sequence[str] = ...,
    wait: Duration = 0.0,
) -> list[tuple[float, float, float]]: ...
def fit_gamma_refined(
    c: float,
    calls: Calls,
    measured: float,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = ...,
    g_prime: Sequence[str] = ...,
    wait: Duration = 0.0,
) -> float: ...
def fit_gamma_naive(p: float, measured: float) -> float: ...
def accuracy(pairs: Sequence[tuple[float, float]]) -> float: ...
def median(values: Sequence[float]) -> float | None: ...
def advise(
    c: float,
    calls: Calls,
    budget: int,
    gamma: float = 1.0,
    fc: Duration = 0.0,
    policy: str = "all",
    fc_for: Sequence[str] = ...,
    g_prime: Sequence[str] = ...,
    wait: Duration = 0.0,
) -> str: ...
