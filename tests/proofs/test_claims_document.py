"""The committed ``## Claims`` section of docs/theory.md is what the registry generates now."""

from pathlib import Path

import pytest

from posenc.proofs import document
from posenc.proofs.registry import all_claims

THEORY = Path(__file__).resolve().parents[2] / "docs" / "theory.md"


@pytest.mark.slow  # every claim under ci, ~90 s (shared with test_claims.py: conftest's ci-claims)
def test_committed_claims_section_is_current(ci_result):
    claims = all_claims()
    expected = document.render(claims, [ci_result(c) for c in claims])
    committed = document.current_section(THEORY.read_text(encoding="utf-8"))
    assert committed is not None, "docs/theory.md has no claims section"
    # exact (minus platform-dependent measurements) under the Hypothesis version that wrote it;
    # under another version the minimal counterexamples may differ, the rest may not
    exact = document.section_version(committed) == document.section_version(expected)
    assert document.comparable(committed, exact) == document.comparable(expected, exact), \
        "run `python -m posenc.proofs.document` and commit docs/theory.md"


def test_comparable_drops_only_measurements_and_counterexample_cells():
    text = ("Generated with Hypothesis 1.0, profile ci.\n**Measured: x.** 1e-3\n"
            "| without A | yes | `A = [[1]]` — bad |\n| without B | no | none in 25 inputs |\n")
    assert document.comparable(text, exact=True) == ("| without A | yes | `A = [[1]]` — bad |\n"
                                                     "| without B | no | none in 25 inputs |")
    assert "(found)" in document.comparable(text, exact=False)
    assert "none in 25 inputs" in document.comparable(text, exact=False)


def test_splice_touches_only_the_marked_section():
    other = "# Theory\n\nintro\n\n## Derivations\n\nkept text\n"
    once = document.splice(other, "first\n")
    assert once.startswith(other) and "## Claims" in once
    twice = document.splice(once + "\ntrailing text by someone else\n", "second\n")
    assert "first" not in twice and "second\n" + document.END in twice
    assert twice.startswith(other) and twice.endswith("trailing text by someone else\n")


def test_every_claim_is_documented_with_its_counterexamples(ci_result):
    text = THEORY.read_text(encoding="utf-8")
    for claim in all_claims():
        assert f"### `{claim.id}`" in text
        for v in ci_result(claim)["variants"]:
            assert v["drops"].replace("|", "\\|") in text
