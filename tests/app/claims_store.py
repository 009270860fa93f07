"""A tiny store whose claims sit verbatim in their answers and whose faithfulness details name the
passage the judge cited: what the Questions highlights need (the synthetic store's claims are
random words). `extra` text is appended to the first method's second claim (so its answer), its
claims' reasons and the cited passage (the browser test puts a canary <img> there)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from evalcore import __version__
from evalcore.schemas import Claim, ContextJudgement, EvalQuestion, EvalResponse, JudgeId, MetricValue, RunManifest
from evalcore.store import FORMAT_VERSION, RunStore

JUDGE = JudgeId(provider="anthropic", model="claude-haiku-4-5", prompt_id="context_review", prompt_version="1")
CONTEXTS = ["Uganda has many lakes. Lake Victoria is the largest.",
            "The Nile rises near Lake Victoria. The Nile flows north through Uganda and Sudan to Egypt.",
            "Rainfall in the highlands is seasonal."]


def claims_store(root: Path, extra: str = "") -> tuple[RunStore, str]:
    """One run `claims-0001`, two methods, one question `q1`. Method `alpha` states two claims:
    claim 1 supported (passage 2 cited), claim 2 not supported (none cited)."""
    store = RunStore(root)
    run_id = "claims-0001"
    methods = ["alpha", "beta"]
    manifest = RunManifest(format_version=FORMAT_VERSION, run_id=run_id, name="claims", kind="live",
                           status="complete", created_at=datetime(2025, 1, 1, tzinfo=timezone.utc),
                           evalcore_version=__version__, methods=methods,
                           dataset={"name": "claims", "n_questions": 1}, judges=[JUDGE.label],
                           counts={"questions": 1, "responses": 2})
    writer = store.create_run(manifest)
    writer.write_questions([EvalQuestion(id="q1", question="Which way does the Nile flow?",
                                         ground_truth="North, through Uganda and Sudan.")])
    claims_text = {"alpha": ["The Nile flows north through Uganda.", "It is 9,999 km long." + extra],
                   "beta": ["The Nile flows south."]}
    responses, values, claims, verdicts = [], [], [], []
    for method in methods:
        answer = " ".join(claims_text[method])
        responses.append(EvalResponse(question_id="q1", method=method, answer=answer, latency_ms=100.0,
                                      retrieved=[{"rank": k + 1, "chunk_id": f"c{k + 1}",
                                                  "text": t + (extra if k == 1 else "")}
                                                 for k, t in enumerate(CONTEXTS)]))
        texts = claims_text[method]
        statements = [{"text": t, "verdict": int(i == 0 and method == "alpha"),
                       "context": 2 if i == 0 and method == "alpha" else None, "reason": f"reason {i + 1}"}
                      for i, t in enumerate(texts)]
        n_ok = sum(s["verdict"] for s in statements)
        values.append(MetricValue(run_id=run_id, method=method, question_id="q1", metric="faithfulness",
                                  value=n_ok / len(texts), group="judged", judge_id=JUDGE.label,
                                  details={"n": len(texts), "n_supported": n_ok, "statements": statements}))
        values.append(MetricValue(run_id=run_id, method=method, question_id="q1", metric="token_f1", value=0.5,
                                  group="answer"))
        now = datetime.now(timezone.utc)
        for i, s in enumerate(statements):
            claims.append(Claim(run_id=run_id, method=method, question_id="q1", source="answer", idx=i,
                                text=s["text"], verdict="supported" if s["verdict"] else "not_supported",
                                reason=s["reason"] + (extra if method == "alpha" else ""), metric="faithfulness",
                                judge_id=JUDGE.label, computed_at=now))
        for k in (1, 2, 3):
            verdicts.append(ContextJudgement(run_id=run_id, method=method, question_id="q1", metric="context_precision",
                                             rank=k, verdict="relevant" if k == 2 else "not_relevant",
                                             reason=f"passage {k} reviewed", judge_id=JUDGE.label))
    writer.write_responses(responses)
    writer.write_metrics(values)
    writer.write_claims(claims)
    writer.write_context_verdicts(verdicts)
    writer.publish()
    return store, run_id
