"""Side by side in one process: ms per training step of posenc's model at an earlier commit
(``--before DIR``, a tree of it: ``git archive COMMIT | tar -x -C DIR``) and at this tree, the
same weights and batches, steps alternating (before, after / after, before) so background load
hits both alike.

A step = forward + backward + AdamW on one batch (train_step.make_step), through the fast path's
door (``fast``: ``fast.forward``) or the reference forward (``reference``: ``model(tokens)``);
1 thread (a sweep's run).  Per case: the median CPU ms per step of each (``time.process_time``),
the median of the after/before ratios of the pairs and their 25-75% range, and the largest
|logit difference| of the two on the first batch before any step (0 where the code computes the
same thing bit for bit).  Workloads: the quick preset (batch 16 and 32, ~58 tokens) and
paper-small in paper-code mode (128 tokens, batch 16, keys and values from the input).
Run: python benchmarks/before_after.py --before DIR [--pairs 30] [--pe rope,alibi,mla]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
from pathlib import Path

import torch
from train_step import make_step

PRESETS = (("quick", 16), ("quick", 32), ("paper-small", 16))


def load_tree(root: Path, name: str):
    """The ``posenc`` package of the tree ``root`` imported as ``name`` (its imports are
    relative, so it loads beside this tree's ``posenc``)."""
    spec = importlib.util.spec_from_file_location(name, root / "posenc" / "__init__.py",
                                                  submodule_search_locations=[str(root / "posenc")])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def parts(package: str):
    """(preset, apply_overrides, paper_code_fields, model_for, dataset_for, make_optimizer, fast)."""
    get = lambda m: importlib.import_module(f"{package}.empirical.{m}")  # noqa: E731
    config, runs, train = get("config"), get("training.runs"), get("training.train")
    return (config.preset, config.apply_overrides, get("paper_specs").paper_code_fields,
            runs.model_for, runs.dataset_for, train.make_optimizer, get("fast"))


def build(package: str, name: str, batch: int, pe: str, state=None):
    preset, apply_overrides, paper_code_fields, model_for, dataset_for, make_optimizer, fast = parts(package)
    if name == "paper-small":
        cfg = preset(name, "distance", f"paper-{pe}")
        cfg = apply_overrides(cfg, paper_code_fields(cfg.model.spec))
    else:
        cfg = preset(name, "distance", pe, batch_size=batch)
    torch.manual_seed(0)
    model = model_for(cfg)
    if state is not None:
        model.load_state_dict(state)
    data = dataset_for(cfg).train
    order = torch.randperm(len(data.tokens), generator=torch.Generator().manual_seed(0))
    batches = [(data.tokens[order[i * batch:(i + 1) * batch]], data.labels[order[i * batch:(i + 1) * batch]])
               for i in range(8)]
    return model.train(), batches, make_optimizer(model, cfg), fast


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, type=Path)
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--pe", default="rope,alibi,mla")
    ap.add_argument("--steps", default="fast,reference")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load_tree(args.before.resolve(), "posenc_before")
    print(f"{'preset':11s} {'batch':>5s} {'pe':6s} {'step':9s} {'before ms':>9s} {'after ms':>9s} "
          f"{'after/before':>12s} {'25-75%':>13s} {'max|dlogit|':>11s}")
    for name, batch in PRESETS:
        for pe in args.pe.split(","):
            for step in args.steps.split(","):
                after, batches, opt_a, fast_a = build("posenc", name, batch, pe)
                before, _, opt_b, fast_b = build("posenc_before", name, batch, pe, after.state_dict())
                fwd_a = (lambda t, m=after, f=fast_a: f.forward(m, t)) if step == "fast" else after
                fwd_b = (lambda t, m=before, f=fast_b: f.forward(m, t)) if step == "fast" else before
                with torch.no_grad():
                    diff = float((fwd_a(batches[0][0]) - fwd_b(batches[0][0])).abs().max())
                runs = {"a": make_step(fwd_a, after, batches, opt=opt_a),
                        "b": make_step(fwd_b, before, batches, opt=opt_b)}
                for i in range(3):
                    runs["a"](i), runs["b"](i)
                ms = {"a": [], "b": []}
                ratios = []
                for i in range(args.pairs):
                    t = {}
                    for key in ("a", "b") if i % 2 else ("b", "a"):
                        t[key] = runs[key](i)[1]
                        ms[key].append(1e3 * t[key])
                    ratios.append(t["a"] / t["b"])
                q = statistics.quantiles(ratios, n=4)
                print(f"{name:11s} {batch:5d} {pe:6s} {step:9s} {statistics.median(ms['b']):9.1f} "
                      f"{statistics.median(ms['a']):9.1f} {statistics.median(ratios):12.3f} "
                      f"  [{q[0]:.3f}, {q[2]:.3f}] {diff:11.1e}", flush=True)


if __name__ == "__main__":
    main()
