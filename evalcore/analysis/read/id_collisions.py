"""Stored question ids of one run that are one id under the id rule: found, named, refused.

Why: since the id rule (evalcore.schemas.ids: NFC, no outer whitespace) every way in stores
canonical ids, but a run stored by an older evalcore may hold both "q0" and "q0 " (or "é" in
NFC and in NFD) as two answers of one method. Pairing reads ids under the rule, so such a run
paired one copy per question and dropped the other without a word: a run holding the right
answer under "q0" and a wrong one under "q0 " compared as Δ = -1.0, a REGRESSION decided by
which copy sorted last, while `show` counted both (20 values for 10 questions). Which copy is
meant cannot be known, so a comparison or a gate refuses the run, naming the ids, and `show` /
`store check` warn. Nothing is changed on disk: re-importing the answers with one copy per
question is the fix, and the person who knows which copy is right makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalcore.errors import EvalcoreError
from evalcore.schemas.ids import id_sql
from evalcore.store import RunStore, query_df


@dataclass(frozen=True)
class Collision:
    """Stored ids of one run (the answers of `method`, or its questions when method is None)
    that are one id under the rule."""

    run_id: str
    method: str | None
    ids: tuple[str, ...]

    def line(self, escaped: bool = True) -> str:
        """Names the ids; `escaped` spells them as Python literals (an error message, the pytest
        gate). Lines for `echo_line`, which shows every invisible character itself, take them raw
        in quotes, or the backslash of `\\ufeff` would be shown doubled."""
        where = f"{self.run_id}:{self.method}" if self.method is not None else f"{self.run_id} (questions)"
        ids = " and ".join(repr(i) if escaped else f"'{i}'" for i in self.ids)
        return f"{where}: stored question ids {ids} are one id under the id rule (NFC, no outer whitespace)"


def colliding_ids(store: RunStore, run_id: str, method: str | None = None,
                  questions: bool = True) -> list[Collision]:
    """Every group of colliding ids in the run's answers (of `method` only, when given) and,
    with `questions`, in its questions; one SQL pass per table."""
    qid = id_sql("question_id")
    found = query_df(store, f"""
        SELECT method, list(DISTINCT question_id ORDER BY question_id) AS ids FROM responses
        WHERE run_id = $run AND ($method IS NULL OR method = $method)
        GROUP BY method, {qid} HAVING count(DISTINCT question_id) > 1 ORDER BY method, min(question_id)""",
                     {"run": run_id, "method": method}, runs=[run_id])
    out = [Collision(run_id, m, tuple(ids)) for m, ids in found.itertuples(index=False, name=None)]
    if questions:
        found = query_df(store, f"""
            SELECT list(DISTINCT question_id ORDER BY question_id) AS ids FROM questions WHERE run_id = $run
            GROUP BY {qid} HAVING count(DISTINCT question_id) > 1 ORDER BY min(question_id)""",
                         {"run": run_id}, runs=[run_id])
        out += [Collision(run_id, None, tuple(ids)) for ids in found["ids"]]
    return out


def refusal(collisions: list[Collision]) -> str:
    """The one line a comparison or gate refuses a run with: the first group, how many more."""
    more = len(collisions) - 1
    return (collisions[0].line() + (f" (and {more} more such group{'s' if more != 1 else ''})" if more else "")
            + "; pairing would keep one copy and drop the other, so the run is not compared. Re-import its "
              "answers with one copy per question (evalcore show lists every group)")


def warning_lines(collisions: list[Collision]) -> list[str]:
    """`show` and `store check`: one line per method's answers (and one for the questions) with
    colliding ids, naming the first group and counting the others. The ids are raw: print the
    lines with `echo_line`, which escapes them."""
    by_where: dict[str | None, list[Collision]] = {}
    for c in collisions:
        by_where.setdefault(c.method, []).append(c)
    lines = []
    for group in by_where.values():
        more = len(group) - 1
        lines.append(group[0].line(escaped=False) + (f" (and {more} more such group{'s' if more != 1 else ''})" if more else "")
                     + "; their values count twice in the means, and compare and the gates refuse the run")
    return lines


def refuse_collisions(store: RunStore, run_id: str, method: str) -> None:
    """An EvalcoreError (one line, naming the ids) when a system's answers hold colliding ids."""
    found = colliding_ids(store, run_id, method, questions=False)
    if found:
        raise EvalcoreError(refusal(found))
