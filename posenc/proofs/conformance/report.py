"""Results of ``posenc check``: one :class:`Property` per checked property, and the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional

PASS, FAIL, INFO, NA = "pass", "fail", "info", "n/a"


@dataclass
class Property:
    name: str
    status: str                          # pass | fail | info (reported, not judged) | n/a
    detail: str = ""
    counterexample: Optional[str] = None  # the minimal offending input, for a failure


@dataclass
class CheckReport:
    impl: str
    kind: str                            # "rope" | "bias"
    mode: str                            # how the callable was fed: numpy | torch | plain
    properties: list[Property] = field(default_factory=list)
    summary: dict = field(default_factory=dict)   # recovered facts (pairing, base, slopes, ...)

    @property
    def ok(self) -> bool:
        return all(p.status != FAIL for p in self.properties)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["ok"] = self.ok
        return out

    def text(self) -> str:
        lines = [f"{self.impl}: {self.kind} function, called with {self.mode} inputs"]
        width = max(len(p.name) for p in self.properties) if self.properties else 10
        for p in self.properties:
            lines.append(f"  {p.name:<{width}}  {p.status:<4}  {p.detail}")
            if p.counterexample:
                lines.append(f"  {'':<{width}}        counterexample: {p.counterexample}")
        lines.append("conforms" if self.ok else
                     f"DOES NOT CONFORM: {sum(p.status == FAIL for p in self.properties)} "
                     f"propert{'y' if sum(p.status == FAIL for p in self.properties) == 1 else 'ies'}"
                     f" failed")
        return "\n".join(lines)
