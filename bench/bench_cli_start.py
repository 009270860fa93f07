"""How long `evalcore <command> --help` takes to start: lazy command registration vs eager.

Ours: the console entry as shipped (evalcore.cli.main imports a command's module only when the
command is looked up, and command modules import the store, pandas and the scorers inside the
command that uses them). Baselines, in the same run: "eager", the same entry after importing every
command module first (evalcore.cli.main.load_all); "before", eager plus what the command modules
imported at their top before (the store, export, importer, analysis, datasets): how the CLI started
until now. Each figure is the
median over fresh interpreters (python -c ...), interpreter start included in both, of the child's
CPU time (user + system): on a shared machine wall time mostly measures the other processes.
Wall time is printed too, for an idle machine.

    python bench/bench_cli_start.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = (["runs", "--help"], ["score", "--help"], ["run", "--help"], ["--help"])
ROOT = Path(__file__).resolve().parents[1]


# what evalcore.cli.context / store_commands / dataset_commands imported at module level before
BEFORE = ("evalcore.store", "evalcore.outputs.export", "evalcore.scoring.importer", "evalcore.analysis.runs.indexing",
          "evalcore.analysis.runs.leaderboard", "evalcore.analysis.runs.means", "evalcore.analysis.read.results",
          "evalcore.store.staging", "evalcore.store.tables", "evalcore.datasets", "evalcore.datasets.stats")


def _code(argv: list[str], mode: str) -> str:
    load = {"lazy": "", "eager": "m.load_all(); ",
            "before": f"m.load_all(); import {', '.join(BEFORE)}; "}[mode]
    return (f"import sys; sys.argv = ['evalcore', *{argv!r}]; import evalcore.cli.main as m; {load}"
            "m.main()")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], mode: str, repeat: int) -> tuple[float, float]:
    """(median CPU seconds, median wall seconds) of `repeat` fresh interpreters."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cpu, wall = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), _cpu()
        subprocess.run([sys.executable, "-c", _code(argv, mode)], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall.append(time.perf_counter() - start)
        cpu.append(_cpu() - start_cpu)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; median of {args.repeat} fresh interpreters")
    print(f"{'command':<22} {'CPU: ours':>10} {'eager':>7} {'before':>7} {'ratio':>6}   "
          f"{'wall: ours':>10} {'eager':>7} {'before':>7}")
    for argv in COMMANDS:
        (cpu, wall), (cpu_e, wall_e), (cpu_b, wall_b) = (_time(argv, mode, args.repeat)
                                                         for mode in ("lazy", "eager", "before"))
        print(f"{'evalcore ' + ' '.join(argv):<22} {cpu:>9.2f}s {cpu_e:>6.2f}s {cpu_b:>6.2f}s {cpu_b / cpu:>5.1f}x"
              f"   {wall:>9.2f}s {wall_e:>6.2f}s {wall_b:>6.2f}s")
    print("ratio = before / ours (CPU)")


if __name__ == "__main__":
    main()
