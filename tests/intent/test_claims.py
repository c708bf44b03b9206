"""runner.intent.claims on real PR texts (each quoted with its source), perfgate claims, and
evaluation/claims.py on the development set."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from runner.cli.main import main
from runner.intent.claims import parse_claims

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"


def _one(text: str, **where) -> dict:
    claims = parse_claims(**(where or {"body": text}))
    assert len(claims) == 1, claims
    return claims[0]


def test_before_after_pair_gives_head_over_base():
    # https://github.com/kornia/kornia/pull/2884
    claim = _one("This PR removes the for loop. Before: 93.8 ms, After the change: 36.8 ms "
                 "(M1 CPU)")
    assert (claim["metric"], claim["direction"], claim["ratio"]) == ("time", "faster", 0.3923)
    assert claim["scope"]["device"] == ["M1", "CPU"] and claim["vs"] == "base"
    assert claim["source"] == "body"


def test_a_range_of_multipliers_is_a_range_of_ratios():
    # https://github.com/kornia/kornia/pull/3269
    claim = _one("vectorized the loop over all boxes to optimize the function by 100-200x")
    assert (claim["metric"], claim["direction"]) == ("time", "faster")
    assert claim["ratio"] is None and (claim["ratio_low"], claim["ratio_high"]) == (0.005, 0.01)


def test_a_percentage_speedup_keeps_both_readings():
    # https://github.com/kornia/kornia/pull/3474: 34 % fewer seconds, or 34 % more runs a second
    claims = parse_claims(body="~34% speedup on CUDA by avoiding intermediate memory allocations "
                               "(CPU 7022 -> 5845 ms)")
    speedup, pair = claims
    assert (speedup["ratio_low"], speedup["ratio_high"]) == (0.66, round(1 / 1.34, 4))
    assert "CUDA" in speedup["scope"]["device"]
    assert (pair["metric"], pair["direction"], pair["ratio"]) == ("time", "faster", 0.8324)


def test_speed_and_memory_in_one_sentence_are_two_claims():
    # the example (issue 50): "12-40x faster, memory 6.4x reduction"
    speed, memory = parse_claims(title="12-40x faster, memory 6.4x reduction")
    assert (speed["metric"], speed["ratio_low"], speed["ratio_high"]) == ("time", 0.025, 0.0833)
    assert (memory["metric"], memory["direction"], memory["ratio"]) == ("memory", "less", 0.1562)


def test_a_rate_with_its_old_value_is_throughput():
    # the example (issue 50): "3358 tok/s (was 3047)"
    claim = _one("3358 tok/s (was 3047)")
    assert (claim["metric"], claim["direction"], claim["ratio"]) == ("throughput", "faster", 1.1021)


def test_bounds_and_a_repair_of_a_slowdown():
    # https://github.com/pyg-team/pytorch_geometric/pull/7766
    first, second = parse_claims(
        body="On CPU: fwd: up to `6.52x` faster; fwd+bwd: up to `1.50` faster")
    assert first["bound"] == second["bound"] == "up_to" and first["ratio"] == 0.1534
    # https://github.com/Project-MONAI/MONAI/pull/6887
    assert _one("a more than 10x performance improvement")["bound"] == "at_least"
    # https://github.com/pytorch/ao/pull/1092: fixing a 20x slowdown makes head 20x faster
    claim = _one("", title="Fix 20x slowdown of FP6 kernel due to device properties query")
    assert (claim["direction"], claim["ratio"], claim["source"]) == ("faster", 0.05, "title")


def test_another_implementation_is_not_base():
    # https://github.com/unslothai/unsloth/pull/4273 (the harvested paraphrase's words)
    claim = _one("flex attention is about 1.3x faster than the SDPA fallback")
    assert claim["vs"] == "the SDPA fallback"
    assert _one("up to 20% throughput gains compared to main")["vs"] == "base"


def test_compile_time_and_memory_amounts():
    # https://github.com/tile-ai/tilelang/pull/2809
    claim = _one("", title="[Enhancement] Speed up cold parallel/AOT compilation up to ~4x")
    assert (claim["metric"], claim["ratio"], claim["bound"]) == ("compile_time", 0.25, "up_to")
    # https://github.com/TheLastBen/diffusers/pull/1: an amount without its base has no ratio
    claim = _one("Reduce memory by nearly 2GB.")
    assert (claim["metric"], claim["direction"], claim["ratio"]) == ("memory", "less", None)


def test_a_before_after_table_gives_one_claim_per_row():
    body = ("| case | before (ms) | after (ms) |\n|---|---|---|\n"
            "| bs=1 fp16 A100 | 10.0 | 5.0 |\n| bs=8 | 40 | 30 |\n")
    first, second = parse_claims(body=body)
    assert (first["ratio"], second["ratio"]) == (0.5, 0.75)
    assert first["scope"]["case"] == ["bs=1 fp16 A100"] and first["scope"]["device"] == ["A100"]


@pytest.mark.parametrize("text", [
    "Fixes #1234 in v2.3.1: shape 64x64, atol 1e-3, accuracy 76.1%",   # numbers, no claim
    "Stamp out 1x1x1 clusters, 128x256 CTA shape",                      # NVIDIA/cutlass#1665
    "Auto-tune 500x medium-K shapes to boost flops",                    # pytorch/FBGEMM#4635
    "reserve 10% GPU in `get_balanced_memory` to avoid OOM",        # huggingface/accelerate#1798
    "Vulkan: Default to 1GB allocations instead of 4GB to avoid fragmentation",  # llama.cpp#12434
    "```\nBefore: 93.8 ms\nAfter: 36.8 ms\n```",                        # logs in code are not read
])
def test_numbers_that_are_not_claims(text):
    assert parse_claims(title=text) == [] and parse_claims(body=text) == []


def test_a_claim_repeated_in_the_body_and_a_commit_is_kept_once():
    claims = parse_claims(title="2x faster inference", body="2x faster inference",
                          commits=["2x faster inference", "cut memory by 30%"])
    assert [(c["source"], c["metric"]) for c in claims] == [("title", "time"), ("commit", "memory")]


def test_cli_prints_one_line_a_claim_and_writes_json(tmp_path, capsys):
    body = tmp_path / "body.md"
    body.write_text("Before: 93.8 ms, After the change: 36.8 ms (M1 CPU)\n\n30% less memory")
    out = tmp_path / "claims.json"
    assert main(["claims", "--title", "Vectorize lovasz_softmax loss", "--body-file", str(body),
                 "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(len(line) <= 80 for line in lines)
    written = json.loads(out.read_text())
    assert [c["metric"] for c in written] == ["time", "memory"]
    assert set(written[0]) >= {"quote", "metric", "direction", "ratio", "bound", "scope", "vs",
                               "source"}


def test_cli_json_dash_prints_the_list_alone(capsys):
    assert main(["claims", "--title", "2x faster epilogue", "--json", "-"]) == 0
    [claim] = json.loads(capsys.readouterr().out)      # nothing but the JSON on stdout
    assert claim["ratio"] == 0.5 and claim["source"] == "title"


def test_cli_without_a_claim_says_so(capsys):
    assert main(["claims", "--title", "Fix a typo in the docs"]) == 0
    assert "no quantitative performance claim" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["claims"], "give --title, --body or --body-file"),
    (["claims", "--body-file", "/nonexistent/body.md"], "no such file"),
    (["claims", "--body", "x", "--body-file", "f"], "not allowed with argument"),
])
def test_cli_user_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_compare_stores_the_claims_of_the_text_and_the_commits(tmp_path):
    import subprocess
    from types import SimpleNamespace

    from runner.pipeline.compare import CompareRequest, PullRequestText, _intent

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
    base = git("rev-parse", "HEAD")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
        "-m", "Fuse the epilogue\n\ncuts peak memory by 30%")
    revs = {"base": SimpleNamespace(sha=base),
            "head": SimpleNamespace(sha=git("rev-parse", "HEAD"))}
    req = CompareRequest(repo=str(tmp_path), base="HEAD~1", head="HEAD", config=None,
                         out=tmp_path / "out", pr=PullRequestText("2x faster epilogue", ""))
    claims = _intent(req, tmp_path, revs)["claims"]
    assert [(c["source"], c["metric"], c["ratio"]) for c in claims] == [
        ("title", "time", 0.5), ("commit", "memory", 0.7)]


def test_compare_takes_a_body_file():
    from runner.cli.main import build_parser

    args = build_parser().parse_args(["compare", "--base", "a", "--head", "b", "--body-file", "-"])
    assert args.body_file == "-" and args.body is None


def test_evaluation_script_scores_the_development_set(tmp_path):
    spec = importlib.util.spec_from_file_location("claims_eval", EVALUATION / "claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = tmp_path / "figures.json"
    assert module.main(["--set", "dev", "--json", str(figures)]) == 0
    dev = json.loads(figures.read_text())["dev"]
    assert dev["texts"] >= 100 and dev["claim_free"] >= dev["texts"] // 4
    # the development set's figures as RESULTS_claims.md gives them (a guard against losing them)
    assert dev["false_in_free"] == 0 and dev["precision"] >= 0.95 and dev["recall"] >= 0.8
    rows = module.load("dev") + module.load("test")
    assert all(row["url"].startswith("https://github.com/") for row in rows)
    assert not {r["url"] for r in module.load("dev")} & {r["url"] for r in module.load("test")}


def test_a_long_or_adversarial_text_is_read_only_so_far():
    from runner.intent import claims as module

    # GitHub caps a PR body at 65,536 characters; past that, nothing is read
    assert parse_claims(body="x" * module.MAX_TEXT + " 2x faster") == []
    # a log pasted as prose: at most MAX_FIGURES figures are looked at, each in a bounded window
    assert parse_claims(body="3% " * (module.MAX_FIGURES + 10) + "\n\n2x faster") == []
    assert len(parse_claims(body="3% " * 50 + "\n\n2x faster")) == 1


def test_an_option_against_itself_off_is_not_base_and_its_cost_is_slower():
    # https://github.com/NVIDIA/physicsnemo/pull/1897
    memory, time = parse_claims(body=(
        "Adds opt-in activation checkpointing to Transolver.\n\nTransolver activation "
        "checkpointing uses 3.3× less peak memory, at the cost of 1.29× training-step time, or a "
        "29% slowdown."))
    assert (memory["metric"], memory["direction"], memory["ratio"]) == ("memory", "less", 0.303)
    assert (time["direction"], time["ratio"]) == ("slower", 1.29)  # the 29 % restates it
    assert memory["vs"] == time["vs"] == "the option off"
    # https://github.com/NVIDIA/physicsnemo/pull/722: a speed-up below 1 is a slow-down
    claim = _one("with ~0.63X speedup on DGX-A100")
    assert (claim["direction"], claim["ratio"]) == ("slower", 1.5873)


def test_tables_without_leading_pipes_and_pairs_without_a_name():
    # https://github.com/PaddlePaddle/Paddle/pull/16745 (a GitHub table without leading pipes)
    body = ("  | 1 card throughput(img/s) | 4 card throughput(img/s)\n-- | -- | --\n"
            "before fuse optimizer ops | 242.7921093 | 1555.285541\n"
            "after fuse optimizer ops | 246.7232074 | 1720.430108\n")
    assert [c["ratio"] for c in parse_claims(body=body)] == [1.0162, 1.1062]
    # https://github.com/deepmodeling/deepmd-kit/pull/4463: "A vs. B" ordered by the sentence
    claim = _one("this modification brings an 2.75x improvement on optimizer update "
                 "(22ms vs. 8ms)")
    assert (claim["direction"], claim["ratio"]) == ("faster", 0.3636)
    assert parse_claims(body="measured 22ms vs. 8ms") == []  # which is head? nothing says


def test_a_rate_table_is_throughput_from_its_column_headers():
    # https://github.com/ikawrakow/ik_llama.cpp/pull/541: "t/s (main)" against "t/s (PR)"
    body = ("| model | threads | t/s (main) | t/s (PR) | Speedup |\n|---|---|---|---|---|\n"
            "| llama 8B IQ2_KT | 2 | 3.28 ± 0.00 | 4.11 ± 0.00 | 1.253 |\n")
    claim = _one(body)
    assert (claim["metric"], claim["direction"], claim["ratio"]) == ("throughput", "faster", 1.253)


def test_claims_are_valid_in_results_json():
    import jsonschema

    from runner import results

    claims = parse_claims(title="2x faster", body="Before: 93.8 ms, After: 36.8 ms (A100)\n\n"
                          "~30% speedup\n\nreduce memory by 2GB\n\nup to 20% throughput gains")
    assert len(claims) == 5
    schema = {**results.schema(), "required": []}
    jsonschema.validate({"claims": claims}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"claims": [{**claims[0], "metric": "speed"}]}, schema)
