"""Launch page: start `evalcore run` in the background, follow it, resume or cancel it; and
import a recorded-answers file.

Jobs live on disk (see jobs.py), so reloading the page or opening it in another tab shows
the same jobs. Progress is the run's stored responses against the manifest's expected count.
"""

from __future__ import annotations

import re
import socket
import uuid
from importlib import resources
from pathlib import Path

import streamlit as st

from evalcore.analysis.read import catalog
from evalcore.analysis.runs import progress as P
from evalcore.store.jobs import save_upload
from evalcore.targets.offered import offered_methods
from evalcore.ui import entry, jobs
from evalcore.ui import safe_widgets as widgets

JUDGES = ["(default)", "heuristic", "anthropic", "openai", "(no judge)", "(collect only, no scoring)"]
DEMO_METHODS = "basic_search,local_search,llm_with_context"


def _save_upload(store, upload) -> Path:
    """Keep an uploaded file inside the store (evalcore/store/jobs.py says where)."""
    return save_upload(store, upload.name, upload.getvalue())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _metric_choices() -> tuple[list[str], list[str]]:
    """Metric and group names from the registry (the same names `evalcore run` checks)."""
    return catalog.metric_names(), catalog.metric_groups()


def _needs_judge(metrics: list[str]) -> list[str]:
    return catalog.judged_metrics(list(metrics))


def _demo_dataset() -> str:
    return str(resources.files("evalcore") / "demo" / "data" / "questions.yaml")


def _ask_target() -> None:
    """Button callback (runs before the page redraws, so it may fill the methods box): ask the
    server for /models/info, bounded to a few seconds; fill the box when it is still empty."""
    offer = offered_methods(st.session_state.get("launch_url", ""))
    st.session_state["launch_offer"] = offer
    if offer.methods and not st.session_state.get("launch_methods", "").strip():
        st.session_state["launch_methods"] = ",".join(offer.methods)


def _start_form(store) -> None:
    """Widgets outside any form, and one button that starts: Enter in a text box only confirms
    that box (a form submits on Enter, which once started a run nobody had finished setting up)."""
    form = _form_widgets()
    if not form.pop("submitted"):
        return
    problem = _form_problem(store, form)
    if problem:
        st.error(problem)
        return
    _start_jobs(store, form)


def _form_widgets() -> dict:
    """The launch form's widgets, drawn; their values (and whether Start was pressed)."""
    with st.container(border=True):
        st.subheader("Start a run")
        target_kind = st.radio("Target", ["RAG server URL", "Demo server (started for you)"], horizontal=True,
                               key="launch_target")
        demo = target_kind.startswith("Demo")
        u1, u2 = st.columns([4, 1], vertical_alignment="bottom")
        url = u1.text_input("Server URL", placeholder="http://127.0.0.1:8001", key="launch_url", disabled=demo)
        u2.button("Ask the target", on_click=_ask_target, disabled=demo, key="launch_ask",
                  help="GET /models/info (at most a few seconds) and offer the methods it lists.")
        ds_path = st.text_input("Dataset file path (on this machine)", placeholder="questions.yaml")
        ds_upload = st.file_uploader("...or upload a dataset", type=["yaml", "yml", "json", "jsonl", "csv", "parquet"])
        methods = st.text_input("Methods (comma-separated; required for a server URL)", key="launch_methods",
                                placeholder=f"e.g. {DEMO_METHODS} (the demo server's, used when blank with the demo)")
        offer = st.session_state.get("launch_offer")
        if offer is not None and not demo:  # method names come from the server: plain text only
            st.text(offer.note + (f" Offered: {', '.join(offer.methods)}" if offer.methods else ""))
        c1, c2, c3, c4 = st.columns([3, 3, 3, 2])
        # Text boxes, not st.number_input (see widgets.url_number for why).
        samples_text = c1.text_input("Samples (blank = all questions)", max_chars=9)
        concurrency_text = c2.text_input("Concurrency (requests in flight)", value="8", max_chars=3)
        judge = c3.selectbox("Judge", JUDGES)
        repeats_text = c4.text_input("Judge repeats K", value="1", max_chars=3, key="launch_repeats",
                                     help="Each judged metric's verdict asked K times per answer (independent "
                                          "samples; the value is their mean, each is stored): `score --repeats K`. "
                                          "K > 1 costs K times the judge calls and shows the judge's noise.")
        all_metrics, all_groups = _metric_choices()
        m1, m2 = st.columns(2)
        metrics = m1.multiselect("Metrics to score (none = the defaults)", all_metrics,
                                 help="Judged metrics need a judge.")
        groups = m2.multiselect("Metric groups to score", all_groups,
                                help="Every metric of each group; combined with the metrics picked.")
        name = st.text_input("Run name", value="app-run")
        keep_first = st.checkbox("Keep the first copy of a repeated question id (drops later copies, "
                                 "listed in the run's manifest) instead of refusing the file")
        submitted = st.button("Start run", type="primary", key="launch_start")
    method_list = [m.strip() for m in (methods or (DEMO_METHODS if demo else "")).split(",") if m.strip()]
    return {"demo": demo, "url": url, "ds_path": ds_path, "upload": ds_upload, "methods": method_list,
            "samples": samples_text, "concurrency": concurrency_text, "judge": judge, "repeats": repeats_text,
            "metrics": list(metrics),
            "groups": list(groups), "name": name, "keep_first": keep_first, "submitted": submitted}


