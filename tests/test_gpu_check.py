"""The GPU check (``ci/gpu_check.sh``, ``make gpu-check``) where there is no GPU: it says so,
passes and leaves its summary; the benchmark likewise; the verdict's rules; and, slow, every
step of it run on the CPU (``GPU_CHECK_ON_CPU=1``), which checks the plumbing, not a GPU."""

import json
import os
import subprocess
import sys

import pytest
import torch

from autograder import gpu_check
from autograder.course import ROOT
from autograder.outcome import Status
from autograder.submissions import SampleStudent

SCRIPT = ROOT / "ci" / "gpu_check.sh"
no_gpu_here = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is here")


def run_script(tmp_path, **env):
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OUT": str(tmp_path / "out"),
                               "GPU_PY": sys.executable, **env})


@no_gpu_here
def test_without_cuda_the_check_says_what_stays_unverified_and_passes(tmp_path):
    done = run_script(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: no CUDA GPU here")
    assert "Unverified: tests/test_gpu.py" in lines[0]
    assert (tmp_path / "out" / "summary.txt").read_text() == lines[0] + "\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["summary.txt"]


@no_gpu_here
def test_without_cuda_the_bench_says_so_and_passes(tmp_path):
    done = subprocess.run([sys.executable, "-m", "autograder.gpu_bench", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "no CUDA device" in done.stdout
    assert json.loads((tmp_path / "bench.json").read_text())["cuda"] is False


def test_the_verdict_wants_full_zero_or_partial_points_and_the_gpu_in_the_kernel():
    maxima = {"a_test": 2.0, "b_test": 4.0}
    row = {"status": Status.GRADED.value, "a_test": "2.0", "b_test": "1.0"}
    carla = SampleStudent("carla", "", partial={"b_test": 2.5})  # partial: any, not its CPU 2.5
    assert gpu_check._problems(carla, row, maxima, "GPU (NVIDIA H100)", cuda=True) == []
    assert gpu_check._problems(carla, row, maxima, "CPU", cuda=False) == []
    assert gpu_check._problems(carla, row, maxima, "CPU", cuda=True) == [
        "the grading kernel ran on CPU, not on the GPU"]
    ana = SampleStudent("ana", "")
    assert gpu_check._problems(ana, row, maxima, "CPU", cuda=False) == [
        "b_test scored 1 / 4, expected 4"]
    patched = SampleStudent("p", "", lost=("*",), expected_status=Status.TAMPERING)
    assert gpu_check._problems(patched, row, maxima, "CPU", cuda=False) == [
        "status 'graded', expected 'tampering detected'", "a_test scored 2 / 2, expected 0",
        "b_test scored 1 / 4, expected 0"]
    hog = SampleStudent(gpu_check.HOG_ID, "")  # its points are its own; the grader survives
    assert gpu_check._problems(hog, row, maxima, "CPU", cuda=False) == []
    assert gpu_check._problems(hog, {**row, "status": Status.GRADER_CRASHED.value}, maxima, "CPU",
                               cuda=False) == ["status 'grader crashed': the grader did not "
                                               "survive it"]


@pytest.mark.slow
@no_gpu_here
def test_every_step_runs_on_the_cpu(tmp_path):
    done = run_script(tmp_path, GPU_CHECK_ON_CPU="1", AUTOGRADER_SANDBOX="auto",
                      GPU_CHECK_SLACK="4", GPU_CHECK_WORK=str(tmp_path / "work"),
                      GPU_WHEELS=str(tmp_path / "none"))
    out = tmp_path / "out"
    summary = (out / "summary.txt").read_text()
    assert done.returncode == 0, summary + done.stdout[-3000:]
    for step in ("setup", "tests", "nbval", "grade", "bench"):
        assert "PASS" in next(line for line in summary.splitlines() if f" {step} " in line)
    grade_log = (out / "grade.log").read_text()
    assert "class: PASS" in grade_log and "hog: PASS" in grade_log
    assert "FAIL" not in grade_log.split("-- phase class", 1)[1]
    assert "No CUDA: GPU cells took the CPU path." in (out / "nbval.log").read_text()
    assert (out / "grades.csv").exists() and (out / "bench.json").exists()
    assert len(list(out.iterdir())) <= 8  # what the device tool brings back
