"""docs/theory.md's generated block equals a fresh derivation; the splice keeps other text."""

from posenc.theory.document import BEGIN, DEFAULT_PATH, END, committed_block, render, splice


def test_theory_md_matches_the_derivation():
    block = committed_block(DEFAULT_PATH.read_text())
    assert block is not None, "docs/theory.md lacks the derived-forms markers"
    assert block == render(), "docs/theory.md is out of date: run python -m posenc.theory.document"


def test_splice_rewrites_only_the_block():
    doc = f"# T\n\nintro\n\n{BEGIN}\nold\n{END}\n\n## Claims\nkept\n"
    out = splice(doc, "new\n")
    assert out == f"# T\n\nintro\n\n{BEGIN}\nnew\n{END}\n\n## Claims\nkept\n"
    appended = splice("# T\n\nintro\n", "x\n")
    assert appended.endswith(f"{BEGIN}\nx\n{END}\n") and appended.startswith("# T\n\nintro\n")
    assert committed_block(out) == "new\n"
