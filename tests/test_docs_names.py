"""The docs name only code that exists: every file path (`evalcore/...py`, `tests/...py`,
`analysis/runs/means.py`...) and every dotted name of the package (`evalcore.analysis.runs.means`,
`analysis.runs.means.mean_ci`, `scoring.engine.stored_metric_values`) in docs/*.md and README.md.

Why: modules moved into folders (issue 37) and code only tests used went; a doc that still
sends a reader to `analysis.means` or `correctness.outcome_frame` sends them nowhere. Fenced
code blocks are left out: they hold examples of the user's own files (`tests/test_rag_eval.py`).
The check is static (no imports): a dotted name resolves through folders and modules, and its
first name after the module must occur in that module's text.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "evalcore"
TOP = sorted(p.name if p.is_dir() else p.stem for p in PKG.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and not p.stem.startswith("__")))
FILE_TYPES = {"py", "json", "jsonl", "md", "yaml", "yml", "toml", "txt", "csv", "parquet"}  # `store.json` is a file
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)+[\w.-]+\.py)\b")
_DOTTED = re.compile(r"(?<![\w.])(?:evalcore\.)?((?:" + "|".join(TOP) + r")(?:\.[A-Za-z_]\w*)+)")


def _prose(path: Path) -> str:
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def _docs() -> list[Path]:
    return [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def _resolves(dotted: str) -> bool:
    """Whether `a.b.c...` (relative to evalcore/) names a folder, a module, or a module and a
    name occurring in it."""
    here = PKG
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if (here / part).is_dir():
            here = here / part
            continue
        module = here / f"{part}.py"
        if module.exists():
            rest = parts[i + 1:]
        else:  # a name of the package itself (its __init__.py)
            module, rest = here / "__init__.py", parts[i:]
        return not rest or re.search(rf"\b{re.escape(rest[0])}\b", module.read_text(encoding="utf-8")) is not None
    return True


def test_every_file_path_in_the_docs_exists():
    missing = []
    for doc in _docs():
        for path in set(_PATH.findall(_prose(doc))):
            path = path.removeprefix("./")
            if not ((ROOT / path).exists() or (PKG / path).exists()
                    or any(p.as_posix().endswith("/" + path) for p in PKG.rglob(Path(path).name))):
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing, f"paths in the docs that are not in the repo: {missing}"


def test_every_dotted_name_of_the_package_in_the_docs_resolves():
    missing = []
    for doc in _docs():
        for code in re.findall(r"`([^`\n]+)`", _prose(doc)):
            for dotted in _DOTTED.findall(code):
                if dotted.rpartition(".")[2] not in FILE_TYPES and not _resolves(dotted):
                    missing.append(f"{doc.relative_to(ROOT)}: {dotted}")
    assert not missing, f"names in the docs that the code does not have: {sorted(set(missing))}"
