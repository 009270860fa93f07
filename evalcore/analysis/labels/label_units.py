"""Which answer a human label belongs to, and the human value of an answer, per judged metric.

Why a module of its own: a corrected estimate (evalcore.analysis.labels.corrected) needs, for each answer
of a system, the judge's value of a metric (the prediction) and, for randomly sampled answers, the
value a person's labels give the same metric (the truth). The unit of sampling and estimation is
the answer; how labels add up to an answer's value depends on the metric (on its spec's
label_kind and claims_from, so a metric registered later is labelled like these):

  metric              labels (target_kind)        an answer is labelled when            human value
  faithfulness        claim, source "answer"        every claim of the answer has one     share supported
  context_recall      claim, source "ground_truth"  every reference statement has one     share supported
  context_precision   context                       every retrieved context has one       share relevant
  answer_class        answer_class                  one decision                          1 if CORRECT else 0
  factual_accuracy,   grade                         one decision                          grade points / 4
  factual_grade                                                                           (A=1 ... E=0)
  any other metric    metric (a 0-1 rating)         one decision                          the rating

The judge's prediction is the metric's stored value (for grades: the judge's letter on the same
points/4 scale), so judge and human values share one scale. An answer counts as *sampled* when it
was drawn by the population's verified random sample: labels naming a sample id are checked
against that seed's order (evalcore.analysis.labels.sample_order), since a label merely saying it was
drawn proves nothing; only sampled, fully labelled answers feed an estimate. Several people
labelling the same item: the newest label counts (a retraction takes the person's label back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from evalcore.schemas.labels import GRADE_POINTS, RETRACTED, Grade
from evalcore.analysis.labels import sample_order as O
from evalcore.analysis.labels.annotations import NEWEST_FIRST
from evalcore.analysis.read.recent_frames import RecentFrames
from evalcore.store import RunStore, query_df, wide_columns
from evalcore.store.wide import label_expr, value_expr


@dataclass(frozen=True)
class Unit:
    """How one metric's labels make an answer's human value."""

    kind: str  # the Annotation target_kind of its labels
    source: str | None = None  # claims: which text the claims come from


RATING = Unit("metric")  # any other metric: a person's 0-1 rating of the answer


def labelled() -> tuple[str, ...]:
    """The metrics with a unit of their own (MetricSpec.label_kind), in the order pages offer them."""
    from evalcore.metrics.registry import labelled_metrics

    return labelled_metrics()


def unit(metric: str) -> Unit:
    """How `metric`'s labels make an answer's value: its spec's label_kind (claims from the text
    its claims_from names), else RATING."""
    from evalcore.metrics.registry import METRICS

    spec = METRICS.get(metric)
    if spec is None or spec.label_kind is None:
        return RATING
    return Unit(spec.label_kind, spec.claims_from)


def grade_value(letter: object) -> float:
    """A grade letter on the 0-1 scale both sides share (A=1, B=.75, ... E=0); NaN if not a grade."""
    try:
        return GRADE_POINTS[Grade(str(letter).strip().upper())] / 4.0
    except ValueError:
        return math.nan


def rating_value(label: object) -> float:
    """A person's 0-1 rating ('0.8'); NaN when it is not a number in [0, 1]."""
    try:
        x = float(str(label))
    except ValueError:
        return math.nan
    return x if 0.0 <= x <= 1.0 else math.nan


def estimable_metrics(store: RunStore, run_id: str) -> list[str]:
    """The run's metrics a person can label: judged metrics with a unit above, plus any metric
    that already has 0-1 ratings."""
    have = set(query_df(store, "SELECT DISTINCT metric FROM summary_metrics WHERE run_id = $run", {"run": run_id},
                  runs=[run_id])["metric"])
    rated = set(query_df(store, "SELECT DISTINCT target_ref FROM annotations WHERE run_id = $run AND target_kind = 'metric'",
                   {"run": run_id}, runs=[run_id])["target_ref"])
    units = labelled()
    return [m for m in units if m in have] + sorted((rated & have) - set(units))


def label_items(store: RunStore, run_id: str, method: str, metric: str, *, question_id: str | None = None,
                with_text: bool = True) -> pd.DataFrame:
    """Every item a person labels for this system x metric: question_id, target_kind, target_ref,
    judge_label, text (claims). `question_id`: one answer's items only; `with_text=False`: text
    left NULL (counting a population of 100,000 answers needs no claim text)."""
    sql, p = _items_sql(run_id, method, metric, with_text)
    return query_df(store, f"SELECT * FROM ({sql}) WHERE ($q IS NULL OR question_id = $q) ORDER BY question_id, pos",
                    {**p, "q": question_id}, runs=[run_id])


