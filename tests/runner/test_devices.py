"""The one extension point for GPU vendors: the device registry and its protocol, CUDA through it on
a simulated device (testkit/fake_cuda.py, fake_nvml.py), and a new vendor added as one module
and one registry line (tests/runner/toy_device.py) that the worker then times and measures on."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner import devices
from runner.config import DEVICES
from runner.devices.base import Device
from runner.devices.cuda import DEFAULT_L2_BYTES
from runner.pipeline.machine.conditions import cuda_allocator_env
from runner.worker.child import Worker
from runner.worker.forking import fork_hazards, thread_count
from runner.worker.serve import serve

from . import toy_device
from testkit.fake_cuda import FakeTorch, installed
from testkit.fake_nvml import FakeNVML

ROOT = Path(__file__).resolve().parents[2]

#: A benchmark on the toy accelerator: 250 device µs a call, holding 4 KiB meanwhile.
TOY_BENCH = ("from runner import devices\n\n\n"
             "def bench_kernel(device):\n"
             "    toy = devices.get(device)\n"
             "    return lambda: toy.run(250.0, nbytes=4096)\n")


def _ask(worker: Worker, **request) -> dict:
    """One request through the worker's request loop, in this process; its reply."""
    replies: list[dict] = []
    serve(worker, iter([json.dumps(request)]), replies.append)
    return replies[0]


@pytest.fixture
def toy(monkeypatch):
    """A fresh toy device, registered: the one line a new vendor adds."""
    device = toy_device.ToyDevice()
    monkeypatch.setattr(devices, "REGISTRY", devices.REGISTRY + (device,))
    return device


def test_every_registered_device_has_the_protocol_and_a_name_of_its_own():
    names = devices.names()
    assert len(set(names)) == len(names) and names[:2] == ("cpu", "cuda")
    assert devices.DEFAULT == "cpu"
    protocol = [n for n in vars(Device) if not n.startswith("_")] + list(Device.__annotations__)
    for device in devices.REGISTRY:
        assert all(hasattr(device, member) for member in protocol), device.name
    assert devices.get("cuda:1") is devices.get("cuda") and devices.get("cpu").event is None
    with pytest.raises(KeyError, match="no device 'mps' \\(there are: cpu, cuda\\)"):
        devices.get("mps")
    # the parent's names for them: the config's device values and the allocator variable it sets
    assert set(DEVICES) == {"auto", *names}
    assert cuda_allocator_env("expandable_segments:True", {}) == {devices.get("cuda").allocator_env:
                                                                   "expandable_segments:True"}


def test_importing_the_devices_loads_neither_torch_nor_nvml():
    code = ("import sys, runner.devices; "
            "print(sorted(m for m in ('torch', 'pynvml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_auto_is_cuda_where_torch_sees_a_gpu_and_a_named_device_that_cannot_run_is_an_error(
        monkeypatch):
    with installed(FakeTorch()) as fake:
        assert devices.resolve("auto") == devices.resolve("cuda") == "cuda"
        fake.cuda.is_available = lambda: False
        assert devices.resolve("auto") == devices.resolve("cpu") == "cpu"
        with pytest.raises(RuntimeError, match=r"^device 'cuda' asked for, but "
                                               r"torch.cuda.is_available\(\) is False$"):
            Worker("cuda")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    assert devices.resolve("auto") == "cpu"
    with pytest.raises(RuntimeError, match="^device 'cuda' asked for, but torch is not installed "
                                           "in this environment$"):
        devices.resolve("cuda")
    # an index is never dropped to mean device 0 (GPU review #21): the environment picks the GPU
    with pytest.raises(RuntimeError, match="'cuda:1': not one of .*CUDA_VISIBLE_DEVICES"):
        devices.resolve("cuda:1")


def test_the_env_of_a_cuda_worker_reads_torch_and_nvml_through_the_cuda_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(driver="550.54.15"))
    with installed(FakeTorch()) as fake:
        info = Worker("auto").env({})
        assert list(info) == ["device", "device_name", "torch", "cuda", "driver", "threads",
                              "compute_capability", "cpus"][:len(info)]  # the order before the seam
        assert {k: v for k, v in info.items() if k not in ("threads", "cpus")} == {
            "device": "cuda", "device_name": "Fake GPU", "torch": "2.13.0", "cuda": "12.4",
            "driver": "550.54.15", "compute_capability": "9.0"}
        # ROCm's torch: the same torch.cuda API, no CUDA toolkit, no NVML
        fake.version.cuda, fake.version.hip = None, "6.2"
        monkeypatch.setitem(sys.modules, "pynvml", None)
        rocm = Worker("cuda").env({})
        assert (rocm["device"], rocm["device_name"]) == ("cuda", "Fake GPU")
        assert rocm["cuda"] is rocm["driver"] is None
        # a CPU run still records the toolkit torch was built with
        fake.version.cuda = "12.4"
        on_cpu = Worker("cpu").env({})
        assert on_cpu["cuda"] == "12.4" and "compute_capability" not in on_cpu
    monkeypatch.setitem(sys.modules, "torch", None)
    plain = Worker("auto").env({})
    assert [k for k in plain if k != "cpus"] == ["device", "device_name", "torch", "cuda", "driver"]
    assert plain["device"] == "cpu" and plain["torch"] is plain["cuda"] is plain["driver"] is None


