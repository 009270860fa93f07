"""The comparison as one self-contained HTML file anyone can open: `evalcore report` and the
Compare page's download.

Why: PMs and stakeholders do not run a Streamlit server. One file, opened from disk with the
network off, has to show what the Compare and Charts pages show: the headline verdict, the
forest plot, the metric table with CIs and Holm p, grade and answer-class distributions, the
Pareto fronts, failure modes and the questions that regressed most with both answers, each
judged number with its judge. The numbers are evalcore.analysis.report.report_data's (the functions the
pages and `evalcore compare --json` call); the figures are evalcore.analysis.charts.figures'.

Self-contained: Plotly's JavaScript is inlined once (the smallest bundle that draws the report's
bar and scatter figures, evalcore.outputs.report_plotly: 1.2 MB of the file), every figure
reuses it, the CSS is inline, and a Content-Security-Policy forbids any
fetch, so nothing on the page can reach the network even if something slipped through.
Untrusted text (answers, questions, names) is escaped with evalcore.analysis.charts.inert (html.escape
for the page, inert_figure for Plotly's labels). The data is also embedded as JSON
(<script type="application/json" id="evalcore-data">, every <, > and & escaped), so a reader's
tool or a test can compare the page with the CLI.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from evalcore.analysis.charts.inert import html_text as esc
from evalcore.analysis.charts.inert import inert_figure
from evalcore.analysis.report.report_data import PARETO_AXES
from evalcore.schemas.labels import AnswerClass, Grade

# No fetch of any kind: scripts and styles only inline, images only data: URIs (Plotly's own).
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#212121;background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:1.5rem}
h1{margin:.2rem 0}h2{margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{margin-bottom:.3rem}
.meta,.note{color:#555;font-size:.9rem}
.headline{font-size:1.25rem;font-weight:600;margin:.6rem 0}
.warn{background:#fff4e5;border-left:4px solid #ef6c00;padding:.4rem .6rem;margin:.3rem 0}
ul.verdicts{list-style:none;padding:0}ul.verdicts li{padding:.35rem .6rem;margin:.25rem 0;border-left:4px solid #9e9e9e;background:#f5f5f5}
li.better{border-color:#2e7d32!important;background:#e8f5e9!important}li.worse{border-color:#c62828!important;background:#ffebee!important}
li.not-significant,li.too-few-questions{border-color:#f9a825!important;background:#fffde7!important}
li.not-compared{border-color:#e65100!important;background:#fff3e0!important}
table{border-collapse:collapse;margin:.5rem 0;font-size:.88rem;background:#fff}
th,td{border:1px solid #ddd;padding:.25rem .45rem;text-align:left;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.text{white-space:pre-wrap;overflow-wrap:anywhere;max-width:32rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:1rem}.grid>div{min-width:0}
.scroll{overflow-x:auto}
.fig{background:#fff;border:1px solid #eee}
"""
# Each figure takes its width when its script runs, while the page below it is still being read:
# the vertical scrollbar that appears later can leave it a scrollbar's width too wide. Once the
# page has loaded, every figure is fitted to its box again.
FIT_FIGURES = ("window.addEventListener('load', function () { document.querySelectorAll('.js-plotly-plot')"
               ".forEach(function (div) { Plotly.Plots.resize(div); }); });")
GRADES = [g.value for g in Grade]
CLASSES = [c.value for c in AnswerClass] + ["ERROR", "UNSCORED"]


