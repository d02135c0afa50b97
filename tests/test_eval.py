"""``sleuth eval``: the shipped HotpotQA sample offline with no model (match on the
report's Answer) and with the scripted model (the judge), the summary table and JSON,
resuming after a kill, the question sets it reads (SimpleQA's CSV, HotpotQA and MuSiQue
JSON, JSONL), and the grading rules.

A kill is detected by polling ``results.jsonl`` for a finished question, never by
sleeping a fixed time.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from killed import kill_after_lines

from sleuth.cli import run
from sleuth.pipeline.eval import match, read_set, sample_docs, sample_set
from sleuth.pipeline.eval.grade import parse_verdict
from sleuth.store import Store
from sleuth.testing import OfflineWeb
from sleuth.testing.llm import ScriptedLLM
from sleuth.testing.researcher import MARKERS, ScriptedResearcher

MODEL = "scripted-model"

#: The first ten questions of the shipped sample, graded by hand from their no-model
#: reports' Answer sections (does the Answer state the gold answer?):
#: the Lilu "is a masculine Akkadian word for a spirit"; the books' "Latin versions";
#: Leland's films are named but not their director (Stephen King); the luau's song is
#: not named (Jack Owens); Bach's son's "godfather Georg Philipp Telemann"; Two Dollar
#: Radio "based in Columbus, Ohio"; the 1999 runner-up's game is not named (Studio 33);
#: "father of Bollywood actress Antara Mali"; Young's population is not given (6,960);
#: Choi Jin-ri: the Answer quotes Sulli's page, "Choi Jin-ri …, better known by her
#: stage name Sulli" and "She is a former member of South Korean girl group f(x)", beside
#: the sitcom's page.
HAND_COUNT = {
    "5a77ec115542992a6e59dff7": "correct",
    "5a7decc75542995f4f40230f": "correct",
    "5a8718c25542991e771816c7": "incorrect",
    "5a809f815542996402f6a5b7": "incorrect",
    "5a857cc05542991dd0999e59": "correct",
    "5ab3c131554299233954ff9c": "correct",
    "5a8a2d7255429930ff3c0cdd": "incorrect",
    "5a7f0e0a55429934daa2fcb0": "correct",
    "5ac3983a554299657fa290f5": "incorrect",
    "5a77a5195542992a6e59df4c": "correct",
}


def lines(outdir: Path) -> dict[str, dict[str, Any]]:
    text = (outdir / "results.jsonl").read_text("utf-8")
    assert text.endswith("\n"), "results.jsonl ends in a cut line"
    got = [json.loads(line) for line in text.splitlines()]
    ids = [line["id"] for line in got]
    assert len(ids) == len(set(ids)), f"a question is in results.jsonl twice: {ids}"
    return {line["id"]: line for line in got}


def table_rows(out: str) -> dict[str, str]:
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| ")]
    return {name.strip(): value.strip() for name, value in rows}


# ---------------------------------------------------------------- the shipped sample


def test_the_sample_offline_with_no_model_matches_a_hand_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = run(["eval", "--sample", "hotpotqa", "--limit", "10", "-o", str(out), "--no-llm"])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    got = lines(out)
    assert {qid: line["eval"]["grade"] for qid, line in got.items()} == HAND_COUNT
    assert all(line["eval"]["graded_by"] == "match" for line in got.values())
    # Graded on the Answer section, over the shipped documents only (no web).
    assert all(line["eval"]["response"].startswith("- ") for line in got.values())
    urls = {s["url"] for line in got.values() for s in line["report"]["sources"]}
    assert urls and all(url.startswith("file://") for url in urls)
    rows = table_rows(stdout)
    correct = sum(1 for grade in HAND_COUNT.values() if grade == "correct")
    assert rows["accuracy (correct)"] == f"{correct}/10 ({correct / 10:.0%})"
    assert rows["questions graded"] == "10 of 10"
    assert rows["not attempted"] == "0/10 (0%)"
    assert rows["graded by"] == "match 10"
    assert rows["tokens"] == "0" and rows["cost"] == "–"
    # One line per question on stderr, with its grade.
    assert stderr.count("[correct]") == correct
    assert stderr.count("[incorrect]") == 10 - correct


def test_the_sample_with_a_model_is_graded_by_the_judge(
    tmp_path: Path, web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    ScriptedResearcher().install(llm)
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "4", "-o", str(out), "-j", "2"]
    code = run([*args, "--base-url", web.llm_url, "--model", MODEL, "--format", "json"])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    summary = json.loads(stdout)
    got = lines(out)
    assert summary["graded"] == 4 and summary["graded_by"] == {"match": 0, "judge": 4}
    judged = [r for r in llm.requests if MARKERS["judge"] in r.last_user]
    assert len(judged) == 4
    for line in got.values():
        grade = line["eval"]
        assert grade["graded_by"] == "judge"
        # The judge's reply is recorded, and the grade is the one it names.
        assert grade["judge"]["model"] == MODEL
        assert parse_verdict(grade["judge"]["reply"]) == grade["grade"]
        assert grade["judge"]["tokens"] > 0
        # The model wrote the report the judge read (not the no-model Answer).
        assert line["report"]["writer"] != "template"
        asked = next(r for r in judged if line["question"] in r.last_user)
        assert grade["response"][:200] in asked.last_user
    assert summary["correct"] == sum(1 for x in got.values() if x["eval"]["grade"] == "correct")
    assert summary["accuracy"] == summary["correct"] / 4
    # Research and judge tokens both count.
    research = sum(x["tokens"] for x in got.values())
    assert summary["tokens"] == research + sum(x["eval"]["judge"]["tokens"] for x in got.values())


def test_a_judge_reply_without_a_grade_leaves_the_match_and_says_so(
    tmp_path: Path, web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    llm.add("I would rather not say.", contains=MARKERS["judge"], times=None)
    ScriptedResearcher().install(llm)
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "2", "-o", str(out)]
    assert run([*args, "--base-url", web.llm_url, "--model", MODEL]) == 0
    for line in lines(out).values():
        grade = line["eval"]
        assert grade["graded_by"] == "match" and grade["grade"] == grade["match"]
        assert grade["judge"]["reply"] == "I would rather not say."
        assert grade["judge"]["error"] == "the judge's reply names no grade"
    assert "graded by | match 2" in capsys.readouterr().out


def test_no_judge_grades_a_model_report_by_match(
    tmp_path: Path, web: OfflineWeb, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    ScriptedResearcher().install(llm)
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "2", "-o", str(out), "--no-judge"]
    assert run([*args, "--base-url", web.llm_url, "--model", MODEL]) == 0
    assert not any(MARKERS["judge"] in r.last_user for r in llm.requests)
    assert all(x["eval"]["judge"] is None for x in lines(out).values())


@pytest.mark.slow
def test_an_eval_killed_mid_way_completes_on_rerun_every_question_once(
    tmp_path: Path, sleuth_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["eval", "--sample", "hotpotqa", "--limit", "6", "-o", str(out), "--no-llm"]
    kill_after_lines([*args, "-j", "1"], out / "results.jsonl", 1, tmp_path)
    before = set(lines(out))
    assert 1 <= len(before) < 6
    assert run([*args, "-j", "2"]) == 0
    stdout, stderr = capsys.readouterr()
    got = lines(out)
    assert len(got) == 6 and all("eval" in line for line in got.values())
    assert f"{len(before)} questions graded before" in stderr
    assert table_rows(stdout)["questions graded"] == "6 of 6"
    asked = [q.question for q in sample_set("hotpotqa").questions[:6]]
    with Store(sleuth_home) as store:
        done = Counter(r.question for r in store.list_runs() if r.status == "done")
    # Finished before the kill: not researched again; in flight at the kill: once more.
    assert done == Counter(asked)


def test_the_sample_ships_questions_and_writes_its_documents_once(tmp_path: Path) -> None:
    sample = sample_set("hotpotqa")
    assert len(sample.questions) == 20 and all(q.answer for q in sample.questions)
    docs = sample_docs("hotpotqa", tmp_path / "home")
    notes = sorted(docs.glob("*.md"))
    assert len(notes) == 200 and docs.parent == tmp_path / "home" / "samples"
    assert notes[0].read_text("utf-8").startswith("# ")
    assert (tmp_path / "home").stat().st_mode & 0o777 == 0o700
    # Written once: a second use finds the folder (no half-written folder beside it).
    notes[0].unlink()
    assert sample_docs("hotpotqa", tmp_path / "home") == docs
    assert len(list(docs.glob("*.md"))) == 199
    assert [p.name for p in docs.parent.iterdir()] == [docs.name]
    readme = files("sleuth") / "data" / "eval" / "hotpotqa" / "README.md"
    assert "CC BY-SA 4.0" in readme.read_text("utf-8")


# ---------------------------------------------------------------- question sets


SIMPLEQA = (
    "metadata,problem,answer\n"
    "\"{'topic': 'Science and technology', 'answer_type': 'Person', 'urls': "
    "['https://en.wikipedia.org/wiki/IEEE_Frank_Rosenblatt_Award']}\","
    "Who received the IEEE Frank Rosenblatt Award in 2010?,Michio Sugeno\n"
    "\"{'topic': 'Art', 'answer_type': 'Other', 'urls': ['https://a.example/b, c']}\","
    '"In whose honor was the Leipzig 1877 tournament organized?","Adolf Anderssen"\n'
)


def test_simpleqa_csv_is_read_by_its_problem_column(tmp_path: Path) -> None:
    path = tmp_path / "simple_qa_test_set.csv"
    path.write_text(SIMPLEQA, "utf-8")
    found = read_set(path)
    assert [(q.question, q.answer) for q in found.questions] == [
        ("Who received the IEEE Frank Rosenblatt Award in 2010?", "Michio Sugeno"),
        ("In whose honor was the Leipzig 1877 tournament organized?", "Adolf Anderssen"),
    ]
    # Ids made from the text: the same on every read.
    assert [q.id for q in read_set(path).questions] == [q.id for q in found.questions]


def test_hotpotqa_and_musique_json_and_jsonl(tmp_path: Path) -> None:
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text(
        json.dumps(
            [
                {"_id": "h1", "question": "Q one?", "answer": "yes", "context": [["T", ["s"]]]},
                {"_id": "h2", "question": "Q two?", "answer": "Paris"},
            ]
        ),
        "utf-8",
    )
    assert [(q.id, q.answer) for q in read_set(hotpot).questions] == [
        ("h1", "yes"),
        ("h2", "Paris"),
    ]
    musique = tmp_path / "musique.jsonl"
    musique.write_text(
        json.dumps(
            {
                "id": "2hop_1",
                "question": "Q?",
                "answer": "NYC",
                "answer_aliases": ["New York City"],
                "paragraphs": [],
            }
        )
        + "\n",
        "utf-8",
    )
    assert read_set(musique).questions[0].aliases == ("New York City",)
    plain = tmp_path / "mine.jsonl"
    plain.write_text(
        '{"question": "Where?", "answer": "Oslo", "aliases": ["Christiania"]}\n'
        "not json\n"
        '{"question": "No answer?"}\n',
        "utf-8",
    )
    found = read_set(plain)
    assert [(q.answer, q.aliases) for q in found.questions] == [("Oslo", ("Christiania",))]
    assert found.dropped == ["line 2: not an object", "line 3: no answer"]


def test_a_set_without_answers_is_one_line_and_exit_2(tmp_path: Path, error_line: Any) -> None:
    path = tmp_path / "q.csv"
    path.write_text("question\nWhat is WAL?\n", "utf-8")
    assert run(["eval", str(path), "-o", str(tmp_path / "out")]) == 2
    line = error_line()
    assert "needs a 'question'" in line and "'answer' column" in line
    assert not (tmp_path / "out").exists()


def test_a_file_and_a_sample_together_is_exit_2(tmp_path: Path, error_line: Any) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "Q?", "answer": "A"}\n', "utf-8")
    assert run(["eval", str(path), "--sample", "hotpotqa"]) == 2
    assert "one of them" in error_line()


def test_an_unknown_sample_is_one_line_and_exit_2(error_line: Any) -> None:
    assert run(["eval", "--sample", "nope"]) == 2
    assert "no sample named 'nope' (there is: hotpotqa)" in error_line()


# ---------------------------------------------------------------- grading


@pytest.mark.parametrize(
    ("response", "answer", "aliases", "grade"),
    [
        ("Two Dollar Radio is based in Columbus, Ohio. [2]", "Columbus, Ohio", (), "correct"),
        ("It is based in Columbus. [2]", "Columbus, Ohio", (), "correct"),  # before the comma
        ("It was selected twice.", "two-time", (), "incorrect"),
        ("He won it 2 times.", "two times", (), "correct"),  # number words as digits
        ("The city is New York City.", "NYC", ("New York City",), "correct"),
        ("The Bank of England (BoE).", "Bank of England (BoE)", (), "correct"),
        ("A lilu is a spirit.", "a spirit", (), "correct"),  # articles dropped
        ("It is spiritual.", "spirit", (), "incorrect"),  # whole words only
        ("Yes, both are directors.", "yes", (), "correct"),
        ("No one knows; yes, maybe.", "yes", (), "incorrect"),  # yes/no: the first word
        ("", "Latin", (), "not_attempted"),
    ],
)
def test_match_grades(response: str, answer: str, aliases: tuple[str, ...], grade: str) -> None:
    assert match(response, answer, aliases) == grade


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("CORRECT", "correct"),
        ("incorrect", "incorrect"),
        ("Comparing them.\nNOT_ATTEMPTED", "not_attempted"),
        ("not attempted", "not_attempted"),
        ("The response is INCORRECT, not CORRECT.", "incorrect"),
        ("B", None),
        ("I cannot tell.", None),
    ],
)
def test_the_judges_reply_is_read_for_its_first_grade(reply: str, grade: str | None) -> None:
    assert parse_verdict(reply) == grade


# ---------------------------------------------------------------- a batch over documents


async def test_runs_sharing_services_wait_for_the_documents_index(tmp_path: Path) -> None:
    # Every run of a batch asks for the index; those after the first must not go on
    # (and make a fetcher that refuses every file URL) before it exists.
    from sleuth.pipeline.context import open_services
    from sleuth.settings import load_settings

    docs = sample_docs("hotpotqa", tmp_path / "home")
    settings = load_settings({"docs": str(docs), "no_llm": True, "home": str(tmp_path / "home")})
    async with open_services(settings, lambda event: None, shared=True) as services:

        async def run_starts() -> bool:
            await services.index_documents()
            return services.store.documents is not None

        assert await asyncio.gather(*(run_starts() for _ in range(3))) == [True] * 3
