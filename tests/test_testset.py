"""ragjudge testset: the folder the sweep reads, filters, grades, provenance, --describe, bad
input (exit 2, one line), and the LLM path against the local test server (calls through the
LLM layer, budget stop exit 3, resume from the cache)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragjudge.cli import main
from ragjudge.io import load_testset
from ragjudge.judges.offline.relevancy import unanswerable
from ragjudge.llm import LLMCache, LLMClient
from ragjudge.resources import demo_dir
from ragjudge.testset import build_testset
from ragjudge.testset.filters import COPY_THRESHOLD, copy_score, leak_score
from ragjudge.testset.mix import QUESTION_TYPES, check_mix, quotas
from ragjudge.testset.models import TEMPLATE_NOTE

N = 10


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    cap = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), cap.out + cap.err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """32 demo passages (both topics), as a plain JSONL corpus (not a BEIR folder)."""
    rows = [json.loads(x) for x in (demo_dir() / "corpus.jsonl").read_text().splitlines()]
    path = tmp_path_factory.mktemp("corpus") / "passages.jsonl"
    keep = rows[:16] + rows[-16:]
    path.write_text("".join(json.dumps(r) + "\n" for r in keep), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def offline_set(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``ragjudge testset`` run once, offline; its folder and output."""
    out = tmp_path_factory.mktemp("ts") / "set"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OPENAI_BASE_URL", raising=False)
        mp.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(SystemExit) as exc:
            main(["testset", "--corpus", str(corpus), "--n", str(N), "--out", str(out)])
    assert exc.value.code in (0, None)
    return out, ""


def test_offline_folder_is_what_the_sweep_reads(offline_set: tuple[Path, str]) -> None:
    folder, _ = offline_set
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "testset.json"):
        assert (folder / name).is_file(), name
    ts = load_testset(folder)  # the loader `ragjudge sweep` uses for dataset: {path: DIR}
    assert 0 < len(ts.cases) <= N
    doc_ids = {d.id for d in ts.documents}
    types = set()
    for case in ts.cases:
        meta = case.metadata
        types.add(meta["type"])
        assert meta["generator"] == "offline-templates" and meta["template"]
        assert set(meta["filter_scores"]) >= {"copy", "duplicate"}
        assert meta["filter_scores"]["copy"] < COPY_THRESHOLD
        if meta["type"] == "unanswerable":
            assert case.relevant == {} and unanswerable(case.reference)
            continue
        # the source passages are grade 3; other grades are 2 or 1, all in the corpus
        assert {d for d, g in case.relevant.items() if g == 3} == set(meta["sources"])
        assert set(case.relevant.values()) <= {1, 2, 3} and set(case.relevant) <= doc_ids
        assert meta["filter_scores"]["support"] >= 0.75
        assert case.reference and case.question.endswith("?")
    assert len(types) >= 4, types


def test_manifest_counts_and_says_template_questions(offline_set: tuple[Path, str]) -> None:
    folder, _ = offline_set
    m = json.loads((folder / "testset.json").read_text())
    assert m["backend"] == "offline" and m["generator"] == "offline-templates"
    assert TEMPLATE_NOTE in m["notes"]
    r = m["report"]
    kept = sum(r["kept"].values())
    assert kept == len((folder / "queries.jsonl").read_text().splitlines())
    # every candidate is accounted for: removed by one filter, kept, or unused (quota full)
    for t in QUESTION_TYPES:
        removed = sum(r["removed"].get(f, {}).get(t, 0) for f in r["removed"])
        assert r["generated"].get(t, 0) == removed + r["kept"].get(t, 0) + r["unused"].get(t, 0)
    assert sum(r["requested"].values()) == N


