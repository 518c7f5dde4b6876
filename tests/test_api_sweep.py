"""ragjudge.sweep with plain functions, and custom parts by import path in sweep.yaml: the
sweep asks the judge Protocol (a prefix judge under a new name is judged once, at k_max), the
summary covers the judges that ran, a run's identity carries every custom part's version, and
the models used are one record calibration reads."""

from __future__ import annotations

import textwrap

import pytest

import ragjudge
from ragjudge.calibrate.source import from_store
from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.prefix import derive_at_k
from ragjudge.schema import ChunkVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus
from ragjudge.store import open_store
from ragjudge.sweep.config import load_config, stored_config
from ragjudge.sweep.run import run_sweep

DOCS = {
    "tin": "Tin is mined in Bolivia and China.",
    "copper": "Copper is mined in Chile and Peru.",
    "zinc": "Zinc is mined in Australia.",
    "iron": "Iron ore is mined in Brazil.",
}
CASES = [
    {"id": m, "question": f"Where is {m} mined?", "reference": DOCS[m], "relevant": {m: 2}}
    for m in ("tin", "copper", "zinc")
]


def retrieve(question: str, k: int) -> list[tuple[str, str]]:
    words = set(question.lower().rstrip("?").split())
    ranked = sorted(DOCS.items(), key=lambda kv: (-len(words & set(kv[1].lower().split())), kv[0]))
    return ranked[:k]


async def generate(question: str, contexts: list[str]) -> str:
    return contexts[0] if contexts else "I don't know."


class ChunkHits(ragjudge.JudgeBase):
    """A prefix judge under a name no built-in has: one verdict per chunk."""

    name = "chunk_hits"
    requires_reference = True
    needs_answer = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        self.calls.append(item.id)
        ref = set((item.reference or "").lower().split())
        chunks = [
            ChunkVerdict(index=i, relevant=len(ref & set(c.lower().split())) >= 3)
            for i, c in enumerate(item.contexts)
        ]
        full = self.result(item, JudgeStatus.ok, score=0.0, evidence=Evidence(chunks=chunks))
        return derive_at_k(full, len(chunks))

    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        return derive_at_k(result, k)


def test_sweep_of_functions_asks_the_protocol(tmp_path):
    answered: list[str] = []

    @ragjudge.judge(name="short", needs=("answer",))
    def short(answer: str) -> float:
        answered.append(answer)
        return float(len(answer.split()) <= 8)

    hits = ChunkHits()
    store = open_store(tmp_path / "runs.sqlite")
    kw = {"retriever": retrieve, "generator": generate, "ks": [1, 2, 3], "store": store}
    out = ragjudge.sweep(CASES, judges=[short, hits], **kw)
    assert out.status == "finished" and out.summary.judges == ["short", "chunk_hits"]
    assert sorted(hits.calls) == ["copper@k3", "tin@k3", "zinc@k3"]  # once, at k_max
    assert len(answered) == 3  # the answer repeats across k: judged once per distinct answer
    table = out.summary.table("judge")
    assert table["chunk_hits"][1].mean == 1.0 and table["short"][3].n_scored == 3
    assert out.summary.table("retrieval")["recall"][1].mean == 1.0
    m = store.manifest(out.run_id)
    comps = m.config["definition"]["components"]
    assert comps["retriever"].startswith(f"{__name__}:retrieve@")
    assert set(comps) == {"retriever", "generator", "judge:short", "judge:chunk_hits"}

    # same parts: same identity; a changed function: another run, never a resume of this one
    again = ragjudge.sweep(CASES, judges=[short, hits], **kw)
    assert store.manifest(again.run_id).config_hash == m.config_hash

    def retrieve_two(question: str, k: int) -> list[tuple[str, str]]:
        return retrieve(question, k)[::-1]

    other = ragjudge.sweep(CASES, judges=[short, hits], **(kw | {"retriever": retrieve_two}))
    assert store.manifest(other.run_id).config_hash != m.config_hash


def test_sweep_refuses_bad_input_with_one_line():
    with pytest.raises(DataError, match="test case 1: question"):
        ragjudge.sweep([{"id": "a"}], retriever=retrieve, generator=generate)
    with pytest.raises(ConfigError, match="needs a corpus"):
        ragjudge.sweep(CASES, retriever="bm25", generator=generate, judges=[ChunkHits()])
    with pytest.raises(ConfigError, match="not a retriever"):
        ragjudge.sweep(CASES, retriever=42, generator=generate, judges=[ChunkHits()])


PARTS = """
import ragjudge

DOCS = {
    "tin": "Tin is mined in Bolivia and China [1].",
    "copper": "Copper is mined in Chile and Peru.",
}


def retrieve(question, k):
    first = "tin" if "tin" in question.lower() else "copper"
    return [(d, DOCS[d]) for d in sorted(DOCS, key=lambda d: d != first)][:k]


def generate(question, contexts):
    return contexts[0]


@ragjudge.judge(name="brief", needs=("answer",))
def brief(answer):
    return float(len(answer) < 80)
"""


