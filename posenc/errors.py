"""The one exception type for errors a user can cause.

Anything raised as :class:`PosencError` is turned by the CLI into a single
line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""


class PosencError(ValueError):
    """A user-caused error: bad spec, bad parameter, bad file, bad input.

    A :class:`ValueError`, so ``except ValueError`` in a user's code catches it as it would
    catch numpy's or scipy's complaints about bad arguments.  Its message is one line: the
    same line the CLI prints after ``posenc: error:``.
    """


class WriteError(PosencError, OSError):
    """A file could not be written (a full disk, a read-only folder): one line, like any
    PosencError, and still an :class:`OSError` for code that catches those."""

    @classmethod
    def wrap(cls, what: str, exc: OSError) -> "WriteError":
        return cls(f"cannot write {what}: {exc.strerror or exc}")

    def __str__(self) -> str:  # the message alone, never OSError's "[Errno n] ..." form
        return str(self.args[0]) if self.args else ""
