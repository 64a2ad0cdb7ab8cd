"""reproduction: ``posenc reproduce`` -- which runs reproduce which claim, the sweep that runs
them into a results store, and the rounds that add seeds where a claim is undecided.  It sits
above :mod:`posenc.report` (which only renders) and :mod:`posenc.verdicts` (which only judges);
neither of them, nor any layer, imports it.

* :mod:`.options`  -- :class:`ReproduceOptions`: one reproduction's options, checked once where
  a call enters (the command line, :func:`posenc.reproduce`) and handed down whole;
* :mod:`.plan`     -- :class:`ReproductionPlan`: the (task, role, seed) runs and their configs,
  and the replication's plan on a disjoint seed set;
* :mod:`.stores`   -- the stores checked before anything trains (one model-code mode per store,
  the replication's seeds disjoint);
* :mod:`.sweep`    -- :func:`run_plan`: one plan's runs into one store, resumably;
* :mod:`.progress` -- the sweep's progress: runs done of N, elapsed, ETA;
* :mod:`.rounds`   -- ``--until-decided``: more seeds, a batch at a time, only where a claim is
  undecided (its looks recorded by :mod:`posenc.verdicts.looks`);
* :mod:`.run`      -- :func:`reproduce`: all of it, then the report.

(The package is named for the activity: a submodule ``posenc.reproduce`` would replace the
front door's function :func:`posenc.reproduce` as the package attribute once imported.)
Importing it loads the empirical layer (torch), as running it does; the command line and
:func:`posenc.reproduce` import it when they run.
"""

from .options import ReproduceOptions
from .plan import ReproductionPlan
from .run import reproduce
from .stores import check_store_mode
from .sweep import run_plan

__all__ = ["ReproduceOptions", "ReproductionPlan", "check_store_mode", "reproduce", "run_plan"]
