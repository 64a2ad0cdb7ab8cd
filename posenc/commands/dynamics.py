"""``posenc dynamics RUN_DIR``: the gradient seed and head importance over training (Gu et al., Sec. 6).

Reads ``dynamics.jsonl.gz`` (or a plain ``dynamics.jsonl`` of before) of a run trained with
dynamics recording (see :mod:`posenc.empirical.analysis.dynamics`); ``--record`` first trains (or
resumes) such a run into RUN_DIR with a preset, then ablates it.  Prints when the deposit
head's advantage appears and whether the first N steps predict it; ``--plot`` draws the seed /
coherence / importance / margin curves.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..training_presets import preset_help
from . import add_set_option, parse_sets, plain


def register(subs: argparse._SubParsersAction) -> None:
    p = subs.add_parser("dynamics", help="positional gradient seed, head importance and margins "
                                         "over training; can the deposit head be predicted early?",
                        description=plain(__doc__))
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder with dynamics.jsonl(.gz)")
    p.add_argument("--early", type=int, metavar="N",
                   help="predict from the records of the first N steps (default 10%% of training)")
    p.add_argument("--plot", metavar="FILE", help="write the curves to FILE (.png or .pdf)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    g = p.add_argument_group("recording a run first (--record)")
    g.add_argument("--record", action="store_true",
                   help="train RUN_DIR with dynamics recording (resumes; skips if finished)")
    g.add_argument("--task", default="distance", help="distance (default) or count")
    g.add_argument("--pe", default="rope", help="PE spec (default rope)")
    g.add_argument("--preset", default="quick", help=preset_help())
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--epochs", type=int, help="override the preset's number of epochs")
    g.add_argument("--threads", type=int, help="torch threads, at least 1 (default: torch's)")
    g.add_argument("--every", type=int, default=25, help="record every N steps (default 25)")
    add_set_option(g, "the recorded run", "; --epochs wins")
    p.set_defaults(func=run)


def _record(args: argparse.Namespace) -> None:
    from ..empirical.analysis.dynamics import DynamicsConfig
    from ..empirical.config import check_overrides, check_threads, preset
    from ..empirical.pipeline.dynamics_sweep import dynamics_worker

    if args.threads is not None:
        check_threads(args.threads)
    over = check_overrides(parse_sets(args.overrides), "--set")
    if args.epochs is not None:
        over["epochs"] = args.epochs
    cfg = preset(args.preset, task=args.task, pe=args.pe, seed=args.seed, **over)
    dyn = DynamicsConfig(every=args.every)
    dynamics_worker({"train": cfg.to_dict(), "dynamics": dyn.to_dict()}, args.run_dir,
                    args.threads or 0)  # 0: the worker keeps torch's setting


def _yn(v) -> str:
    return "-" if v is None else ("yes" if v else "no")


def _text(s: dict) -> str:
    dl, dh = s["deposit"]
    pct = lambda step: f"{100 * step / max(1, s['total_steps']):.0f}%"  # noqa: E731
    lines = [f"{s['pe']} / {s['task']} / seed {s['seed']}: {s['total_steps']} steps, "
             f"{len(s['steps'])} records{'' if s['complete'] else ' (run not finished)'}; "
             f"final deposit head L{dl} H{dh} (from {s['deposit_source']})",
             "", f"prediction from the first {s['early_steps']} steps ({s['early_records']} "
             f"records)      predicted  exact  head in deposit layer"]
    names = {"signal": "largest mean |seed|", "attribution": "largest attribution",
             "importance": "largest measured importance"}
    for key, name in names.items():
        p = s["prediction"][key]
        where = "-" if p["predicted"] is None else f"L{p['predicted'][0]} H{p['predicted'][1]}"
        lines.append(f"  {name:<44} {where:<10} {_yn(p['hit']):<6} {_yn(p['head_hit'])}")
    lines.append(f"  {'chance':<44} {'':<10} {s['chance']['hit']:<6.3f} {s['chance']['head_hit']:.3f}")
    adv = s["advantage_step"]
    lines += ["", "deposit head's advantage: " + (
        f"most important head of layer {dl} from step {adv} ({pct(adv)} of training) to the end"
        + (f", with {100 * s['advantage_share']:.1f}% of its final importance then"
           if s.get("advantage_share") is not None else "")
        if adv is not None else "never stable")]
    if "coherence_max" in s:
        th = s["top_signal_head"]
        lines.append(f"early coherence |seed|/mean|psi|: max over heads {s['coherence_max']:.3f}; "
                     f"top-signal head L{th[0]} H{th[1]} {s['coherence_top']:.3f}, sign "
                     f"consistent over {100 * s['batch_sign_consistency']:.0f}% of probe batches")
    lines += ["", "layer  margin |seed| (early)  margin importance (final)"]
    for l in range(s["n_layers"]):
        sm = s.get("signal_margin", [None] * s["n_layers"])[l]
        im = s.get("importance_margin", [None] * s["n_layers"])[l]
        lines.append(f"  L{l}   {'-' if sm is None else f'{sm:.3g}':<22} "
                     f"{'-' if im is None else f'{im:.3g}'}")
    fmt = lambda v: "-" if v is None else f"{v:+.2f}"  # noqa: E731
    lines.append(f"mean log gain per layer, deep -> shallow (Thm 6.1 predicts > 0): "
                 f"|seed| {fmt(s.get('signal_mean_log_gain'))}, importance "
                 f"{fmt(s.get('importance_mean_log_gain'))}")
    hits = [c["step"] for c in s["curve"] if c["signal_head_hit"]]
    if "coherence_max" in s:
        lines.append(f"steps N at which the first-N |seed| names the deposit head of its layer: "
                     f"{', '.join(map(str, hits)) or 'none'}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..empirical.analysis.dynamics import read_dynamics_file
    from ..empirical.analysis.dynamics_plots import plot_dynamics
    from ..empirical.analysis.dynamics_summary import summarize_run
    from ..errors import PosencError
    if args.plot and Path(args.plot).suffix.lower() not in (".png", ".pdf"):
        raise PosencError(f"--plot must name a .png or .pdf file; got {args.plot}")
    if args.early is not None and args.early < 0:
        raise PosencError(f"--early must be >= 0 steps; got {args.early}")
    if args.overrides and not args.record:
        raise PosencError("dynamics: --set changes the run that --record trains; give --record")
    if args.record:
        _record(args)
    summary = summarize_run(args.run_dir, args.early)
    if args.plot:
        header, records = read_dynamics_file(args.run_dir)
        plot_dynamics(header, records, summary, args.plot)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(_text(summary))
        if args.plot:
            print(f"\nplot: {args.plot}")
    return 0
