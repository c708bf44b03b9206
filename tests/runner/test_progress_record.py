"""The compare's progress record: written by the compare (:mod:`runner.pipeline.progress_record`)
as its workers are asked, read by the Action after a limit ended the sandbox
(:func:`runner.sandbox.confine.read_progress`) as what the sandbox left: no link followed, no FIFO
waited on, at most :data:`runner.sandbox.limits.PROGRESS_BYTES`."""

from __future__ import annotations

import json
import os
import threading

from runner.sandbox.confine import read_progress
from runner.sandbox.limits import PROGRESS_BYTES, PROGRESS_FILE, names_a_benchmark, progress_words
from runner.pipeline.progress_record import ProgressRecord


def test_the_record_follows_the_requests_and_names_each_sides_benchmark(tmp_path):
    record = ProgressRecord(tmp_path)
    record.note("install", "base")
    assert progress_words(read_progress(tmp_path)) == "while base's install command ran"
    record.note("setup", "head", "bench_step")
    record.note("setup", "base", "bench_other")
    record.note("fork", "head")  # changes no phase
    record.note("sample", "head")  # no name: the side's last
    assert json.loads((tmp_path / PROGRESS_FILE).read_text()) == {
        "phase": "measuring", "side": "head", "benchmark": "bench_step"}
    record.note("preload", "head")
    assert "head's benchmark files" in progress_words(read_progress(tmp_path))
    record.note("finish")
    assert "after every benchmark" in progress_words(read_progress(tmp_path))
    assert os.listdir(tmp_path / "logs") == ["progress.json"]  # renamed over, nothing left


def test_the_last_record_names_the_benchmark_a_limit_failed_else_the_end(tmp_path):
    """A limit reached between two looks of the Action's watch (a 256 MiB /tmp filled in 0.7 s,
    the compare over 2 s later: CI, 2026-12-07) is still said with its benchmark: the compare's
    last record names the one whose error is a limit's, as while it was measured."""
    entries = [{"name": "bench_ok", "base": {"error": None}, "head": {"error": None}},
               {"name": "bench_gone", "base": None, "head": None},
               {"name": "bench_probe", "base": {"error": "LookupError: not defined"},
                "head": {"error": "Traceback ...\nOSError: [Errno 28] No space left on device"}}]
    record = ProgressRecord(tmp_path)
    record.note("setup", "base", "bench_ok")
    record.finish(entries)
    said = progress_words(read_progress(tmp_path))
    assert said == "while the benchmark 'bench_probe' was measured on head"
    assert names_a_benchmark(read_progress(tmp_path))
    record.finish(entries[:2])  # no limit's error: the end
    assert "after every benchmark" in progress_words(read_progress(tmp_path))
    assert not names_a_benchmark(read_progress(tmp_path))
    record.finish([{"name": "bench_fork", "base": {"error": "BlockingIOError: [Errno 11] "
                                                             "Resource temporarily unavailable"}}])
    assert progress_words(read_progress(tmp_path)) == (
        "while the benchmark 'bench_fork' was measured on base")


def test_a_record_that_cannot_be_written_fails_nothing(tmp_path):
    (tmp_path / "logs").write_text("a file where the folder goes")
    ProgressRecord(tmp_path).note("setup", "head", "b")
    assert read_progress(tmp_path) == ""


def test_the_record_is_read_as_the_sandbox_left_it(tmp_path):
    """The sandbox can make the record, or its folder, a link to a file of the runner's, or a
    FIFO that nobody writes: nothing is followed, nothing is waited for."""
    secret = tmp_path / "secret"
    secret.write_text('{"phase": "finishing"}')
    for made in ("file link", "folder link", "fifo", "big"):
        out = tmp_path / made.replace(" ", "-")
        (out / "logs").parent.mkdir()
        if made == "folder link":
            (out / "elsewhere").mkdir()
            (out / "elsewhere" / "progress.json").write_text('{"phase": "finishing"}')
            (out / "logs").symlink_to(out / "elsewhere")
        else:
            (out / "logs").mkdir()
        target = out / PROGRESS_FILE
        if made == "file link":
            target.symlink_to(secret)
        elif made == "fifo":
            os.mkfifo(target)
        elif made == "big":
            target.write_text("x" * (10 * PROGRESS_BYTES))
        reading = threading.Thread(target=lambda: setattr(reading, "text", read_progress(out)),
                                   daemon=True)
        reading.start()
        reading.join(timeout=30)
        assert not reading.is_alive(), made
        assert reading.text == ("x" * PROGRESS_BYTES if made == "big" else ""), made
    assert read_progress(tmp_path / "absent") == ""
