"""The child side of :mod:`.isolation`: ``python -m posenc.checker._child REQUEST OUT``.

REQUEST is the JSON of (target, kind, dim, expect, cwd); OUT is where the result goes, as JSON:
``{"report": ConformanceReport.to_dict()}`` or ``{"error": one line}``.  Whatever the user's code
does short of killing the process -- ``sys.exit``, any ``BaseException`` -- becomes that one line.
"""

from __future__ import annotations

import json
import os
import sys
from ..errors import PosencError
from . import check_impl
from .loading import one_line


def _write(path: str, payload: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, ensure_ascii=False, allow_nan=False)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    request, out = json.loads(argv[0]), argv[1]
    target = request["target"]
    # `module:function` finds modules in the caller's current directory, as `python -m` would.
    os.chdir(request["cwd"])
    sys.path.insert(0, request["cwd"])

    try:
        report = check_impl(target, kind=request["kind"], dim=request["dim"],
                            expect=request["expect"],
                            max_positions=request.get("max_positions"))
        payload = {"report": report.to_dict()}
    except PosencError as exc:
        payload = {"error": str(exc)}
    except SystemExit as exc:
        payload = {"error": f"{target} called sys.exit({exc.code!r}) while being checked; a PE "
                            f"function must return its result (nothing was checked)"}
    except BaseException as exc:        # KeyboardInterrupt, GeneratorExit, a user BaseException
        payload = {"error": f"{target} raised {one_line(exc)} (a BaseException, not an "
                            f"Exception; nothing was checked)"}
    try:
        _write(out, payload)
    except (TypeError, ValueError) as exc:     # a report that is not JSON: our bug, say so
        _write(out, {"error": f"internal error: the report is not JSON ({exc})"})
    return 0


if __name__ == "__main__":
    # Run as `python -m posenc.checker._child`: relative imports need the package.
    __package__ = "posenc.checker"
    sys.exit(main(sys.argv[1:]))
