"""The baseline scripts under bench/baselines refuse bad input before they touch a GPU or PyTorch."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLASHMLA_VLLM = ROOT / "bench" / "baselines" / "flashmla_vllm.py"


def run(*args):
    return subprocess.run([sys.executable, str(FLASHMLA_VLLM), *args], capture_output=True, text=True,
                          timeout=60)


def test_flashmla_vllm_says_how_to_get_its_library():
    r = run("--so", "/nonexistent/_flashmla_C.abi3.so")
    assert r.returncode == 2
    assert "/nonexistent/_flashmla_C.abi3.so not found" in r.stderr
    assert "CUTELAB_WITH_FLASHMLA_VLLM=1 scripts/bootstrap" in r.stderr


def test_flashmla_vllm_refuses_an_empty_sampling_loop():
    r = run("--min-samples", "0", "--so", str(FLASHMLA_VLLM))
    assert r.returncode == 2
    assert "--min-samples must be >= 1" in r.stderr
    r = run("--max-time", "-1", "--so", str(FLASHMLA_VLLM))
    assert r.returncode == 2
    assert "--max-time >= 0" in r.stderr
