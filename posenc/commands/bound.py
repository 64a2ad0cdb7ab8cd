"""``posenc bound``: spectra of a PE's positional matrix beside the bounds that explain them.

For each sequence length n: the extreme eigenvalues / singular values, norm and
condition number of the PE's positional matrix (bias B, position Gram G or
rotary kernel K), next to the Szego (symbol), Gershgorin and per-plane bounds;
then the contraction report -- ||L||_2 / ||A||_2 and spec(L) for the
multiplicative coupling L = A o K and the additive one L = A + B, with the
Schur and Weyl bounds (Gu et al., arXiv 2505.13027).  A scaled RoPE (``rope:scaling=yarn,...``)
is shown beside the same RoPE unscaled: the kernel's spectrum and long-range decay at each n
(e.g. the original context and the extended one), and with ``--plot`` the decay against k.
It also shows the content's scale ||A||_2 and the additive ratio at other content scales (the
multiplicative one does not depend on it); and RoPE's own logit with its own content in every
rotary plane against NoPE's, beside the plane-averaged A o K.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ..errors import PosencError
from . import bound_model_table, hf_option, plain

if TYPE_CHECKING:
    from ..numerics.bound_rows import BoundReport
    from ..numerics.content import ContentSpec


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("bound", help="spectra and spectral bounds of a PE's positional matrix",
                        description=plain(__doc__))
    p.add_argument("spec", nargs="?", help="PE spec, e.g. alibi, rope:base=500000, "
                                           "'custom:kernel=exp(-0.1*abs(k))'")
    p.add_argument("--n", required=True, help="sequence length(s), e.g. 1024 or 64,256,1024,4096")
    p.add_argument("--head-dim", type=int, default=None,
                   help="head dimension d (default 64; with --from-hf the config's)")
    p.add_argument("--heads", type=int, default=None,
                   help="number of heads H (default 8; with --from-hf the config's)")
    p.add_argument("--head", type=int, default=0, help="which head, 0-based (default 0)")
    p.add_argument("--d-model", type=int, default=None,
                   help="model width for absolute PEs (default head-dim * heads)")
    p.add_argument("--content", default="rank=8,seed=0",
                   help="content matrix A: rank=R,seed=S (seeded Gram) or FILE.npy "
                        "(square; leading n x n sections are used)")
    p.add_argument("--values", default=None,
                   help="FILE.npy of learned values (T5/table bias, learned absolute table); "
                        "default: a seeded draw")
    p.add_argument("--seed", type=int, default=0, help="seed for learned values (default 0)")
    p.add_argument("--method", choices=("auto", "dense", "lanczos"), default="auto",
                   help="spectrum method (auto: dense LAPACK for n <= 512, Lanczos above)")
    p.add_argument("--reference", default="auto",
                   help="PE supplying the coupling the spec lacks (default: rope for additive, "
                        "alibi for multiplicative); 'none' to omit")
    p.add_argument("--scales", default="1,100,10000",
                   help="content scales c at which the additive ratio ||cA+B||/||cA|| is shown "
                        "(default 1,100,10000; the multiplicative ratio does not depend on c)")
    p.add_argument("--plane-seeds", type=int, default=5,
                   help="content seeds of RoPE's per-plane logit ratio ||L_RoPE||/||L_NoPE|| "
                        "(default 5; 0 leaves it out)")
    hf_option.add(p, "; --head-dim and --heads default to the config's", model=True)
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--plot", default=None, metavar="FILE.png",
                   help="draw norms, bounds and contraction ratios against n")
    p.set_defaults(func=run)


def parse_ns(text: str) -> list[int]:
    from ..limits import parse_int
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            n = parse_int(part, "--n")                       # 1024 or 1e6
        except PosencError:
            raise PosencError(f"--n must be positive integers separated by commas; got {part!r}") \
                from None
        out.append(n)  # n >= 1 and the size limits: posenc.bound checks them
    return out


def parse_scales(text: str) -> list[float]:
    """``--scales``: positive numbers separated by commas (checked by ``posenc.bound``)."""
    out = []
    for part in text.split(","):
        try:
            out.append(float(part.strip()))
        except ValueError:
            raise PosencError(f"--scales must be positive numbers separated by commas; got "
                              f"{part.strip()!r}"[:200]) from None
    return out


def parse_content(text: str) -> ContentSpec:
    """``--content``: ``rank=R,seed=S`` or ``FILE.npy`` (:func:`posenc.numerics.content.parse_content`)."""
    from ..numerics.content import parse_content as parse
    return parse(text)


def _load_values(path: str | None) -> object:
    if path is None:
        return None
    from ..api.bound import check_values
    from ..numerics.contraction import load_npy
    return check_values(load_npy(path, "values"), f"values in {path}")


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _print_tables(report: dict, table: str | None = None) -> None:
    k = report["kernel"]
    print(f"{report['spec']}: {k['description']}")
    print(f"  kind {k['kind']}, coupling {k['coupling']}, toeplitz {k['toeplitz']}, "
          f"source {k['source']}" + (f" (seed {k['seed']})" if k["seed"] is not None else "")
          + (f": {table}" if table else ""))
    for note in k["notes"]:
        print(f"  note: {note}")
    print(f"  content A: {report['content']}")
    head = ("n", "matrix", "quantity", "exact", "bound", "bound name", "holds", "method", "s")
    rows = [(str(r["n"]), r["matrix"], r["quantity"], _fmt(r["exact"]), _fmt(r["bound"]),
             r["bound_name"] or "-", {True: "yes", False: "NO", None: "-"}[r["holds"]],
             r["method"], f"{r['seconds']:.3f}") for r in report["rows"]]
    _table(head, rows)
    if len(report["growth"]) > 1:
        print("\ngrowth with n (P = the positional matrix above; A o K multiplicative, "
              "A + B additive):")
        head = ("n", "||P||_2", "sup|f_n|", "||P||/sup|f_n|", "||A+B||/||A||", "||A o K||/||A||")
        rows = []
        for g in report["growth"]:
            sup = g.get("symbol_sup")
            ratio = g["norm"] / sup if sup else None
            rows.append((str(g["n"]), _fmt(g["norm"]), _fmt(sup), _fmt(ratio),
                         _fmt(g.get("ratio_additive")), _fmt(g.get("ratio_multiplicative"))))
        _table(head, rows)
    _print_scales(report)
    if "scaling" in report:
        _print_scaling(report["scaling"])


def _print_scaling(sc: dict) -> None:
    """A scaled RoPE beside the same RoPE unscaled (posenc.numerics.scaling_rows)."""
    s = sc["attention_factor"]
    print(f"\nscaled RoPE beside the unscaled one ({sc['unscaled']}): {sc['scaling']} scaling, "
          f"original context {sc['original']}, extended {sc['extended']} (original x factor); "
          f"attention factor s = {s:.6g}, each rotary plane weighted s^2 = {s * s:.6g}")
    print("K(k) = w_0 + sum_m (2 s^2/d) cos(theta'_m k); far = |K(k)| / K(0) over the far half "
          "n/2 <= k < n (long-range decay)")
    head = ("n", "kernel", "lam_max(K)", "lam_min(K)", "||K||_2", "K(0)", "max far", "mean far")
    rows = [(str(r["n"]), r["kernel"], _fmt(r["lam_max"]), _fmt(r["lam_min"]), _fmt(r["norm"]),
             _fmt(r["diagonal"]), _fmt(r["far_max"]), _fmt(r["far_mean"])) for r in sc["rows"]]
    _table(head, rows)


def _print_scales(report: dict) -> None:
    """The contraction report like for like: the content's scale, the additive ratio at other
    scales, and RoPE's own per-plane logit beside the plane-averaged Hadamard ratio."""
    growth = report["growth"]
    scales = [f"{c:g}" for c in report.get("content_scales", ())]
    if any("ratio_additive_scaled" in g for g in growth):
        print("\ncontent scale: the ratios above are at the content A as stated (||A||_2 below).\n"
              "(cA) o K = c (A o K), so ||A o K||/||A|| is the same at every scale c; "
              "||cA + B||/||cA|| runs from ||B||/||cA|| to 1 as c grows:")
        head = ("n", "||A||_2", "||B||/||A||", *(f"||cA+B||/||cA|| c={c}" for c in scales),
                "at c=||B||/||A||", "||A o K||/||A|| (every c)")
        _table(head, [(str(g["n"]), _fmt(g.get("content_norm")), _fmt(g.get("balance_scale")),
                       *(_fmt(g["ratio_additive_scaled"].get(c)) for c in scales),
                       _fmt(g.get("ratio_additive_balanced")),
                       _fmt(g.get("ratio_multiplicative"))) for g in growth])
    if any("ratio_per_plane" in g for g in growth):
        print("\nper-plane content: the Schur contraction ||A o K|| <= ||A|| is about the "
              "plane-averaged kernel K\napplied to ONE content A shared by every rotary plane. "
              "RoPE's own logit gives each plane its own content\n"
              f"({report['per_plane_content']}), against NoPE's from the same content:")
        head = ("n", "||L_RoPE||/||L_NoPE|| mean", "min", "max", "plane-averaged ||A o K||/||A||")
        rows = []
        for g in growth:
            pp = g.get("ratio_per_plane")
            rows.append((str(g["n"]), *(_fmt(pp and pp[k]) for k in ("mean", "min", "max")),
                         _fmt(g.get("ratio_multiplicative"))))
        _table(head, rows)


