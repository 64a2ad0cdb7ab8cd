"""proofs: where the layers meet -- claims, conformance of users' PE code, verdicts over runs.

``claims/`` (with :mod:`.claim`, :mod:`.registry` and :mod:`.runner`) states each theorem with
its assumptions, symbolic proof and Hypothesis checks; ``conformance/`` checks other people's
RoPE and bias code; :mod:`.verdicts`, :mod:`.empirical_claims` and :mod:`.dynamics_verdicts`
turn stored training runs into verdicts.  Importing this package loads nothing heavy.
"""
