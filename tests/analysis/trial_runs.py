"""Runs with repeated trials, built the quick way: a recorded-answers file with a `trial` column,
imported and scored with exact_match (no server, no judge). The ground truth is "yes", so an
answer "yes" passes and anything else fails."""

from __future__ import annotations

import json
from pathlib import Path

from evalcore.scoring.engine import score_run
from evalcore.scoring.importer import import_recorded
from evalcore.store import RunStore


def write_answers(path: Path, answers: dict[str, list[str]], method: str = "m", trial_column: bool = True) -> Path:
    """A JSONL file: per question id its answers, one record per trial (`trial` 0, 1, ...)."""
    with open(path, "w", encoding="utf-8") as fh:
        for qid, per_trial in answers.items():
            for t, answer in enumerate(per_trial):
                rec = {"question_id": qid, "question": f"Is {qid} so?", "ground_truth": "yes", "answer": answer,
                       "method": method}
                if trial_column:
                    rec["trial"] = t
                fh.write(json.dumps(rec) + "\n")
    return path


def trial_run(store: RunStore, folder: Path, name: str, answers: dict[str, list[str]],
              metrics: tuple[str, ...] = ("exact_match",), trial_column: bool = True) -> str:
    """Import `answers` as run `name` (method "m") and score `metrics`; returns the run id."""
    path = write_answers(folder / f"{name}.jsonl", answers, trial_column=trial_column)
    run_id = import_recorded(store, path, name=name).run_id
    score_run(store, run_id, metrics=list(metrics), progress=False)
    return run_id
