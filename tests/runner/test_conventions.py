"""The one extension point for benchmark conventions: the registry and its protocol, a new
convention added as one module and one registry line (tests/runner/toy_convention.py), perfgate's
own convention's factory shapes, and errors shown without perfgate's own frames."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from dataclasses import fields

import pytest

from runner import conventions
from runner.config import Config, parse_table, suite_names
from runner.conventions.base import BenchmarkShapeError, Suite, format_error
from runner.conventions.perfgate import call_factory
from runner.errors import ConfigError
from runner.pipeline import suites
from runner.worker.child import Worker
from runner.worker.serve import serve

from . import toy_convention


def _ask(worker: Worker, **request) -> dict:
    """One request through the worker's request loop, in this process; its reply."""
    replies: list[dict] = []
    serve(worker, iter([json.dumps(request)]), replies.append)
    return replies[0]


def test_every_registered_convention_has_the_protocol_and_a_name_of_its_own():
    names = conventions.names()
    assert len(set(names)) == len(names)
    assert {"perfgate", "asv", "pytest-benchmark", "triton", "torch-timer", "command"} <= set(names)
    assert suite_names() == ("auto", *names)
    keys = {f.name for f in fields(Config)}
    for convention in conventions.REGISTRY:
        assert convention.looked_for and set(convention.options) <= keys
        assert all(callable(getattr(convention, m)) for m in ("detect", "collect", "prepare"))
    assert conventions.get(None).name == conventions.DEFAULT == "perfgate"
    with pytest.raises(KeyError, match="no benchmark convention 'nope'"):
        conventions.get("nope")
    with pytest.raises(ConfigError, match="suite must be one of auto, asv, command"):
        parse_table({"suite": "toy"}, "perfgate.toml")


def test_a_new_convention_is_one_module_and_one_registry_line(monkeypatch, tmp_path):
    monkeypatch.setattr(conventions, "REGISTRY", conventions.REGISTRY + (toy_convention.CONVENTION,))
    root = tmp_path / "repo"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "speed.toy").write_text("small 100\nlarge 20000\nthroughput = 512 tokens/s\n")
    # the parent: the configuration accepts it, auto detects it, the report names what it looks for
    assert parse_table({"suite": "toy"}, "perfgate.toml").suite == "toy"
    assert suites.detect(root, "auto", "benchmarks") == Suite("toy", "benchmarks")
    assert suites.detect_in(root / "benchmarks", "auto") == "toy"
    assert suites.looked_for("toy") == "*.toy files"
    # the worker: lists, sets up and samples it through its request loop
    worker = Worker("cpu")
    listing = _ask(worker, cmd="list", dir=str(root / "benchmarks"), suite="toy")
    cases = {c["name"]: c for c in listing["benchmarks"]}
    assert listing["ok"] and list(cases) == ["small", "large", "throughput"]
    setup = _ask(worker, cmd="setup", dir=str(root / "benchmarks"), suite="toy", case=cases["large"],
                 file="speed.toy", func="large", name="large", min_sample_time=0.001, cold_cache=False)
    assert setup["ok"] and setup["number"] >= 1 and setup["per_call"] > 0
    sample = _ask(worker, cmd="sample", count=3)
    assert sample["ok"] and len(sample["samples"]) == 3 and min(sample["samples"]) > 0
    setup = _ask(worker, cmd="setup", dir=str(root / "benchmarks"), suite="toy", case=cases["throughput"],
                 file="speed.toy", func="throughput", name="throughput", min_sample_time=0.001, cold_cache=False)
    assert setup["ok"] and setup["self_measured"] is True
    run = _ask(worker, cmd="sample", count=1)
    assert run["readings"] == {"throughput": {"values": [512.0], "unit": "tokens/s", "direction": "bigger"}}
    (root / "benchmarks" / "long.toy").write_text("x" * 600 + " 10\nfine 10\n")
    longer = _ask(worker, cmd="list", dir=str(root / "benchmarks"), suite="toy")
    assert "fine" in [c["name"] for c in longer["benchmarks"]] and not any(len(c["name"]) > 500 for c in longer["benchmarks"])
    assert longer["errors"] == [{"file": "long.toy", "error": longer["errors"][0]["error"]}]
    assert "longer than results.json holds" in longer["errors"][0]["error"]
    missing = _ask(worker, cmd="setup", dir=str(root / "benchmarks"), suite="toy", case={**cases["small"], "name": "gone"},
                   file="speed.toy", func="gone", name="gone", min_sample_time=0.001, cold_cache=False)
    assert not missing["ok"] and "gone is not in speed.toy" in missing["error"]


