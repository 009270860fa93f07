"""Terminal output is inert (issue 34, item 9): every command over a store whose names carry every
kind of escape prints them as visible escapes, never as control characters.

The store's method names, run name, question ids, categories, answers, label notes and even the
file names hold OSC 52 (clipboard write), OSC 0 (title), OSC 8 (link), CSI 2J (clear), 8-bit C1
controls, BEL/BS/DEL, a lone CR, NEL and U+2028, bidi overrides and isolates, and rich markup.
Every command of the CLI (the test fails when a command is added without a case here) runs
through the real entry point (`evalcore.cli.main.main`, in process for speed; a subprocess for the
console script itself), and nothing it writes to stdout or stderr holds a control character but
newline, tab and CR LF. Names stay readable (their escapes are shown), JSON output still decodes
to the stored names, Markdown output renders with no link, image or tag, and a newline inside a
name does not start a line of its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from evalcore.cli import main as cli_main
from evalcore.cli.main import COMMANDS, commands_of
from evalcore.common.inert_text import InertStream, markdown_cell, visible

# A raw control character anywhere but newline, tab and the CR of a CR LF.
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]|\r(?!\n)")

ESCAPES = ("\x1b]52;c;cHduZWQ=\x07", "\x1b]0;pwned\x07", "\x1b]8;;http://evil.invalid/\x1b\\link\x1b]8;;\x1b\\",
           "\x1b[2J\x1b[H", "\x9b31m", "\x9d0;t\x9c", "\x90q\x9c", "\x07\x08\x7f", "ok\rFAIL", "\x85\u2028",
           "\u202eevil\u202c\u2066x\u2069\u200f\u061c")
MARKUP = "[link=http://evil.invalid]click[/link][/][bold red]x"
HOSTILE = "".join(ESCAPES) + MARKUP
FORGED = "FORGED-LINE"
METHOD_A = "alpha" + HOSTILE + "\n" + FORGED        # a newline too: it must not start a line
METHOD_B = "beta" + "".join(reversed(ESCAPES))
QID = "q\x1b[2J\u202e"                               # no whitespace: TREC files hold it too


def _no_control(text: str, where: str) -> None:
    bad = FORBIDDEN.search(text)
    assert bad is None, f"{where}: raw {bad.group()!r} at {bad.start()}: {text[max(0, bad.start() - 60):bad.end() + 20]!r}"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A store with one imported run whose every name is hostile, scored, with labels."""
    from evalcore.scoring.importer import import_recorded
    from evalcore.analysis.labels.labels_io import import_labels
    from evalcore.scoring.engine import score_run
    from evalcore.store import RunStore

    base = tmp_path_factory.mktemp("inert")
    folder = base / ("in\x1b]0;dir\x07\u202e")            # file names are untrusted too
    folder.mkdir()
    answers = folder / "answers\x1b[2J.jsonl"
    rows = [{"question_id": f"{QID}{i}", "method": m, "question": "Q " + HOSTILE, "answer": f"A{i} " + HOSTILE,
             "ground_truth": f"A{i} ok", "category": "cat" + HOSTILE}
            for i in range(4) for m in (METHOD_A, METHOD_B)]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = RunStore(base / "runs")
    run = import_recorded(store, answers, name="run" + HOSTILE).run_id
    score_run(store, run, metrics=["token_f1", "exact_match"], progress=False)
    score_run(store, run, metrics=["answer_class"], options={"judge": "heuristic"}, progress=False)
    questions = folder / "questions\u202e.jsonl"
    questions.write_text("".join(json.dumps({"id": f"{QID}{i}", "question": "Q " + HOSTILE, "ground_truth": "A",
                                             "category": "cat" + HOSTILE}) + "\n" for i in range(3)), encoding="utf-8")
    (base / "out").mkdir()
    labels = folder / "labels\x1b]0;x\x07.jsonl"
    labels.write_text("".join(json.dumps({"run": run, "method": METHOD_A, "question_id": f"{QID}{i}",
                                          "metric": "token_f1", "label": "0.5", "who": "who" + HOSTILE,
                                          "note": "note" + HOSTILE}) + "\n" for i in range(4)), encoding="utf-8")
    import_labels(store, labels)
    bad_labels = folder / "bad\u202e.jsonl"
    bad_labels.write_text(json.dumps({"run": run, "method": "nope" + HOSTILE, "question_id": QID + "0",
                                      "metric": "token_f1", "label": "0.5", "who": "w"}) + "\n", encoding="utf-8")
    bad_answers = folder / "bad\x1b]0;t\x07.jsonl"
    bad_answers.write_text(json.dumps({"question_id": "q", "method": "m", "answer": "a",
                                       "latency_ms": "slow" + HOSTILE}) + "\n", encoding="utf-8")
    qrels, trec_run = folder / "qrels\x1b[2J.txt", folder / "run\u202e.txt"
    qrels.write_text(f"{QID} 0 d1 1\n{QID} 0 d2 0\n", encoding="utf-8")
    trec_run.write_text(f"{QID} Q0 d1 1 2.0 tag\x1b]0;t\x07\n{QID} Q0 d2 2 1.0 tag\n", encoding="utf-8")
    return {"store": store, "run": run, "answers": answers, "questions": questions, "labels": labels, "bad_labels": bad_labels,
            "bad_answers": bad_answers, "qrels": qrels, "trec_run": trec_run, "out": base / "out"}


