"""verdicts: stored training runs turned into verdicts on the paper's empirical claims.

* :mod:`.verdict`   -- a stated statistic, its interval over seeds, one word
  (:func:`judge`, :class:`Verdict`; the rules are in that module's doc: one fixed
  primary part per claim, the others shown and not judged; :func:`judge_standardized` for a
  statistic compared with its run-to-run noise);
* :mod:`.runs`      -- the one path from runs to a judged part: runs per (task, role, seed)
  (:class:`SeedRuns`), a per-seed statistic on the seeds they share (:func:`judge_part`);
* :mod:`.accuracy_runs` -- runs read as accuracies and deposits (:class:`Runs`), and the parts
  judged on them, shared by the claims below;
* :mod:`.accuracy_deposit` -- claims E10-E14, the accuracy and deposit tables;
* :mod:`.mla_latent` -- E13 read both ways: MLA's deposit from its heads (``zero``) and from
  the paper code's latent columns (``latent-columns``), descriptive;
* :mod:`.conjunction` -- a claim of several conditions judged as one primary part (AD, E12, MX);
* :mod:`.claim`     -- the record of an empirical claim (:class:`~.claim.MeasuredClaim`: its
  statement, its parts' statistics and the rules that turn them into words), as data;
* :mod:`.measured`  -- the claims measured as the paper states them, and negative controls, one
  record each;
* :mod:`.drift_null` -- RA's null: the growth AdamW gives a relative table of pure noise in a
  run's own schedule;
* :mod:`.alibi_claims` -- ALiBi's accuracy claims AL1 ("fails": did not learn) and AL2;
* :mod:`.dynamics`  -- the training-dynamics claims (Prop. 6.1 / 6.2, Thm. 6.1);
* :mod:`.stability` -- claim S over matched phases of training.

Importing this package loads nothing heavy.
"""

from .dynamics import evaluate_dynamics, prediction_table
from .accuracy_deposit import accuracy_table, deposit_table, evaluate
from .runs import SeedRuns, judge_part
from .verdict import (CEILING_MARGIN, SHOWN, VERDICTS, Interval, Verdict, at_ceiling,
                      binomial_se, bounded_interval, ceiling_threshold, combine, decide, judge,
                      judge_standardized, standardized_interval, t_interval, verdict_from_parts)

__all__ = ["CEILING_MARGIN", "SHOWN", "VERDICTS", "Interval", "SeedRuns", "Verdict",
           "accuracy_table", "at_ceiling", "binomial_se", "bounded_interval", "ceiling_threshold",
           "combine", "decide", "deposit_table", "evaluate", "evaluate_dynamics", "judge",
           "judge_part", "judge_standardized", "prediction_table", "standardized_interval",
           "t_interval", "verdict_from_parts"]
