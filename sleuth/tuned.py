"""The numbers sleuth's behaviour was tuned by, in one place, each with where it was chosen.

Every constant here was chosen by an experiment on a benchmark's tune split (or, before
the splits, on the seeds named), not derived: change one only with its experiment rerun
and judged on dev (bench/README.md says how; bench/NOTEBOOK.md holds each experiment,
under the section each line names). The modules that use them import them from here and
keep their own names for them, so ``sleuth.stages.relevance.MARGIN`` and the like still
read as before. Limits that protect (sizes, time caps) and shapes of prompts are not
tuned values and stay where they are used.
"""

from __future__ import annotations

# -- gathering: how long to wait for better-ranked pages (pipeline/gather) ----------------
#: A page in the top half of those wanted, still out once enough are read, gets this
#: share of the time gathering has taken so far (NOTEBOOK "Waiting for the best pages,
#: not the first ones (seeds 8, 9, 10)").
GRACE_SHARE = 0.4
#: ... and at least this long (same section).
GRACE_MIN_S = 0.25
#: The best-ranked page is waited for until this long after gathering began; the
#: ``--top-wait`` default (NOTEBOOK "The best-ranked page is worth 3 s", 2026-11-25).
TOP_WAIT_S = 3.0
#: A page still out is waited for at most its start plus this many times the run's 90th
#: percentile page time (NOTEBOOK "Wave 4, fetch window", 2026-11-26) ...
BOUND_FACTOR = 3.0
#: ... and at least this long (same section).
BOUND_MIN_S = 1.0
#: The last downloads, once nothing more can start, get at least this long from their
#: start (NOTEBOOK "Main after wave 4" and the floor sweep in "Main after wave 5").
LAST_MIN_S = 5.0
#: Off-topic pages set aside before gathering stops looking further down the ranking, at
#: least (``--max-sources 2`` case; NOTEBOOK "Tuned constants in one module", 2026-11-29).
MIN_ASIDE = 6

# -- deep research's tree (pipeline/deep) -----------------------------------------------
#: Follow-ups of a level, in all, per unit of ``--breadth`` with a model ...
FOLLOW_UPS_PER_BREADTH = 2
#: ... and without one, whose follow-ups are names: cheap second hops (NOTEBOOK "Deep
#: research, wave 4: held-out recall and tokens per cited source", 2026-11-26).
NAMES_PER_BREADTH = 3
#: Names a question offers as follow-ups beyond its share with a model (same section).
EXTRA_NAMES_PER_QUESTION = 2
#: Pages a second hop reads without a model (same section).
HOP_PAGES = 2
#: A branch's own pages (titled with its name) waited for until they come, at most
#: (same section).
OWN_PAGES = 2
#: Search results a branch's select call is shown (same section: all ~20 made the select
#: calls a third of deep mode's tokens per cited source).
BRANCH_RESULTS_SHOWN = 10

# -- relevance: the judgement and the gate (stages/judge.py, stages/relevance.py) ---------
#: Under this judgement score a text is off-topic: 95% of the tune split's relevant pages
#: score more (NOTEBOOK "One relevance judgement (issue 35, embed)", 2026-11-28).
JUDGE_FLOOR = -0.35
#: A page titled with a name the question gives counts as titled from this score: the
#: average page's; every such page of the tune runs scores 0.19 or more (NOTEBOOK "On
#: topic by its title, not a passage in passing", 2026-11-29).
JUDGE_TITLED = 0.0
#: A page scoring this much under the best page read is off-topic by comparison (same
#: section).
GATE_MARGIN = 1.0
#: A page scoring this much is on-topic whatever else was read: 2% of the off-topic pages
#: the tune questions read, 70% of the relevant ones (same section).
GATE_SURE = 2.5
#: ... and, for a long page, whose title judged alone scores this much: just under the
#: weakest title of a tune-topic page that only this rule keeps, the offline web's
#: soybean page for the trade-war question, -0.91 (NOTEBOOK "On topic by its title, not
#: a passage in passing", 2026-11-29).
GATE_SUBJECT = -1.0
#: How far the results read first must score above the rest for the judgement to pick
#: them without the model (bench part ``timing``; NOTEBOOK "Tuned constants", 2026-11-29).
CLEAR_GAP = 0.5
#: What a candidate loses per better-scored candidate of its own site (bench part
#: ``hotpotqa`` with ``--hosts site``; NOTEBOOK "Tuned constants", 2026-11-29).
SAME_SITE = 1.0

# -- the answer first (stages/answer.py) --------------------------------------------------
#: The first pass's scorers' weights, by grid search on HotpotQA tune (NOTEBOOK "The
#: answer first", 2026-11-28, and its second pass for ``meaning``).
ANSWER_WEIGHTS = {"bm25": 0.5, "terms": 1.0, "kind": 0.6, "rank": 0.2, "meaning": 0.2}
#: The bridge (second hop) pass's weight (same sections).
BRIDGE_WEIGHT = 1.2
#: The first pass's best sentences whose names are taken as second hops (same sections).
BRIDGE_FROM = 5
#: How much the question's terms that the answer's chosen sentences do not yet say count
#: for the next sentence, and how much a sentence's length (per 20 words) costs it
#: (NOTEBOOK "deep Answer", 2026-11-29).
COVER_WEIGHT = 1.5
LENGTH_WEIGHT = 0.4

# -- extraction (extraction/) -------------------------------------------------------------
#: The lowest block probability kept whatever a page's best cutoff says (NOTEBOOK
#: "Extraction: What was tried, and what it did": each page's cutoff, floor 0.2).
KEEP_FLOOR = 0.2
#: After a short article's end only blocks the model is this sure of are kept (NOTEBOOK
#: "figures moved out of the code's docstrings", 2026-11-28: AEB with the 0.8 floor).
SURE_AFTER_SHORT = 0.8
#: A hidden element holding more of the page's readable text than this is content a
#: script reveals, not text hidden from readers (NOTEBOOK "What was tried": hidden share).
HIDDEN_MAX_SHARE = 0.3
