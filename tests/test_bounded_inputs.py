"""Bounded work for every input.

Every size a user gives -- sequence lengths, heads, widths, catalogue integers, content rank,
symbolic dimensions, ``check --head-dim``, the shape in a ``.npy`` header -- is checked against a
bound of :mod:`posenc.limits` (or the available memory) *before* anything is allocated: the
refused calls below are run under tracemalloc and must stay under a few MiB, where the
unchecked code allocated GiBs (``bound --n 10000001``: 1.3 GB) or hung.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from posenc import limits
from posenc.cli import main
from posenc.errors import PosencError
from posenc.numerics.bound_table import bound_report, memory_estimate
from posenc.encodings.spec_parsing import parse_spec

#: A refused call may import modules (sympy: ~35 MiB on first import) and parse; nothing of the
#: refused size (the smallest refused request here would need > 1 GiB).
REFUSED_PEAK = 64 * 2**20


def one_line_error(capsys, argv: list[str], match: str) -> None:
    tracemalloc.start()
    try:
        code = main(argv)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out)
    assert err.count("\n") == 1 and err.startswith("posenc: error:") and match in err, err
    assert peak < REFUSED_PEAK, f"{argv}: {peak / 2**20:.1f} MiB allocated before refusing"


REFUSED = [
    (["bound", "rope", "--n", "1000000000000"], "exceeds the limit 10000000"),
    (["bound", "rope", "--n", "1e12"], "exceeds the limit 10000000"),
    (["bound", "rope", "--n", "10000001"], "exceeds the limit 10000000"),
    (["bound", "rope", "--n", "64,10000001"], "exceeds the limit"),
    (["bound", "rope", "--n", "10", "--content", "rank=1e9"], "rank=1000000000 exceeds"),
    (["bound", "rope", "--n", "10", "--heads", "1000000000"], "heads=1000000000 exceeds"),
    (["bound", "rope", "--n", "10", "--head-dim", "100000"], "head dimension=100000 exceeds"),
    (["bound", "sinusoidal", "--n", "10", "--d-model", "10000000"], "d_model=10000000 exceeds"),
    (["bound", "relative_bias:num_buckets=1e9", "--n", "10"], "num_buckets=1000000000 exceeds"),
    (["bound", "relative_bias:mode=table,max_distance=1e9", "--n", "10"], "max_distance="),
    (["bound", "mla:kv_latent=1e8", "--n", "10"], "kv_latent=100000000 exceeds"),
    (["bound", "mla:rope_dim=1e8", "--n", "10"], "rope_dim=100000000 exceeds"),
    (["bound", "rope:heads=1e8", "--n", "10"], "heads=100000000 exceeds"),
    (["bound", "learned_absolute:max_len=1e8", "--n", "10"], "max_len=100000000 exceeds"),
    (["bound", "rope", "--n", "10", "--plot", "x.txt"], "ending in .png"),
    (["derive", "rope", "--heads", "1000000000"], "exceeds the limit 16"),
    (["derive", "rope", "--head-dim", "100000"], "exceeds the limit 8"),
    (["derive", "rope", "--model-dim", "100000"], "exceeds the limit 8"),
    (["derive", "custom:frequencies=" + ";".join(["1"] * 40)], "head dim 80 exceeds"),
    (["check", "posenc.numerics.logits:rotate", "--head-dim", "100000"], "[2, 4096]; got 100000"),
    (["ablate", "no-such-run", "--plot", "x.txt"], "ending in .png or .pdf"),
]


@pytest.mark.parametrize("argv,match", REFUSED, ids=[" ".join(a)[:60] for a, _ in REFUSED])
def test_oversized_inputs_are_one_line_before_any_allocation(capsys, argv, match):
    one_line_error(capsys, argv, match)


RUN_ARGS = [
    (["train", "--preset", "smoke", "--samples", "1000000000000"], "n_samples=1000000000000 exceeds"),
    (["train", "--preset", "smoke", "--epochs", "10000000"], "epochs=10000000 exceeds"),
    (["train", "--preset", "smoke", "--pe", "custom:kernel=9**9**9"], "exceeds the limit 1024"),
    (["verify", "--examples", "1000000000"], "--examples=1000000000 exceeds"),
    # a billion runs were planned silently; seeds past 2^31 - 1 were trained; '' meant all roles
    (["reproduce", "--seeds", "1000000000"], "--seeds=1000000000 exceeds the limit 1000"),
    (["reproduce", "--count-seeds", "5000"], "--count-seeds=5000 exceeds the limit 1000"),
    (["reproduce", "--until-decided", "--max-seeds", "5000"], "--max-seeds=5000 exceeds"),
    (["reproduce", "--first-seed", "2147483647", "--seeds", "3"], "runs seeds past 2147483647"),
    (["reproduce", "--roles", ""], "roles is empty"),
    (["reproduce", "--tasks", " , "], "tasks is empty"),
    (["bound", "alibi", "--n", ",".join(str(n) for n in range(1, 100))], "99 distinct lengths"),
]


@pytest.mark.parametrize("argv,match", RUN_ARGS, ids=[" ".join(a)[:60] for a, _ in RUN_ARGS])
def test_oversized_run_arguments_are_one_line(capsys, tmp_path, argv, match):
    """(Without tracemalloc, which slows importing torch tenfold.)"""
    code = main(argv + (["--out", str(tmp_path / "run")] if argv[0] in ("train", "reproduce")
                        else []))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and match in err, err
    assert not (tmp_path / "run").exists()                     # refused before the folder


def test_bound_computes_each_length_once():
    import posenc
    rep = posenc.bound("alibi", (64,) * 10_000)  # did not return: 10,000 spectra of n = 64
    assert [row.n for row in rep.growth] == [64]
    assert [row.n for row in posenc.bound("alibi", [32, 16, 32]).growth] == [32, 16]


def test_train_memory_estimate_refuses_before_the_run_folder(monkeypatch, tmp_path):
    from posenc.empirical.config import memory_estimate, preset
    from posenc.empirical.training.train import train
    cfg = preset("smoke", task="distance", pe="rope", seed=0)
    monkeypatch.setattr(limits, "available_memory", lambda: int(memory_estimate(cfg)))
    with pytest.raises(PosencError, match="of memory; only"):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_sizes_at_the_limit_are_accepted_by_the_catalogue():
    assert parse_spec(f"learned_absolute:max_len={limits.MAX_SEQ_LEN}").max_len == limits.MAX_SEQ_LEN
    assert parse_spec(f"relative_bias:num_buckets={limits.MAX_BUCKETS}").num_buckets == \
        limits.MAX_BUCKETS
    assert parse_spec(f"mla:kv_latent={limits.MAX_WIDTH}").kv_latent == limits.MAX_WIDTH
    with pytest.raises(PosencError, match="exceeds the limit"):
        parse_spec(f"mla:kv_latent={limits.MAX_WIDTH + 1}")
    assert parse_spec("rope:heads=1e3").heads == 1000       # scientific notation for integers
    with pytest.raises(PosencError, match="must be int"):
        parse_spec("rope:heads=1.5e0")


def test_memory_estimate_refuses_what_does_not_fit(monkeypatch):
    spec = parse_spec("learned_absolute:max_len=10000000")
    need = memory_estimate(spec, 10_000_000, rank=8, width=512)
    assert need > 40 * 2**30                               # a 10^7 x 512 float64 table alone
    monkeypatch.setattr(limits, "available_memory", lambda: int(need / limits.MEMORY_FRACTION) - 1)
    tracemalloc.start()
    try:
        with pytest.raises(PosencError, match="needs about .* GiB of memory; only"):
            bound_report(spec, [10_000_000])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < REFUSED_PEAK
    # the same request with enough memory reported passes the check (and fails later, on n)
    monkeypatch.setattr(limits, "available_memory", lambda: int(need / limits.MEMORY_FRACTION) + 1)
    limits.check_memory(need, "x")


def test_memory_estimate_grows_with_what_is_allocated():
    rope = parse_spec("rope")
    assert memory_estimate(rope, 2000, rank=8) < memory_estimate(rope, 4000, rank=8)
    assert memory_estimate(rope, 4000, rank=8) < memory_estimate(rope, 4000, rank=64)
    assert memory_estimate(rope, 400, method="auto") > memory_estimate(rope, 400, method="lanczos")


def test_available_memory_reads_the_os():
    avail = limits.available_memory()
    assert avail is None or avail > 0


# -- .npy files: the header is read first -----------------------------------------------------

@pytest.fixture
def npy_files(tmp_path):
    from numpy.lib import format as npf
    np.savez(tmp_path / "archive.npz", x=np.eye(3))
    (tmp_path / "archive.npz").rename(tmp_path / "renamed.npy")
    with open(tmp_path / "huge.npy", "wb") as fh:              # header claims 1e8 x 1e8
        npf.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False,
                                        "shape": (100_000_000, 100_000_000)})
        fh.write(b"\0" * 64)
    np.save(tmp_path / "good.npy", np.eye(4))
    (tmp_path / "truncated.npy").write_bytes((tmp_path / "good.npy").read_bytes()[:-8])
    np.save(tmp_path / "objects.npy", np.array([1, None], dtype=object), allow_pickle=True)
    (tmp_path / "garbage.npy").write_bytes(b"hello world")
    (tmp_path / "empty.npy").write_bytes(b"")
    return tmp_path


NPY = [("renamed", "zip archive"), ("huge", "claims shape (100000000, 100000000)"),
       ("truncated", "the file has"), ("objects", "Python objects"), ("garbage", "magic string"),
       ("empty", "cannot read")]


@pytest.mark.parametrize("option", ["--content", "--values"])
@pytest.mark.parametrize("name,match", NPY, ids=[n for n, _ in NPY])
def test_bad_npy_is_one_line_without_allocating(capsys, npy_files, option, name, match):
    one_line_error(capsys, ["bound", "relative_bias", "--n", "4", option,
                            str(npy_files / f"{name}.npy")], match)


def test_a_good_npy_still_loads(capsys, npy_files):
    assert main(["bound", "alibi", "--n", "4", "--content", str(npy_files / "good.npy")]) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_the_relative_bias_estimate_covers_its_measured_peak():
    """The Szego grid is a power of two: at n = 150,000 it has 1.75x the points per position that
    it has at 10^6, where the per-position cost was measured (the old estimate, per position,
    was 1.28x low at n = 3 x 10^6).  The estimate must cover the peak a child process reaches,
    and not by more than 2x.

    The child's peak is its VmHWM (/proc/self/status), not ``ru_maxrss``: Linux carries the
    peak of the memory the process had before ``exec`` -- here pytest's own, shared through
    the fork -- into ``ru_maxrss``, so a pytest process larger than the child (a long session
    with the third-party libraries imported: 1.58 GB) read as the child's peak."""
    import subprocess
    import sys
    n = 150_000
    code = ("import posenc; posenc.bound('relative_bias', [%d]); "
            "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:'))"
            ".split()[1])" % n)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    peak = int(out.stdout.split()[-1]) * 1024  # VmHWM is in kB
    est = memory_estimate(parse_spec("relative_bias"), n)
    assert peak <= est <= 2 * peak, (peak / 2**20, est / 2**20)


