"""No code that only tests use: every public function, class and method of evalcore is named by
the product (evalcore/, pages/, app.py, bench/, scripts/) somewhere besides its own definition,
or documented for users in docs/ or README.md.

Why: a function kept alive by its tests alone looks like a way the product works, and a reader
(or the next change) trusts it; the product's real path goes untested in its place. Issue 37
removed eleven (sql.timing_breakdown, sql.paired_rows, correctness.outcome_frame and
classify_row, wide.first_wide, failure_modes.diagnose, explain and questions_in_bucket,
resample.paired_bootstrap_ci, tasks.build_prompt, LLMJudge.cache_key_for, ...); their tests now
reach the same behaviour through what the product calls.

The check is by name, so it is a floor, not a proof: a name that some other code also uses
passes. What it finds is certain: a name nothing but its definition and the tests mention.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("evalcore", "pages", "bench", "scripts")
# Called by name by something that is not our code, so no code of ours names them.
CALLED_BY_A_LIBRARY = {
    "handle_async_request": "httpx calls a transport's handle_async_request",
    "writelines": "a text stream's method (InertStream stands in for sys.stderr)",
}
# A test's undo of a public action: the action is the product's, its undo is for tests.
TEST_UNDO = {
    "unregister_metric": "undoes register_metric (docs/architecture.md: a plugin or a test adds a metric)",
    "forget_connections": "closes the kept DuckDB connections of a store replaced underneath a process",
}


def _word_counts(files: list[Path]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in files:
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8")):
            counts[word] = counts.get(word, 0) + 1
    return counts


_TOP = re.compile(r"(?:async )?(def|class) ([A-Za-z_][A-Za-z0-9_]*)")
_REGISTERS = re.compile(r"@\w+\.(command|callback)\(")  # a typer command: typer calls it
_METHOD = re.compile(r"    (?:async )?def ([A-Za-z_][A-Za-z0-9_]*)")


def _public_names(source: str) -> list[tuple[str, str]]:
    """(shown name, name) of each public top-level function and class, and each public method,
    read line by line (ast.parse of every module took seconds on a loaded CI machine)."""
    out, cls, decorated = [], None, False
    for line in source.splitlines():
        if top := _TOP.match(line):
            cls = top.group(2) if top.group(1) == "class" else None
            # a function registered by its decorator (a CLI command) is called by what it registers with
            if not top.group(2).startswith("_") and not (decorated and top.group(1) == "def"):
                out.append((top.group(2), top.group(2)))
            decorated = False
            continue
        if _REGISTERS.match(line):
            decorated = True
        if line and not line[0].isspace() and not line.startswith(("@", ")", "#")):
            cls = None  # a statement at the top level ends the class
        elif cls and (method := _METHOD.match(line)) and not method.group(1).startswith("_"):
            out.append((f"{cls}.{method.group(1)}", method.group(1)))
    return out


def test_no_public_name_of_evalcore_is_used_by_tests_alone():
    sources = [p for folder in PRODUCT for p in sorted((ROOT / folder).rglob("*.py"))] + [ROOT / "app.py"]
    used = _word_counts(sources)  # its own definition counts once
    documented = _word_counts(sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"])
    lonely = []
    for path in sorted((ROOT / "evalcore").rglob("*.py")):
        for shown, name in _public_names(path.read_text(encoding="utf-8")):
            if used.get(name, 0) > 1 or documented.get(name) or name.startswith("pytest_"):
                continue  # pytest_*: hooks pytest calls by name (evalcore/cli/pytest_plugin.py)
            if name not in CALLED_BY_A_LIBRARY and name not in TEST_UNDO:
                lonely.append(f"{path.relative_to(ROOT)}: {shown}")
    assert not lonely, "named by nothing but its definition (and tests): " + ", ".join(lonely)
