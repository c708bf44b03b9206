"""The GPU's clocks during a compare: locked for the timing pass where the runner may, watched
where it may not.

GPU Boost picks the SM clock from moment to moment by temperature and power, so a sample's time
depends on what the GPU did before it. Two answers, both through NVML (``pynvml``, package
``nvidia-ml-py``; names and constants of ``nvml.h``):

* **lock** (config ``lock_clocks = true``): the SM clock (the clock the GPU sustains under a
  bf16 GEMM, :mod:`.sustained`, measured once by ``perfgate doctor``: :func:`measure_sustained`;
  else its default application clock: clock_plan.LOCK_SM_MHZ) and the memory clock (its maximum) are
  locked before the timing pass and restored after it — ``nvmlDeviceSetGpuLockedClocks`` /
  ``nvmlDeviceSetMemoryLockedClocks``, what ``nvidia-smi -lgc`` / ``-lmc`` do, which needs root;
  else ``nvmlDeviceSetApplicationsClocks``, what ``nvidia-smi -ac`` does, which a non-root
  process may call once an administrator ran ``nvidia-smi -acp UNRESTRICTED``. Clocks the
  runner's owner already holds with a setting are left as they are.
* **monitor** (the default, and wherever locking is not allowed): nothing is changed; the NVML
  sampler records clocks, clock-event reasons and violation counters, and the rounds the GPU
  throttled or whose SM clock moved more than 2 % from the benchmark's own reference
  (:func:`.sustained.round_reference`) are left out of the estimate
  (:func:`runner.pipeline.machine.telemetry.disturbed_rounds`).

:func:`runner.pipeline.machine.clock_plan.plan` decides from the facts
:func:`runner.pipeline.machine.machine_facts.gpu_facts` reads (pure; ``perfgate doctor`` shows its
answer); :class:`ClockControl` carries it out and undoes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import sustained
from .clock_plan import LOCK_SM_MHZ, ClockPlan, has_gpu_clocks, off_gpu, plan, refusal
from .machine_facts import gpu_facts, read_sustained, state_folder, sustained_file
from .telemetry import TelemetrySampler, nvml_value, open_device


#: The soak's command: a bf16 GEMM loop on the one GPU ``CUDA_VISIBLE_DEVICES`` shows it.
SOAK_COMMAND = (sys.executable, "-m", "runner.worker.soak")


def measure_sustained(uuid: str, supported: list[int] | None = None, *, nvml=None,
                      state_dir: str | Path | None = None, seconds: float = sustained.SOAK_SECONDS,
                      command=SOAK_COMMAND, interval_s: float = 0.1) -> int | None:
    """Soak the GPU ``uuid`` with ``command`` for ``seconds`` while NVML is read every
    ``interval_s``, then cache and return its sustained SM clock (:func:`.sustained.sustained_mhz`;
    None, nothing cached, when too few readings were taken under load). GPU-only: the soak needs
    CUDA; ``nvml`` and ``command`` are for tests."""
    sampler = TelemetrySampler(interval_s=interval_s, nvml=nvml, device_uuid=uuid).start()
    try:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=uuid)
        subprocess.run([*command, str(seconds)], env=env, check=True, timeout=seconds + 120,
                       stdout=subprocess.DEVNULL)
    finally:
        sampler.stop()
    samples = sampler.samples
    mhz = sustained.sustained_mhz(samples, supported)
    if mhz is not None:
        path = sustained_file(uuid, state_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = sustained.cache_record(uuid, mhz, len(sustained.under_load(samples)), time.time())
        path.write_text(json.dumps(record))
    return mhz


class ClockControl:
    """Carries out :func:`plan` for one GPU and undoes it (the imperative shell).

    ``ClockControl(lock, requested_mhz, index=0, nvml=None, device="cuda")``; :meth:`start` returns
    the record for ``environment.telemetry.clocks`` and never raises (a refusal ends in ``monitor``
    with the reason; a ``device`` that is not CUDA, :func:`.clock_plan.has_gpu_clocks`, in
    ``none``);
    :meth:`restore` resets exactly what :meth:`start` set (idempotent). ``nvml``: a ``pynvml``-like
    module (tests pass a fake); by default ``pynvml``.
    """

    def __init__(self, lock: bool, requested_mhz: int = LOCK_SM_MHZ, *, index: int = 0, nvml=None,
                 euid=None, device: str | None = "cuda", state_dir: str | Path | None = None,
                 uuid: str | None = None):
        self.lock, self.requested_mhz, self.index, self.device = lock, requested_mhz, index, device
        #: the workers' GPU as NVML names it: locked by it, never NVML's GPU 0 (review #7)
        self.uuid = uuid
        self._nvml, self._euid = nvml, euid
        #: what this compare set and must reset, on disk while it holds it: a compare killed before
        #: its ``finally`` left the clocks locked, which the next one took for the owner's setting
        #: (NVML reports both alike) — now the next compare resets them (GPU review #9)
        self.state_dir = state_folder(state_dir)
        self.state = self.state_dir / f"clocks-{uuid or index}.json"
        self._handle = None
        self._set: list[str] = []
        self.record: dict = {}

    def start(self) -> dict:
        if not has_gpu_clocks(self.device):
            self.record = off_gpu()
            return self.record
        try:
            self._nvml, self._handle = open_device(self._nvml, self.index, self.uuid)
            reclaimed = self._reclaim()
            gpu = gpu_facts(self._nvml, self.index, self._handle, euid=self._euid)
        except Exception as exc:  # noqa: BLE001 - ImportError, no driver, no GPU: nothing to lock or watch
            self._handle = None
            self.record = {**plan(self.lock, self.requested_mhz, None).to_dict(), "error": refusal(exc)}
            return self.record
        chosen = plan(self.lock, self.requested_mhz, gpu, read_sustained(self.uuid, self.state_dir))
        self.record = {**chosen.to_dict(), "restored": None,
                       **({"reclaimed": reclaimed} if reclaimed else {})}
        if chosen.policy == "lock":
            try:
                self._apply(chosen)
            except Exception as exc:  # noqa: BLE001 - NoPermission, NotSupported: watch instead
                self.restore()
                self.record.update(policy="monitor", reason=f"locking the clocks failed: {refusal(exc)}; rounds the "
                                   "GPU throttled or whose SM clock moved more than 2 % are left out of the estimate",
                                   sm_mhz=None, memory_mhz=None)
        return self.record

    def _reclaim(self) -> str | None:
        """Reset what a compare that died holding the clocks set (its state file, its pid gone);
        what was done, in words, or None. A live compare's lock is left to it."""
        try:
            left = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return None
        pid = int(left.get("pid") or 0)
        if pid and pid != os.getpid() and _alive(pid):
            return None
        for name in reversed(left.get("resets") or []):
            try:
                getattr(self._nvml, name)(self._handle)
            except Exception:  # noqa: BLE001 - reset what can be; the record says what was tried
                continue
        self.state.unlink(missing_ok=True)
        return f"reset the clocks a compare (pid {pid}) locked and never restored"

    def _holding(self) -> None:
        self.state.parent.mkdir(parents=True, exist_ok=True)
        self.state.write_text(json.dumps({"pid": os.getpid(), "resets": list(self._set)}))

    def _apply(self, chosen: ClockPlan) -> None:
        nvml, handle = self._nvml, self._handle
        if chosen.method == "locked_clocks":
            nvml.nvmlDeviceSetGpuLockedClocks(handle, chosen.sm_mhz, chosen.sm_mhz)
            self._set.append("nvmlDeviceResetGpuLockedClocks")
            self._holding()
            if chosen.memory_mhz:
                try:
                    nvml.nvmlDeviceSetMemoryLockedClocks(handle, chosen.memory_mhz, chosen.memory_mhz)
                    self._set.append("nvmlDeviceResetMemoryLockedClocks")
                    self._holding()
                except Exception as exc:  # noqa: BLE001 - many GPUs do not lock memory clocks: SM only
                    self.record["memory_mhz"] = None
                    self.record["reason"] += f" (memory clock not locked: {refusal(exc)})"
        else:
            nvml.nvmlDeviceSetApplicationsClocks(handle, chosen.memory_mhz or 0, chosen.sm_mhz)
            self._set.append("nvmlDeviceResetApplicationsClocks")
            self._holding()

    def restore(self) -> None:
        """Reset the clocks :meth:`start` set, then shut NVML down; ``record["restored"]`` says
        whether every reset succeeded."""
        if self._handle is None:
            return
        ok = True
        while self._set:
            name = self._set.pop()
            try:
                getattr(self._nvml, name)(self._handle)
            except Exception as exc:  # noqa: BLE001 - say so; the runner's owner must reset them
                ok = False
                self.record["restore_error"] = f"{name}: {refusal(exc)}"
        if ok:
            self.state.unlink(missing_ok=True)
        if self.record.get("policy") == "lock":
            self.record["restored"] = ok
        nvml_value(self._nvml.nvmlShutdown)
        self._handle = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True
