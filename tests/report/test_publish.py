"""Putting a report in place (posenc.report.publish): a reader polling report.json during
rebuilds never finds it missing; a build killed before or inside the swap leaves the old report
readable, and its leftovers go at the next build."""

import os
import signal
import threading
import time

import pytest

from posenc.report import publish
from posenc.report.publish import remove_debris, staged_report


def _build(store, generation, extra=()):
    with staged_report(store) as tmp:
        for name in ("accuracy.png", "runs.csv", "report.md", *extra):
            (tmp / name).write_text(f"{name} {generation}\n")
        (tmp / "report.json").write_text(f'{{"generation": {generation}}}\n')


def test_a_reader_never_finds_report_json_missing_during_rebuilds(tmp_path):
    """The old build deleted the report folder before renaming the new one in: a reader found no
    report.json 388 times in 228k reads.  Here a thread reads report.json as fast as it can
    while 200 rebuilds swap new reports in (at most 2 s)."""
    _build(tmp_path, 0)
    seen = {"reads": 0, "missing": 0, "torn": 0}
    done = threading.Event()

    def read():
        while not done.is_set():
            try:
                text = (tmp_path / "report" / "report.json").read_text()
            except FileNotFoundError:
                seen["missing"] += 1
                continue
            seen["reads"] += 1
            seen["torn"] += not text.endswith("}\n")

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 2
    try:
        for generation in range(1, 201):
            _build(tmp_path, generation, extra=("ablation_x.png",) if generation % 2 else ())
            if time.monotonic() > deadline:
                break
    finally:
        done.set()
        reader.join()
    assert seen["reads"] > 0 and seen["missing"] == 0 and seen["torn"] == 0, seen
    # the last build's files and only those (a figure the new report lacks is removed)
    names = sorted(p.name for p in (tmp_path / "report").iterdir())
    assert names == sorted(["accuracy.png", "runs.csv", "report.md", "report.json"]
                           + (["ablation_x.png"] if generation % 2 else []))
    assert (tmp_path / "report" / "report.json").read_text() == f'{{"generation": {generation}}}\n'
    assert not list(tmp_path.glob(".report.*"))


def _killed_build(store, where):
    """A build SIGKILLed (in a forked child: no new interpreter) inside its block, before the
    swap (``build``), or after the first file of the new report went in (``swap``)."""
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            if where == "swap":
                real = os.replace

                def replace(a, b):
                    real(a, b)
                    os.kill(os.getpid(), signal.SIGKILL)
                publish.os.replace = replace
            with staged_report(store) as tmp:
                for name in ("accuracy.png", "report.md", "report.json"):
                    (tmp / name).write_text(name + " new\n")
                if where == "build":
                    os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(3)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("where", ["build", "swap"])
def test_a_killed_build_leaves_the_old_report_and_its_debris_goes_next_time(tmp_path, where):
    _build(tmp_path, 0)
    status = _killed_build(tmp_path, where)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    report = tmp_path / "report"
    assert (report / "report.json").read_text() == '{"generation": 0}\n'  # the old one, whole
    assert (report / "report.md").read_text() == "report.md 0\n"
    if where == "swap":  # the first file swapped in (the figures go first) is the new one
        assert (report / "accuracy.png").read_text() == "accuracy.png new\n"
    assert len(list(tmp_path.glob(".report.*"))) == 1  # the killed build's folder
    _build(tmp_path, 1)
    assert not list(tmp_path.glob(".report.*"))
    assert (report / "report.json").read_text() == '{"generation": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no lock file either


def test_two_builders_at_once_take_turns(tmp_path):
    """Each build clears the staging folders it finds: two at once must not clear each other's
    (they take turns on a lock of the store folder).  Two threads, 20 builds each."""
    errors = []

    def builds(offset):
        try:
            for generation in range(offset, offset + 20):
                _build(tmp_path, generation)
        except Exception as exc:  # noqa: BLE001 -- reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=builds, args=(k * 100,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and not list(tmp_path.glob(".report.*"))


def test_a_failed_build_leaves_the_old_report_untouched(tmp_path):
    _build(tmp_path, 0)
    before = {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()}
    with pytest.raises(RuntimeError):
        with staged_report(tmp_path) as tmp:
            (tmp / "report.json").write_text("half")
            raise RuntimeError("boom")
    assert {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()} == before
    assert not list(tmp_path.glob(".report.*"))


def test_debris_is_only_the_staging_folders(tmp_path):
    (tmp_path / ".report.abc").mkdir()
    (tmp_path / ".report.file").write_text("not a folder")
    (tmp_path / "report").mkdir()
    assert remove_debris(tmp_path) == [".report.abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".report.file", "report"]
