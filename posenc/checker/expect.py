"""``--expect``: what the user meant, checked against posenc's own reference of those conventions.

Rotary: ``base=500000,pairing=half,fraction=0.5`` (any subset; the rest default to the
catalogue's RoPE defaults, base 10000, interleaved pairing, fraction 1).  Bias:
``slopes=press|exp|S1:S2:...,direction=causal|symmetric``, or KERPLE-log's ``r1=..,r2=..``
(:mod:`.kerple`); ``dtype=bfloat16|float16`` states that the bias is computed in that precision
(Falcon's ALiBi is bfloat16 on purpose), and its entries are compared at that precision
(:func:`.entries.stored_as`).  xPos (``--kind xpos``): ``base=..,gamma=..,scale_base=..`` (:mod:`.xpos`).
The reference is built from :mod:`posenc.numerics.conventions` (rope_frequencies,
alibi_slopes), not from what the checker recovered, and compared with the user's function
entry by entry; for rotary functions also the logits ⟨f(q,m), f(k,n)⟩ = M_mᵀM_n against the
reference's.  A difference that cancels in the logits (a common position offset:
R_{m+c}ᵀR_{n+c} = R_mᵀR_n) is named as such.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..encodings import RoPE, rope_scaling
from ..errors import PosencError
from .entries import UNIT_ROUNDOFF, same, slope_rtol, roundoff, stored_as
from .report import FAIL, PASS, Property, fmt
from ..encodings.rope_scaling import DEFAULTS
from ..encodings.spec_parsing import parse_spec
from .logit_blocks import Blocks, first_difference, logit_probes
from .half import FORMATS

ROPE_KEYS = ("base", "pairing", "fraction")
#: Scaled RoPE (:mod:`posenc.encodings.rope_scaling`): the catalogue spec's own keys.
SCALING_KEYS = tuple(rope_scaling.DEFAULTS)
BIAS_KEYS = ("slopes", "direction", "r1", "r2", "dtype")
XPOS_KEYS = ("base", "gamma", "scale_base")
T5_KEYS = ("bidirectional", "num_buckets", "max_distance")
#: kind -> the --expect keys it takes ("base" is rotary's unless the kind is xpos).
KEYS = {"rope": ROPE_KEYS + SCALING_KEYS, "bias": BIAS_KEYS, "xpos": XPOS_KEYS, "t5": T5_KEYS,
        "rope-qk": ROPE_KEYS + SCALING_KEYS}
MAX_LIST = 4096


def _positive_list(key: str, value: str) -> list[float]:
    parts = value.replace(" ", ":").split(":")
    if len(parts) > MAX_LIST:
        raise PosencError(f"--expect {key}: at most {MAX_LIST} values")
    out = [_number(key, p) for p in parts if p]
    if not out or any(v <= 0 for v in out):
        raise PosencError(f"--expect {key}={value}: positive numbers separated by ':'")
    return out


def _number(key: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise PosencError(f"--expect {key}={text}: not a number") from None
    if not math.isfinite(v):
        raise PosencError(f"--expect {key}={text}: must be finite")
    return v


def parse_expect(expect, kind: Optional[str] = None) -> Optional[dict]:
    """``"k=v,k=v"`` (or a dict) -> a JSON-safe dict with a ``kind`` key; None for none."""
    if expect is None or expect == "" or expect == {}:
        return None
    if isinstance(expect, dict):
        items = [(str(k), ":".join(str(float(x)) for x in v) if isinstance(v, (list, tuple))
                  else str(v)) for k, v in expect.items() if k != "kind"]
    elif isinstance(expect, str):
        items = []
        for part in expect.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise PosencError(f"--expect: expected key=value pairs separated by commas; "
                                  f"got {part!r}")
            items.append((key.strip(), value.strip()))
    else:
        raise PosencError(f"expect must be a string or a dict; got {type(expect).__name__}")
    out: dict = {}
    scaling: dict = {}
    for key, value in items:
        if key in out or key in scaling:
            raise PosencError(f"--expect: {key} given twice")
        if key in SCALING_KEYS:
            scaling[key] = value
        elif key == "base":
            out[key] = _number(key, value)
            if out[key] <= 1:
                raise PosencError(f"--expect base={value}: the RoPE base must be > 1")
        elif key == "fraction":
            out[key] = _number(key, value)
            if not 0 < out[key] <= 1:
                raise PosencError(f"--expect fraction={value}: must be in (0, 1]")
        elif key == "pairing":
            if value not in ("interleaved", "half"):
                raise PosencError(f"--expect pairing={value}: must be interleaved or half")
            out[key] = value
        elif key == "direction":
            if value not in ("causal", "symmetric"):
                raise PosencError(f"--expect direction={value}: must be causal or symmetric")
            out[key] = value
        elif key == "slopes":
            if value in ("press", "exp"):
                out[key] = value
            else:
                try:
                    out[key] = _positive_list(key, value)
                except PosencError:
                    raise PosencError(f"--expect slopes={value}: press, exp or positive "
                                      f"numbers separated by ':'") from None
        elif key == "bidirectional":
            if value.lower() not in ("true", "false"):
                raise PosencError(f"--expect bidirectional={value}: must be true or false")
            out[key] = value.lower() == "true"
        elif key in ("num_buckets", "max_distance"):
            v = _number(key, value)
            if v != int(v) or not 2 <= v <= 4096:
                raise PosencError(f"--expect {key}={value}: an integer in [2, 4096]")
            out[key] = int(v)
        elif key == "dtype":
            if value not in ("float32", "bfloat16", "float16"):
                raise PosencError(f"--expect dtype={value}: must be float32, bfloat16 or float16")
            out[key] = value
        elif key in ("r1", "r2"):
            vals = _positive_list(key, value)
            out[key] = vals[0] if len(vals) == 1 and ":" not in value else vals
        elif key in ("gamma", "scale_base"):
            out[key] = _number(key, value)
            if out[key] <= 0:
                raise PosencError(f"--expect {key}={value}: must be > 0")
        else:
            raise PosencError(f"--expect: unknown key {key!r}; rotary: {', '.join(ROPE_KEYS)}, "
                              f"scaling=KIND,factor=F,... (the keys of rope:scaling=...); "
                              f"bias: {', '.join(BIAS_KEYS)}; xpos: {', '.join(XPOS_KEYS)}; "
                              f"t5: {', '.join(T5_KEYS)}")
    out.update(_scaling(scaling))
    if "slopes" in out and ("r1" in out or "r2" in out):
        raise PosencError("--expect mixes ALiBi's slopes with KERPLE-log's r1, r2")
    kinds = [k for k, keys in KEYS.items() if all(key in keys for key in out)]
    if kind is not None:
        found = kind
        if kind not in kinds:
            names = {"rope": "a rotary", "bias": "a bias", "xpos": "an xpos", "t5": "a T5 bucket",
                     "rope-qk": "a rotary"}
            other = next((k for k in kinds), None)
            raise PosencError(f"--expect {', '.join(out)} describes "
                              f"{names[other] + ' function' if other else 'no one kind'}, "
                              f"not --kind {kind}")
    elif len(kinds) == 1 or "rope" in kinds:   # base alone: rotary, as before xpos
        found = kinds[0]
    elif not kinds and any(k in T5_KEYS for k in out):
        raise PosencError(f"--expect mixes T5 bucket keys ({', '.join(T5_KEYS)}) with others")
    elif not kinds and any(k in XPOS_KEYS[1:] for k in out):
        raise PosencError(f"--expect mixes xpos keys ({', '.join(XPOS_KEYS)}) with others")
    else:
        raise PosencError("--expect mixes rotary keys (base, pairing, fraction) with bias keys "
                          "(slopes, direction, r1, r2)")
    out["kind"] = found
    return out


def _scaling(items: dict) -> dict:
    """The scaling keys, read and validated by the catalogue's own spec parser (so --expect takes
    what ``rope:scaling=...`` takes); lists (short_factor, long_factor) as JSON lists.

    ``scaling=dynamic`` without ``seq_len`` states the frequencies of lengths up to ``original``
    (``seq_len=original``: the trained ones, which transformers uses there, as ``--from-hf``
    states them); the ``dynamic scaling`` property probes the longer calls itself."""
    if not items:
        return {}

    if items.get("scaling") == "dynamic" and "seq_len" not in items:
        items = {**items, "seq_len": items.get("original", str(DEFAULTS["original"]))}

    text = ",".join(f"{k}={v.replace(':', ';') if k.endswith('_factor') else v}"
                    for k, v in items.items())
    try:
        spec = parse_spec(f"rope:{text}")
    except PosencError as exc:
        raise PosencError(f"--expect {text}: {exc}") from None
    return {k: list(getattr(spec, k)) if isinstance(getattr(spec, k), tuple) else getattr(spec, k)
            for k in items}


def expected_rope(conventions: dict) -> RoPE:
    """The catalogue RoPE of ``conventions`` (base, pairing, fraction and any scaling keys)."""
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in conventions.items()
          if k in ROPE_KEYS + SCALING_KEYS}
    try:
        return RoPE(**kw)
    except PosencError as exc:
        raise PosencError(f"--expect: {exc}") from None


# --- rotary ------------------------------------------------------------------------------------

def reference_rotations(conventions: dict, dim: int,
                        positions: np.ndarray) -> tuple[np.ndarray, RoPE]:
    """The catalogue RoPE of the given conventions at ``positions``: (S, dim, dim)."""
    from ..numerics.conventions import rope_attention_factor, rope_frequencies, rotary_dims

    spec = expected_rope(conventions)
    try:
        theta = rope_frequencies(spec, dim)                                 # (r/2,)
    except PosencError as exc:
        raise PosencError(f"--expect: {exc}") from None
    r = rotary_dims(spec, dim)
    M = np.tile(np.eye(dim), (len(positions), 1, 1))
    for m, t in enumerate(theta):
        a, b = (2 * m, 2 * m + 1) if spec.pairing == "interleaved" else (m, m + r // 2)
        c, s = np.cos(positions * t), np.sin(positions * t)
        M[:, a, a], M[:, b, b], M[:, b, a], M[:, a, b] = c, c, s, -s
    M[:, :r] *= rope_attention_factor(spec)         # cos and sin tables times s: rotary dims
    return M, spec


def expected_scaling(expected: Optional[dict], summary: dict) -> str:
    """``scaling=..,factor=..`` of an --expect with a scaling (its attention factor goes to the
    summary as ``expected_attention_factor``), else ``""``."""
    from ..numerics.conventions import rope_attention_factor

    if not expected or expected.get("scaling", "none") == "none":
        return ""
    conv = {k: v for k, v in expected.items() if k in SCALING_KEYS}
    summary["expected_attention_factor"] = rope_attention_factor(expected_rope(conv))

    def text(v) -> str:
        return ":".join(map(fmt, v)) if isinstance(v, list) else fmt(v) if isinstance(v, float) \
            else str(v)
    return ",".join(f"{k}={text(v)}" for k, v in conv.items())


def _differences(expected: dict, summary: dict, dim: int) -> list[str]:
    """The conventions that differ from what the checker recovered, in words."""
    out = []
    if "pairing" in expected and summary.get("pairing") not in (None, expected["pairing"]):
        out.append(f"pairing is {summary['pairing']}, expected {expected['pairing']}")
    r = summary.get("rotary_dims")
    if r and "fraction" in expected and abs(r / dim - expected["fraction"]) > 1e-12:
        out.append(f"{r} of {dim} dims rotate (fraction {fmt(r / dim, 4)}), expected fraction "
                   f"{fmt(expected['fraction'], 4)}")
    if summary.get("half_precision"):        # the rounding explains θ: no base claim
        out.append(summary["half_precision"])
    if summary.get("floored"):
        out.append(f"the positions are truncated to {summary['floored']}·⌊p/{summary['floored']}⌋")
    base, want = summary.get("base"), expected.get("base")
    if base and want and abs(base / want - 1) > 1e-4 and not summary.get("half_precision"):
        text = f"base is {fmt(base)}, expected {fmt(want)}"
        if abs(base / math.sqrt(want) - 1) < 1e-4:
            text += (f" -- θ_m = {fmt(want)}^(−m/d) instead of {fmt(want)}^(−2m/d): the "
                     f"arange(d/2)/d indexing slip (it should be arange(0, d, 2)/d)")
        out.append(text)
    if summary.get("scaling_found"):
        out.append(summary["scaling_found"])
    want_s = summary.get("expected_attention_factor")
    if want_s is not None and abs(summary.get("attention_factor", 1.0) - want_s) > 1e-5 * want_s:
        out.append(f"attention factor s = {fmt(summary.get('attention_factor', 1.0))} "
                   f"(‖f(x,p)‖ = s‖x‖), expected s = {fmt(want_s)}")
    if summary.get("offset"):
        out.append(f"positions start at {summary['offset']} (f(x, p) = RoPE(x, p + "
                   f"{summary['offset']}))")
    return out


def _logit_difference(M: np.ndarray, R: np.ndarray, tol: float) -> str:
    """Whether the user's logits ⟨f(q,m), f(k,n)⟩ = (M_mᵀM_n)_qk differ from the reference's,
    in words (see :mod:`.logit_blocks`: read through random content, then entry by entry)."""
    diff, worst, _ = first_difference(Blocks(M, M), Blocks(R, R), logit_probes(M, M),
                                      logit_probes(R, R), tol, order=lambda i, j: (i, j))
    if diff is None:
        return ("; the logits ⟨f(q,m), f(k,n)⟩ still equal the reference's (max dev "
                f"{worst:.1e}): the difference cancels in attention when q and k both get it")
    return (f"; the logits differ too: q = e_{diff.a}, k = e_{diff.b}: ⟨f(q,{diff.i}), "
            f"f(k,{diff.j})⟩ = {fmt(diff.got)}, the reference gives {fmt(diff.want)}")


def check_rope_expectation(M: np.ndarray, positions: np.ndarray, expected: dict, dim: int,
                           summary: dict, tol: float) -> Property:
    """Compare the user's rotations M (S, dim, dim) and logits with the expected reference.

    Conventions the user did not state are taken from what the checker recovered (so
    ``base=500000`` alone does not also demand the interleaved pairing), else the catalogue's
    defaults."""
    r = summary.get("rotary_dims")
    conventions = {"base": summary.get("base") or 10000.0,
                   "pairing": summary.get("pairing") or "interleaved",
                   "fraction": r / dim if r else 1.0}
    conventions.update({k: v for k, v in expected.items() if k in ROPE_KEYS + SCALING_KEYS})
    R, spec = reference_rotations(conventions, dim, positions.astype(np.float64))
    summary["expected_spec"] = spec.to_string()
    dev = np.abs(M - R)                                                     # (S, D, D)
    if not (dev.max() > tol):
        return Property("expected", PASS, f"f equals the reference {spec.to_string()} at "
                        f"positions 0..{positions[-1]} (max entry deviation {dev.max():.1e}); "
                        f"so do the logits ⟨f(q,m), f(k,n)⟩")
    what = _differences(expected, summary, dim)
    s, a, b = (int(v) for v in np.argwhere(dev > tol)[0])
    cex = (f"position {positions[s]}, x = e_{b}: f(x,p)_{a} = {fmt(M[s, a, b])}, the reference "
           f"gives {fmt(R[s, a, b])}")
    logits = _logit_difference(M, R, tol)
    return Property("expected", FAIL, f"not the expected {spec.to_string()}: "
                    + ("; ".join(what) if what else "the rotations differ") + logits, cex)


# --- bias --------------------------------------------------------------------------------------

def _reference_bias(slopes: np.ndarray, n: int, direction: str) -> np.ndarray:
    k = np.arange(n)[:, None] - np.arange(n)[None, :]                       # i − j
    if direction == "causal":
        dist = np.where(k >= 0, k, 0).astype(np.float64)
    else:
        dist = np.abs(k).astype(np.float64)
    return -slopes[:, None, None] * dist[None]


def _dtype_hint(biases: dict, refs: dict) -> str:
    """With no ``dtype`` stated: the words suggesting ``--expect dtype=..`` when the bias equals
    the reference at float16 (else bfloat16) precision -- entries within 4u of each head's
    largest (:func:`.entries.same` under :func:`.entries.stored_as`) -- though not at float32's:
    the evidence of a bias computed in that precision (Falcon's ALiBi is bfloat16); else ""."""
    if roundoff() is not None or not refs:
        return ""
    for dtype in reversed(FORMATS):           # the tighter one first: float16, then bfloat16
        with stored_as(dtype):
            if all(np.all(same(biases[H], ref)) for H, ref in refs.items()):
                return (f"the bias differs from it by {dtype} rounding alone (every entry within "
                        f"4u of its head's largest, u = 2^{int(np.log2(UNIT_ROUNDOFF[dtype]))}): "
                        f"pass --expect dtype={dtype} if it is computed in {dtype} on purpose (as "
                        f"Falcon's ALiBi is)")
    return ""


def check_bias_expectation(biases: dict, expected: dict, summary: dict) -> Property:
    """``biases``: H -> (H, n, n) softmax-normalised biases (see bias.py), compared entry by entry
    with :func:`.entries.same`."""
    from ..numerics.conventions import alibi_slopes

    want_dir = expected.get("direction")
    got_dir = summary.get("direction")
    problems = []
    if want_dir and got_dir != want_dir:
        problems.append(f"direction is {got_dir}, expected {want_dir}")
    slopes = expected.get("slopes", "press")
    direction = want_dir or (got_dir if got_dir in ("causal", "symmetric") else "symmetric")
    if isinstance(slopes, list):
        tests = {len(slopes): np.array(slopes)}
    else:
        tests = {H: alibi_slopes(H, slopes) for H in biases}
    label = f"{slopes} slopes" if isinstance(slopes, str) else "the given slopes"
    recovered = summary.get("slopes", {})
    refs = {}
    for H, ref_s in tests.items():
        B = biases.get(H)
        if B is None:
            continue
        ref = _reference_bias(ref_s, B.shape[1], direction)
        if direction == "causal":                  # above the diagonal: masked, any constant
            iu = np.triu_indices(B.shape[1], 1)
            ref[:, iu[0], iu[1]] = B[:, iu[0], iu[1]]
        refs[H] = ref
    for H, ref_s in tests.items():
        B, ref = biases.get(H), refs.get(H)
        if B is None or ref is None:
            continue
        bad = np.argwhere(~same(B, ref))
        if bad.size:
            h, i, j = (int(v) for v in bad[0])
            got = recovered.get(str(H))
            if got is not None and not np.allclose(got, ref_s, rtol=slope_rtol(), atol=1e-9):
                source = f"{slopes} gives" if isinstance(slopes, str) else "the given slopes give"
                problems.append(f"n_heads={H}, head {h}: slope {fmt(got[h])}, {source} "
                                f"{fmt(ref_s[h])}")
                other = summary.get("schedule")
                if other in ("press", "exp") and other != slopes:
                    problems.append(f"the slopes are {other}'s ("
                                    + ("2^(−8h/H)" if other == "press" else "e^(−h/H)")
                                    + f" for every n_heads): pass --expect slopes={other} if "
                                    f"that is meant")
            elif got is None:
                problems.append("the bias is not −slope·distance (not ALiBi)")
            hint = _dtype_hint(biases, refs)
            if hint:
                problems = [hint]          # the rounding explains every difference
            return Property("expected", FAIL, f"not ALiBi with {label}, {direction}: "
                            + "; ".join(problems or ["the entries differ"]),
                            f"n_heads={H}, head {h}: B[{i},{j}] = {fmt(B[h, i, j])}, the "
                            f"reference gives {fmt(ref[h, i, j])}")
    if problems:
        return Property("expected", FAIL, "; ".join(problems))
    heads = sorted(H for H in tests if H in biases)
    if not heads:
        return Property("expected", FAIL, f"--expect slopes lists {len(slopes)} slopes; no "
                        f"bias with that many heads was checked")
    return Property("expected", PASS, f"ALiBi with {label}, {direction}, for n_heads in "
                    f"{heads}")
