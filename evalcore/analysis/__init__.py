"""Every number a person reads, grouped by the question it answers: `read/` (one definition of
each basic figure: correct, per-run aggregates, the flat results table), `runs/` (how good, how
costly, how far: the Runs page), `comparison/` (is B better than A, and can we tell), `labels/`
(people's labels, the judge's calibration, corrected estimates), `questions/` (one question, and
why it failed), `charts/` (the figures the dashboard and the report share) and `report/` (the
report's data). Nothing is imported here."""
