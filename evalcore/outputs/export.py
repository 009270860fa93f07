"""Export one run as a flat table: one row per (question, method), one column per metric."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from evalcore.errors import EvalcoreError
from evalcore.common.inert_text import markdown_cell
from evalcore.common.csv_safety import frame_to_csv

if TYPE_CHECKING:  # pandas and the store load when something is exported, not with the CLI's help
    import pandas as pd

    from evalcore.store import RunStore

FORMATS = ("csv", "json", "md", "parquet")


# The Markdown cell of untrusted text lives with the terminal's guard (evalcore.common.inert_text): one
# definition of "inert" for `export -f md`, `compare --markdown` and the CLI.
_md_cell = markdown_cell


def to_markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(markdown_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(markdown_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def export_run(store: RunStore, run_ref: str, fmt: str, output: str | Path | None = None) -> bytes | None:
    """Write the run's wide table to `output` (or return bytes when output is None)."""
    if fmt not in FORMATS:
        raise EvalcoreError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    run_id = store.resolve(run_ref)
    from evalcore.analysis.read.results import wide_results

    df = wide_results(store, run_id)
    if fmt == "csv":
        data = frame_to_csv(df).encode("utf-8")
    elif fmt == "json":
        records = json.loads(df.to_json(orient="records", force_ascii=False, double_precision=15))
        data = json.dumps({"run_id": run_id, "rows": records}, ensure_ascii=False, indent=2).encode("utf-8")
    elif fmt == "md":
        data = (f"# Run {run_id}\n\n" + to_markdown(df)).encode("utf-8")
    else:
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        data = buf.getvalue()
    if output is None:
        return data
    Path(output).write_bytes(data)
    return None
