"""GPU tests carry the `gpu` marker and skip, with the reason, when no CUDA device is present."""

import pytest

import cutelab


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (sm_90a for the MLA kernels)")


def pytest_collection_modifyitems(config, items):
    reason = cutelab.no_gpu_reason()
    if not reason:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