def _items_sql(run_id: str, method: str, metric: str, with_text: bool = False) -> tuple[str, dict]:
    """The query of `label_items` (unordered) and its parameters: one home for what an item is."""
    u = unit(metric)
    p = {"run": run_id, "method": method, "metric": metric}
    if u.kind == "claim":
        p["source"] = u.source
        text = "text" if with_text else "NULL"
        sql = f"""SELECT question_id, 'claim' AS target_kind, metric || ':' || source || ':' || idx AS target_ref,
                        verdict AS judge_label, {text} AS text, idx AS pos
                 FROM claims WHERE run_id = $run AND method = $method AND metric = $metric
                   AND source = $source AND verdict IS NOT NULL"""
    elif u.kind == "context":
        sql = """SELECT question_id, 'context' AS target_kind, metric || ':' || rank AS target_ref,
                        verdict AS judge_label, NULL AS text, rank AS pos
                 FROM context_verdicts WHERE run_id = $run AND method = $method AND metric = $metric
                   AND verdict IS NOT NULL"""
    else:
        ref = "'answer_class'" if u.kind == "answer_class" else "metric"
        judge = "CAST(value AS VARCHAR)" if u.kind == "metric" else "label"
        has = "value IS NOT NULL AND NOT isnan(value)" if u.kind == "metric" else "label IS NOT NULL"
        sql = f"""SELECT question_id, '{u.kind}' AS target_kind, {ref} AS target_ref, {judge} AS judge_label,
                         NULL AS text, 0 AS pos
                  FROM metrics WHERE run_id = $run AND method = $method AND metric = $metric AND {has}"""
    return sql, p


def items_for(store: RunStore, run_id: str, method: str, metric: str, question_ids: list[str]) -> pd.DataFrame:
    """question_id, target_ref of every item of these answers (no text): a few answers' items
    without reading the population's."""
    sql, p = _items_sql(run_id, method, metric)
    items = query_df(store, f"SELECT question_id, target_ref FROM ({sql}) WHERE list_contains($qids, question_id)",
                     {**p, "qids": sorted(set(question_ids))}, runs=[run_id])
    return items[items.target_ref == metric] if unit(metric).kind == "metric" else items


def _predictions(store: RunStore, run_id: str, method: str, metric: str) -> pd.DataFrame:
    """question_id, judge (the judge's value on the shared 0-1 scale) for every judged answer
    (one metric_wide column: no scan of every metric row)."""
    present = wide_columns(store, [run_id])
    grade = unit(metric).kind == "grade"
    column = label_expr(metric, present) if grade else value_expr(metric, present)
    out = query_df(store, f"SELECT question_id, {column} AS v FROM metric_wide WHERE run_id = $run AND method = $method",
                   {"run": run_id, "method": method}, runs=[run_id])
    judge = out["v"].map(grade_value) if grade else out["v"].astype(float)
    return pd.DataFrame({"question_id": out["question_id"], "judge": judge}).dropna().reset_index(drop=True)


def newest_labels(store: RunStore, run_id: str, method: str, kind: str) -> pd.DataFrame:
    """The newest label per item of one system and label kind (anyone's; a retraction removes the
    item's label), with whether any label of the item came from a random sample."""
    out = query_df(store, f"""
        SELECT question_id, target_ref, label, sample_id, inclusion_prob,
               bool_or(sample_id IS NOT NULL) OVER (PARTITION BY question_id) AS answer_sampled FROM annotations
        WHERE run_id = $run AND method = $method AND target_kind = $kind
        QUALIFY row_number() OVER (PARTITION BY question_id, target_ref ORDER BY {NEWEST_FIRST}) = 1""",
             {"run": run_id, "method": method, "kind": kind}, runs=[run_id])
    return out


def answers(store: RunStore, run_id: str, method: str, metric: str) -> pd.DataFrame:
    """One row per answer in the population (answers with a judge value, and for claim/context
    metrics at least one item to label): question_id, judge, n_items, n_labelled, human (NaN
    unless every item has a label) and sampled (drawn by the population's verified random
    sample, the one that feeds estimates: sample_order)."""
    return _RECENT.get(store, (run_id, method, metric), lambda: _answers(store, run_id, method, metric))


# The last few populations, keyed by the store's state token (a new label or run changes it, so
# an entry is never stale): a page's estimate and its next draw read the same population, which
# takes ~1 s to build at 100,000 answers.
_RECENT = RecentFrames(4)
_SAMPLES = RecentFrames(4, copy=lambda checks: checks)  # frozen SampleChecks: nothing to copy


def _judged(store: RunStore, run_id: str, method: str, metric: str) -> pd.DataFrame:
    """question_id, judge, n_items of every answer of the population: the run's side alone (no
    label), kept while only labels change (an annotator's save re-reads the labels, not this)."""
    def build() -> pd.DataFrame:
        pred = _predictions(store, run_id, method, metric)
        # items counted in SQL (a claim metric has several per answer: 300,000 rows at 100,000
        # answers); only the labelled answers' items come to pandas, to meet their labels
        sql, p = _items_sql(run_id, method, metric)
        per = query_df(store, f"SELECT question_id, count(*) AS n_items FROM ({sql}) GROUP BY question_id", p,
                       runs=[run_id])
        per["n_items"] = per["n_items"].astype("int64")
        return pred.merge(per, on="question_id", how="inner")
    return _JUDGED.get(store, (run_id, method, metric), build)


