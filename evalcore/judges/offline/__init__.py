"""The offline `heuristic` judge, in one package: the same task outputs as an LLM judge, computed lexically.

Why it exists: scoring must work without an API key (CI, air-gapped machines, quick looks),
and the judged metrics' plumbing (claims, verdicts, caching, storage) must be testable end to
end. It is never the default and never pretends to be a model: its provider is `heuristic`,
so every stored value's judge id starts with `heuristic:`.

Its modules, one job each: `judge` (HeuristicJudge, the Judge that answers every task
offline), `lexical_verdicts` (the shared rules: is a statement supported by the contexts, does
an answer match a gold answer, banding a share onto a grade), `words` (tokens, sentences,
content words, hedges and negations: the building blocks, also used by claim guessing and
the dashboard's highlighting). Each task's heuristic sits with its definition in
judges/task_library.

How each task is approximated:
- decompose / reference_statements: sentences of the answer / reference.
- context_review: a statement's support is a weighted share (0-1) of six word-overlap measures
  against the contexts (words, content words, names and numbers found...), supported when it
  is >= 0.882; weights and threshold were fitted on HaluEval QA rows 1-250 alone and measured on
  the other sets (lexical_verdicts.support; protocol and figures: docs/judges.md). faithfulness and
  context_recall are the mean support of the claims / statements; the verdict and its reason
  (what was not found) are shown per claim. A context's relevance is the share of the
  question's (or the best gold answer's) content words.
- question_generation: cannot write questions, so it returns the answer's first sentences;
  answer_relevance then compares them with the question by embedding cosine.
- answer_analysis (decompose and question_generation in one reply): both of the above.
- answer_relevance_direct (answer_relevance's fallback when no question was generated): share
  of the question's content words found in the answer, banded to quarters; 0 for a hedge.
- answer_correctness: the best match over every gold answer (`answers`, SQuAD-style): 1 for
  the same words, 0.9 when the answer holds a gold answer, else 0.9 x the mean of the two word
  shares; answer_class: CORRECT when that match is >= 0.6.
- factual_accuracy: correctness = share of answer words in the gold answers + question,
  completeness = share of the best gold answer's words in the answer, consistency = 100 minus
  50 per negation clash.
- groundedness / correctness / plan_scores: banded from the support and match shares.

What it cannot do: see meaning. A paraphrase in other words is "unsupported" / "wrong", a
negated copy of the context is "supported", and a wrong answer that repeats the gold answer's
words ("not Paris") counts as right. `lexical-v3` in its judge id names this rule set
(`lexical-v2`: names and numbers plus 70% of the other words, verdicts counted 0/1).
"""
