"""The reliability and security campaign in one command.

    python bench/reliability_campaign.py [extra pytest args]

Runs every test in tests/reliability/ (fuzzed inputs, concurrent writers, format upgrades,
fault injection, damaged store files, security, hostile targets, one-line errors, the judge
cache and judge cost; slow ones included) plus tests/test_import_fuzz.py with pytest -q,
then prints a summary with the figures the tests measured: tests run, fuzz examples generated
by hypothesis, the 100 MB import's time and peak memory growth, the concurrent-writer row
counts. The tests hand their figures over through the file named by EVALCORE_CAMPAIGN_FIGURES
(one JSON object per line); nothing here is computed from assumptions.

Exit code: pytest's (0 when every test passed). See docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tests/reliability also holds the semantic-scoring-under-load and Ray-across-nodes cases;
# the deterministic import race lives with the semantic tests
TARGETS = ["tests/reliability", "tests/test_import_fuzz.py", "tests/semantic/test_import_race.py"]


def _counts(output: str) -> dict[str, int]:
    """pytest's final line, e.g. '120 passed, 2 skipped in 80.1s' -> {'passed': 120, 'skipped': 2}."""
    for line in reversed(output.splitlines()):
        found = re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", line)
        if found and " in " in line:
            return {kind: int(n) for n, kind in found}
    return {}


def _fuzz_examples(output: str) -> tuple[int, int]:
    """(examples, property tests) from hypothesis' statistics: passing + failing + invalid."""
    total = tests = 0
    for line in output.splitlines():
        m = re.search(r"(\d+) passing examples?, (\d+) failing examples?, (\d+) invalid examples?", line)
        if m:
            total += sum(int(g) for g in m.groups())
            tests += 1
    return total, tests


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        figures_file = Path(tmp) / "figures.jsonl"
        env = {**os.environ, "EVALCORE_CAMPAIGN_FIGURES": str(figures_file)}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
               *TARGETS, *argv]
        print("$ " + " ".join(cmd[1:]), flush=True)
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        figures: dict[str, object] = {}
        if figures_file.exists():
            for line in figures_file.read_text(encoding="utf-8").splitlines():
                item = json.loads(line)
                figures[item["name"]] = item["value"]
    output = proc.stdout + proc.stderr
    failures = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))]
    counts = _counts(output)
    examples, properties = _fuzz_examples(output)
    print("\n== reliability campaign ==")
    print(f"tests: {sum(counts.values()) - counts.get('deselected', 0)} run "
          f"({', '.join(f'{n} {k}' for k, n in counts.items()) or 'no summary line'}) in {seconds:.1f} s")
    print(f"fuzz: {examples} generated examples over {properties} property tests")
    for tag, label in (("", "JSONL"), ("_json", "JSON array")):
        if f"import_100mb{tag}_seconds" in figures:
            print(f"100 MB import ({label}): {figures[f'import_100mb{tag}_file_mb']} MB file in "
                  f"{figures[f'import_100mb{tag}_seconds']} s, peak RSS growth "
                  f"{figures[f'import_100mb{tag}_rss_growth_mb']} MB")
    if "concurrency_rows" in figures:
        print(f"concurrent writers: final rows per run [responses, questions, metrics, raw metrics] "
              f"{json.dumps(figures['concurrency_rows'])}; reader loops {figures.get('concurrency_reader_loops')}, "
              f"part files read {figures.get('concurrency_part_files_read')}, no reader error")
    shown = {f"import_100mb{tag}_{what}" for tag in ("", "_json") for what in ("seconds", "file_mb", "rss_growth_mb")}
    shown |= {"concurrency_rows", "concurrency_reader_loops", "concurrency_part_files_read"}
    for name, value in figures.items():  # figures other suites (faults, security) report
        if name not in shown:
            print(f"{name}: {value}")
    for line in failures:
        print(line)
    if proc.returncode not in (0, 5):
        print(output[-4000:])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
