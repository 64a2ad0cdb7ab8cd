"""``posenc check``: conformance of other people's PE code to the catalogue's conventions.

Entry points (the Python API behind ``posenc.check`` and the ``posenc check`` command):

* :func:`check_callable` -- check a Python callable in this process;
* :func:`check_target` -- load ``module:function``, ``module.function`` or ``file.py:function``
  in a child process with a time limit (see :mod:`.isolation`) and check it there;
* :func:`check_impl` -- the same as check_target but in this process (what the child runs).

Each returns a :class:`ConformanceReport` (``.ok``, ``.properties``, ``.summary``,
``.to_dict()`` JSON-safe, ``.text()``).  The kinds:

* ``rope`` -- a rotary function ``f(x, positions) -> x_rotated``, x of shape (..., seq, dim)
  (numpy float64 first, torch tensors if numpy inputs raise; x with 2, 3 or 4 axes, whichever
  keeps its shape), positions (seq,) int64: see :mod:`.rope`, :mod:`.positions`,
  :mod:`.rope_frequency`;
* ``bias`` -- ``g(n_heads, n) -> (heads, n, n)`` with Python ints: see :mod:`.bias` (ALiBi's
  form and slopes) and :mod:`.kerple` (KERPLE-log's form, r1 and r2);
* ``xpos`` -- ``f(q, k, positions) -> (q_rotated, k_rotated)``, RoPE with xPos's per-plane
  decay (q and k scaled differently, so one function of both): see :mod:`.xpos`.  Not detected:
  give ``kind="xpos"`` (``--kind xpos``) or an ``--expect`` with gamma or scale_base.

``kind=None`` detects the kind: the callable is first tried as a bias function with small ints.
If g(2, 4) returns an array, a bias is the plausible kind: a (2, 4, 4) result is checked as one,
and another shape is reported alone (unless the callable also works as a rotary function).  If it
raises, the callable is checked as a rotary function and only that attempt's error is shown.
``expect`` (``--expect``) states the intended conventions: see :mod:`.expect`.  Bad input is a
one-line :class:`~posenc.errors.PosencError` (``posenc check`` exit 2).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..coerce import is_int
from ..errors import PosencError
from .expect import parse_expect, expected_scaling, check_rope_expectation
from .isolation import DEFAULT_TIMEOUT, check_target
from .kinds import IMPL_KINDS, SIGNATURES, check_kind, check_max_positions
from .loading import Caller, load_callable
from .report import FAIL, INFO, NA, PASS, CheckReport, ConformanceReport, Property
from .rope import RopeProbe, GRID, TOL, check_linear, check_pairing, check_shift
from .positions import check_positions
from .rope_frequency import check_drift, check_frequencies
from .rope_scale import ScaledProbe, norm_property, scale_value
from .reach import probe_reach
from .half import half_tables
from .rope_dynamic import check_dynamic, wants_dynamic
from .xpos import check_xpos as check
from .bias import check_bias
from .rope_qk import check_rope_qk
from .t5 import check_t5

MAX_DIM = 4096
# Head dims tried when the given --head-dim does not work, to tell the user which one does.
OTHER_DIMS = (128, 64, 256, 32, 16, 80, 96, 112, 160, 8)


def _bias_probe(caller: Caller) -> tuple[Optional[bool], str]:
    """(True: a bias; False: returned an array of another shape; None: raised, message)."""
    try:
        out = caller.call_plain(2, 4)
    except PosencError as exc:
        return None, str(exc)
    while out.ndim > 3 and out.shape[0] == 1:
        out = out[0]
    if out.shape == (2, 4, 4):
        return True, ""
    return False, f"{caller.impl}: g(2, 4) returned shape {out.shape}, not (2, 4, 4)"


def _dim_hint(caller: Caller, dim: int) -> str:
    rng = np.random.default_rng(0)
    for d in OTHER_DIMS:
        if d == dim:
            continue
        probe = RopeProbe(Caller(caller.fn, caller.impl), d)
        try:
            probe.apply(rng.standard_normal((2, 4, d)), np.arange(4))
        except PosencError:
            continue
        return f"; it works with head dim {d}: pass --head-dim {d}"
    return ""


def check_rope(caller: Caller, impl: str, dim: int, expected: Optional[dict] = None,
               max_positions: Optional[int] = None) -> ConformanceReport:
    _check_dim(dim)
    probe = RopeProbe(caller, dim)
    positions = np.arange(GRID)
    try:
        M = probe.matrices(positions)                                     # (GRID, dim, dim)
    except PosencError as exc:
        raise PosencError(f"{exc}{_dim_hint(caller, dim)}") from None
    report = ConformanceReport(impl, "rope", caller.mode or "numpy")
    props, summary = report.properties, report.summary
    props.append(Property("shape", PASS, f"x (..., seq, {dim}) -> same shape (x given with "
                          f"{probe.rank} axes)"))
    if not np.all(np.isfinite(M)):
        s = int(np.argwhere(~np.isfinite(M))[0][0])
        props.append(Property("finite", FAIL, "returned NaN or infinity",
                              f"basis vectors at position {positions[s]}"))
        return report
    props.append(check_linear(probe, M, positions))
    M_user, scaled = M, expected_scaling(expected, summary)
    norm, scale = norm_property(M, positions, summary, scaled)
    props.append(norm)
    if scale is not None:               # s R_p: read the rotations off f / s (see rope_scale.py)
        summary["attention_factor"] = scale_value(scale)
        probe, M = ScaledProbe(probe, scale), M / scale[None, :, None]
    props.append(check_shift(M_user, positions))
    used, M0, ignored = check_positions(probe, M, positions, summary)
    props.append(used)
    if ignored:
        for name in ("pairing", "frequencies", "float32 drift"):
            props.append(Property(name, NA, "the positions are ignored (see uses positions)"))
    else:
        large, reach, raised = probe_reach(probe, M, max_positions, summary)
        props.append(reach)
        big = 1000 if 1000 in large else next((p for p in large if p > GRID - 1), None)
        Mbig = probe.matrices(np.array([big])) if big is not None else M[-1:]
        big = GRID - 1 if big is None else big
        Mrel, Mbig_rel = M, Mbig
        if M0 is not None:              # read the rotations relative to position 0
            Mrel = np.einsum("sab,cb->sac", M, M0)
            Mbig_rel = np.einsum("sab,cb->sac", Mbig, M0)
        props.append(check_pairing(Mrel, positions, Mbig_rel, summary))
        if summary.get("start_angle"):      # sin/cos swapped: the angles run backwards
            for name in ("frequencies", "float32 drift"):
                props.append(Property(name, NA, "sin and cos are swapped (see uses positions)"))
        else:
            props.append(check_frequencies(Mrel, Mbig_rel, big, dim, summary, expected))
            if any(p.status == FAIL for p in props):
                words = half_tables(Mrel, summary.get("planes"))
                if words:
                    summary["half_precision"] = words
                    freq = props[-1]
                    if freq.name == "frequencies" and freq.status == FAIL:   # no base claim
                        freq.detail = ("θ_m fit no base^(−2m/r) because the angles are rounded "
                                       "(see half precision)")
                        freq.counterexample = None
                    props.append(Property("half precision", FAIL, words,
                                          "x = e_a, positions 1..23: the entries or angles, "
                                          "rounded to that format, are unchanged"))
            if raised:
                props.append(Property("float32 drift", FAIL, "raised below --max-positions",
                                      raised))
            else:
                props.append(check_drift(probe, dim, summary, large))
            if wants_dynamic(expected):
                props.append(check_dynamic(probe, dim, summary, expected))
    if expected:
        props.append(check_rope_expectation(M_user, positions, expected, dim, summary, TOL))
    return report


def check_xpos(caller: Caller, impl: str, dim: int,
               expected: Optional[dict] = None) -> ConformanceReport:
    _check_dim(dim)
    return check(caller, impl, dim, expected)


def _check_dim(dim: int) -> None:
    if not is_int(dim) or dim < 2 or dim % 2 or dim > MAX_DIM:
        raise PosencError(f"--head-dim must be an even number in [2, {MAX_DIM}]; got {dim}")


def check_callable(fn: Callable[..., Any], kind: Optional[str] = None, *, dim: int = 64,
                   expect=None, name: Optional[str] = None,
                   max_positions: Optional[int] = None) -> ConformanceReport:
    """Check ``fn`` in this process as a ``kind`` ("rope" | "bias" | "xpos" | None to detect).

    ``expect``: ``"base=500000,pairing=half"`` / ``"slopes=press,direction=causal"`` or the same
    as a dict.  ``name`` labels the report (default: the function's qualified name).
    ``max_positions``: a rotary function is probed only at positions below it (a position
    table's size); by default the size is detected (see :mod:`.reach`)."""
    check_kind(kind)
    check_max_positions(max_positions)
    if not callable(fn):
        raise PosencError(f"{type(fn).__name__} object is not callable")
    expected = parse_expect(expect, kind)
    inferred = kind is None and (expected or {}).get("kind") is not None
    kind = kind or (expected or {}).get("kind")
    impl = name or getattr(fn, "__qualname__", None) or repr(fn)
    caller = Caller(fn, impl)

    checks = {"bias": lambda: check_bias(caller, impl, expected),
              "t5": lambda: check_t5(caller, impl, expected),
              "rope-qk": lambda: check_rope_qk(caller, impl, dim, expected),
              "rope": lambda: check_rope(caller, impl, dim, expected, max_positions),
              "xpos": lambda: check_xpos(caller, impl, dim, expected)}
    if kind in checks and not inferred:
        return checks[kind]()
    if kind in checks:  # the kind came from --expect's keys: a failure may be a kind mismatch
        try:
            return checks[kind]()
        except PosencError as exc:
            keys = ",".join(k for k in expected if k != "kind")
            raise PosencError(f"--expect {keys} describes a {SIGNATURES[kind]}, and {impl} failed "
                              f"when called as one ({exc}); if it is another kind, give --kind "
                              f"or the --expect keys of that kind") from None
    is_bias, why_not = _bias_probe(caller)
    if is_bias:
        return check_bias(caller, impl, expected)
    if is_bias is None:                 # g(2, 4) raised: a rotary function; its errors alone
        return check_rope(Caller(fn, impl), impl, dim, expected, max_positions)
    try:                                # returned an array of the wrong shape: a bias, most likely
        return check_rope(Caller(fn, impl), impl, dim, expected, max_positions)
    except PosencError:
        raise PosencError(why_not) from None


def check_impl(impl: str, kind: Optional[str] = None, dim: int = 64,
               expect=None, max_positions: Optional[int] = None) -> ConformanceReport:
    """Load ``impl`` in this process and check it (see :func:`check_target` for the isolated
    version the command uses)."""
    check_kind(kind)
    check_max_positions(max_positions)
    return check_callable(load_callable(impl), kind, dim=dim, expect=expect, name=impl,
                          max_positions=max_positions)


__all__ = ["check_callable", "check_target", "check_impl", "parse_expect", "ConformanceReport",
           "CheckReport", "Property", "IMPL_KINDS", "FAIL", "PASS", "INFO", "NA", "DEFAULT_TIMEOUT"]
