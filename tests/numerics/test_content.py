"""The content spec of ``posenc bound``: parsed once, refused in one line, round-tripped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.cli import main
from posenc.errors import PosencError
from posenc.limits import MAX_WIDTH
from posenc.numerics.content import (MAX_SEED, MatrixContent, SeededContent, as_content,
                                     parse_content)
from posenc.numerics.contraction import seeded_content
from posenc.numerics.bound_table import bound_table


@pytest.fixture
def files(tmp_path):
    np.save(tmp_path / "good.npy", np.arange(16.0).reshape(4, 4))
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    np.save(tmp_path / "rect.npy", np.ones((2, 3)))
    np.save(tmp_path / "flat.npy", np.ones(4))
    np.save(tmp_path / "cplx.npy", np.eye(3) * 1j)
    return tmp_path


REFUSED = [("rank=0", "content rank must be a positive integer"),
           ("rank=-2", "content rank must be a positive integer"),
           (f"rank={MAX_WIDTH + 1}", "exceeds the limit"),
           ("rank=2.5", "--content rank must be an integer"),
           ("seed=-1", "content seed must be an integer >= 0"),
           (f"seed={MAX_SEED + 1}", "exceeds the limit"),
           ("bogus", "rank=R,seed=S or a FILE.npy"),
           ("rank=3,depth=2", "rank=R,seed=S or a FILE.npy"),
           ("{d}/missing.npy", "file not found"),
           ("{d}/rect.npy", "must be square; got shape (2, 3)"),
           ("{d}/flat.npy", "must be square; got shape (4,)"),
           ("{d}/nan.npy", "NaN or infinity at (0, 1)"),
           ("{d}/cplx.npy", "must be real numbers")]


@pytest.mark.parametrize("text, message", REFUSED)
def test_bad_content_is_refused_in_one_line(files, capsys, text, message):
    text = text.format(d=files)
    with pytest.raises(PosencError, match=None) as err:
        parse_content(text)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert main(["bound", "rope", "--n", "4", "--content", text]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip().splitlines() == [f"posenc: error: {err.value}"]


@pytest.mark.parametrize("value, message", [
    (("seeded", 0, 1), "content rank"), (("seeded", 4), "('seeded', rank, seed)"),
    (("random", 4, 1), "('seeded', rank, seed)"), (b"rank=4", "square array"),
    (3.0, "square array"), (np.ones((3, 2)), "square"), (np.array([[np.inf]]), "NaN"),
    (("seeded", True, 1), "content rank"), (("seeded", 4, 1.5), "content seed")])
def test_the_python_forms_are_refused_in_one_line(value, message):
    with pytest.raises(PosencError) as err:
        as_content(value)
    assert message in str(err.value) and "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, MAX_WIDTH), st.integers(0, MAX_SEED))
def test_seeded_round_trips_through_its_text(rank, seed):
    c = SeededContent(rank, seed)
    assert parse_content(c.to_string()) == c
    assert as_content(("seeded", rank, seed)) == c == as_content(c.to_string())
    assert parse_content(f"seed={seed},rank={rank}") == c


def test_defaults_and_partial_text():
    assert as_content(None) == SeededContent(8, 0) == parse_content("rank=8")
    assert parse_content("seed=3") == SeededContent(8, 3)


def test_a_file_round_trips_and_the_matrix_is_a_private_read_only_copy(files):
    path = str(files / "good.npy")
    c = parse_content(path)
    assert isinstance(c, MatrixContent) and c.to_string() == path and c.size == 4
    assert np.array_equal(c.matrix, np.load(path))
    assert np.array_equal(parse_content(c.to_string()).matrix, c.matrix)
    a = np.eye(3)
    m = as_content(a)
    a[0, 0] = 5.0
    assert m.matrix[0, 0] == 1.0 and not m.matrix.flags.writeable
    with pytest.raises(PosencError, match="no command-line form"):
        m.to_string()


def test_sections_are_the_leading_blocks(files):
    sec = SeededContent(3, 7).sections(50)
    assert np.array_equal(sec(20).x, seeded_content(20, 3, 7).x)    # rows do not depend on N
    m = parse_content(str(files / "good.npy"))
    assert np.array_equal(m.sections(4)(2), np.load(files / "good.npy")[:2, :2])
    with pytest.raises(PosencError, match="4 x 4; n=5 needs a larger one"):
        m.sections(5)


def test_every_form_of_one_content_gives_the_same_report(files):
    def rows(content):
        rep = bound_table("alibi", [6, 12], content=content, method="dense", n_heads=2,
                          head_dim=4)
        return rep.content, [(r.quantity, r.exact, r.bound) for r in rep.rows]
    assert rows(SeededContent(3, 1)) == rows(("seeded", 3, 1)) == rows("rank=3,seed=1")
    assert rows(SeededContent(3, 1)) != rows(SeededContent(3, 2))
    a = np.load(files / "good.npy")
    a = np.pad(a + a.T, 4)
    assert rows(a) == rows(MatrixContent(a))
