"""The device a trace was recorded on (pure): its properties under perfgate's names, the GPU
runtime that recorded it, and the record the summary carries (vendor, label, roofline peaks).
"""

from __future__ import annotations

from collections import Counter

from . import names, roofline


def device_properties(doc: dict, device=None) -> dict | None:
    """The trace's properties of ``device`` (its ``id``; else the first entry), keys renamed to
    perfgate's (:data:`runner.profile.names.DEVICE_PROPERTY_KEYS`: ``numSms``, ``computeMajor``,
    ``maxThreadsPerMultiprocessor``, ...) from ``deviceProperties`` or the older
    ``computeProperties``; None when the trace has neither."""
    entries = []
    for key in names.DEVICE_PROPERTY_LISTS:
        value = doc.get(key)
        if isinstance(value, list):
            entries = [p for p in value if isinstance(p, dict)]
            if entries:
                break
    if not entries:
        return None
    raw = next((p for p in entries if device is not None and p.get("id") == device), entries[0])
    out = {}
    for key, spellings in names.DEVICE_PROPERTY_KEYS.items():
        value = next((raw[s] for s in spellings if raw.get(s) is not None), None)
        if value is not None:
            out[key] = value
    return out


def device_record(props: dict | None, runtime: str | None, uses_gpu: bool) -> dict:
    """``{kind, vendor, name, units, label, peaks, peaks_note}`` of the profiled device."""
    if not uses_gpu:
        return {"kind": "cpu", "vendor": None, "name": None, "units": None, "label": "CPU only", "peaks": None,
                "peaks_note": None}
    name = ((props or {}).get("name") or "").strip() or None
    vendor = names.RUNTIME_VENDORS.get(runtime) if runtime else None
    units = (props or {}).get("numSms")
    label = name
    if label is None:
        label = "GPU, no name in trace"
        if units:
            label += f", {units} {names.UNIT_NAMES.get(vendor, 'SMs/CUs')}"
    peaks, note = roofline.lookup_peaks(name, props, vendor)
    if peaks is None and note is None:
        note = "no peaks known: the trace names no GPU and has no device properties"
    return {"kind": "gpu", "vendor": vendor, "name": name, "units": units, "label": label, "peaks": peaks,
            "peaks_note": note}


def runtime_of(calls_by_api: dict, doc: dict, device_name: str | None) -> str | None:
    """The GPU runtime that recorded the trace: by its runtime calls, else its top-level keys, else
    the device name's vendor; None for a trace without any of these."""
    votes: Counter = Counter()
    for api, c in calls_by_api.items():
        runtime, _ = names.call_kind(api)
        if runtime:
            votes[runtime] += c["count"]
    if votes:
        return votes.most_common(1)[0][0]
    for key, runtime in names.RUNTIME_TRACE_KEYS.items():
        if key in doc:
            return runtime
    for prefix, runtime in names.DEVICE_NAME_RUNTIMES.items():
        if (device_name or "").upper().startswith(prefix):
            return runtime
    return None
