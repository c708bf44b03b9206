"""The CUDA timer's structure on a simulated device (testkit/fake_cuda.py, no GPU needed):
the order of events and synchronisations, what an interval contains, the L2 flush, peak memory.
The same timer on a real GPU: tests/runner/test_gpu.py."""

from __future__ import annotations

import pytest

from runner.worker.sampling import Timer, calibrate
from testkit.fake_cuda import FakeTorch, installed


@pytest.fixture
def fake():
    with installed(FakeTorch(launch_us=2.0, sync_us=8.0, flush_us=30.0)) as torch:
        yield torch


def test_without_cold_cache_every_stream_is_joined_before_the_end_event(fake):
    side = fake.cuda.Stream()

    def fn():
        fake.kernel(5.0)
        fake.kernel(500.0, stream=side)  # left running on a side stream

    per_call = Timer("cuda").time(fn, 4)
    log = fake.log
    last_launch = max(i for i, e in enumerate(log) if e == "kernel on stream1")
    joins = [i for i, e in enumerate(log) if e == "synchronize device" and i > last_launch]
    end_records = [i for i, e in enumerate(log) if e.startswith("record") and i > last_launch]
    assert joins and end_records and joins[0] < end_records[0]
    # the side stream's 4 × 500 µs are inside the interval
    assert per_call * 4 >= 2000e-6


def test_without_cold_cache_the_calls_are_not_waited_for_one_by_one(fake):
    Timer("cuda").time(lambda: fake.kernel(5.0), 50)
    assert fake.log.count("synchronize device") == 2  # before the start event, before the end event


def test_cold_cache_flushes_before_each_call_and_waits_once_per_sample(fake):
    timer = Timer("cuda", cold_cache=True)
    fake.log.clear()
    timer.time(lambda: fake.kernel(5.0), 3)
    calls = [e for e in fake.log if e in ("flush on stream0", "kernel on stream0") or e.startswith("record")]
    assert calls == ["record event0"] \
        + ["flush on stream0", "record event1", "kernel on stream0", "record event4"] \
        + ["flush on stream0", "record event2", "kernel on stream0", "record event5"] \
        + ["flush on stream0", "record event3", "kernel on stream0", "record event6"]
    assert fake.log.count("synchronize device") == 2  # before the first call, after the last
    assert not any(e.startswith("wait") for e in fake.log)


def test_cold_cache_interval_holds_the_call_not_the_flush_nor_the_hosts_round_trip(fake):
    """A 5 µs kernel reads 5 µs (plus the end event's own launch gap), not 5 µs + a host sync's
    8 µs round trip, as the per-call synchronisation this timer had before made it."""
    per_call = Timer("cuda", cold_cache=True).time(lambda: fake.kernel(5.0), 20)
    assert 5e-6 <= per_call < 5e-6 + 1e-6


def test_cold_cache_includes_a_side_stream_the_call_joins_back(fake):
    side = fake.cuda.Stream()

    def fn():
        side.wait_stream(fake.current)
        fake.kernel(100.0, stream=side)
        fake.kernel(5.0)
        fake.current.wait_stream(side)

    assert Timer("cuda", cold_cache=True).time(fn, 3) >= 100e-6


@pytest.mark.parametrize("l2, expected", [(50 * 2**20, 100 * 2**20), (None, 128 * 2**20)])
def test_the_flush_buffer_is_twice_the_l2_cache(l2, expected):
    with installed(FakeTorch(l2_bytes=l2)) as fake:
        Timer("cuda", cold_cache=True)
        assert [b.size for b in fake.buffers] == [expected]  # 64 MiB × 2 when the device does not say


def test_no_flush_buffer_without_cold_cache_or_on_cpu(fake):
    Timer("cuda")
    Timer("cpu", cold_cache=True)
    assert fake.buffers == []


def test_peak_memory_is_what_the_sample_allocated_since_the_reset(fake):
    timer = Timer("cuda")
    fake.allocate(1000)
    timer.reset_peak_memory()
    timer.time(lambda: fake.allocate(4096), 2)
    assert timer.peak_memory() == 1000 + 2 * 4096
    assert fake.log.index("reset peak memory") < fake.log.index("synchronize device")
    assert Timer("cpu").peak_memory() is None


def test_the_cold_cache_flush_buffer_is_not_the_benchmarks_peak_memory(fake):
    # GPU review #16: with cold_cache the peak included perfgate's own 2 x L2 buffer
    timer = Timer("cuda", cold_cache=True)
    timer.reset_peak_memory()
    timer.time(lambda: fake.allocate(4096), 2)
    assert timer.peak_memory() == 2 * 4096


