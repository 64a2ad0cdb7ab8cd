"""Results of ``posenc check``: one :class:`Property` per checked property, and the report.

A :class:`ConformanceReport` is plain data: ``to_dict()`` is JSON-safe (it is how a report
crosses from the child process that ran the user's code, see :mod:`.isolation`) and
``from_dict`` rebuilds it; ``text()`` is the human rendering ``posenc check`` prints.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

PASS, FAIL, INFO, NA = "pass", "fail", "info", "n/a"


def fmt(v: float, digits: int = 6) -> str:
    """A number for a message: ``digits`` significant digits, never ``-0``."""
    v = float(v)
    if v == 0.0:
        v = 0.0                 # -0.0 -> 0.0
    text = f"{v:.{digits}g}"
    return "0" if text in ("-0", "0", "-0.0") else text


@dataclass
class Property:
    name: str
    status: str                          # pass | fail | info (reported, not judged) | n/a
    detail: str = ""
    counterexample: Optional[str] = None  # the minimal offending input, for a failure


def _json_safe(value):
    """Summary values as JSON: tuples -> lists, non-finite floats -> strings."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if hasattr(value, "item"):                      # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclass
class ConformanceReport:
    impl: str
    kind: str                            # "rope" | "bias"
    mode: str                            # how the callable was fed: numpy | torch | plain
    properties: list[Property] = field(default_factory=list)
    summary: dict = field(default_factory=dict)   # recovered facts (pairing, base, slopes, ...)

    @property
    def ok(self) -> bool:
        return all(p.status != FAIL for p in self.properties)

    @property
    def failures(self) -> list[Property]:
        return [p for p in self.properties if p.status == FAIL]

    def to_dict(self) -> dict:
        out = asdict(self)
        out["summary"] = _json_safe(self.summary)
        out["ok"] = self.ok
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "ConformanceReport":
        return cls(impl=data["impl"], kind=data["kind"], mode=data["mode"],
                   properties=[Property(**p) for p in data.get("properties", [])],
                   summary=dict(data.get("summary", {})))

    def text(self) -> str:
        lines = [f"{self.impl}: {self.kind} function, called with {self.mode} inputs"]
        width = max(len(p.name) for p in self.properties) if self.properties else 10
        for p in self.properties:
            lines.append(f"  {p.name:<{width}}  {p.status:<4}  {p.detail}")
            if p.counterexample:
                lines.append(f"  {'':<{width}}        counterexample: {p.counterexample}")
        n_bad = len(self.failures)
        lines.append("conforms" if self.ok else
                     f"DOES NOT CONFORM: {n_bad} propert{'y' if n_bad == 1 else 'ies'} failed")
        return "\n".join(lines)

    __str__ = text


CheckReport = ConformanceReport          # the name before the Python API existed
