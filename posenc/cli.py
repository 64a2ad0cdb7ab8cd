"""The ``posenc`` command: argument parsing and dispatch to ``posenc.commands``.

Each sub-command lives in its own module under ``posenc/commands/`` with a
``register(subparsers)`` function that adds its parser and sets ``func``.
Modules import their heavy dependencies (sympy, scipy, torch) inside ``func``
so that ``posenc --help`` stays fast.  A :class:`~posenc.errors.PosencError`
(or an argparse error) becomes one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Sequence

from .errors import PosencError, missing_extra

#: Sub-command modules under ``posenc.commands``, in help order.
COMMANDS = (
    "encodings",
    "derive",
    "bound",
    "verify",
    "check",
    "train",
    "import-checkpoint",
    "ablate",
    "reproduce",
    "report",
    "results",
    "runs",
    "dynamics",
)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, wrapped only at spaces: a name never breaks at its hyphens
    (``paper-small-h4x16``, ``--from-hf`` stay whole on one line), and a word longer than the
    line (a path) overruns it rather than being cut."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False,
                             break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False,
                             break_long_words=False)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> "NoReturn":  # type: ignore[name-defined]  # noqa: F821
        # main prints "posenc: error: " before it: name the sub-command ("bound: ..."), never
        # "posenc" a second time
        command = self.prog.removeprefix("posenc").strip()
        raise PosencError(f"{command}: {message}" if command else message)


def build_parser() -> argparse.ArgumentParser:
    from . import __doc__ as package_doc, __version__
    from .commands import plain

    parser = _Parser(prog="posenc", description=plain(package_doc))
    parser.add_argument("--version", action="version", version=f"posenc {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"posenc.commands.{name.replace('-', '_')}").register(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = None
    try:
        parser = build_parser()
        words = list(sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(words)
        args.command_line = words  # the command as given (reproduce's resume line repeats it)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        code = args.func(args)
        return int(code or 0)
    except PosencError as exc:
        print(f"posenc: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # torch & co. of the train extra, on the light install
        message = missing_extra(exc, f"posenc {getattr(args, 'command', None) or ''}".strip())
        if message is None:
            raise
        print(f"posenc: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("posenc: interrupted", file=sys.stderr)
        return 130
    except MemoryError:  # an allocation the memory estimate did not foresee (or a ulimit)
        print("posenc: error: out of memory (an allocation failed); use a smaller size, or raise "
              "the process's memory limit (ulimit -v)", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system said no (full disk, read-only folder, ...)
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"posenc: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
