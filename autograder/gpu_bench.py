"""Chapter 6's mixed precision, measured on a GPU: ``python -m autograder.gpu_bench --out DIR``.

For the chapter's own timing model (section 7 of solutions/06_precision_mixta.py:
``mlp(2048, 4)`` on a batch of 2048) and a bigger MLP, one training step (forward,
cross-entropy, backward, SGD) in fp32, under autocast fp16 with a ``GradScaler`` and under
autocast bf16: the median time per step, timed with CUDA events after warm-up steps, the
speed-up over fp32, the peak memory (``torch.cuda.max_memory_allocated``, reset before each
format) and the memory saved. Then the scale a ``GradScaler`` with the chapter's
demonstration settings (initial scale 2^24, growth every 10 clean steps) uses over 50 fp16
steps of the chapter's model. Prints it all with the device's name, capability and bf16
support, and writes DIR/bench.json. Without a CUDA device it says so and exits 0.
Instructor-facing; run by ci/gpu_check.sh (``make gpu-check``).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

# (label, width, depth, batch). The chapter builds its model in a notebook cell, not in this
# package: ``mlp`` below builds it the same way.
MODELS = (("chapter: mlp(2048, 4), batch 2048", 2048, 4, 2048),
          ("bigger: mlp(4096, 8), batch 4096", 4096, 8, 4096))
FORMATS = (("fp32", None), ("fp16 + GradScaler", torch.float16), ("bf16", torch.bfloat16))
WARMUP, TIMED, TRACE_STEPS = 3, 10, 50


def mlp(width, depth):
    """The chapter's timing model (its ``mlp(width, depth, device)``), on the GPU."""
    blocks = [nn.Sequential(nn.Linear(width, width), nn.GELU()) for _ in range(depth)]
    return nn.Sequential(*blocks, nn.Linear(width, 10)).cuda()


def training_step(model, dtype, scaler):
    """One SGD step on (x, y) in ``dtype`` (None: fp32), through ``scaler`` when given."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(x, y):
        with torch.autocast("cuda", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad(set_to_none=True)

    return step


def batch(width, size):
    """A fixed batch of ``size`` inputs and class labels, on the GPU."""
    generator = torch.Generator(device="cuda").manual_seed(0)
    return (torch.randn(size, width, device="cuda", generator=generator),
            torch.randint(0, 10, (size,), device="cuda", generator=generator))


def measure(width, depth, size, dtype):
    """Median milliseconds per step and peak MiB of a fresh model in ``dtype``."""
    torch.manual_seed(0)
    model, (x, y) = mlp(width, depth), batch(width, size)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
    step = training_step(model, dtype, scaler)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    for _ in range(WARMUP):
        step(x, y)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(TIMED)]
    for start, end in events:
        start.record()
        step(x, y)
        end.record()
    torch.cuda.synchronize()
    result = {"ms_per_step": round(statistics.median(s.elapsed_time(e) for s, e in events), 3),
              "peak_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}
    del model, x, y, step, scaler
    torch.cuda.empty_cache()
    return result


def scale_trace(steps=TRACE_STEPS):
    """(scale used, skipped) for each fp16 step of the chapter's model, with the scaler
    settings of the chapter's demonstration: too big at first, so the first steps overflow."""
    torch.manual_seed(0)
    model, (x, y) = mlp(2048, 4), batch(2048, 2048)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24, growth_interval=10)
    step = training_step(model, torch.float16, scaler)
    trace = []
    for _ in range(steps):
        scale = scaler.get_scale()
        step(x, y)
        trace.append({"scale": scale, "skipped": scaler.get_scale() < scale})
    return trace


def run():
    """Everything measured, as the JSON report."""
    major, minor = torch.cuda.get_device_capability()
    report = {"cuda": True, "device": torch.cuda.get_device_name(),
              "capability": f"{major}.{minor}", "bf16_supported": torch.cuda.is_bf16_supported(),
              "torch": torch.__version__, "cuda_version": torch.version.cuda,
              "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "models": {}}
    for label, width, depth, size in MODELS:
        results = {name: measure(width, depth, size, dtype) for name, dtype in FORMATS
                   if dtype != torch.bfloat16 or report["bf16_supported"]}
        base = results["fp32"]
        for result in results.values():
            result["speedup_vs_fp32"] = round(base["ms_per_step"] / result["ms_per_step"], 2)
            result["memory_saved_mib"] = round(base["peak_mib"] - result["peak_mib"], 1)
        report["models"][label] = results
    report["scale_trace"] = scale_trace()
    return report


def render(report):
    """The report as printed lines."""
    lines = [f"GPU: {report['device']} · capability {report['capability']} · bf16 supported: "
             f"{report['bf16_supported']} · torch {report['torch']} (CUDA {report['cuda_version']})"
             f" · TF32 matmul: {report['tf32_matmul']}"]
    for label, results in report["models"].items():
        lines.append(label)
        lines += [f"  {name:>18}: {r['ms_per_step']:8.3f} ms/step  ×{r['speedup_vs_fp32']:<5} "
                  f"peak {r['peak_mib']:9.1f} MiB  saved {r['memory_saved_mib']:8.1f} MiB"
                  for name, r in results.items()]
    trace = report["scale_trace"]
    changes = [f"{i}:{t['scale']:g}{' (skipped)' if t['skipped'] else ''}"
               for i, t in enumerate(trace)
               if not i or t["skipped"] or t["scale"] != trace[i - 1]["scale"]]
    lines.append(f"GradScaler scale over {len(trace)} fp16 steps (step:scale where it changed, "
                 f"{sum(t['skipped'] for t in trace)} skipped): " + ", ".join(changes))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.gpu_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for bench.json")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        print(f"gpu_bench: no CUDA device here (torch {torch.__version__}): nothing measured.")
        report = {"cuda": False, "torch": torch.__version__}
    else:
        report = run()
        print("\n".join(render(report)))
    (args.out / "bench.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
