"""How long `evalcore` commands take to start, against a bare interpreter measured in the same run.

Part 1, `evalcore <command> --help`: lazy command registration vs eager. Ours: the console entry
as shipped (evalcore.cli.main imports a command's module only when the command is looked up, and
command modules import the store, pandas and the scorers inside the command that uses them).
Baselines, in the same run: "eager", the same entry after importing every command module first
(evalcore.cli.main.load_all); "before", eager plus what the command modules imported at their top
before (the store, export, importer, analysis, datasets): how the CLI started until then.

Part 2, commands over a small store (issue 38 item 4): `runs`, `runs --json`, `show`, `compare`,
each plain and `--corrected`, on a store without labels and on a copy with randomly sampled
labels (60 of 80 answers per method), beside `python -c pass`. `runs` three ways: as typed again over
an unchanged store (its saved listing reused, analysis/runs/listing_cache.py), and "listing
computed" (the saved listing removed before each, untimed: as after any change to the store that
is not evalcore's), and right after `labels import` added a label (an evalcore command that
changed the store: it saves the listing on its way out; its own time is a line of its own).
Printed per command: the median,
its excess over the bare interpreter, and for `--corrected` its excess over the plain command.
With `--before DIR` (a checkout of the old code) every command also runs with DIR's evalcore,
interleaved with ours, and the ratio before / ours is printed.

Every figure is the median over fresh interpreters (interpreter start included) of the child's
CPU time (user + system): on a shared machine wall time mostly measures the other processes; wall
time is printed too, for an idle machine. Rounds are interleaved (each round runs every command
once) so load changes hit all commands alike. Children run with bytecode caching on (as an
installed evalcore does), after one untimed warm-up each.

    python bench/bench_cli_start.py [--repeat 7] [--before DIR] [--part help|store|both]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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


def _help_part(repeat: int) -> None:
    print(f"{'command':<22} {'CPU: ours':>10} {'eager':>7} {'before':>7} {'ratio':>6}   "
          f"{'wall: ours':>10} {'eager':>7} {'before':>7}")
    for argv in COMMANDS:
        (cpu, wall), (cpu_e, wall_e), (cpu_b, wall_b) = (_time(argv, mode, repeat)
                                                         for mode in ("lazy", "eager", "before"))
        print(f"{'evalcore ' + ' '.join(argv):<22} {cpu:>9.2f}s {cpu_e:>6.2f}s {cpu_b:>6.2f}s {cpu_b / cpu:>5.1f}x"
              f"   {wall:>9.2f}s {wall_e:>6.2f}s {wall_b:>6.2f}s")
    print("ratio = before / ours (CPU)")


# Part 2. What `evalcore runs` cannot start without: the CLI framework, the models, DuckDB, and
# rich for the table: a floor beside the bare interpreter (pyarrow left it with issue 38 item 4:
# the store's readers build no Arrow table).
FLOOR = "import typer, pydantic, duckdb, rich.table"
# label -> (arguments after --store, which store, the plain command it adds to)
METHODS = ("local_search", "basic_search")
STORE_COMMANDS: dict[str, tuple[list[str], str, str | None]] = {
    "runs": (["runs"], "plain", None),
    "runs --json": (["runs", "--json"], "plain", None),
    "runs, listing computed": (["runs"], "plain", None),
    "runs --json, listing computed": (["runs", "--json"], "plain", None),
    # the writer first (its own line, untimed here): a change made by an evalcore command, which
    # saves the listing on its way out (listing_cache.save_after_write)
    "runs, right after labels import": (["runs"], "written", None),
    "show": (["show", "{run}"], "plain", None),
    "show --corrected": (["show", "{run}", "--corrected"], "plain", "show"),
    "compare": (["compare", "{run}:" + METHODS[0], "{run}:" + METHODS[1]], "plain", None),
    "compare --corrected": (["compare", "{run}:" + METHODS[0], "{run}:" + METHODS[1], "--corrected"], "plain",
                            "compare"),
    "labelled: show": (["show", "{run}"], "labelled", None),
    "labelled: show --corrected": (["show", "{run}", "--corrected"], "labelled", "labelled: show"),
    "labelled: compare": (["compare", "{run}:" + METHODS[0], "{run}:" + METHODS[1]], "labelled", None),
    "labelled: compare --corrected": (["compare", "{run}:" + METHODS[0], "{run}:" + METHODS[1], "--corrected"],
                                      "labelled", "labelled: compare"),
}


# label -> (arguments after --store, which store): a command run, and timed, right before the
# STORE_COMMANDS entry that names it in WRITTEN_BY
WRITERS: dict[str, tuple[list[str], str]] = {"labels import (1 label)": (["labels", "import", "{one}"], "written")}
WRITTEN_BY = {"runs, right after labels import": "labels import (1 label)"}


def build_stores(base: Path) -> tuple[dict[str, Path], str]:
    """A synthetic run (80 questions, 2 methods, 30 metrics) in three stores: as written, a copy
    with 60 randomly sampled answer_class labels per method (the seeded order's first 60), and a
    copy that gets one more label before each of its `runs` (base/one.csv)."""
    import csv

    sys.path.insert(0, str(ROOT))
    from typer.testing import CliRunner

    from evalcore.analysis.labels import label_sampling as S
    from evalcore.cli.main import app
    from evalcore.demo.synthetic import build_store
    from evalcore.store import query_df

    plain = build_store(base / "plain", n_runs=1, n_questions=80, methods=METHODS)
    run = plain.run_ids()[0]
    shutil.copytree(plain.root, base / "labelled")
    rows = []
    for method in METHODS:
        judged = query_df(plain, "SELECT question_id, label FROM metrics WHERE run_id = ? AND method = ? "
                                 "AND metric = 'answer_class'", [run, method])
        judge = dict(zip(judged.question_id, judged.label))
        order = S.order(list(judge), 0)
        rows += [{"run": run, "method": method, "question_id": q, "metric": "answer_class", "target": "",
                  "label": ("wrong" if judge[q] == "CORRECT" else "correct") if pos % 3 == 0 else judge[q].lower(),
                  "who": "bench", "sample_id": "srs:0", "inclusion_prob": S.inclusion_prob(pos, len(order))}
                 for pos, q in enumerate(order[:60])]
    for name, chosen in (("labels.csv", rows), ("one.csv", rows[:1])):
        with (base / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(chosen)
    res = CliRunner().invoke(app, ["--store", str(base / "labelled"), "labels", "import", str(base / "labels.csv")])
    assert res.exit_code == 0, res.output
    shutil.copytree(plain.root, base / "written")
    return {"plain": base / "plain", "labelled": base / "labelled", "written": base / "written"}, run


def _child_env(code_root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # cache bytecode, as installed
    env["PYTHONPATH"] = str(code_root)
    env["COLUMNS"] = "200"
    return env


def _once(cmd: list[str], env: dict[str, str], cwd: Path, forget: Path | None = None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process. `cwd` holds no evalcore: `python -m`
    puts the working directory first on the path, ahead of PYTHONPATH's code. `forget`: a store
    whose saved listing is removed first (untimed), so the child computes it as after a change."""
    if forget is not None:
        shutil.rmtree(forget / "_shared" / "listing", ignore_errors=True)
    start, start_cpu = time.perf_counter(), _cpu()
    subprocess.run(cmd, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _cpu() - start_cpu, time.perf_counter() - start


def _store_part(repeat: int, before: Path | None) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        stores, run = build_stores(Path(tmp))
        time.sleep(2.5)  # settled (evalcore/store/file_state.py): `runs` may save its listing
        codes = {"ours": ROOT, **({"before": before} if before else {})}
        jobs = {("bare", who): [sys.executable, "-c", "pass"] for who in codes}
        jobs |= {("floor", who): [sys.executable, "-c", FLOOR] for who in codes}
        def command(argv: list[str], store: str) -> list[str]:
            return [sys.executable, "-m", "evalcore", "--store", str(stores[store]),
                    *(a.format(run=run, one=Path(tmp) / "one.csv") for a in argv)]

        for label, (argv, store, _) in STORE_COMMANDS.items():
            for who in codes:
                jobs[(label, who)] = command(argv, store)
        writers = {(label, who): command(*WRITERS[label]) for label in WRITERS for who in codes}
        envs = {who: _child_env(path) for who, path in codes.items()}
        # the old code saves no listing: removing ours before its runs would make our next `runs` compute it
        forget = {key: stores["plain"] if "listing computed" in key[0] and key[1] == "ours" else None for key in jobs}
        times: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in [*jobs, *writers]}
        for round_ in range(repeat + 1):  # interleaved rounds: every command once per round (the first: warm-up)
            for (label, who), cmd in jobs.items():
                if label in WRITTEN_BY:  # its writer first, each code's own, right before
                    done = _once(writers[(WRITTEN_BY[label], who)], envs[who], Path(tmp))
                    times[(WRITTEN_BY[label], who)] += [done] if round_ else []
                done = _once(cmd, envs[who], Path(tmp), forget[(label, who)])
                times[(label, who)] += [done] if round_ else []
    cpu = {key: statistics.median(t[0] for t in ts) for key, ts in times.items()}
    wall = {key: statistics.median(t[1] for t in ts) for key, ts in times.items()}
    print(f"\n{'command (CPU, median)':<34} {'ours':>7} {'over bare':>10} {'over plain':>11} {'wall':>7}"
          + (f" {'before':>8} {'over bare':>10} {'over plain':>11} {'before/ours':>12}" if before else ""))
    for label in ("bare", "floor", *STORE_COMMANDS, *WRITERS):
        plain = STORE_COMMANDS[label][2] if label in STORE_COMMANDS else None
        name = {"bare": "python -c pass", "floor": "floor (import typer, duckdb...)"}.get(label, f"evalcore {label}")
        line = f"{name:<34}"
        for who in codes:
            c = cpu[(label, who)]
            over_bare = "" if label == "bare" else f"{c - cpu[('bare', who)]:+.2f}s"
            over_plain = f"{c - cpu[(plain, who)]:+.2f}s" if plain else ""
            line += f" {c:>6.2f}s {over_bare:>10} {over_plain:>11}"
            line += f" {wall[(label, who)]:>6.2f}s" if who == "ours" else ""
        if before:
            line += f" {cpu[(label, 'before')] / cpu[(label, 'ours')]:>11.2f}x"
        print(line)
    print("over bare = the command's median - python -c pass's; over plain = --corrected's median - the plain "
          "command's;\nfloor = importing the libraries a listing cannot do without (" + FLOOR.removeprefix("import ") + ")")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout of the old code: part 2 also runs its evalcore, interleaved with ours")
    parser.add_argument("--part", choices=("help", "store", "both"), default="both")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}; median of {args.repeat} fresh interpreters")
    if args.part in ("help", "both"):
        _help_part(args.repeat)
    if args.part in ("store", "both"):
        _store_part(args.repeat, args.before.resolve() if args.before else None)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
