"""The library's front door, one module per concern; ``posenc/__init__.py`` re-exports it lazily.

* :mod:`.bound` -- :func:`bound` and its typed :class:`BoundReport`;
* :mod:`.claims` -- :func:`verify` and :class:`ClaimResult`;
* :mod:`.conformance` -- :func:`check` of a Python callable or an ``IMPL`` string;
* :mod:`.experiments` -- :func:`train`, :func:`load_run`, :func:`ablate`, :func:`reproduce`.

``posenc.derive`` is :func:`posenc.theory.derive` itself.  Every CLI command is a thin wrapper
over one of these functions, so the library and the command line raise the same
:class:`~posenc.errors.PosencError` (a :class:`ValueError`) with the same one-line message.
"""
