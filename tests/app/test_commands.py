"""bot.app.core.commands: slash-command parsing (first line, shlex)."""

from __future__ import annotations

import pytest

from bot.app.core.commands import MAX_FILTER, Command, CommandError, parse
from runner.report.escape import md_code


@pytest.mark.parametrize("body", ["", "LGTM", "/performance is great", "see /perf run below", "\n\nnothing"])
def test_not_for_perfgate(body):
    assert parse(body) is None


def test_run_with_filter_and_options():
    cmd = parse('/perf run "layer norm*" --rounds 20 --threshold 0.05\nmore text /perf cancel')
    assert cmd == Command("run", "/perf run layer norm* --rounds 20 --threshold 0.05", filter="layer norm*",
                          rounds=20, threshold=0.05)


def test_run_all_measures_every_benchmark():
    assert parse("/perf run --all") == Command("run", "/perf run --all", all_benchmarks=True)
    assert parse("/perf run norm* --all --rounds 4") == Command("run", "/perf run norm* --all --rounds 4",
                                                                filter="norm*", rounds=4, all_benchmarks=True)
    with pytest.raises(CommandError, match="given twice"):
        parse("/perf run --all --all")
    with pytest.raises(CommandError, match="--all"):
        parse("/perf profile x --all")  # only run takes it


@pytest.mark.parametrize("line,expected", [
    ("/perf run", Command("run", "/perf run")),
    ("/perf run rounds=10", Command("run", "/perf run rounds=10", rounds=10)),
    ("/perf run --threshold=2%", Command("run", "/perf run --threshold=2%", threshold=0.02)),
    ("/perf profile bench_norm", Command("profile", "/perf profile bench_norm", filter="bench_norm")),
    ("/perf accept intended: trades speed for memory",
     Command("accept", "/perf accept intended: trades speed for memory", reason="intended: trades speed for memory")),
    ("/perf accept", Command("accept", "/perf accept")),
    ("/perf cancel", Command("cancel", "/perf cancel")),
    ("/perf history bench_norm[rows=4096]", Command("history", "/perf history bench_norm[rows=4096]",
                                                    benchmark="bench_norm[rows=4096]")),
    ("/perf HELP", Command("help", "/perf HELP")),
    ("  /perf  ", Command("help", "/perf")),
])
def test_commands(line, expected):
    assert parse(line) == expected


@pytest.mark.parametrize("line,fragment", [
    ("/perf launch", "unknown command"),
    ("/perf run --rounds many", "whole number"),
    ("/perf run --rounds 1", "between 2"),
    ("/perf run --threshold 2", "fraction"),
    ("/perf run --fast yes", "unknown option"),
    ("/perf run --rounds", "needs a value"),
    ("/perf run a b", "at most one FILTER"),
    ("/perf profile", "exactly one FILTER"),
    ("/perf cancel now", "takes no arguments"),
    ('/perf run "unclosed', "cannot split"),
    ("/perf run --rounds 3 --rounds 4", "twice"),
])
def test_malformed_commands_say_what_is_wrong(line, fragment):
    with pytest.raises(CommandError, match=fragment):
        parse(line)


def test_whitespace_differences_normalise_to_the_same_text():
    assert parse("/perf   run  x").text == parse("/perf run x").text


def test_run_and_profile_take_the_full_sha_they_approve():
    full = "ABCDEF12" * 5
    assert parse(f"/perf run --sha {full}").sha == full.lower()
    assert parse(f"/perf profile norm --sha={'ab' * 32}").sha == "ab" * 32  # a SHA-256 repository
    assert parse("/perf run").sha is None


@pytest.mark.parametrize("value", ["abcdef1", "b1c2d3e4f5a6", "a" * 39, "a" * 41, "a" * 63, "a" * 65])
def test_a_shortened_or_overlong_sha_is_refused_saying_how_many_digits(value):
    """Review N2: a prefix names every commit that shares it; only a full SHA binds."""
    with pytest.raises(CommandError, match="full commit SHA") as refused:
        parse(f"/perf run --sha {value}")
    assert f"not {len(value)}" in str(refused.value) and "40 hex digits" in str(refused.value)


@pytest.mark.parametrize("value", ["main", "HEAD~1", "g" * 40, "`@octo/team`" + "a" * 30])
def test_a_sha_that_is_not_hex_is_refused_as_a_code_span(value):
    with pytest.raises(CommandError, match="full commit SHA") as refused:
        parse(f"/perf run --sha {value}")
    assert md_code(value) in str(refused.value)  # echoed only as a code span


@pytest.mark.parametrize("line, reason", [
    ("/perf accept it's the new kernel, the drop is expected", "it's the new kernel, the drop is expected"),
    ('/perf accept the "fast path" is gone', 'the "fast path" is gone'),
    ("/perf accept a \"dangling quote and a \\ backslash", "a \"dangling quote and a \\ backslash"),
    ("/perf ACCEPT   spaced    out", "spaced out"),
    ("/perf accept", None),
])
def test_an_accept_reason_is_free_text_never_shell_words(line, reason):
    command = parse(line)
    assert command.name == "accept" and command.reason == reason


def test_a_filter_is_at_most_what_a_run_stores():
    assert parse("/perf run " + "x" * MAX_FILTER).filter == "x" * MAX_FILTER
    for line in ("/perf run " + "x" * (MAX_FILTER + 1), "/perf profile " + "x" * (MAX_FILTER + 1)):
        with pytest.raises(CommandError, match=f"at most {MAX_FILTER}"):
            parse(line)


def test_an_echoed_word_is_cut():
    with pytest.raises(CommandError) as refused:
        parse("/perf run --rounds " + "9" * 100_000)
    assert len(str(refused.value)) < 300 and "…" in str(refused.value)