# -- perfgate's own convention: a factory with or without the device ---------------------------------
def test_a_factory_gets_the_device_only_when_it_takes_one():
    seen = []

    def bench_plain():
        seen.append("no device")
        return lambda: 1

    def bench_sized(n=8):
        seen.append(n)
        return lambda: n

    def bench_named(n, device):
        seen.append((device, n))
        return lambda: n

    def bench_positional(dev, n=1):
        seen.append((dev, n))
        return lambda: n

    assert call_factory(bench_plain, "bench_plain", "cpu", {})() == 1
    assert call_factory(bench_sized, "bench_sized[n=4]", "cpu", {"n": 4})() == 4
    assert call_factory(bench_named, "bench_named[n=2]", "cuda", {"n": 2})() == 2
    assert call_factory(bench_positional, "bench_positional", "cuda", {})() == 1
    assert seen == ["no device", 4, ("cuda", 2), ("cuda", 1)]


@pytest.mark.parametrize("source,message", [
    ("def bench_x(device):\n    return None\n", "bench_x returned NoneType, not a callable (did it run the work"),
    ("def bench_x(device):\n    return 42\n", "bench_x returned int, not a callable"),
    ("def bench_x(device):\n    return lambda x: x\n", "bench_x returned a callable that needs arguments"),
    ("def bench_x(a, b):\n    return lambda: a\n", "bench_x(a, b) cannot be called with (device)"),
])
def test_a_benchmark_of_the_wrong_shape_gets_one_line_naming_the_convention(tmp_path, source, message):
    (tmp_path / "bench_shape.py").write_text(source)
    reply = _ask(Worker("cpu"), cmd="setup", dir=str(tmp_path), file="bench_shape.py", func="bench_x", name="bench_x",
                 suite="perfgate", min_sample_time=0.001, cold_cache=False)
    assert not reply["ok"]
    assert message in reply["error"] and "perfgate's bench_* convention" in reply["error"]
    assert "\n" not in reply["error"] and "Traceback" not in reply["error"]
    with pytest.raises(BenchmarkShapeError):
        call_factory(lambda device: None, "bench_y", "cpu", {})


def test_errors_show_the_benchmarks_frames_not_perfgates(tmp_path):
    (tmp_path / "bench_fails.py").write_text(textwrap.dedent("""
        def helper():
            raise ValueError("the benchmark's own bug")

        def bench_fails(device):
            return helper
    """))
    reply = _ask(Worker("cpu"), cmd="setup", dir=str(tmp_path), file="bench_fails.py", func="bench_fails",
                 name="bench_fails", suite="perfgate", min_sample_time=0.001, cold_cache=False)
    assert not reply["ok"]
    assert "bench_fails.py" in reply["error"] and "ValueError: the benchmark's own bug" in reply["error"]
    assert "runner/" not in reply["error"] and "serve.py" not in reply["error"]
    try:
        raise RuntimeError("perfgate's own")
    except RuntimeError as exc:
        own = exc
    assert format_error(own).endswith("RuntimeError: perfgate's own")


