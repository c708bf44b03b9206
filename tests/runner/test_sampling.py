"""The CUDA timer's order of operations, with a fake torch (no GPU needed): every stream the
callable used is joined before the end event is recorded."""

from __future__ import annotations

import sys
import types

import pytest

from runner.worker.sampling import Timer


class _FakeEvent:
    log: list[str] = []

    def __init__(self, enable_timing=False):
        self.name = f"event{len(self.log)}"
        self.at = None

    def record(self, stream=None):
        self.at = len(self.log)
        self.log.append(f"record {self.name}")

    def synchronize(self):
        self.log.append(f"wait {self.name}")

    def elapsed_time(self, other):
        return float(other.at - self.at)  # "milliseconds": log entries between the events


@pytest.fixture
def fake_torch(monkeypatch):
    log: list[str] = []
    _FakeEvent.log = log
    cuda = types.SimpleNamespace(Event=_FakeEvent, synchronize=lambda: log.append("synchronize device"),
                                 reset_peak_memory_stats=lambda: None, max_memory_allocated=lambda: 0)
    torch = types.SimpleNamespace(cuda=cuda)
    monkeypatch.setitem(sys.modules, "torch", torch)
    return log


@pytest.mark.parametrize("cold", [False, True])
def test_the_device_is_synchronised_after_the_calls_and_before_the_end_event(fake_torch, cold, monkeypatch):
    log = fake_torch
    timer = Timer("cuda")
    if cold:  # the L2 flush path, without asking a fake device for its L2 size
        timer.cold_cache = True
        timer._flush_buf = types.SimpleNamespace(zero_=lambda: log.append("flush"))

    def fn():
        log.append("launch on a side stream")

    timer.time(fn, 2)
    last_launch = max(i for i, e in enumerate(log) if e == "launch on a side stream")
    end_records = [i for i, e in enumerate(log) if e.startswith("record") and i > last_launch]
    joins = [i for i, e in enumerate(log) if e == "synchronize device" and i > last_launch]
    assert end_records and joins and joins[0] < end_records[0]
