"""proofs: where the layers meet -- claims, conformance of users' PE code, verdicts over runs.

``claims/`` (with :mod:`.claim`, :mod:`.registry` and :mod:`.runner`) states each theorem with
its assumptions, symbolic proof and Hypothesis checks; ``conformance/`` checks other people's
RoPE and bias code; ``verdicts/`` turns stored training runs into verdicts on the empirical
claims.  Importing this package loads nothing heavy.
"""
