"""Each side's energy and mean power, from NVML's cumulative energy counter (pure but the two
readers at the end).

Why not the power samples: on Ampere (but GA100) and newer, ``nvmlDeviceGetPowerUsage`` is a
power "averaged over 1 sec", and the utilisation rates cover "a sample period between 1 second
and 1/6 second" (NVML reference), while base and head alternate every 20-40 ms: a side's 100 ms
sample of either is a mix of both sides (GPU review 2026-12-06, #10). The energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver loaded, Volta and newer)
is cumulative, so its difference across one side's request window is that window's energy,
whatever the counter's update period: a window shorter than the period reads low and the next
one high, and over many alternating windows the errors cancel. The sampler reads it each time
the side changes (:meth:`runner.pipeline.machine.telemetry.TelemetrySampler.set_side`).

The instantaneous power (``NVML_FI_DEV_POWER_INSTANT``, :func:`instant_power_w`) is a value at
the sample's instant, like the SM clock, and so is attributed to the side running then.
"""

from __future__ import annotations

#: pynvml's ``c_nvmlValue_t`` member for each ``NVML_VALUE_TYPE_*`` (nvml.h's numbering).
VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal",
                 6: "usVal"}
#: nvml.h's ``NVML_FI_DEV_POWER_INSTANT`` (milliwatts), where pynvml lacks the constant.
POWER_INSTANT_FIELD = 186


def side_energy(marks: list[dict]) -> dict[str, dict]:
    """``{side: {energy_j, seconds, mean_power_w}}`` from the counter's readings (pure).

    Args:
        marks: ``{t (monotonic s), side (the side that starts running then, or None),
            energy_mj (the counter then, or None)}`` in time order; the window from one mark to
            the next belongs to the first's side. A window with a missing reading, or over which
            the counter went back (the driver reloaded), counts for nobody.
    Returns:
        the sides with at least one window; ``mean_power_w`` None when their windows add up to
        no time.
    """
    joules: dict[str, float] = {}
    seconds: dict[str, float] = {}
    for here, after in zip(marks, marks[1:]):
        side, e0, e1 = here.get("side"), here.get("energy_mj"), after.get("energy_mj")
        if side is None or e0 is None or e1 is None or e1 < e0 or after["t"] < here["t"]:
            continue
        joules[side] = joules.get(side, 0.0) + (e1 - e0) / 1000.0
        seconds[side] = seconds.get(side, 0.0) + (after["t"] - here["t"])
    out = {}
    for side in sorted(joules):
        mean = round(joules[side] / seconds[side], 1) if seconds[side] > 0 else None
        out[side] = {"energy_j": round(joules[side], 3), "seconds": round(seconds[side], 3),
                     "mean_power_w": mean}
    return out


def field_value(record) -> float | None:
    """The value of one ``nvmlDeviceGetFieldValues`` record, None where NVML answered an error
    for that field (``nvmlReturn`` not NVML_SUCCESS: the GPU does not offer it)."""
    if getattr(record, "nvmlReturn", 1) != 0:
        return None
    member = VALUE_MEMBERS.get(getattr(record, "valueType", None))
    return getattr(record.value, member, None) if member else None


def instant_power_w(nvml, handle) -> float | None:
    """The GPU's instantaneous power in watts (``NVML_FI_DEV_POWER_INSTANT``), None where the
    driver or GPU does not offer it."""
    fn = getattr(nvml, "nvmlDeviceGetFieldValues", None)
    if fn is None:
        return None
    try:
        records = fn(handle, [getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", POWER_INSTANT_FIELD)])
    except Exception:  # noqa: BLE001 - NVML raises per call; a missing field is None
        return None
    value = field_value(records[0]) if len(records) else None
    return value / 1000.0 if value is not None else None


def energy_mj(nvml, handle) -> int | None:
    """NVML's cumulative energy counter (mJ), None where the GPU does not offer it."""
    fn = getattr(nvml, "nvmlDeviceGetTotalEnergyConsumption", None)
    if fn is None or handle is None:
        return None
    try:
        return fn(handle)
    except Exception:  # noqa: BLE001 - NotSupported (before Volta) & co.: no counter
        return None
