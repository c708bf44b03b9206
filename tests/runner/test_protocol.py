"""The parent–worker protocol's typed messages (runner/protocol.py): each end's JSON reads back as
the same message, a worker's reply that breaks a field's type or range is refused with the field
named (the worker runs the PR's code), and a real worker child answers with them."""

from __future__ import annotations

import json
import math

import pytest

from runner.pipeline.timing.benchstate import SideState
from runner.pipeline.profiling import PROFILE_PASSES, pass_cost, passes_for, profile_order
from runner.protocol import (Failure, Listing, ListRequest, MeasureReply, MeasureRequest, ProfileRequest,
                             ProtocolError, SampleReply, SampleRequest, SetupReply, SetupRequest, failure_of)

MESSAGES = [
    ListRequest("/b", "asv", {"k": 1}, cmd="preload"),
    SetupRequest("/b", "bench_x.py", "bench_x", "bench_x[n=2]", suite="perfgate", case={"name": "bench_x[n=2]"},
                 options={}, min_sample_time=0.01, cold_cache=True, number=7, warmup_samples=0, warmup_seconds=0.5),
    SampleRequest(1, 40), SampleRequest(3, None), MeasureRequest(False), ProfileRequest("/t/x.json.gz", 5),
    SetupReply(40, 2.5e-4, 2.4e-4, 0.01, 41, 3), SetupReply(1, self_measured=True),
    SampleReply((1e-3, 2e-3), (0.04, 0.08), (0.04, 0.07), (0, 3), (None, 0.1), (None, None), 40, 1024),
    SampleReply(readings={"tokens": {"values": [10.0, 11.5], "unit": "tokens/s", "direction": "bigger"}}),
    MeasureReply({"graph_breaks": 0}, {"kind": "cpu", "peak_bytes": 5}), MeasureReply(None, memory_error="boom"),
    Listing([{"name": "a", "file": "f.py"}], [{"file": "g.py", "error": "x"}], [], fork_safe=False, hazards=["CUDA"]),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_reads_back_as_itself_through_json(message):
    assert type(message).from_json(json.loads(json.dumps(message.to_json()))) == message


def test_a_failure_and_its_skip_reason_travel_as_before():
    wire = Failure("skipped: no GPU", skipped="no GPU").to_json()
    assert wire == {"ok": False, "error": "skipped: no GPU", "skipped": "no GPU"}
    assert failure_of(wire) == Failure("skipped: no GPU", skipped="no GPU")
    assert failure_of(SetupReply(3).to_json()) is None
    assert Failure("x", fatal=True).to_json()["fatal"] is True


@pytest.mark.parametrize("reply, bad, field", [
    (SampleReply, {"ok": True, "samples": [1e-3, -1.0]}, "samples"),
    (SampleReply, {"ok": True, "samples": [math.inf]}, "samples"),
    (SampleReply, {"ok": True, "samples": ["1"]}, "samples"),
    (SampleReply, {"ok": True, "samples": [1e-3], "switches": [1.5]}, "switches"),
    (SampleReply, {"ok": True, "samples": [], "readings": {"r": {"values": [math.nan]}}}, "readings"),
    (SampleReply, {"ok": True, "samples": [1e-3], "peak_memory_bytes": -1}, "peak_memory_bytes"),
    (SetupReply, {"ok": True, "number": 0}, "number"),
    (SetupReply, {"ok": True, "number": True}, "number"),
    (SetupReply, {"ok": True, "number": 2, "per_call": "fast"}, "per_call"),
    (MeasureReply, {"ok": True, "compile": [1]}, "compile"),
    (Listing, {"ok": True, "benchmarks": [{"file": "x"}]}, "benchmarks"),
])
def test_a_reply_that_breaks_the_protocol_is_refused_naming_the_field(reply, bad, field):
    with pytest.raises(ProtocolError, match=field):
        reply.from_json(bad)


def test_a_sample_reply_pads_its_per_sample_measurements_to_the_samples():
    got = SampleReply.from_json({"ok": True, "samples": [1e-3, 2e-3], "wall_s": [0.1, 0.2, 0.3], "cpu_s": None})
    assert got.wall_s == (0.1, 0.2) and got.cpu_s == (None, None) and got.switches == (None, None)


def test_the_timing_pass_fails_a_side_whose_reply_breaks_the_protocol():
    from runner.pipeline.timing.pairs import ProcessPairs

    class Broken:
        def request(self, cmd, timeout=None, **fields):
            return {"ok": True, "samples": [-5.0]}

    pairs = ProcessPairs.__new__(ProcessPairs)
    pairs.workers, pairs.telemetry = {"head": Broken()}, None
    reply = pairs.ask("head", SampleRequest(1), SampleReply)
    assert isinstance(reply, Failure) and reply.error.startswith("the worker broke the protocol: samples")


def test_a_worker_child_answers_with_the_typed_messages(tmp_path):
    from runner.worker.child import Worker
    from runner.worker.serve import serve

    (tmp_path / "bench_add.py").write_text("def bench_add():\n    return lambda: sum(range(50))\n")
    replies: list[dict] = []
    requests = [SetupRequest(str(tmp_path), "bench_add.py", "bench_add", "bench_add", min_sample_time=0.001),
                SampleRequest(2), MeasureRequest(False)]
    serve(Worker("cpu"), [json.dumps(r.to_json()) for r in requests], replies.append)
    setup, sample, measure = (SetupReply.from_json(replies[0]), SampleReply.from_json(replies[1]),
                              MeasureReply.from_json(replies[2]))
    assert setup.number >= 1 and setup.per_call and setup.per_call > 0
    assert len(sample.samples) == 2 and sample.number == setup.number and all(s > 0 for s in sample.samples)
    assert measure.memory is None and measure.memory_error is None


def test_the_profile_plan_orders_by_verdict_and_fits_the_budget():
    verdicts = ["unchanged", "failed", "inconclusive", "improvement", "new", "regression", "unchanged"]
    assert profile_order(verdicts) == [3, 5, 2, 0, 6]
    assert passes_for("regression", 2.0, 100.0) == PROFILE_PASSES
    assert passes_for("inconclusive", 2.0, 5.0) == 1  # three do not fit, one does
    assert passes_for("unchanged", 2.0, 100.0) == 1
    assert passes_for("regression", 2.0, 1.0) == 0
    side = SideState(per_call=0.01, number=10, first_call_s=0.5)
    assert pass_cost(side, overhead=1.0) == pytest.approx(0.5 + 5 * 0.01 + 1.0)


@pytest.mark.parametrize("request_of", [
    lambda path: ListRequest(path),
    lambda path: SetupRequest(path, "bench_x.py", "bench_x", "bench_x"),
    lambda path: ProfileRequest(path),
])
def test_a_worker_is_never_sent_a_relative_path(request_of):
    # the worker runs in its side's worktree, deleted afterwards: a relative path lands there
    with pytest.raises(ProtocolError, match="absolute path"):
        request_of("traces/head/bench.json.gz")
    assert request_of("/abs/traces") is not None
