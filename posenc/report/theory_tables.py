"""The report's inputs from the other layers: the theory claims (proofs) and the spectral table (numerics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from .. import __version__
from ..proofs.registry import all_claims
from ..proofs.runner import run_claim

THEORY_EXAMPLES = 10  # Hypothesis examples per theory claim in the report (posenc verify has more)


def theory_claims(store_root: Path) -> list[dict[str, Any]]:
    """Every registered claim run with THEORY_EXAMPLES examples, cached in STORE/theory_claims.json."""
    from ..empirical.pipeline.store import atomic_write_json

    cache = store_root / "theory_claims.json"
    ids = [c.id for c in all_claims()]
    try:  # a damaged cache is recomputed, not trusted
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("version") == __version__ and data.get("ids") == ids \
                and isinstance(data.get("claims"), list):
            return data["claims"]
    except (OSError, ValueError, AttributeError):
        pass
    rows = []
    for claim in all_claims():
        res = run_claim(claim, examples=THEORY_EXAMPLES)
        variants = res.get("variants", [])
        rows.append({"claim": res["claim"], "title": res["title"], "source": res["source"],
                     "symbolic": res["symbolic"]["status"] if res.get("symbolic") else "n/a",
                     "holds": res["holds"], "error": res.get("error"), "examples": res["examples"],
                     "counterexamples_expected": sum(bool(v["expected"]) for v in variants),
                     "counterexamples_found": sum(bool(v["expected"]) and bool(v["found"])
                                                  for v in variants)})
    atomic_write_json(cache, {"version": __version__, "ids": ids, "claims": rows})
    return rows


def spectral_table() -> list[dict[str, Any]]:
    """Growth with n of ALiBi's bias norm and the additive ratio, against RoPE's kernel norm and
    the multiplicative ratio, for one seeded content Gram (numerics) -- like for like: the
    content's norm, the additive ratio at content scales 1, 100, 10^4 and where ||cA|| = ||B||
    (the multiplicative ratio is the same at every scale), and RoPE's own per-plane logit
    ||L_RoPE|| / ||L_NoPE|| over content seeds beside the plane-averaged ||A o K|| / ||A||."""
    from ..numerics.bound_table import bound_report

    ns = [64, 256, 1024, 4096]
    alibi_report = bound_report("alibi", ns)
    alibi = {g["n"]: g for g in alibi_report["growth"]}
    rope = {g["n"]: g for g in bound_report("rope", ns)["growth"]}
    return [{"n": n, "alibi_norm": alibi[n]["norm"], "rope_norm": rope[n]["norm"],
             "ratio_additive": alibi[n]["ratio_additive"],
             "ratio_multiplicative": rope[n]["ratio_multiplicative"],
             "content_norm": alibi[n]["content_norm"],
             "ratio_additive_scaled": alibi[n]["ratio_additive_scaled"],
             "balance_scale": alibi[n]["balance_scale"],
             "ratio_additive_balanced": alibi[n]["ratio_additive_balanced"],
             "ratio_per_plane": rope[n]["ratio_per_plane"],
             "per_plane_content": alibi_report["per_plane_content"]} for n in ns]
