"""Untrusted answer text in exports: the Markdown export must stay inert when rendered.

`evalcore export -f md` escapes pipes and HTML, so an answer cannot break the table or add
tags; but a Markdown link or image in an answer still becomes a live link / a remote image
fetch wherever the file is viewed (a PR comment, a wiki). Rendered here with markdown-it
(already installed through rich), the same engine family GitHub-style viewers use.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from evalcore.outputs.export import export_run
from evalcore.schemas import EvalQuestion, EvalResponse, RunManifest
from evalcore.store import FORMAT_VERSION

HOSTILE = "Paris [click](http://evil.invalid/l) ![pic](http://evil.invalid/x.png) <img src=x onerror=alert(1)> | x"


def _export_html(store) -> str:
    writer = store.create_run(RunManifest(format_version=FORMAT_VERSION, run_id="md", name="md",
                                          evalcore_version="t", methods=["m"]))
    writer.write_questions([EvalQuestion(id="q1", question="Capital?", ground_truth="Paris")])
    writer.write_responses([EvalResponse(question_id="q1", method="m", answer=HOSTILE)])
    writer.publish()
    md = export_run(store, "md", "md").decode()
    return MarkdownIt("commonmark").enable("table").render(md)


def test_md_export_keeps_html_inert_and_the_table_whole(store):
    html = _export_html(store)
    assert "<img src=x" not in html and "onerror" in html   # shown as text, not a tag
    assert html.count("<tr>") == 2                            # header + one row: no broken table


def test_md_export_does_not_turn_answers_into_links_or_images(store):
    html = _export_html(store)
    assert "evil.invalid" in html                             # the text is there...
    assert 'href="http://evil' not in html and 'src="http://evil' not in html  # ...but inert
