"""runner.sandbox.limits (pure): the sandbox's limits read from the workflow's text, their defaults,
the mechanism each gets from what the machine offers, and the sentence that names a limit
reached."""

from __future__ import annotations

import json

import pytest

from runner.sandbox.limits import (GIB, NAME_CHARS, PROGRESS_BYTES, Hits, Limits, Offers,
                                   cgroup_parents, chosen, counter, default_limits, enforcement,
                                   limit_hit, parse_duration, parse_size, progress_record,
                                   progress_words)

LIMITS = Limits(pids=4096, memory=64 * GIB, disk=32 * GIB, wall=5 * 3600.0)


@pytest.mark.parametrize("text, size", [("64GiB", 64 * GIB), ("512 MiB", 512 << 20),
                                        ("1.5G", 3 * GIB // 2), ("10GB", 10 ** 10),
                                        ("4096", 4096), ("2t", 2 << 40)])
def test_sizes_read_binary_and_decimal_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "GiB", "-1G", "0", "12 parsecs", "1e9", "64GiB;rm"])
def test_a_size_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


@pytest.mark.parametrize("text, seconds", [("5h", 18000), ("90m", 5400), ("1h30m", 5400),
                                           ("45s", 45), ("3600", 3600), ("2 min", 120)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "5 fortnights", "h", "5h and more", "-5m"])
def test_a_duration_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_defaults_suit_a_training_step_and_stay_below_githubs_six_hours():
    big = default_limits(512 * GIB)
    assert big == Limits(pids=4096, memory=int(512 * GIB * 0.8), disk=32 * GIB, wall=5 * 3600.0)
    small = default_limits(24 * GIB)
    assert small.disk == 12 * GIB  # the scratch is RAM: at most half of it
    given = (("pids", 100.0), ("wall", 60.0))
    assert chosen(given, 24 * GIB) == Limits(100, small.memory, small.disk, 60.0)


def test_cgroups_win_over_rlimits_where_the_machine_offers_them():
    v1 = enforcement(LIMITS, Offers(v1=(("memory", "/sys/fs/cgroup/memory/job"),
                                        ("pids", "/sys/fs/cgroup/pids"))))
    assert dict(v1.cgroups) == {
        "/sys/fs/cgroup/pids": (("pids.max", "4096"),),
        "/sys/fs/cgroup/memory/job": (("memory.limit_in_bytes", str(64 * GIB)),)}
    assert v1.rlimits == (("FSIZE", 32 * GIB),) and v1.tmpfs_size == 32 * GIB
    assert v1.deadline == 18000
    delegated = frozenset({"pids", "memory", "cpu"})
    v2 = enforcement(LIMITS, Offers(v2=("/sys/fs/cgroup/runner", delegated)))
    assert dict(dict(v2.cgroups)["/sys/fs/cgroup/runner"]) == {
        "pids.max": "4096", "memory.max": str(64 * GIB), "memory.swap.max": "0"}
    # v2 without delegated controllers (a systemd service's cgroup): the rlimits
    none = enforcement(LIMITS, Offers(v2=("/sys/fs/cgroup/x", frozenset()), user_processes=300))
    assert none.cgroups == ()
    # user mode: RLIMIT_NPROC counts the runner user's own processes too; never RLIMIT_AS (CUDA)
    assert dict(none.rlimits) == {"FSIZE": 32 * GIB, "NPROC": 4096 + 300, "DATA": 64 * GIB}
    assert "RLIMIT_DATA, per process" in dict(none.how)["memory"]
    # a bubblewrap without --size (0.6, Ubuntu 22.04): no tmpfs, RLIMIT_FSIZE per file still
    old = enforcement(LIMITS, Offers(sized_tmpfs=False))
    assert old.tmpfs_size is None and ("FSIZE", 32 * GIB) in old.rlimits
    assert "no --size" in dict(old.how)["disk"]


def test_cgroup_parents_are_this_process_own_cgroups():
    mountinfo = ("35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                 "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
                 "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
                 "42 31 0:39 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n")
    proc = "8:pids:/\n4:memory:/process_api/43\n1:cpu:/\n0::/user.slice\n"
    assert cgroup_parents(proc, mountinfo) == ("/sys/fs/cgroup/unified/user.slice", {
        "pids": "/sys/fs/cgroup/pids", "memory": "/sys/fs/cgroup/memory/process_api/43"})
    assert cgroup_parents("0::/a\n", "30 1 0:2 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n") == (
        "/sys/fs/cgroup/a", {})
    assert cgroup_parents("", "") == (None, {})
    assert counter("max 3\n", "max") == 3
    assert counter("oom_kill_disable 0\noom_kill 2\n", "oom_kill") == 2
    assert counter("", "max") == 0