def _cases(h) -> dict[str, list[list[str]]]:
    """Every command (and subcommand) of the CLI with the invocations that print hostile names."""
    run, a, b = h["run"], f"{h['run']}:{METHOD_A}", f"{h['run']}:{METHOD_B}"
    bad_port = ["--port", "8" + HOSTILE]               # a usage error quoting the value: nothing starts
    return {
        "import": [[str(h["answers"]), "--name", "again" + HOSTILE], [str(h["bad_answers"])]],
        "runs": [[], ["--json"]],
        "show": [[run], [run, "--json"], ["nope" + HOSTILE]],
        "export": [[run, "-f", "csv"], [run, "-f", "json"], [run, "-f", "md"],
                   [run, "--to", "phoenix://127.0.0.1:9/" + HOSTILE]],
        "delete": [["nope" + HOSTILE, "--yes"]],
        "store clean": [["--dry-run"]], "store check": [[]], "store repair": [["nope" + HOSTILE]],
        "store upgrade": [[]],
        "datasets": [[]], "stats": [[str(h["questions"])], [str(h["bad_answers"])]],
        "score": [[run, "--metrics", "token_f1,exact_match"], [run, "--metrics", "token_f1" + HOSTILE]],
        "compare": [[a, b], [a, b, "--json"], [a, b, "--markdown"], [a, b, "--pareto"], [a, f"{run}:nope" + HOSTILE]],
        "report": [[a, b, "-o", str(h["out"] / ("r" + HOSTILE.replace("/", "_") + ".html"))]],
        "metrics": [[], ["--json"]],
        "trec": [[str(h["qrels"]), str(h["trec_run"]), "-m", "ndcg_cut_10", "-q"]],
        "rejudge": [[run, "--judge", "heuristic"], [run, "--judge", "heuristic", "--json"]],
        "run": [["--target", "http://127.0.0.1:9/x", "--dataset", str(h["questions"]),
                 "--methods", "m" + HOSTILE, "--no-progress"]],
        "demo": [bad_port], "demo-server": [bad_port], "app": [bad_port],
        "labels import": [[str(h["labels"])], [str(h["bad_labels"])]],
        "labels export": [[], ["-f", "jsonl"]],
        "labels targets": [[run, METHOD_A, "answer_class", "-n", "2"], [run, "nope" + HOSTILE, "answer_class"]],
        "labels summary": [[run], [run, "--json"], ["nope" + HOSTILE]],
    }


def _csv_data(command: str, args: list[str]) -> bool:
    """CSV to stdout is data: a quoted cell may hold a newline (shown, as every other control is not)."""
    return ((command == "export" and "csv" in args) or (command == "labels export" and "jsonl" not in args)
            or command == "labels targets")


def _run(root, argv: list[str], capsys, monkeypatch) -> tuple[str, str]:
    """`evalcore --store ROOT ARGV...` through the console entry point, in this process."""
    monkeypatch.setattr(sys, "argv", ["evalcore", "--store", str(root), *argv])
    try:
        cli_main.main()
    except SystemExit:
        pass
    return capsys.readouterr()


def _all_commands() -> set[str]:
    names = set()
    for loader in dict.fromkeys(COMMANDS.values()):
        for name, command in commands_of(loader).items():
            sub = getattr(command, "commands", None)
            names.update(f"{name} {s}" for s in sub) if sub else names.add(name)
    return names


def test_every_command_has_a_case(hostile):
    assert set(_cases(hostile)) == _all_commands()


