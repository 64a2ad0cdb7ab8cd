"""The one exception type for errors a user can cause.

Anything raised as :class:`PosencError` is turned by the CLI into a single
line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""


class PosencError(Exception):
    """A user-caused error: bad spec, bad parameter, bad file, bad input."""
