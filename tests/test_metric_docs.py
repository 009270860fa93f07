"""Every registered metric has its own definition in docs/metrics/, on its spec's page
(MetricSpec.docs_page: docs/metrics/<group>.md unless the spec names another).

docs/metrics/ define metrics in two shapes: a row of a definition table (a table whose first
header cell is `name` or `metric`; the row's first cell names the metric in backticks, the next
cell gives its formula or value), or a heading naming the metric with its definition below (the
composites). A backticked mention in prose, in another table (`interpreting.md`'s patterns) or on
another page does not count: a metric that is only mentioned has no definition to read.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

from evalcore.metrics.registry import METRICS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "metrics"
DEFINING_HEADERS = {"name", "metric"}  # first header cell of a table whose rows define metrics


def _cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def definitions(markdown: str) -> dict[str, list[str]]:
    """Metric name -> the definitions `markdown` gives it (table rows and headings, as above)."""
    found: dict[str, list[str]] = defaultdict(list)
    lines = markdown.splitlines()
    header: list[str] | None = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            heading = re.match(r"#{1,6}\s+`([^`]+)`", line)
            if heading:
                body = []
                for following in lines[i + 1:]:
                    if following.startswith("#"):
                        break
                    body.append(following)
                found[heading.group(1)].append(" ".join(body).strip())
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif not re.fullmatch(r"[-:| ]*", line) and header[0].lower() in DEFINING_HEADERS:
            for name in re.findall(r"`([^`]+)`", cells[0]):
                found[name].append(cells[1] if len(cells) > 1 else "")
    return found


def _pages() -> dict[str, dict[str, list[str]]]:
    return {p.stem: definitions(p.read_text(encoding="utf-8")) for p in sorted(DOCS.glob("*.md"))}


def _page(spec) -> str:
    """The stem of the docs/metrics/ page the spec names (MetricSpec.docs_page)."""
    path = ROOT / spec.docs_page
    assert path.parent == DOCS, f"{spec.name}: its docs page {spec.docs_page} is not in docs/metrics/"
    return path.stem


def test_every_group_has_a_page():
    missing = sorted({spec.docs_page for spec in METRICS.values() if not (ROOT / spec.docs_page).is_file()})
    assert not missing, f"metrics name docs pages that do not exist: {missing}"
    assert {_page(spec) for spec in METRICS.values()} <= {p.stem for p in DOCS.glob("*.md")}


def test_every_registered_metric_is_defined_once_on_its_groups_page():
    pages, problems = _pages(), []
    for name, spec in METRICS.items():
        page = _page(spec)
        here = pages.get(page, {}).get(name, [])
        elsewhere = sorted(p for p, defs in pages.items() if p != page and name in defs)
        if not here:
            problems.append(f"{name}: no definition row or heading in docs/metrics/{page}.md")
        elif len(here) > 1:
            problems.append(f"{name}: defined {len(here)} times in docs/metrics/{page}.md")
        elif not re.search(r"[A-Za-z0-9]", re.sub(r"`[^`]*`", "", here[0])):
            problems.append(f"{name}: its definition in docs/metrics/{page}.md says nothing: {here[0]!r}")
        if elsewhere:
            problems.append(f"{name}: also defined in {elsewhere} (one home per metric: {page}.md)")
    assert not problems, "\n".join(problems)


def test_a_mention_is_not_a_definition():
    """The rule itself: what counts as a metric's definition and what does not."""
    page = """# Page
Prose mentioning `prose_only` and a list item:
- `listed`: in a bullet

| name | formula |
|---|---|
| `tabled` `tabled@5` | hits / \\|gold\\| |
| `empty_formula` | |

| pattern | what it means |
|---|---|
| high `pattern_only` | something |

## `headed` (a composite)
0.5·`tabled` + 0.5·`listed`

## `bare_heading`
## Other
"""
    found = definitions(page)
    assert found["tabled"] == found["tabled@5"] == ["hits / \\|gold\\|"]
    assert found["empty_formula"] == [""]
    assert found["headed"] == ["0.5·`tabled` + 0.5·`listed`"]
    assert found["bare_heading"] == [""]
    assert not {"prose_only", "listed", "pattern_only"} & set(found)


def test_deterministic_groups_are_documented_on_their_own_page():
    for group, page in {"citation": "citation", "lexical": "lexical", "abstention": "abstention",
                        "performance": "performance", "composite": "composites"}.items():
        text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
        names = [n for n, s in METRICS.items() if s.group == group]
        assert names, group
        assert all(f"`{n}`" in text for n in names), (group, [n for n in names if f"`{n}`" not in text])


def test_metrics_json_names_each_metrics_docs_page_and_it_exists():
    """`evalcore metrics --json` tells a user where each metric is defined (MetricSpec.docs_page)."""
    from typer.testing import CliRunner

    from evalcore.cli.main import app

    res = CliRunner().invoke(app, ["metrics", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert rows and all((ROOT / r["docs"]).is_file() for r in rows), [r["docs"] for r in rows]
