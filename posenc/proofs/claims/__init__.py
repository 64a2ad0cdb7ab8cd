"""The claims, one module per topic; each module exports ``CLAIMS`` (a tuple of Claim)."""
