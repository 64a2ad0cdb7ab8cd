"""report: renders ``posenc reproduce``'s report from a results store.  It asks
:mod:`posenc.verdicts` for the verdicts on the stored runs (and :mod:`posenc.proofs` for the
theory claims it shows) and only renders; the sweep that fills the store is
:mod:`posenc.reproduction`'s, which no module here imports.

* :mod:`.build`         -- ``posenc report``: report.md, report.json, runs.csv and figures from
  the stored runs (:func:`build_report`);
* :mod:`.markdown`      -- report.md's sections over one :class:`ReportInputs`;
* :mod:`.table`         -- its table rows, every cell escaped (a table renders);
* :mod:`.report_json`   -- report.json's format version and the one reader that checks it;
* :mod:`.figures`       -- the report's summary figures;
* :mod:`.dynamics`      -- the training-dynamics section (Sec. 6);
* :mod:`.measured`      -- the section behind the claims measured as the paper states them;
* :mod:`.theory_tables` -- the theory claims (proofs) and spectral table (numerics) it shows.

Importing this package loads nothing heavy (no torch, matplotlib, sympy).
"""

from .build import FIGURES, build_report
from .markdown import SECTIONS, ReportInputs, report_mode

__all__ = ["FIGURES", "SECTIONS", "ReportInputs", "build_report", "report_mode"]