def _form_problem(store, form: dict) -> str | None:
    """Why the form cannot start a run, in one sentence; None when it can (the numbers and the
    dataset's path, an upload saved into the store's uploads, are put into `form` on the way)."""
    try:
        form["samples"] = int(form["samples"]) if form["samples"].strip() else 0
        form["concurrency"] = int(form["concurrency"])
        if form["samples"] < 0 or not 1 <= form["concurrency"] <= 256:
            raise ValueError
    except ValueError:
        return "Samples must be a whole number >= 0 and concurrency 1-256."
    problem = _repeats_problem(form)
    if problem:
        return problem
    form["dataset"] = str(_save_upload(store, form["upload"])) if form["upload"] else (
        form["ds_path"].strip() or (_demo_dataset() if form["demo"] else ""))
    if not form["dataset"] or (not form["demo"] and not form["url"].strip()):
        return "Give a dataset and a server URL (or choose the demo server)."
    if not form["methods"]:  # never ask the server for a method nobody named
        return ("Name the methods to ask (comma-separated, as the server knows them; \"Ask the target\" reads its "
                "/models/info). For a server that takes no method, type: default")
    judge = form["judge"]
    if (form["metrics"] or form["groups"]) and judge.startswith("(collect"):
        return "Metrics were picked but scoring is off (collect only): clear them or pick a judge option."
    judged = _needs_judge(form["metrics"])
    if judged and judge.startswith("("):
        return f"{', '.join(judged)} need a judge: pick one (e.g. heuristic) or leave them out."
    if not form["demo"] and not re.match(r"^https?://", form["url"].strip()):
        return "The server URL must start with http:// or https://."
    return None


def _repeats_problem(form: dict) -> str | None:
    """Why the repeats box cannot be used (its number put into `form` when it can): K is checked
    by the rule `score --repeats K` applies (evalcore.analysis.read.catalog.repeats_problem), and
    K > 1 needs a judge to repeat."""
    text = form["repeats"].strip() or "1"
    problem = catalog.repeats_problem(text)
    if problem:
        return f"Judge repeats: {problem}"
    form["repeats"] = int(text)
    if form["repeats"] > 1 and form["judge"].startswith("("):
        return "Judge repeats K > 1 ask a judge K times: pick a judge (e.g. heuristic) or set K to 1."
    return None


def _start_jobs(store, form: dict) -> None:
    """Start the run's job (and the demo server's, when asked for); the page never waits on either."""
    demo, judge = form["demo"], form["judge"]
    target = form["url"].strip()
    demo_job = None
    if demo:
        port = _free_port()
        demo_job = jobs.start(store, "demo-server", [*jobs.evalcore_cmd(), "demo-server", "--port", str(port)],
                              port=port)
        target = f"http://127.0.0.1:{port}"
    unique = f"{re.sub(r'[^A-Za-z0-9_-]+', '-', form['name']).strip('-') or 'app-run'}-{uuid.uuid4().hex[:4]}"
    req = jobs.RunRequest(target=target, dataset=form["dataset"], methods=form["methods"], name=unique,
                          samples=int(form["samples"]) or None, concurrency=int(form["concurrency"]),
                          judge=None if judge.startswith("(") else judge, metrics=form["metrics"],
                          groups=form["groups"], keep_first_duplicate=form["keep_first"], repeats=form["repeats"])
    argv = req.argv(store)
    if judge == "(no judge)":
        argv.append("--no-judge")
    elif judge.startswith("(collect"):
        argv.append("--no-score")
    if demo:  # the run's job waits for the demo server to listen; the page never does
        argv = jobs.when_listening(port, argv)
    job = jobs.start(store, "run", argv, run_name=unique)
    if demo_job is not None:  # the demo server is stopped when its run ends (see _job_panel)
        job.extra["demo_job"] = demo_job.job_id
        jobs.save(store, job)
    st.success("Started. Progress appears below; it survives page reloads.")
    st.text(f"job {job.job_id}, run name {unique}")


