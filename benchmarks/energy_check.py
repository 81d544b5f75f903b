"""The real-GPU check of energy attribution, to run where there is an NVIDIA GPU (none where this
project is built). Two episodes at a time on one GPU (``concurrency=2``), each making LLM-like calls
(a burst of GPU work when torch with CUDA is installed, else the GPU idles through them), metered
by the job's ``EnergyMeter`` exactly as ``run_job`` meters a job. Printed side by side:

* the sum of the episodes' energies vs the job's integrated energy (should agree within 2 %: the
  rest is the time no episode ran, printed too, and the two add up exactly);
* the job's integrated energy vs the driver's own counter (``nvmlDeviceGetTotalEnergyConsumption``
  read directly at the job's start and end, apart from the meter; should agree within 2 %).

    python benchmarks/energy_check.py [--episodes 8] [--calls 4] [--rate-hz 4] [--idle-s 5]
    python benchmarks/energy_check.py --job outputs/.../JOB_DIR   # a finished job: its summary's figures
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcpworld.core.result import EpisodeResult  # noqa: E402
from mcpworld.run.interrupt import StopSignal  # noqa: E402
from mcpworld.run.pool import EpisodePool  # noqa: E402
from mcpworld.telemetry.energy.meter import EnergyMeter  # noqa: E402
from mcpworld.telemetry.gpu import NvmlBackend  # noqa: E402

TOLERANCE = 0.02


def gpu_work(seconds: float) -> None:
    """Busy the GPU for about ``seconds`` (torch + CUDA), else just wait."""
    try:
        import torch
    except ImportError:
        time.sleep(seconds)
        return
    if not torch.cuda.is_available():
        time.sleep(seconds)
        return
    a = torch.randn(4096, 4096, device="cuda")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        a = torch.tanh(a @ a)
        torch.cuda.synchronize()


def driver_mj() -> int:
    import pynvml

    return sum(
        pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(i))
        for i in range(pynvml.nvmlDeviceGetCount())
    )


def synthetic(args: argparse.Namespace) -> int:
    import pynvml

    try:
        backend = NvmlBackend()
    except pynvml.NVMLError as e:
        print(f"no NVIDIA GPU here ({type(e).__name__}): run this where there is one", file=sys.stderr)
        return 2
    meter = EnergyMeter({"gpu": backend}, rate_hz=args.rate_hz, idle_s=args.idle_s)
    rng = random.Random(0)
    meter.start()
    start_mj = driver_mj()

    def run_one(env: object, item: int) -> EpisodeResult:
        result = EpisodeResult(task_id=f"synthetic/{item}", app="none")
        energy = meter.episode()
        with energy:

            async def agent() -> None:
                for _ in range(args.calls):
                    with energy.call():
                        await asyncio.to_thread(gpu_work, rng.uniform(0.5, 2.0))
                    result.llm_calls += 1
                    await asyncio.sleep(rng.uniform(0.2, 1.0))  # a tool runs

            asyncio.run(agent())
        energy.finish(result)
        return result

    class Slot:
        def kill(self) -> None: ...

    results: list[EpisodeResult] = []
    EpisodePool([Slot(), Slot()], run_one, StopSignal()).run(list(range(args.episodes)), results.append)  # type: ignore[list-item]
    meter.close()
    end_mj = driver_mj()
    job = meter.job_metrics()
    episodes_j = sum(r.gpu.get("gpu.energy_j", 0.0) for r in results)
    report(
        episodes_j,
        job["gpu.job_energy_j"],
        job["gpu.energy_outside_episodes_j"],
        (end_mj - start_mj) / 1000,
        job.get("gpu.power_w_idle"),
    )
    return 0


def report(episodes_j: float, job_j: float, outside_j: float, driver_j: float | None, idle_w: float | None) -> None:
    def line(name: str, a: float, b: float) -> None:
        diff = abs(a - b) / b if b else float("nan")
        verdict = "ok" if diff <= TOLERANCE else "OVER 2 %"
        print(f"{name:<44} {a:>12.1f} J  vs {b:>12.1f} J   {100 * diff:6.2f} %  {verdict}")

    line("sum of episodes vs job integrated", episodes_j, job_j)
    print(
        f"{'  (outside any episode; sum + outside = job)':<44} {outside_j:>12.1f} J   "
        f"(sum + outside - job = {episodes_j + outside_j - job_j:.2e} J)"
    )
    if driver_j is not None:
        line("job integrated vs driver counter", job_j, driver_j)
    if idle_w is not None:
        print(f"{'idle baseline':<44} {idle_w:>12.1f} W")


def from_job(job_dir: Path) -> int:
    summary = json.loads((job_dir / "summary.json").read_text())
    if "gpu.job_energy_j" not in summary:
        print(f"{job_dir}: no gpu.job_energy_j in summary.json (no GPU metered)", file=sys.stderr)
        return 2
    report(
        summary.get("gpu.energy_j", 0.0),
        summary["gpu.job_energy_j"],
        summary.get("gpu.energy_outside_episodes_j", 0.0),
        None,
        summary.get("gpu.power_w_idle"),
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--rate-hz", type=float, default=4.0)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--job", type=Path, help="a finished job's folder: compare its summary's figures")
    args = parser.parse_args()
    return from_job(args.job) if args.job else synthetic(args)


if __name__ == "__main__":
    sys.exit(main())
