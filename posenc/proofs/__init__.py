"""proofs: the claims, where the layers meet and are held against each other.

``claims/`` (with :mod:`.claim`, :mod:`.registry` and :mod:`.runner`) states each theorem with
its assumptions, symbolic proof and Hypothesis checks.  The checker of users' PE code
(``posenc check``) is :mod:`posenc.checker`; the verdicts over stored training runs are
:mod:`posenc.verdicts`.  Importing this package loads nothing heavy.
"""
