"""Judged metrics in one place: each metric's spec with the judge task it asks (`specs.py`), the
graded and class metrics read from one reply (`graded.py`), and the RAGAS-style metrics that
combine several tasks (claims, reviews, questions: `ragas.py`). evalcore.judges is the client,
cache, backends and task definitions only; it never imports this package."""