def test_no_command_sends_a_control_character(hostile, capsys, monkeypatch):
    for command, invocations in _cases(hostile).items():
        for args in invocations:
            out, err = _run(hostile["store"].root, [*command.split(), *args], capsys, monkeypatch)
            where = f"evalcore {command} {args!r}"
            _no_control(out, where + " stdout")
            _no_control(err, where + " stderr")
            if not _csv_data(command, args):
                for line in (out + err).splitlines():
                    assert not line.lstrip(" │┃|").startswith(FORGED), f"{where}: a name forged a line: {line!r}"


def test_names_stay_readable_and_markup_stays_text(hostile, capsys, monkeypatch):
    root, run = hostile["store"].root, hostile["run"]
    shown = "alpha\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;pwned\\x07"   # a table cuts a long name with "…"
    for argv in (["runs"], ["score", run, "--metrics", "token_f1"], ["compare", f"{run}:{METHOD_A}", f"{run}:{METHOD_B}"]):
        out, _ = _run(root, argv, capsys, monkeypatch)
        assert shown in out, argv
        if argv[0] == "compare":                            # the title holds the whole name: rich read
            assert "[link=http://evil.invalid]click[/link][/][bold" in out   # no markup in it
    out, _ = _run(root, ["show", run], capsys, monkeypatch)
    assert visible(METHOD_A) in out and "\\u202eevil\\u202c" in out
    _, err = _run(root, ["show", "nope" + HOSTILE], capsys, monkeypatch)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "\\x1b]0;pwned\\x07" in err


def test_json_output_decodes_to_the_stored_names(hostile, capsys, monkeypatch):
    root, run = hostile["store"].root, hostile["run"]
    out, _ = _run(root, ["show", run, "--json"], capsys, monkeypatch)
    assert set(json.loads(out)["manifest"]["methods"]) == {METHOD_A, METHOD_B}
    out, _ = _run(root, ["export", run, "-f", "json"], capsys, monkeypatch)
    assert {r["method"] for r in json.loads(out)["rows"]} == {METHOD_A, METHOD_B}
    out, _ = _run(root, ["labels", "export", "-f", "jsonl"], capsys, monkeypatch)
    assert {json.loads(line)["note"] for line in out.splitlines()} == {"note" + HOSTILE}


def _rendered(md: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(md)


def test_markdown_outputs_render_inert(hostile, capsys, monkeypatch):
    root, run = hostile["store"].root, hostile["run"]
    for argv in (["export", run, "-f", "md"], ["compare", f"{run}:{METHOD_A}", f"{run}:{METHOD_B}", "--markdown"]):
        out, _ = _run(root, argv, capsys, monkeypatch)
        html = _rendered(out)
        _no_control(html, f"{argv} rendered")
        assert "<a " not in html and "<img" not in html and "evil.invalid" in html, argv
        assert not any(line.startswith(FORGED) for line in out.splitlines())
    out = _run(root, ["export", run, "-f", "md"], capsys, monkeypatch)[0]
    assert _rendered(out).count("<tr>") == 1 + 8        # header + one row per answer: no broken table


def test_the_console_script_guards_usage_errors_and_output(hostile):
    """The real entry point, in a child: a usage error quoting an unknown option and command, and
    `show` itself."""
    env = {**os.environ, "COLUMNS": "200"}
    for argv in (["--bogus" + HOSTILE], ["show", "--x" + HOSTILE], ["nocommand" + HOSTILE],
                 ["show", hostile["run"]]):
        res = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(hostile["store"].root), *argv],
                             capture_output=True, text=True, env=env, timeout=120)
        _no_control(res.stdout, f"{argv} stdout")
        _no_control(res.stderr, f"{argv} stderr")
        assert "Traceback" not in res.stderr, res.stderr


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> str:
    """Run `python -m evalcore ARGV` with a pseudo-terminal as stdin, stdout and stderr; its output."""
    import pty
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "evalcore", *argv], stdin=follower, stdout=follower,
                            stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        try:
            data = os.read(leader, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            data = b""
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal from the pty module")
def test_on_a_real_terminal_too(hostile):
    """On a terminal click strips nothing itself: the guard alone keeps CSI 2J and the rest out."""
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"}
    root = str(hostile["store"].root)
    for argv in (["show", hostile["run"]], ["show", "nope" + HOSTILE]):
        out = _on_a_terminal(["--store", root, *argv], env)
        _no_control(out.replace("\r\n", "\n"), f"{argv} on a terminal")   # the terminal turns \n into CR LF
        assert "\\x1b[2J" in out or "\\x1b]52" in out, out[-400:]


# ---- the helpers themselves ---------------------------------------------------------------------

@pytest.mark.parametrize("ch", [chr(c) for c in (*range(0x20), *range(0x7f, 0xa0))]
                         + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029", *map(chr, range(0x202a, 0x202f)),
                            *map(chr, range(0x2066, 0x206a))])