def test_a_fork_server_that_started_cuda_reports_it_as_a_hazard():
    with installed(FakeTorch()) as fake:
        assert "CUDA initialised" not in fork_hazards(thread_count())
        fake.initialised = True
        assert "CUDA initialised" in fork_hazards(thread_count())


def test_a_new_vendor_is_one_module_and_one_registry_line(toy, tmp_path, monkeypatch):
    (tmp_path / "bench_toy.py").write_text(TOY_BENCH)
    monkeypatch.setitem(sys.modules, "torch", None)  # no torch, so no CUDA: auto takes the toy
    assert devices.resolve("auto") == "toy"
    worker = Worker("toy")
    env = _ask(worker, cmd="env")
    assert (env["device"], env["device_name"]) == ("toy", "Toy accelerator")
    assert env["driver"] == "toy 1.0"
    assert env["cuda"] is None
    collected: list[tuple] = []
    monkeypatch.setattr(gc, "collect", lambda *args: collected.append(args) or 0)
    setup = _ask(worker, cmd="setup", dir=str(tmp_path), file="bench_toy.py", func="bench_kernel",
                 name="bench_kernel", suite="perfgate", min_sample_time=0.001, cold_cache=True)
    # timed on the toy's events: 250 device µs a call, where the host spends about a microsecond
    assert setup["ok"] and setup["number"] == 5 and setup["per_call"] == pytest.approx(250e-6)
    assert collected == [()]  # the toy's peaks are absolute: the set-up's garbage collected in full
    toy.log.clear()
    sample = _ask(worker, cmd="sample", count=3)
    assert sample["samples"] == pytest.approx([250e-6] * 3) and sample["peak_memory_bytes"] == 4096
    one_sample = ["synchronize", "record"] + ["kernel"] * 5 + ["synchronize", "record",
                                                              "wait event"]
    assert toy.log == ["reset peak"] + one_sample * 3
    toy.log.clear()
    measured = _ask(worker, cmd="measure", memory=True)
    assert {k: measured["memory"][k] for k in ("kind", "peak_bytes", "reserved_bytes")} == {
        "kind": "toy", "peak_bytes": 4096, "reserved_bytes": 4096}
    assert toy.log == ["synchronize", "empty cache", "reset peak", "kernel", "synchronize"]
    assert "Toy runtime initialised" in fork_hazards(thread_count())


@pytest.mark.gpu
def test_on_a_gpu_auto_is_cuda_and_the_cuda_device_times_and_measures_there():
    import torch

    assert devices.resolve("auto") == "cuda"
    info = Worker("auto").env({})
    cap = torch.cuda.get_device_capability()
    assert (info["device"], info["device_name"]) == ("cuda", torch.cuda.get_device_name())
    assert info["cuda"] == torch.version.cuda
    assert info["compute_capability"] == f"{cap[0]}.{cap[1]}"
    cuda = devices.get("cuda")
    x = torch.randn(1024, 1024, device="cuda")
    cuda.synchronize()
    cuda.reset_peak_memory()
    start, end = cuda.event(), cuda.event()
    start.record()
    y = x @ x
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0 and y.shape == x.shape
    assert cuda.reserved_peak() >= cuda.peak_memory() >= 2 * 1024 * 1024 * 4  # x and y
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or DEFAULT_L2_BYTES
    assert cuda.l2_flush_buffer("cuda").numel() == 2 * l2
    assert "CUDA initialised" in fork_hazards(thread_count())


def test_the_cuda_driver_loaded_in_a_fork_server_is_a_hazard_and_nvml_is_not():
    # GPU review #1: torch.cuda.is_available() runs cuInit (libcuda mapped) without setting torch's
    # flag; NVML's library and /dev/nvidiactl are what the NVML-based check opens, fork-safe
    from runner.devices.cuda import driver_loaded
    from runner.pipeline.machine import conditions

    nvml = ("7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15\n"
            "7f20-7f30 rw-s 00000000 00:05 7 /dev/nvidiactl\n")
    assert not driver_loaded(nvml) and not driver_loaded("")
    assert driver_loaded(nvml + "7f40-7f50 r-xp 00000000 08:01 43 "
                         "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n")
    assert driver_loaded("7f40-7f50 r-xp 00000000 08:01 43 /usr/lib64/libcuda.so.1\n")
    # this CPU test process has no driver: the hazard check does not cry wolf
    assert "CUDA" not in __import__("runner.devices", fromlist=["initialised"]).initialised()
    env = conditions.worker_env({}, allocator="fresh", cuda_alloc_conf="", threads=None)
    assert (env["PYTORCH_NVML_BASED_CUDA_CHECK"]
            == conditions.NVML_CHECK["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1")