def _table(head: tuple, rows: list[tuple]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def gershgorin_norm_bounds(report: BoundReport) -> dict[int, float]:
    """n -> the Gershgorin bound on the positional matrix's spectral norm (the plot's curve)."""
    return {r.n: r.bound for r in report.rows_of("norm") if r.bound_name == "Gershgorin"}


def _plot(report: BoundReport, path: str, envelope: tuple | None = None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    g = report.growth
    ns = [x.n for x in g]
    if envelope is None:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    else:
        fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(13.5, 3.6))
        _plot_decay(ax3, report.scaling, envelope)
    ax1.loglog(ns, [x.norm for x in g], "o-", label="||P||_2 (exact)")
    if all(x.symbol_sup for x in g):
        ax1.loglog(ns, [x.symbol_sup for x in g], "s--", label="sup |f_n| (Szego)")
    gers = gershgorin_norm_bounds(report)
    if len(gers) == len(ns):
        ax1.loglog(ns, [gers[n] for n in ns], "^:", label="Gershgorin")
    ax1.set_xlabel("n")
    ax1.set_title("positional matrix norm", fontsize=10)
    ax1.legend(fontsize=8)
    for key, label, style in (("ratio_additive", "||A+B|| / ||A|| (additive)", "o-"),
                              ("ratio_multiplicative", "||A o K|| / ||A|| (multiplicative)", "s-"),
                              ("ratio_hybrid", "||A o K + B|| / ||A|| (hybrid)", "^-")):
        if all(getattr(x, key) is not None for x in g):
            ax2.loglog(ns, [getattr(x, key) for x in g], style, label=label)
    if all(x.ratio_additive_balanced for x in g):            # content and bias equal in norm
        ax2.loglog(ns, [x.ratio_additive_balanced for x in g], "o--",
                   label="||cA+B|| / ||cA||, c = ||B||/||A|| (additive)")
    if all(x.ratio_per_plane for x in g):                    # RoPE's own logit, per plane
        mean = np.array([x.ratio_per_plane["mean"] for x in g])
        spread = np.array([[m - x.ratio_per_plane["min"], x.ratio_per_plane["max"] - m]
                           for m, x in zip(mean, g)]).T
        ax2.errorbar(ns, mean, yerr=spread, fmt="d:", capsize=3,
                     label="||L_RoPE|| / ||L_NoPE|| (per-plane content)")
    if report.scaling is None:
        ax2.axhline(1.0, color="grey", lw=0.8, ls="--", label="Schur bound max K_ii = 1")
    else:                                            # K(0) = s^2 for a fully rotary head
        kii = max(r.diagonal for r in report.scaling.rows if r.kernel == "scaled")
        ax2.axhline(kii, color="grey", lw=0.8, ls="--", label=f"Schur bound max K_ii = {kii:.4g}")
    ax2.set_xlabel("n")
    ax2.set_title(f"contraction vs expansion (content ||A||_2 = {g[0].content_norm:.3g} at n = "
                  f"{ns[0]})" if g[0].content_norm else "contraction vs expansion", fontsize=9)
    ax2.legend(fontsize=7, loc="center right")
    fig.suptitle(report.spec, fontsize=10)
    fig.tight_layout()
    from ..atomic import atomic_savefig
    try:
        atomic_savefig(fig, path, dpi=80, fmt="png")
    finally:
        plt.close(fig)


def _plot_decay(ax, sc, envelope: tuple) -> None:
    """max |K(k)| / K(0) over log bins of k: scaled vs unscaled, the contexts marked."""
    k, scaled, unscaled = envelope
    ax.loglog(k, unscaled, "-", color="grey", label=f"unscaled ({sc.unscaled})")
    ax.loglog(k, scaled, "-", color="C3", label=f"{sc.scaling} (s = {sc.attention_factor:.4g})")
    for x, name in ((sc.original, "original"), (sc.extended, "extended")):
        ax.axvline(x, color="k", lw=0.8, ls=":")
        ax.annotate(name, (x, 1.0), fontsize=7, rotation=90, va="top", ha="right")
    ax.set_xlabel("distance k = i - j")
    ax.set_title("kernel decay: max |K(k)| / K(0) per log bin", fontsize=10)
    ax.legend(fontsize=7, loc="lower left")


def _progress(line: str) -> None:
    """A stage of a long length (n >= 100,000), on stderr: the tables and JSON stay on stdout."""
    print(f"posenc: {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from ..api.bound import bound
    from ..atomic import check_figure_path
    from ..encodings import as_spec

    if args.plot is not None:                        # suffix and folder, before any work
        check_figure_path(args.plot, ("png",))
    given, info = hf_option.resolve(args.spec, args.from_hf, "bound", layers=args.hf_layers,
                                    model=(args.hf, args.gguf))
    if given is None:
        raise PosencError(f"bound: give {hf_option.choices()}")
    if args.head_dim is None:
        args.head_dim = info["head_dim"] if info else 64
    if args.heads is None:
        args.heads = info["heads"] if info else 8
    spec = as_spec(given)
    ns = parse_ns(args.n)
    content = parse_content(args.content)
    table = bound_model_table.model_table(args, spec, info, ns)
    values = _load_values(args.values) if table is None else table.values
    d_model = args.d_model if table is None else table.shape[1]
    if table is None and info is not None and spec.name == "learned_absolute" and values is None:
        print("  note: the position table is a seeded stand-in (a config has no weights); --hf DIR "
              "reads the model's own", file=sys.stderr)
    report = bound(spec, ns, head=args.head, n_heads=args.heads, head_dim=args.head_dim,
                   d_model=d_model, values=values, seed=args.seed, content=content,
                   reference=args.reference, method=args.method, progress=_progress,
                   scales=parse_scales(args.scales), plane_seeds=args.plane_seeds)
    if args.plot:
        envelope = None
        if report.scaling is not None:               # a scaled RoPE: its decay beside RoPE's
            from ..numerics.scaling_rows import decay_envelope
            envelope = decay_envelope(spec, max(ns), dict(
                head=args.head, n_heads=args.heads, head_dim=args.head_dim, d_model=args.d_model,
                seed=args.seed))
        _plot(report, args.plot, envelope)
    section = None if table is None else bound_model_table.gram_section(table, ns)
    if args.json:
        if section is None:
            print(report.to_json())
        else:
            from ..numerics.bound_rows import strict_json
            print(json.dumps(strict_json({**report.to_dict(), "position_table": section}), indent=1,
                             allow_nan=False))
    else:
        _print_tables(report.to_dict(), None if table is None else table.describe())
        if section is not None:
            print(f"\nposition Gram G = P P^T of {section['description']}, its first n "
                  f"positions:\n{bound_model_table.DISTANCE}")
            _table(*bound_model_table.section_rows(section, _fmt))
        if args.plot:
            print(f"\nplot written to {args.plot}")
    return 0