def _progress(store, job: jobs.Job) -> None:
    run_id = jobs.find_run(store, job)
    if not run_id or not store.exists(run_id):
        st.text("waiting for the run to be created...")
        return
    manifest = store.manifest(run_id)
    done = widgets.call(P.answers_stored, run_id)
    expected = manifest.counts.get("expected") or (manifest.counts.get("questions", 0) * max(1, len(manifest.methods)))
    alive = jobs.is_alive(store, job)
    failures = widgets.call(P.answer_failures, run_id) if manifest.status == "complete" and not alive else None
    status = "failed (every answer failed)" if failures and failures["all_failed"] else manifest.status
    st.text(f"run {run_id}: status {status}; {done} of {expected or '?'} answers stored")
    if expected:
        st.progress(min(1.0, done / expected))
    if failures and failures["all_failed"]:
        st.error(widgets.md(f"Run failed: {P.failure_line(failures)}"))
    elif failures and failures["n_failed"]:
        st.warning(widgets.md(P.failure_line(failures)))
    elif failures:
        st.text(P.failure_line(failures))
    if manifest.status != "complete" and not alive and manifest.kind == "live":
        if st.button("Resume this run", key=f"resume_{job.job_id}"):
            jobs.start(store, "resume", [*jobs.evalcore_cmd(), "--store", str(store.root), "run", "--resume",
                                         run_id, "--no-progress"], run_id=run_id)
            st.rerun()
    if manifest.status == "complete":
        st.page_link(entry.page("questions"), label="Open its questions", query_params={"run": run_id})


def _job_panel(store, job: jobs.Job) -> None:
    alive = jobs.is_alive(store, job)
    state = "running" if alive else (f"exited ({job.exit_code})" if job.exit_code is not None else "stopped")
    st.text(f"{job.kind} job {job.job_id} - {state}" + (" - cancel requested" if job.cancel_requested else ""))
    if job.kind in ("run", "resume"):
        _progress(store, job)
    elif job.kind == "import":
        _import_result(store, job)
    demo = jobs.load(store, job.extra["demo_job"]) if job.extra.get("demo_job") else None
    if demo is not None and not alive and jobs.is_alive(store, demo):  # its run ended: stop it
        jobs.cancel(store, demo)
    if job.port:
        st.text(f"demo server on http://127.0.0.1:{job.port}")
    if alive:
        c1, c2 = st.columns(2)
        if c1.button("Cancel (clean stop)", key=f"cancel_{job.job_id}"):
            jobs.cancel(store, job)
            st.rerun()
        if c2.button("Force stop", key=f"kill_{job.job_id}"):
            jobs.cancel(store, job, force=True)
            st.rerun()
    with st.expander("Log", expanded=alive):
        st.code(jobs.tail(store, job) or "(empty log)", language=None)


def _jobs_section(store) -> None:
    all_jobs = jobs.list_jobs(store)[:8]
    st.subheader("Jobs")
    if not all_jobs:
        st.info("No background jobs yet.")
        return
    any_alive = any(jobs.is_alive(store, j) for j in all_jobs)

    @st.fragment(run_every=2 if any_alive else None)
    def panels() -> None:
        for job in jobs.list_jobs(store)[:8]:
            with st.container(border=True):
                _job_panel(store, job)

    panels()


def _import_form(store) -> None:
    """Widgets outside any form (Enter never submits) and a button that starts `evalcore import`
    as a background job, like a run: the page never waits on it, and its panel below says how
    it ended (an import that fails or is killed leaves the store untouched)."""
    with st.container(border=True):
        st.subheader("Import recorded answers")
        upload = st.file_uploader("Answers file", type=["jsonl", "json", "csv", "parquet"])
        ds = st.file_uploader("Dataset (optional: questions, ground truths, gold passages)",
                              type=["yaml", "yml", "json", "jsonl", "csv", "parquet"])
        name = st.text_input("Run name (default: the file name)")
        method = st.text_input("Method for records without one", value="recorded")
        submitted = st.button("Import", type="primary", key="import_start")
    if not submitted:
        return
    if upload is None:
        st.error("Choose an answers file.")
        return
    cmd = [*jobs.evalcore_cmd(), "--store", str(store.root), "import", str(_save_upload(store, upload)),
           "--name", name or Path(upload.name).stem, "--method", method or "recorded"]
    if ds:
        cmd += ["--dataset", str(_save_upload(store, ds))]
    job = jobs.start(store, "import", cmd)
    st.success("Import started. Its result appears below; it survives page reloads.")
    st.text(f"job {job.job_id}")


def _import_result(store, job: jobs.Job) -> None:
    """How an import job ended: the new run (the id `evalcore import` prints) or the failure."""
    if job.exit_code is None and jobs.is_alive(store, job):
        st.text("importing...")
        return
    runs = set(store.run_ids())
    run_id = next((ln.strip() for ln in reversed(jobs.tail(store, job).splitlines()) if ln.strip() in runs), None)
    if run_id:
        st.text(f"imported as run {run_id}")
        st.page_link(entry.page("questions"), label="Open its questions", query_params={"run": run_id})
    else:
        st.error("Import failed; nothing was added to the store. The log below says why.")


def render() -> None:
    widgets.header("Launch", "Run an evaluation in the background, or import answers you already have.")
    store = widgets.store()
    tab = widgets.url_select("Action", ["start a run", "import answers"], "action")
    if tab == "start a run":
        _start_form(store)
    else:
        _import_form(store)
    _jobs_section(store)


if __name__ == "__main__":  # run as a page by Streamlit (see evalcore/ui/entry.py)
    render()
