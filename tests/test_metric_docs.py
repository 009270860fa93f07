"""Every registered metric is documented: its name appears in backticks in docs/metrics/*.md."""

import re
from pathlib import Path

from evalcore.metrics.registry import METRICS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "metrics"


def _documented() -> set[str]:
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))
    return set(re.findall(r"`([^`\n]+)`", text))


def test_every_registered_metric_is_documented():
    missing = sorted(name for name in METRICS if name not in _documented())
    assert not missing, f"metrics without docs in docs/metrics/*.md: {missing}"


def test_deterministic_groups_are_documented_on_their_own_page():
    for group, page in {"citation": "citation", "lexical": "lexical", "abstention": "abstention",
                        "performance": "performance", "composite": "composites"}.items():
        text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
        names = [n for n, s in METRICS.items() if s.group == group]
        assert names, group
        assert all(f"`{n}`" in text for n in names), (group, [n for n in names if f"`{n}`" not in text])