_JUDGED = RecentFrames(4, runs_only=True)


def _answers(store: RunStore, run_id: str, method: str, metric: str) -> pd.DataFrame:
    judged = _judged(store, run_id, method, metric)
    labels = newest_labels(store, run_id, method, unit(metric).kind)
    if unit(metric).kind == "metric":
        labels = labels[labels.target_ref == metric]
    labels = labels[labels.label != RETRACTED]
    sql, p = _items_sql(run_id, method, metric)
    done = pd.DataFrame({"question_id": pd.Series(dtype=object), "n_labelled": pd.Series(dtype="int64"),
                         "human": pd.Series(dtype=float)})
    if len(labels):
        items = query_df(store, f"SELECT question_id, target_ref FROM ({sql}) WHERE list_contains($qids, question_id)",
                         {**p, "qids": sorted(set(labels.question_id))}, runs=[run_id])
        merged = items.merge(labels[["question_id", "target_ref", "label"]], on=["question_id", "target_ref"],
                             how="left")
        merged["h"] = _item_values(unit(metric), merged["label"])
        done = merged.groupby("question_id").agg(n_labelled=("label", "count"), human=("h", "mean")).reset_index()
    out = judged.merge(done, on="question_id", how="left")
    out["n_labelled"] = out["n_labelled"].fillna(0).astype("int64")
    out.loc[out.n_labelled < out.n_items, "human"] = math.nan
    # only a verified sample feeds estimates, and only one per population (sample_order): a label
    # merely naming a sample proves nothing
    checks = _SAMPLES.get(store, (run_id, method, metric), lambda: _checks(store, run_id, method, metric, out))
    feeds = O.chosen(checks)
    out["sampled"] = out["question_id"].isin(feeds.drawn if feeds else ())
    return out[["question_id", "judge", "n_items", "n_labelled", "sampled", "human"]]


def sample_rows(store: RunStore, run_id: str, method: str, metric: str) -> pd.DataFrame:
    """Every stored label of this population's metric that names a sample (any sample id, the
    grammar is checked by the caller): question_id, target_ref, sample_id, inclusion_prob, in the
    order they arrived."""
    u = unit(metric)
    if u.kind == "claim":
        which, ref = "starts_with(target_ref, $ref)", f"{metric}:{u.source}:"
    elif u.kind == "context":
        which, ref = "starts_with(target_ref, $ref)", f"{metric}:"
    else:
        which, ref = "target_ref = $ref", "answer_class" if u.kind == "answer_class" else metric
    return query_df(store, f"""SELECT question_id, target_ref, sample_id, inclusion_prob FROM annotations
                               WHERE run_id = $run AND method = $method AND target_kind = $kind
                                 AND sample_id IS NOT NULL AND {which} ORDER BY arrival""",
                    {"run": run_id, "method": method, "kind": u.kind, "ref": ref}, runs=[run_id])


def _checks(store: RunStore, run_id: str, method: str, metric: str,
            population: pd.DataFrame) -> tuple[O.SampleCheck, ...]:
    rows = sample_rows(store, run_id, method, metric)
    if rows.empty:
        return ()
    full = set(population.loc[population.human.notna(), "question_id"])
    return tuple(O.check_population(population["question_id"].tolist(), full,
                                    zip(rows.sample_id, [None] * len(rows), rows.question_id, rows.inclusion_prob)))


def samples(store: RunStore, run_id: str, method: str, metric: str) -> tuple[O.SampleCheck, ...]:
    """Each sample id's stored labels in this population, checked against its seed's order
    (evalcore.analysis.labels.sample_order): what `store check` reports and the Annotate page walks.
    Checked once per state of the store, with the population (answers)."""
    population = answers(store, run_id, method, metric)
    return _SAMPLES.get(store, (run_id, method, metric), lambda: _checks(store, run_id, method, metric, population))


def _item_values(u: Unit, labels: pd.Series) -> pd.Series:
    """Each item's human value (NaN where no label)."""
    text = labels.astype("string").str.strip().str.lower()
    if u.kind == "claim":
        return text.map({"supported": 1.0, "not_supported": 0.0}).astype(float)
    if u.kind == "context":
        return text.map({"relevant": 1.0, "not_relevant": 0.0}).astype(float)
    if u.kind == "answer_class":
        return text.map(lambda x: math.nan if pd.isna(x) else float(x == "correct")).astype(float)
    if u.kind == "grade":
        return labels.map(lambda x: math.nan if pd.isna(x) else grade_value(x)).astype(float)
    return labels.map(lambda x: math.nan if pd.isna(x) else rating_value(x)).astype(float)


def items_of_answer(store: RunStore, run_id: str, method: str, metric: str, question_id: str) -> pd.DataFrame:
    """The items of one answer the 'label this whole answer' form shows (with the judge's labels)."""
    items = label_items(store, run_id, method, metric, question_id=question_id)
    if unit(metric).kind == "metric":
        items = items[items.target_ref == metric]
    return items.reset_index(drop=True)