def test_yaml_names_custom_parts_by_import_path(tmp_path, monkeypatch, llm_env):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_parts.py").write_text(PARTS, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(
        '{"_id": "t", "text": "Where is tin mined?", "reference": "Bolivia."}\n'
        '{"_id": "c", "text": "Where is copper mined?", "reference": "Chile."}\n',
        encoding="utf-8",
    )
    data = tmp_path / "set"
    data.mkdir()
    (data / "queries.jsonl").write_text((tmp_path / "cases.jsonl").read_text(), "utf-8")
    (data / "corpus.jsonl").write_text('{"_id": "x", "text": "unused"}\n', "utf-8")
    (data / "qrels").mkdir()
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nt\tx\t1\n", "utf-8")
    (tmp_path / "sweep.yaml").write_text(
        textwrap.dedent(
            """\
            dataset: {path: set}
            retriever: {kind: "my_parts:retrieve"}
            generator: {kind: "my_parts:generate"}
            judges:
              names: ["my_parts:brief"]
              criteria: {sourced: "Does the answer cite a source?"}
            ks: [1, 2]
            """
        ),
        encoding="utf-8",
    )
    config = load_config(tmp_path / "sweep.yaml")
    store = open_store(tmp_path / "runs.sqlite")
    out = run_sweep(config, store=store)
    assert out.status == "finished" and out.summary.judges == ["brief", "sourced"]
    sourced = out.summary.table("judge")["sourced"]
    assert sourced[1].mean == 0.5 and sourced[1].n_scored == 2  # tin's answer cites [1]
    m = store.manifest(out.run_id)
    assert m.used_models().judge == "fake-model"  # the one record calibration reads
    assert m.used_models().generator.startswith("my_parts:generate@")
    assert from_store(out.run_id, store.location).judge_model() == "fake-model"
    assert set(m.config["definition"]["components"]) == {"retriever", "generator", "judge:brief"}
    # the run resumes from its stored config alone (`sweep --resume RUN`): it stored the
    # judge's name, 'brief', which no registry knows, so the resume was refused
    again = run_sweep(stored_config(m), store=store, resume=out.run_id)
    assert again.run_id == out.run_id and again.status == "finished"
    with pytest.raises(ConfigError, match="an import path"):
        load_config_text(tmp_path, 'retriever: {kind: "bm42"}')


def load_config_text(folder, extra: str):
    path = folder / "bad.yaml"
    path.write_text(f"dataset: {{path: set}}\n{extra}\n", encoding="utf-8")
    return load_config(path)


def test_components_judges_not_in_the_config_are_the_judges_summarised(tmp_path):
    from ragjudge.adapters import FunctionGenerator, as_retriever, with_retrieved
    from ragjudge.api.sweep import as_testset
    from ragjudge.sweep.components import Components
    from ragjudge.sweep.config import SweepConfig

    config = SweepConfig.model_validate({"dataset": {"path": "unused"}, "ks": [1, 2]})
    assert len(config.judges.names) == 5  # the built-in defaults, none of which will run
    ret = as_retriever(retrieve)
    ts = with_retrieved(as_testset(CASES), ret, 2)
    comp = Components(ret, FunctionGenerator(generate), [ChunkHits()])
    out = run_sweep(config, store=open_store(tmp_path / "r.sqlite"), components=comp, testset=ts)
    assert out.status == "finished" and out.summary.judges == ["chunk_hits"]
    assert {m.metric for m in out.summary.metrics if m.kind == "judge"} == {"chunk_hits"}


def test_langchain_retriever_and_runnable_as_parts(tmp_path):
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda

    class Keyword(BaseRetriever):
        def _get_relevant_documents(self, query, *, run_manager=None):
            hits = retrieve(query, len(DOCS))
            return [LCDocument(page_content=text, id=doc_id) for doc_id, text in hits]

    answer = RunnableLambda(lambda d: d["contexts"][0])
    out = ragjudge.sweep(
        CASES,
        retriever=Keyword(),
        generator=answer,
        judges=[ChunkHits()],
        ks=[1, 2],
        store=open_store(tmp_path / "r.sqlite"),
    )
    assert out.status == "finished"
    assert out.summary.table("retrieval")["recall"][1].mean == 1.0
    assert out.summary.manifest.used_models().retriever == "langchain(Keyword)"


def test_llm_judges_calls_reach_the_run_ledger(tmp_path, llm_env):
    """ragjudge.sweep(backend="llm"): the run's client is the judges' own, so every call they
    send is a ledger line in the run store and the manifest names the judge model."""
    store = open_store(tmp_path / "runs.sqlite")
    out = ragjudge.sweep(
        CASES[:2], retriever=retrieve, generator=generate, judges=["faithfulness"], ks=[1],
        backend="llm", store=store,
    )  # fmt: skip
    assert out.status == "finished"
    sent = len(llm_env.chat_requests())
    calls = [
        e
        for e in store.ledger(out.run_id)
        if e.kind == "call" and not e.cached and "preflight" not in e.tags
    ]
    assert sent == 2 and len(calls) == sent
    assert store.manifest(out.run_id).used_models().judge == "fake-model"