def test_the_address_space_limit_counts_as_a_memory_limit(monkeypatch):
    """Under ``ulimit -v`` (batch schedulers) MemAvailable says nothing of the limit: posenc
    compares its estimates with the headroom under RLIMIT_AS too (a MemoryError traceback
    before)."""
    import resource
    monkeypatch.setattr(limits, "_os_available", lambda: 100 * 2**30)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (3 * 2**30, resource.RLIM_INFINITY))
    head = limits.available_memory()
    assert 0 <= head < 3 * 2**30  # the limit minus what the process has mapped
    with pytest.raises(PosencError, match="of memory; only"):
        limits.check_memory(3 * 2**30, "a test")
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert limits.available_memory() == 100 * 2**30


def test_a_memory_error_is_one_line(monkeypatch, capsys):
    import posenc.commands.bound as bound_cmd

    def boom(args):
        raise MemoryError
    monkeypatch.setattr(bound_cmd, "run", boom)
    code = main(["bound", "rope", "--n", "8"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "out of memory" in err and "Traceback" not in err


# -- sizes that are allowed but take long: progress on stderr ------------------

def test_bound_reports_each_stage_of_a_long_length_on_stderr(monkeypatch, capsys):
    """``bound rope --n 2000000`` ran ~20 minutes without a word; a length from PROGRESS_N on
    (lowered here from 100,000 to 64) is a line per stage on stderr, the tables stay on stdout,
    and shorter lengths say nothing."""
    import posenc
    from posenc.numerics import bound_table
    monkeypatch.setattr(bound_table, "PROGRESS_N", 64, raising=False)  # (the old code: no such name)
    assert main(["bound", "rope", "--n", "32,64", "--head-dim", "4", "--heads", "2"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert [line.split(": ", 2)[2] for line in lines] == [
        "the kernel", "spectrum and bounds of rope", "rope coupled with the content "
        "(multiplicative)", "rope: its own per-plane logit, 5 content seeds",
        "alibi (reference) coupled with the content (additive)",
        "alibi (reference): the additive ratio at content scales 1, 100, 10000", "done"]
    assert all(line.startswith("posenc: bound n=64 [") for line in lines), err
    assert "posenc:" not in out and "n=32" not in err
    said: list[str] = []
    posenc.bound("alibi", 64, head_dim=4, n_heads=2, progress=said.append)
    assert len(said) == 7 and said[-1].endswith("done")
    with pytest.raises(PosencError, match="progress must be a callable"):
        posenc.bound("alibi", 64, progress="yes")


def test_train_reports_each_long_epoch_on_stderr_without_a_terminal(monkeypatch, capsys, tmp_path):
    """``train --samples 1000000`` showed a bar on a terminal only (~30 min per epoch here); off
    a terminal, an epoch of LONG_EPOCH_EXAMPLES (lowered here to 10) is a line on stderr."""
    import importlib
    training = importlib.import_module("posenc.empirical.training.train")
    monkeypatch.setattr(training, "LONG_EPOCH_EXAMPLES", 10, raising=False)
    assert main(["train", "--preset", "smoke", "--samples", "80", "--epochs", "2", "--threads",
                 "1", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" in ")[0] for line in err] == [
        f"posenc: train distance rope: epoch {e} of at most 2" for e in (1, 2)], err
    assert all("test_acc" in line for line in err)