def test_every_control_and_bidi_character_is_shown_as_an_escape(ch):
    shown = visible("a" + ch + "b")
    assert FORBIDDEN.search(shown) is None and "\n" not in shown and "\t" not in shown
    assert shown.startswith("a\\") and shown.endswith("b")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_json_through_the_stream_guard_is_valid_and_lossless(text):
    encoded = json.dumps({"name": text}, ensure_ascii=False)
    shown = visible(encoded, single_line=False)
    assert FORBIDDEN.search(shown) is None
    assert json.loads(shown) == {"name": text}


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_markdown_cell_is_one_inert_line(text):
    cell = markdown_cell(text)
    assert "\n" not in cell and FORBIDDEN.search(cell) is None and "<" not in cell and "|" not in cell.replace("\\|", "")
    html = _rendered(f"| h |\n|---|\n| {cell} |\n")
    assert html.count("<td>") == 1 and "<a " not in html and "<img" not in html


def test_the_stream_guard_has_no_byte_door(tmp_path):
    with open(tmp_path / "out.txt", "w", encoding="utf-8") as fh:
        guarded = InertStream(fh)
        assert not hasattr(guarded, "buffer")
        with pytest.raises(TypeError):
            guarded.write(b"\x1b[2J")
        guarded.write("a\x1b[2Jb\r\nc\rd\n")
    with open(tmp_path / "out.txt", encoding="utf-8", newline="") as fh:
        assert fh.read() == "a\\x1b[2Jb\r\nc\\rd\n"


# ---- piped output keeps every escape visible (round 4, item 16) --------------------------------
# click.echo strips ANSI sequences itself when the stream is not a terminal, before the guard sees
# them: `import "g\x1b[2J\x07.jsonl" 2>&1 | cat` printed `error: g\x07.jsonl` and `score RUN
# --metrics "tok\x1b[2Jen"` said `unknown metric(s) token`, naming what the user never typed. Now
# click never strips (every context has color on, an outermost one for main's error line) and the
# guard shows the escapes, whether the stream is a pipe or a file.

CSI = "\x1b[2J"


def _piped(argv: list[str], root) -> tuple[str, str]:
    res = subprocess.run([sys.executable, "-m", "evalcore", "--store", str(root), *argv], capture_output=True,
                         text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)
    return res.stdout, res.stderr


def test_piped_output_shows_escapes_click_used_to_strip(hostile, tmp_path):
    root, run = hostile["store"].root, hostile["run"]
    cases = [  # (argv, which stream, the text that must show)
        (["import", str(tmp_path / f"g{CSI}\x07.jsonl")], 1, f"error: {tmp_path}/g\\x1b[2J\\x07.jsonl"),
        (["score", run, "--metrics", f"tok{CSI}en"], 1, "unknown metric(s) tok\\x1b[2Jen"),
        (["show", f"nope{CSI}"], 1, "nope\\x1b[2J"),
        ([f"--bogus{CSI}"], 1, "--bogus\\x1b[2J"),
        (["show", run, "--bogus" + CSI], 1, "--bogus\\x1b[2J"),
        (["trec", str(hostile["qrels"]), str(hostile["trec_run"]), "-m", "ndcg_cut_10", "-q"], 0, "q\\x1b[2J\\u202e"),
    ]
    for argv, stream, shown in cases:
        out = _piped(argv, root)
        _no_control(out[0], f"{argv} stdout")
        _no_control(out[1], f"{argv} stderr")
        assert shown in out[stream], (argv, out)


def test_echo_outside_a_command_keeps_escapes_in_process(hostile, capsys, monkeypatch):
    """The same through the console entry point in this process (capsys is no terminal either)."""
    out, err = _run(hostile["store"].root, ["import", f"g{CSI}.jsonl"], capsys, monkeypatch)
    assert "g\\x1b[2J.jsonl" in err, err
    out, err = _run(hostile["store"].root, ["score", hostile["run"], "--metrics", f"tok{CSI}en"], capsys, monkeypatch)
    assert "tok\\x1b[2Jen" in err, err