def test_cold_cache_samples_are_sized_by_their_span_flushes_included(fake):
    """Calls too short to time (an empty callable: its events are back to back) would grow the
    count to a million calls (and two million events); the span with the 30 µs flushes stops it
    near 20 ms / 30 µs."""
    timer = Timer("cuda", cold_cache=True)
    sample = timer.sample(lambda: None, 10)
    assert sample.per_call == 0.0 and sample.span_s == pytest.approx(10 * 32e-6, rel=0.2)
    number, _ = calibrate(timer, lambda: None, 0.02)
    assert 500 <= number <= 2000
    assert Timer("cuda").sample(lambda: fake.kernel(5.0), 3).span_s is None


def test_the_set_up_collects_the_young_generations_not_a_full_collection(tmp_path, monkeypatch):
    """A full collection walks torch's ~10^6 objects (0.1 s, twice per process pair: half of a
    fast A/A pair's cost); the set-up's garbage lies in the young generations."""
    import gc

    from runner.worker import child
    from runner.worker.child import Worker

    (tmp_path / "bench_garbage.py").write_text(
        "def bench_garbage(device):\n"
        "    junk = [[i] for i in range(2000)]  # garbage the set-up leaves\n"
        "    return lambda: sum(range(100))\n")
    asked = []
    real = gc.collect

    def collect(*args):
        asked.append(args)
        return real(*args)

    monkeypatch.setattr(gc, "collect", collect)
    reply = Worker("cpu").setup({"dir": str(tmp_path), "file": "bench_garbage.py", "func": "bench_garbage",
                                 "name": "bench_garbage", "suite": "perfgate", "min_sample_time": 0.001,
                                 "cold_cache": False, "warmup_samples": 1, "number": 10})
    assert reply["number"] == 10
    assert asked == [(child.SETUP_GC_GENERATION,)] and child.SETUP_GC_GENERATION < 2, asked


def test_the_first_call_is_timed_to_the_end_of_its_device_work(tmp_path):
    # GPU review #20: first_call_s measured the launches; the device is synchronised around it
    from runner.worker.child import Worker

    (tmp_path / "bench_gpu.py").write_text(
        "import torch\n"
        "def bench_gpu(device):\n"
        "    return lambda: torch.first_call_kernel()\n")
    with installed(FakeTorch()) as fake:
        fake.first_call_kernel = lambda: fake.kernel(5000.0, name="first call's kernel")
        Worker("cuda").setup({"dir": str(tmp_path), "file": "bench_gpu.py", "func": "bench_gpu",
                              "name": "bench_gpu", "suite": "perfgate", "min_sample_time": 0.001,
                              "cold_cache": False, "warmup_samples": 1, "number": 2})
        first = fake.log.index("first call's kernel on stream0")
        assert (fake.log[first - 1] == "synchronize device"
                and fake.log[first + 1] == "synchronize device")


@pytest.mark.parametrize("kind, logged", [("zero", "flush on stream0"),
                                          ("read", "read flush on stream0")])
def test_the_chosen_l2_flush_runs_before_each_call_outside_its_interval(fake, kind, logged):
    # GPU review #15: a write-only flush's dirty lines are written back in the next call's
    # interval; the timer offers a read-based flush (a sum into one scalar) beside it
    fake.log.clear()
    per_call = Timer("cuda", cold_cache=True, flush=kind).time(lambda: fake.kernel(5.0), 3)
    flushes = [e for e in fake.log if "flush" in e]
    assert flushes == [logged] * 3
    assert 5e-6 <= per_call < 6e-6  # the flush's 30 µs are outside every call's interval


def test_an_unknown_l2_flush_is_refused(fake):
    with pytest.raises(ValueError, match="flush must be one of zero, read"):
        Timer("cuda", cold_cache=True, flush="memset")


def test_the_workers_cold_timer_flushes_as_results_json_records_it(tmp_path):
    """The worker's own timer (child.Worker's set-up) flushes with L2_FLUSH, the kind the parent
    records in settings.l2_flush."""
    from runner.protocol import L2_FLUSH
    from runner.worker.child import Worker

    (tmp_path / "bench_cold.py").write_text(
        "import torch\n"
        "def bench_cold(device):\n"
        "    return lambda: torch.cold_kernel()\n")
    with installed(FakeTorch()) as fake:
        fake.cold_kernel = lambda: fake.kernel(5.0)
        reply = Worker("cuda").setup({"dir": str(tmp_path), "file": "bench_cold.py",
                                      "func": "bench_cold", "name": "bench_cold",
                                      "suite": "perfgate", "min_sample_time": 0.001,
                                      "cold_cache": True, "warmup_samples": 1, "number": 2})
        assert reply["cold_cache"] is True
        expected = "read flush on stream0" if L2_FLUSH == "read" else "flush on stream0"
        assert fake.log.count(expected) >= 2
        assert not [e for e in fake.log if "flush" in e and e != expected]