def test_each_limit_reached_is_named_with_its_value_input_and_step():
    step = "perfgate compare"
    assert "wall-time limit (5 h, input sandbox-time)" in limit_hit(
        LIMITS, Hits(deadline_passed=True), step)
    assert "process limit (4096 processes and threads, input sandbox-pids)" in limit_hit(
        LIMITS, Hits(pids_refused=1), step)
    assert "memory limit (64 GiB, input sandbox-memory): the kernel killed 2" in limit_hit(
        LIMITS, Hits(oom_kills=2), step)
    full = limit_hit(LIMITS, Hits(scratch_full=True, stderr_tail=("bench_io: OSError",)), step)
    assert "scratch-space limit (32 GiB for /tmp and HOME, input sandbox-disk)" in full
    assert full.startswith("the pull request's code in perfgate compare") and "bench_io" in full
    # without the kernel's counters (rlimits): what a failed step printed
    assert "process limit" in limit_hit(LIMITS, Hits(status=3, stderr_tail=(
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",)), step)
    assert "scratch-space" in limit_hit(
        LIMITS, Hits(status=3, stderr_tail=("[Errno 28] No space",)), step)
    # a step that finished is not blamed for the words it printed; nothing reached: None
    assert limit_hit(LIMITS, Hits(status=0, stderr_tail=("MemoryError",)), step) is None
    assert limit_hit(LIMITS, Hits(status=3, stderr_tail=("KeyError: 'x'",)), step) is None


def test_a_limit_names_what_the_compare_was_doing_by_its_progress_record():
    """The issue's "naming the limit and the benchmark": the record's phase, side and benchmark;
    a last line that is not the limit's (a configuration's deprecation warning) is not quoted
    once the benchmark is named, one that is (ENOSPC) still is."""
    warned = ("perfgate: warning: `max_rounds` in perfgate.toml is deprecated",)
    step = "perfgate compare"
    said = limit_hit(LIMITS, Hits(pids_refused=1, stderr_tail=warned,
                                  progress=progress_record("sample", "head", "bench_step")), step)
    assert said.endswith("the kernel refused to start more, while the benchmark 'bench_step' "
                         "was measured on head")
    assert "deprecated" in limit_hit(LIMITS, Hits(pids_refused=1, stderr_tail=warned), step)
    full = limit_hit(LIMITS, Hits(status=3, stderr_tail=("OSError: [Errno 28] No space",),
                                  progress=progress_record("setup", "base", "bench_io")), step)
    assert "'bench_io' was measured on base (its last line: OSError: [Errno 28]" in full
    for cmd, side, words in (("install", "base", "while base's install command ran"),
                             ("preload", "head", "while head's benchmark files were imported"),
                             ("env", "head", "while head's worker started"),
                             ("profile", "head", "'b' was profiled on head"),
                             ("trace", "base", "'b' was mapped to the code it runs, on base"),
                             ("kernels", None, "Triton kernels of base and head"),
                             ("finish", None, "after every benchmark")):
        assert words in progress_words(progress_record(cmd, side, "b"))
    assert progress_record("fork", "head", "b") is None  # changes no phase


@pytest.mark.parametrize("text", [
    "", "not json", "[1]", '{"phase": "measuring", "side": "head"}',
    '{"phase": "measuring", "side": "runner", "benchmark": "b"}',
    '{"phase": "deleting", "side": "head", "benchmark": "b"}',
    '{"phase": "measuring", "side": "head", "benchmark": 7}'])
def test_a_progress_record_it_does_not_trust_says_nothing(text):
    assert progress_words(text) == ""


def test_a_benchmark_name_from_the_record_is_printable_cut_and_inert():
    """The record is written inside the sandbox: a name with control characters, the runner's
    older command syntax ``##[`` (matched anywhere in a line) or 2 000 characters; the compare's
    own record of a 10 000-character name stays within what is read."""
    record = json.dumps({"phase": "measuring", "side": "head",
                         "benchmark": "a\x07\r\n##[set-output name=x;]" + "y" * 2_000})
    words = progress_words(record)
    assert all(c.isprintable() or c == "\u200b" for c in words) and "##[" not in words
    assert len(words) < NAME_CHARS + 60 and words.endswith("...' was measured on head")
    assert progress_words(record + " " * PROGRESS_BYTES) == words  # read up to its cap
    written = progress_record("setup", "head", "\u00e9" * 10_000)
    assert len(written) < PROGRESS_BYTES and "...'" in progress_words(written)
