"""runner.roofline peaks: exact model matching, variants, partitions, unnamed devices, sources."""

from __future__ import annotations

import re

import pytest

from runner.profile import roofline

#: Device names as CUDA/HIP report them → the row they must get (None: no peaks, with a note).
NAMES = [
    ("NVIDIA H100 80GB HBM3", {"numSms": 132}, "NVIDIA H100 SXM5"),
    ("NVIDIA H100 PCIe", {"numSms": 114}, "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", {"numSms": 132}, "NVIDIA H100 NVL"),
    ("NVIDIA H200", {}, "NVIDIA H200 SXM"),
    ("NVIDIA H200 NVL", {}, "NVIDIA H200 NVL"),
    ("NVIDIA H800", {"numSms": 132}, "NVIDIA H800 SXM5"),
    ("NVIDIA H800 PCIe", {}, "NVIDIA H800 PCIe"),
    ("NVIDIA B200", {"numSms": 148}, "NVIDIA B200 (HGX, 1000 W)"),
    ("NVIDIA GB200", {}, "NVIDIA GB200 (NVL72, 1200 W)"),
    ("NVIDIA A100-SXM4-40GB", {}, "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100-SXM4-80GB", {}, "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA A100-PCIE-40GB", {}, "NVIDIA A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", {}, "NVIDIA A100 PCIe 80GB"),
    ("NVIDIA A100-PG509-200", {"numSms": 108, "totalGlobalMem": 42297524224}, "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA L40", {}, "NVIDIA L40"),
    ("NVIDIA L40S", {}, "NVIDIA L40S"),
    ("NVIDIA L4", {}, "NVIDIA L4"),
    ("NVIDIA A10", {}, "NVIDIA A10"),
    ("Tesla V100-SXM2-16GB", {}, "NVIDIA V100 SXM2"),
    ("Tesla V100-PCIE-32GB", {}, "NVIDIA V100 PCIe"),
    ("Tesla V100S-PCIE-32GB", {}, "NVIDIA V100S PCIe"),
    ("Tesla T4", {}, "NVIDIA T4"),
    ("NVIDIA GeForce RTX 4090", {}, "NVIDIA GeForce RTX 4090"),
    ("AMD Instinct MI300X", {"numSms": 304}, "AMD Instinct MI300X"),
    ("AMD Instinct MI300X VF", {"numSms": 304}, "AMD Instinct MI300X"),
    ("AMD Instinct MI325X", {}, "AMD Instinct MI325X"),
    ("AMD Instinct MI300A", {}, "AMD Instinct MI300A"),
    ("AMD Instinct MI250X", {"numSms": 110}, "AMD Instinct MI250X (one GCD)"),
    ("AMD Instinct MI250X / MI250", {"numSms": 110}, "AMD Instinct MI250X (one GCD)"),
    ("AMD Instinct MI250X / MI250", {"numSms": 104}, "AMD Instinct MI250 (one GCD)"),
    ("AMD Instinct MI210", {"numSms": 104}, "AMD Instinct MI210"),
    ("NVIDIA A10G", {}, None),
    ("NVIDIA RTX A6000", {}, None),
    ("AMD Instinct MI355X", {}, None),
    ("Intel(R) Data Center GPU Max 1550", {}, None),
]


@pytest.mark.parametrize("name, props, model", NAMES, ids=[f"{n}-{p.get('numSms', '')}" for n, p, _ in NAMES])
def test_each_device_name_gets_its_own_row_or_none(name, props, model):
    peaks, note = roofline.lookup_peaks(name, props)
    if model is None:
        assert peaks is None and note == f"no peaks known for {name}"
    else:
        assert note is None and peaks["model"] == model and peaks["method"] == "device name"


def test_l40_gets_the_l40_bandwidth_not_the_l4s():
    assert roofline.lookup_peaks("NVIDIA L40")[0]["bandwidth_bytes_per_s"] == 864e9
    assert roofline.lookup_peaks("NVIDIA L4")[0]["bandwidth_bytes_per_s"] == 300e9
    assert roofline.lookup_peaks("NVIDIA L40S")[0]["bf16_flops"] == 362.05e12


def _family(model: str) -> str:
    """The model token of a row: ``A100`` of "NVIDIA A100 SXM4 40GB", ``MI250X`` of "AMD Instinct MI250X (one GCD)"."""
    return next(t for t in model.split(" (")[0].split() if any(c.isdigit() for c in t)).upper()


def test_every_row_has_its_source_and_matches_only_names_that_carry_its_model_token():
    for row in roofline.GPU_PEAKS:
        assert row["source"] and row["tflops"]["fp32"] > 0 and row["bandwidth_gbs"] > 0
        assert set(row["tflops"]) <= {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8"}
    for name, _, _ in NAMES:
        key = roofline._NAME_PREFIX.sub("", name.upper()).strip()
        for row in roofline.GPU_PEAKS:
            if re.search(row["match"], key):  # "L40" must not take the L4 or L40S row
                assert re.search(rf"(?<![A-Z0-9]){_family(row['model'])}(?![A-Z0-9])", key), (name, row["model"])


def test_partitions_get_no_peaks():
    peaks, note = roofline.lookup_peaks("NVIDIA A100-SXM4-40GB MIG 1g.5gb", {"numSms": 14})
    assert peaks is None and "14 SMs/CUs: a partition (MIG, CPX)" in note
    peaks, note = roofline.lookup_peaks("AMD Instinct MI300X", {"numSms": 38})  # CPX mode: one XCD
    assert peaks is None and "the full device has 304" in note


def test_unnamed_device_is_named_from_properties_only_when_unique():
    mi300x = {"numSms": 304, "computeMajor": 9, "computeMinor": 4, "totalGlobalMem": 206141652992}
    peaks, _ = roofline.lookup_peaks("", mi300x, "AMD")
    assert peaks["model"] == "AMD Instinct MI300X" and "architecture 9.4, 304 SMs/CUs, 192 GiB" in peaks["method"]
    peaks, note = roofline.lookup_peaks("", {**mi300x, "totalGlobalMem": 256 * 2**30}, "AMD")
    assert peaks["model"] == "AMD Instinct MI325X"
    assert roofline.lookup_peaks("", mi300x, None) == (None, "no peaks known for an unnamed GPU")
    assert roofline.lookup_peaks(None, None) == (None, None)


def test_position_uses_the_peak_of_the_kernels_precision():
    b200 = roofline.lookup_peaks("NVIDIA B200")[0]
    fp4 = roofline.position(1e12, 1e9, 1000.0, b200, precision="fp4")
    bf16 = roofline.position(1e12, 1e9, 1000.0, b200, precision="bf16")
    assert fp4["bound"] == "memory" and bf16["bound"] == "compute"  # ridge 1125 vs 281 FLOP/byte
    assert fp4["roofline_pct"] < bf16["roofline_pct"]
    v100, _ = roofline.lookup_peaks("Tesla V100-SXM2-16GB")
    assert roofline.position(1e12, 1e9, 1000.0, v100, precision="bf16") is None
