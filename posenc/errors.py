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