def _num(x: Any, digits: int = 3) -> str:
    """The CLI's number format (`evalcore compare`'s table): fixed digits, '-' for missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


# plotly_white's look without its defaults for trace types the report never draws (3-D scenes,
# maps, colour scales): each figure carries its template, and the full one is ~7 KB a figure.
_TEMPLATE_KEYS = ("autotypenumbers", "colorway", "font", "hoverlabel", "hovermode", "paper_bgcolor", "plot_bgcolor",
                  "title", "xaxis", "yaxis", "shapedefaults", "annotationdefaults")


def _template() -> Any:
    import plotly.graph_objects as go
    import plotly.io as pio

    layout = pio.templates["plotly_white"].layout.to_plotly_json()
    return go.layout.Template(layout={k: v for k, v in layout.items() if k in _TEMPLATE_KEYS})


def _figure(fig: Any, div_id: str) -> str:
    """A figure as a div (id `fig-…`: never a section's id) and its inline script, using the
    page's one copy of Plotly."""
    import plotly.io as pio

    from evalcore.outputs.report_plotly import check_drawable

    check_drawable(fig)  # the inlined bundle draws it
    fig.update_layout(template=_template())
    return '<div class="fig">' + pio.to_html(inert_figure(fig), full_html=False, include_plotlyjs=False,
                                             div_id=f"fig-{div_id}", config={"displayModeBar": False, "responsive": True}) + "</div>"


def _judge(text: str) -> str:
    return f" · judged by {esc(text)}" if text else ""


def _table(head: list[str], rows: list[list[str]], attrs: list[str] | None = None) -> str:
    """An HTML table; cells are already escaped HTML (numbers get class num by the caller)."""
    out = ['<div class="scroll"><table><thead><tr>', *(f"<th>{esc(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        out.append(f"<tr{attrs[i] if attrs else ''}>" + "".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _td(value: Any, digits: int | None = None) -> str:
    if digits is not None:
        return f'<td class="num">{esc(_num(value, digits))}</td>'
    return f"<td>{esc(value)}</td>"


def _verdict_section(data: dict[str, Any]) -> str:
    """Per candidate: warnings, the headline, the forest plot and every verdict sentence."""
    cmp, names, out = data["compare"], data["names"], ['<section id="verdict"><h2>Verdict</h2>']
    base = cmp["baseline"]
    out.append(f'<p class="meta">Δ = candidate − baseline · CI: paired bootstrap 95%, unadjusted · '
               f'p: exact McNemar (0/1 metrics) or paired randomization, Holm-adjusted over the tested metrics · '
               f'α = {esc(cmp["alpha"])} · seed {esc(data["seed"])}</p>')
    for i, cand in enumerate(cmp["candidates"]):
        v = cmp["verdicts"][cand]
        out.append(f"<h3>{esc(names[cand])} against {esc(names[base])} (baseline)</h3>")
        out += [f'<div class="warn">Not comparable as scored: {esc(w)}</div>' for w in v["warnings"]]
        out.append(f'<p class="headline" data-candidate="{esc(cand)}">{esc(v["summary"])}</p>')
        rows = pd.DataFrame(data["forest"][cand])
        if len(rows):
            from evalcore.analysis.charts.figures import forest_figure

            out.append(_figure(forest_figure(rows), f"forest-{i}"))
        out.append('<ul class="verdicts">')
        for line in v["lines"]:
            kind = line["outcome"].replace(" ", "-")
            # the sentence ends in its judge(s), each side's when they differ (verdict.judges_of_pair)
            out.append(f'<li class="{esc(kind)}">{esc(line["verdict"])}</li>')
        out.append("</ul>")
    return "".join(out) + "</section>"


METRIC_HEAD = ["candidate", "metric", "judged by", "n", "baseline", "candidate mean", "Δ", "95% CI", "p (Holm)",
               "verdict", "better / worse / same / missing", "test"]


def _metric_section(data: dict[str, Any]) -> str:
    """The comparison table, in `evalcore compare`'s number formats, one row per (candidate, metric)."""
    cmp, names = data["compare"], data["names"]
    outcome = {(c, line["metric"]): line["outcome"] for c, v in cmp["verdicts"].items() for line in v["lines"]}
    rows, attrs = [], []
    for r in cmp["metrics"]:
        rows.append([_td(names.get(r["candidate"], r["candidate"])), _td(r["metric"]),
                     _td(data["judged_by"].get(r["metric"]) or "computed, no judge"), _td(r["n_pairs"], 0),
                     _td(r["mean_a"], 3), _td(r["mean_b"], 3), _td(r["delta"], 4),
                     f'<td class="num">[{esc(_num(r["ci_low"], 4))}, {esc(_num(r["ci_high"], 4))}]</td>',
                     _td(r["p_holm"], 4), _td(outcome.get((r["candidate"], r["metric"]), "")),
                     _td(f'{r["improved"]} / {r["regressed"]} / {r["unchanged"]} / {r["missing"]}'), _td(r["test"])])
        attrs.append(f' data-candidate="{esc(r["candidate"])}" data-metric="{esc(r["metric"])}"')
    notes = [f'<p class="note">{esc(names.get(c, c))}: {len(ids["only_in_baseline"])} questions only in the baseline, '
             f'{len(ids["only_in_candidate"])} only in the candidate (not compared).</p>'
             for c, ids in cmp["unpaired"].items() if ids["only_in_baseline"] or ids["only_in_candidate"]]
    return ('<section id="metrics"><h2>Metrics: means, Δ, CI, Holm p</h2>'
            + _table(METRIC_HEAD, rows, attrs) + "".join(notes) + "</section>")


NOISE_HEAD = ["candidate", "metric", "K baseline / candidate", "judge SD baseline / candidate",
              "flip rate baseline / candidate", "judge share of Δ variance", "± Δ from judge noise alone"]


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _noise_section(data: dict[str, Any]) -> str:
    """The judge's noise per tested metric (compare's `judge_noise`), only for runs scored with
    `--repeats K`: a report of runs with one verdict per answer has no such section."""
    cmp, names = data["compare"], data["names"]
    noise = cmp.get("judge_noise") or []
    if not noise:
        return ""
    rows = [[_td(names.get(r["candidate"], r["candidate"])), _td(r["metric"]),
             _td(f'{r["k_baseline"]} / {r["k_candidate"]}'),
             f'<td class="num">{esc(_num(r["within_sd_baseline"]))} / {esc(_num(r["within_sd_candidate"]))}</td>',
             f'<td class="num">{esc(_pct(r["flip_rate_baseline"]))} / {esc(_pct(r["flip_rate_candidate"]))}</td>',
             f'<td class="num">{esc(_pct(r["judge_share"]))}</td>', _td(r["noise_delta"], 4)] for r in noise]
    attrs = [f' data-candidate="{esc(r["candidate"])}" data-metric="{esc(r["metric"])}"' for r in noise]
    return ('<section id="judge-noise"><h2>Judge noise</h2><p class="note">Each answer was judged K times '
            "(independent samples); its value is their mean. Judge SD: the spread of one answer's verdicts; flip "
            "rate: the share of answers whose verdicts differ; the judge's share of the Δ's variance and the Δ "
            "judge noise alone produces (95%) are already inside the CIs above.</p>"
            + _table(NOISE_HEAD, rows, attrs) + "</section>")


TRIALS_HEAD = ["candidate", "metric", "T baseline / candidate", "SD within question baseline / candidate",
               "flip rate baseline / candidate", "pass@T baseline / candidate", "pass^T baseline / candidate"]


def _pair(r: dict[str, Any], name: str, fmt: Any) -> str:
    return f'<td class="num">{esc(fmt(r[f"{name}_baseline"]))} / {esc(fmt(r[f"{name}_candidate"]))}</td>'


def _trials_section(data: dict[str, Any]) -> str:
    """The systems' spread over their trials per tested metric (compare's `trials`), only when a
    side was asked with `--trials T`: a report of runs without trials has no such section."""
    cmp, names = data["compare"], data["names"]
    trials = cmp.get("trials") or []
    if not trials:
        return ""
    rows = [[_td(names.get(r["candidate"], r["candidate"])), _td(r["metric"]), _pair(r, "trials", str),
             _pair(r, "within_sd", _num), _pair(r, "flip_rate", _pct), _pair(r, "pass_at_t", _pct),
             _pair(r, "pass_all_t", _pct)] for r in trials]
    attrs = [f' data-candidate="{esc(r["candidate"])}" data-metric="{esc(r["metric"])}"' for r in trials]
    return ('<section id="trials"><h2>Trials</h2><p class="note">Each question was asked T times per system; its '
            "value is the mean of its trials, so the system's own sampling is already inside the CIs above. SD "
            "within question: the spread of one question's trials; flip rate: the share of questions whose trials "
            "disagree; pass@T / pass^T (pass/fail metrics): the share of questions passed at least once / every "
            "time in T trials.</p>" + _table(TRIALS_HEAD, rows, attrs) + "</section>")


def _relabel(rows: list[dict[str, Any]], names: dict[str, str]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    return df.assign(system=df["system"].map(lambda k: names.get(k, k))) if len(df) else df


def _distribution_section(data: dict[str, Any]) -> str:
    """Grade and answer-class shares per system (Charts' overview), with their judges."""
    from evalcore.analysis.charts.figures import stacked_figure

    out = ['<section id="distributions"><h2>Grades and answer classes</h2><div class="grid">']
    for key, order, title, legend in (("grades", GRADES, "Grade distribution (A-E)", "grade"),
                                      ("answer_classes", CLASSES, "Correct / wrong / don't know", "class")):
        part = data[key]
        df = _relabel(part["counts"], data["names"])
        body = _figure(stacked_figure(df, order, title, legend), f"dist-{key}") if len(df) else \
            f'<p class="note">No {esc(title.lower())} for these systems.</p>'
        who = f"judged by {part['judged_by']}" if part["judged_by"] else "no judge recorded for these labels"
        out.append(f'<div>{body}<p class="note">{esc(title)}: {esc(who)}</p></div>')
    return "".join(out) + "</div></section>"


def _pareto_section(data: dict[str, Any]) -> str:
    """Quality against cost and latency (Charts' fronts): a star on the front."""
    from evalcore.analysis.charts.figures import pareto_figure

    p = data["pareto"]
    out = ['<section id="pareto"><h2>Pareto fronts: quality vs cost and latency</h2>']
    if not p["quality"]:
        return "".join(out) + '<p class="note">No metric values for these systems.</p></section>'
    out.append(f'<p class="note">Quality: mean {esc(p["quality"])}{_judge(p.get("quality_judged_by", ""))}; '
               "cost per query and p50 latency by the leaderboard's definitions.</p><div class=\"grid\">")
    for i, (x, title) in enumerate(PARETO_AXES):
        pts = pd.DataFrame(p["fronts"].get(x, []))
        if pts.empty:
            out.append(f'<p class="note">No {esc(title)} recorded (or unknown for every system): no front.</p>')
            continue
        pts["front"] = pts["front"].astype(bool)
        rows = [[_td(data["names"].get(r.system, r.system)), _td(r.quality, 3), _td(getattr(r, x), 6 if "cost" in x else 1),
                 _td("yes" if r.front else "no")] for r in pts.itertuples(index=False)]
        out.append("<div>" + _figure(pareto_figure(pts, x, title, p["quality"], data["names"]), f"pareto-{i}")
                   + _table(["system", f"mean {p['quality']}", title, "on the front"], rows) + "</div>")
    return "".join(out) + "</div></section>"


def _failure_section(data: dict[str, Any]) -> str:
    """Where the wrong answers come from (failure_modes), as on Compare and Charts."""
    from evalcore.analysis.charts.figures import failure_figure

    part = data["failure_modes"]
    out = ['<section id="failure-modes"><h2>Where the wrong answers come from</h2>']
    df = _relabel(part["counts"], data["names"])
    if df.empty:
        return "".join(out) + '<p class="note">No diagnosable answers.</p></section>'
    out.append(_figure(failure_figure(df, df["system"].nunique()), "failure-modes"))
    rows = [[_td(r.system), _td(r.bucket), _td(r.n, 0), _td(f"{r.share:.0%}")] for r in df.itertuples(index=False)]
    out.append(_table(["system", "diagnosis", "answers", "share"], rows))
    who = f"judged by {part['judged_by']}" if part["judged_by"] else "no judge recorded"
    out.append(f'<p class="note">Diagnosis from correctness, retrieval and faithfulness metrics: {esc(who)}.</p>')
    return "".join(out) + "</section>"


def _text_cell(value: dict[str, Any]) -> str:
    if value["text"] is None:
        return '<td class="text"><i>(none)</i></td>'
    cut = f'<br><i>… {value["cut"]:,} more characters</i>' if value["cut"] else ""
    return f'<td class="text">{esc(value["text"])}{cut}</td>'


def _regressed_section(data: dict[str, Any]) -> str:
    """Per candidate, the questions whose first tested metric dropped most, with both answers."""
    part, names, base = data["regressed"], data["names"], data["compare"]["baseline"]
    out = ['<section id="regressed"><h2>Questions that regressed most</h2>']
    if not part["metric"]:
        return "".join(out) + '<p class="note">No metric tested.</p></section>'
    out.append(f'<p class="note">By {esc(part["metric"])}{_judge(part["judged_by"])}, biggest drop first.</p>')
    for cand, rows in part["by_candidate"].items():
        out.append(f"<h3>{esc(names[cand])} against {esc(names[base])}: {len(rows)} shown</h3>")
        body = [[_td(r["question_id"]), _text_cell(r["question"]), _text_cell(r["ground_truth"]),
                 _text_cell(r["base_answer"]), _text_cell(r["cand_answer"]), _td(r["base"], 3), _td(r["cand"], 3),
                 _td(r["delta"], 4)] for r in rows]
        out.append(_table(["question", "text", "ground truth", f"baseline answer ({names[base]})",
                           f"candidate answer ({names[cand]})", "baseline", "candidate", "Δ"], body)
                   if body else '<p class="note">No question regressed.</p>')
    return "".join(out) + "</section>"


def _finite(value: Any) -> Any:
    """NaN and infinities as None (JSON has no NaN: a browser's JSON.parse rejects it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


_TEXTS = ("question", "ground_truth", "base_answer", "cand_answer")


def _numbers_only(data: dict[str, Any]) -> dict[str, Any]:
    """The data without the regressed questions' texts (the page shows them; the JSON is for the
    numbers, and the texts twice would cost the file up to twice their size)."""
    regressed = data["regressed"]
    slim = {c: [{k: v for k, v in r.items() if k not in _TEXTS} for r in rows]
            for c, rows in regressed["by_candidate"].items()}
    return {**data, "regressed": {**regressed, "by_candidate": slim}}


def embedded_json(data: dict[str, Any]) -> str:
    """The data as JSON safe inside a <script> element: no <, > or & survives literally."""
    text = json.dumps(_finite(_numbers_only(data)), ensure_ascii=False, default=str, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render(data: dict[str, Any]) -> str:
    """The whole report (report_data's dict) as one HTML document."""
    from evalcore.outputs.report_plotly import plotly_js

    cmp, names = data["compare"], data["names"]
    systems = ", ".join(names.get(k, k) for k in [cmp["baseline"], *cmp["candidates"]])
    title = f"evalcore report: {', '.join(names[c] for c in cmp['candidates'])} against {names[cmp['baseline']]}"
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style>",
        f'<script type="text/javascript">{plotly_js()}\n{FIT_FIGURES}</script></head><body><main>',
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">Systems (first = baseline): {esc(systems)} · tested metrics: '
        f'{esc(", ".join(data["tested_metrics"]) or "none")} · evalcore {esc(data["evalcore_version"])} · '
        f'generated {esc(data["generated_at"])}</p>',
        _verdict_section(data), _metric_section(data), _noise_section(data), _trials_section(data),
        _distribution_section(data),
        _pareto_section(data),
        _failure_section(data), _regressed_section(data),
        f'<script type="application/json" id="evalcore-data">{embedded_json(data)}</script>',
        "</main></body></html>"]
    return "".join(parts)


def report_html(store: Any, refs: list[str], metrics: list[str] | None = None, seed: int = 0,
                alpha: float = 0.05) -> str:
    """The report of `evalcore report REFS --metrics ...` as a string (the Compare page's download)."""
    from evalcore.analysis.report.report_data import report_data

    return render(report_data(store, refs, metrics=metrics, seed=seed, alpha=alpha))