def test_the_captured_do_bench_passes_only_the_callers_keywords_to_the_original():
    # GPU review #25: Triton 2.1's do_bench_cudagraph(fn, rep=20, grad_to_none=None) has neither
    # quantiles nor return_mode, and the pass-through added them: a TypeError outside capture
    from runner.conventions import triton as triton_convention

    def old_cudagraph(fn, rep=20, grad_to_none=None):
        fn()
        return 1.5

    wrapped = triton_convention._captured(old_cudagraph, graph=True)
    assert wrapped(lambda: None, rep=5) == 1.5
    assert wrapped(lambda: None) == 1.5


def test_a_cuda_graph_is_captured_under_the_modes_its_call_ran_in(monkeypatch):
    # GPU review #5, demo D2: a call recorded as (grad off, inference on) was warmed up and
    # captured with autograd on, before the modes were entered
    import contextlib

    import torch

    from runner.conventions.replay import Measured, timed_callable

    seen = []

    class Graph:
        def replay(self):
            seen.append(("replay", torch.is_grad_enabled(), torch.is_inference_mode_enabled()))

    @contextlib.contextmanager
    def graph(_g, *args, **kwargs):
        seen.append(("capture", torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        yield

    class Stream:
        def wait_stream(self, other):
            pass

    for name, value in {"is_available": lambda: True, "Stream": Stream,
                        "current_stream": lambda *a: Stream(),
                        "stream": lambda s: contextlib.nullcontext(), "CUDAGraph": Graph,
                        "graph": graph, "synchronize": lambda *a: None}.items():
        monkeypatch.setattr(torch.cuda, name, value)
    fn = lambda: seen.append(("call", torch.is_grad_enabled(),  # noqa: E731
                              torch.is_inference_mode_enabled()))
    timed, teardown = timed_callable(Measured([fn], [True], grad_enabled=False, inference=True),
                                     "cuda")
    try:
        assert seen[:2] == [("call", False, True), ("capture", False, True)]
        timed()
        assert seen[-1] == ("replay", False, True)
    finally:
        teardown()
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_the_triton_autotuners_own_do_bench_calls_are_not_the_scripts(monkeypatch):
    # GPU review #3, demo D1: the autotuner imports do_bench lazily and got the captured one: its
    # configs were listed as cases and all timed at the nominal 1 ms, so it kept the slow one
    import os

    from runner import conventions

    monkeypatch.delenv("PERFGATE_FIXTURE_AUTOTUNED", raising=False)
    folder = str(Path(__file__).resolve().parents[1] / "fixtures" / "suites" / "triton_autotune"
                 / "bench")
    convention = conventions.get("triton")
    found = convention.collect(folder, {})
    assert [case["name"] for case in found["benchmarks"]] == ["benchmark_kernel"]
    prepared = convention.prepare(dict(found["benchmarks"][0], dir=folder), "cpu", {})
    # the autotuner timed its configs for real
    assert os.environ["PERFGATE_FIXTURE_AUTOTUNED"] == "128"
    prepared.fn()


def test_the_autocast_of_the_measuring_call_is_recorded_and_entered_again(monkeypatch):
    # GPU review #22: a script timing `a @ b` inside torch.autocast("cuda", torch.bfloat16) was
    # timed in FP32: the call's autocast was lost as its grad mode once was
    import contextlib

    import torch

    from runner.conventions.replay import Measured, modes, timed_callable

    monkeypatch.setattr(torch, "is_autocast_enabled", lambda device="cuda": device == "cuda")
    monkeypatch.setattr(torch, "get_autocast_dtype", lambda device: torch.bfloat16)
    assert modes()[2] == torch.bfloat16
    entered = []

    @contextlib.contextmanager
    def autocast(device, dtype=None):
        entered.append((device, dtype))
        yield

    monkeypatch.setattr(torch, "autocast", autocast)
    _, teardown = timed_callable(Measured([lambda: None], [False], autocast_dtype=torch.bfloat16),
                                 "cuda")
    teardown()
    assert entered == [("cuda", torch.bfloat16)]
