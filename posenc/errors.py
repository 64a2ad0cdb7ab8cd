"""The one exception type for errors a user can cause.

Anything raised as :class:`PosencError` is turned by the CLI into a single
line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""

#: The modules only the empirical layer (training, ablation, the report's figures) imports: the
#: ``train`` extra.  The light install (``pip install posenc``) lacks them; derive, bound (without
#: ``--plot``), verify and check run without them.
TRAIN_EXTRA_MODULES = frozenset({"torch", "matplotlib", "tqdm"})
TRAIN_EXTRA_INSTALL = 'pip install "posenc[train]"'


def missing_extra(exc: ModuleNotFoundError, what: str) -> str | None:
    """The one-line message for ``what`` (a command) that needs a module of the ``train`` extra
    this install lacks; None when the missing module is another (a bug, or a user's import)."""
    module = (exc.name or "").split(".")[0]
    if module not in TRAIN_EXTRA_MODULES:
        return None
    return (f"{what} needs {module}, which this install lacks: {TRAIN_EXTRA_INSTALL} adds it (the "
            f"light install runs derive, bound without --plot, verify and check)")


class PosencError(ValueError):
    """A user-caused error: bad spec, bad parameter, bad file, bad input.

    A :class:`ValueError`, so ``except ValueError`` in a user's code catches it as it would
    catch numpy's or scipy's complaints about bad arguments.  Its message is one line: the
    same line the CLI prints after ``posenc: error:``.
    """


class MissingExtraError(PosencError, ModuleNotFoundError):
    """A public function or name of the ``train`` extra, used on the light install: the one line
    of :func:`missing_extra`, and still a :class:`ModuleNotFoundError` (its ``name`` the missing
    module) for code that catches those."""

    @classmethod
    def of(cls, exc: ModuleNotFoundError, what: str) -> "MissingExtraError | None":
        """The error for ``what`` when ``exc`` is a module of the ``train`` extra, else None."""
        message = missing_extra(exc, what)
        if message is None:
            return None
        error = cls(message)
        error.name = (exc.name or "").split(".")[0]
        return error


class WriteError(PosencError, OSError):
    """A file could not be written (a full disk, a read-only folder): one line, like any
    PosencError, and still an :class:`OSError` for code that catches those."""

    @classmethod
    def wrap(cls, what: str, exc: OSError) -> "WriteError":
        return cls(f"cannot write {what}: {exc.strerror or exc}")

    def __str__(self) -> str:  # the message alone, never OSError's "[Errno n] ..." form
        return str(self.args[0]) if self.args else ""