def test_describe(offline_set: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    folder, _ = offline_set
    code, text = run(["testset", "--describe", str(folder)], capsys)
    assert code == 0, text
    assert "BM25 hit@1" in text and "template questions" in text
    ts = load_testset(folder)
    for t in {c.metadata["type"] for c in ts.cases}:
        assert t in text
    assert ts.cases[0].question in text  # an example is shown


def test_describe_names_a_broken_manifest(
    offline_set: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "set"
    shutil.copytree(offline_set[0], copy)
    manifest = copy / "testset.json"
    good = json.loads(manifest.read_text())
    for broken, why in (
        ("{not json", "not a test set manifest (Invalid JSON"),
        (json.dumps(good | {"seed": "seven"}), "not a test set manifest (seed: "),
    ):
        manifest.write_text(broken)
        code, text = run(["testset", "--describe", str(copy)], capsys)
        assert code == 2 and f"error: {manifest}: {why}" in text, text
        assert "Traceback" not in text and len(text.strip().splitlines()) == 1


def test_filters_and_mix() -> None:
    passage = "The Greyhaven tower is built of 2,835 granite blocks cut at the Kelsby quarry."
    assert (
        copy_score(
            "Is the Greyhaven tower built of 2,835 granite blocks cut at the quarry?", [passage]
        )
        >= COPY_THRESHOLD
    )
    assert copy_score("How many granite blocks make up the Greyhaven tower?", [passage]) < 0.5
    assert leak_score("Was it 2,835 granite blocks?", "2,835 granite blocks", passage) == 1.0
    assert leak_score("How many granite blocks?", "2,835 granite blocks", passage) < 1.0
    q = quotas(check_mix({"factoid": 2, "unanswerable": 1}), 10)
    assert sum(q.values()) == 10 and q["factoid"] == 7 and q["unanswerable"] == 3
    assert q["list"] == 0


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("n0", "--n must be"),
        ("mix", "mix.yaml:2: unknown question type 'essay'"),
        ("empty", "no passages"),
        ("short", "no passage is long enough"),
        ("missing", "corpus not found"),
        ("out", "holds other files (notes.txt)"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    setup: str, message: str, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["testset", "--corpus", str(corpus), "--n", "5", "--out", str(tmp_path / "o")]
    if setup == "n0":
        args[4] = "0"
    elif setup == "mix":
        (tmp_path / "mix.yaml").write_text("factoid: 1\nessay: 2\n")
        args += ["--mix", str(tmp_path / "mix.yaml")]
    elif setup == "empty":
        (tmp_path / "c.txt").write_text("")
        args[2] = str(tmp_path / "c.txt")
    elif setup == "short":
        (tmp_path / "c.jsonl").write_text('{"_id": "a", "text": "Bees make honey."}\n')
        args[2] = str(tmp_path / "c.jsonl")
    elif setup == "out":
        (tmp_path / "o").mkdir()
        (tmp_path / "o" / "notes.txt").write_text("mine")
    else:
        args[2] = str(tmp_path / "nowhere.jsonl")
    code, text = run(args, capsys)
    lines = text.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), text
    assert message in lines[0]
    assert "Traceback" not in text


def test_tiny_corpus_says_so_and_generates_what_it_can(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [json.loads(x) for x in (demo_dir() / "corpus.jsonl").read_text().splitlines()][:3]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, text = run(
        ["testset", "--corpus", str(path), "--n", "10", "--out", str(tmp_path / "o")], capsys
    )
    assert code == 0, text
    assert "3 passages to ask about for 10 requested questions" in text
    kept = len((tmp_path / "o" / "queries.jsonl").read_text().splitlines())
    assert 0 < kept < 10 and f"kept {kept} of 10 requested" in " ".join(text.split())


def _client(server_url: str, cache: LLMCache) -> LLMClient:
    return LLMClient.from_env(
        base_url=server_url, api_key="sk-test", model="fake-model", cache=cache
    )


def test_llm_path_through_the_llm_layer(corpus: Path, fake_llm, tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "cache.sqlite")
    client = _client(fake_llm.base_url, cache)
    mix = {"factoid": 2, "multi_passage": 1, "unanswerable": 1}
    build = build_testset(corpus, 4, client=client, mix=mix, out=tmp_path / "set")
    m = build.manifest
    assert m.backend == "llm" and m.generator == "fake-model"
    assert {"testset/generate@v1", "testset/answered@v1", "judges/faithfulness@v1"} <= set(
        m.prompts
    )
    assert m.judges["support"].startswith("faithfulness@")
    assert len(build.items) == 4
    calls = client.ledger.total()
    assert calls.calls >= 8  # one generation and one check per kept question at least
    prompts = {e.prompt for e in client.ledger.calls()}
    assert "testset/generate@v1" in prompts
    for it in build.items:
        assert it.candidate.prompt == "testset/generate@v1" and it.candidate.usage.calls >= 2
    multi = [it for it in build.items if it.candidate.qtype == "multi_passage"]
    assert multi and all(list(it.relevant.values()).count(3) == 2 for it in multi)
    # resume: the same build again answers every call from the cache
    again = _client(fake_llm.base_url, cache)
    build2 = build_testset(corpus, 4, client=again, mix=mix)
    assert again.ledger.total().calls == 0 and again.ledger.total().cached_calls >= calls.calls
    assert [i.candidate.question for i in build2.items] == [
        i.candidate.question for i in build.items
    ]


def test_llm_budget_stop_exits_3(
    corpus: Path, llm_env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "set"
    code, text = run(
        ["testset", "--corpus", str(corpus), "--n", "20", "--out", str(out), "--max-calls", "12"],
        capsys,
    )
    assert code == 3, text
    m = json.loads((out / "testset.json").read_text())
    assert m["status"] == "stopped_budget" and m["usage"]["calls"] <= 12
    assert "budget reached" in text
    # the whole request is reported, the types the stop came before too (it held only those
    # reached)
    assert sum(m["report"]["requested"].values()) == 20, m["report"]["requested"]


def test_python_api_returns_what_the_sweep_takes(tmp_path: Path) -> None:
    import ragjudge
    import ragjudge.testset.build  # binding the subpackage must not replace the function
    from ragjudge.schema import TestSet

    rows = [json.loads(x) for x in (demo_dir() / "corpus.jsonl").read_text().splitlines()][:6]
    path = tmp_path / "six.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ts = ragjudge.testset(path, n=2, mix={"factoid": 1}, out=tmp_path / "set")
    assert isinstance(ts, TestSet) and len(ts.cases) == 2
    assert {c.metadata["type"] for c in ts.cases} == {"factoid"}
    assert [c.id for c in load_testset(tmp_path / "set").cases] == [c.id for c in ts.cases]
    assert callable(ragjudge.testset) and ragjudge.testset.build_testset is build_testset


def test_llm_build_whose_every_reply_is_unparseable_exits_2(
    corpus: Path, llm_env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to write an empty test set and exit 0 (issue #29: no run that scored nothing
    passes), and then to try every seed (32 writes, 64 requests with their repairs) before
    finding that: it now stops after ``FAIL_FAST`` writes without a success."""
    from ragjudge.testing.faults import FaultPlan
    from ragjudge.testset.build import FAIL_FAST

    llm_env.set_faults(FaultPlan(rates={"malformed": 1.0}))
    mix = tmp_path / "mix.yaml"
    mix.write_text("factoid: 1\n")
    out = tmp_path / "set"
    argv = ["testset", "--corpus", str(corpus), "--n", "2", "--out", str(out), "--mix", str(mix)]
    code, text = run(argv, capsys)
    assert code == 2, text
    (line,) = [ln for ln in text.splitlines() if "failed" in ln]
    n = FAIL_FAST
    assert f"question writer fake-model wrote 0/{n} (0%, floor 50%); parse_error x{n}" in line
    assert f"stopped after {n} calls of writer without a success" in line
    assert "Traceback" not in text and not (out / "testset.json").exists()
    assert llm_env.stats()["chat_requests"] == 2 * n  # each write and its one repair call


def test_llm_build_finds_a_dead_endpoint_before_spending(
    corpus: Path, llm_env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_env.models = ["the-served-model"]  # the environment asks for fake-model: 404
    out = tmp_path / "set"
    code, text = run(["testset", "--corpus", str(corpus), "--n", "2", "--out", str(out)], capsys)
    assert code == 2, text
    assert "pre-flight call to model 'fake-model' at http://127.0.0.1:" in text
    assert llm_env.stats()["preflight"] == 1 and llm_env.stats()["chat_requests"] == 0
