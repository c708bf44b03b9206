"""bot.app.commands: slash-command parsing (first line, shlex)."""

from __future__ import annotations

import pytest

from bot.app.commands import Command, CommandError, parse


@pytest.mark.parametrize("body", ["", "LGTM", "/performance is great", "see /perf run below", "\n\nnothing"])
def test_not_for_perfgate(body):
    assert parse(body) is None


def test_run_with_filter_and_options():
    cmd = parse('/perf run "layer norm*" --rounds 20 --threshold 0.05\nmore text /perf cancel')
    assert cmd == Command("run", "/perf run layer norm* --rounds 20 --threshold 0.05", filter="layer norm*",
                          rounds=20, threshold=0.05)


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


def test_run_and_profile_take_the_sha_they_approve():
    assert parse("/perf run --sha ABCDEF1234").sha == "abcdef1234"
    assert parse("/perf profile norm --sha abcdef1").sha == "abcdef1"
    assert parse("/perf run").sha is None
    for bad in ("/perf run --sha main", "/perf run --sha abc", "/perf run --sha " + "a" * 65):
        with pytest.raises(CommandError, match="commit SHA"):
            parse(bad)


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
