"""Synthetic test sets (``ragjudge testset``) against the human questions of the SQuAD 2.0 subset
on the same passages (``../shared/data/squad_v2_dev_subset``).

1. difficulty: BM25 (k1=0.9, b=0.4) hit@1 and NDCG@10 of the synthetic set per question type,
   beside the human questions (one gold paragraph each). The synthetic set is scored twice: on
   its graded qrels (3/2/1) and on its source passages only (grade 3, like SQuAD's one gold
   paragraph);
2. agreement of use: the same k-sweep (BM25, extractive generator, offline judges, ks 1-10) on
   a sample of the synthetic set and on a sample of the human set with the same number of
   answerable and unanswerable questions: chosen k and objective per k;
3. the LLM path against the local test server (scripted responders, real HTTP, real client):
   LLM calls and tokens per kept question, and the share of candidates each filter removed.
   The filter shares there measure the scripted responder (which errs on purpose), not a model.

    .venv/bin/python bench/bench_testset.py [--n 60] [--sweep-n 40] [--llm-n 40]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from common import DATA, prepare

KS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


def removed_total(report, name: str) -> int:  # type: ignore[no-untyped-def]
    """Candidates the filter ``name`` removed, over every question type."""
    return sum(report.removed.get(name, {}).values())


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def difficulty(syn, human) -> None:  # type: ignore[no-untyped-def]
    from ragjudge.schema import TestSet
    from ragjudge.testset.describe import bm25_scores

    graded = bm25_scores(syn)
    sources_only = TestSet(
        name=syn.name,
        documents=syn.documents,
        cases=[
            c.model_copy(update={"relevant": {d: g for d, g in c.relevant.items() if g == 3}})
            for c in syn.cases
        ],
    )
    plain = bm25_scores(sources_only)
    hum = bm25_scores(human)
    rows: dict[str, list[str]] = {}
    for c in syn.cases:
        if c.id in graded:
            rows.setdefault(str(c.metadata["type"]), []).append(c.id)
    print("\n## 1. difficulty: BM25 over the 173 paragraphs\n")
    print("| set | type | n | hit@1 | NDCG@10 (graded qrels) | NDCG@10 (sources only) |")
    print("|---|---|---:|---:|---:|---:|")

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    all_ids = [i for ids in rows.values() for i in ids]
    for t, ids in [*sorted(rows.items()), ("all answerable", all_ids)]:
        print(
            f"| synthetic | {t} | {len(ids)} | {mean([graded[i][0] for i in ids]):.3f} | "
            f"{mean([graded[i][1] for i in ids]):.3f} | {mean([plain[i][1] for i in ids]):.3f} |"
        )
    h = list(hum.values())
    print(
        f"| human (SQuAD) | answerable | {len(h)} | {mean([x for x, _ in h]):.3f} | "
        f"{mean([y for _, y in h]):.3f} | (one gold paragraph) |"
    )


def sample_like(human, syn, seed: int):  # type: ignore[no-untyped-def]
    """Human questions with as many answerable and unanswerable ones as ``syn``."""
    from ragjudge.schema import TestSet

    rng = random.Random(seed)
    want_ans = sum(bool(c.relevant) for c in syn.cases)
    want_un = len(syn.cases) - want_ans
    ans = [c for c in human.cases if c.relevant]
    una = [c for c in human.cases if not c.relevant]
    picked = rng.sample(ans, want_ans) + rng.sample(una, want_un)
    order = {c.id: i for i, c in enumerate(human.cases)}
    picked.sort(key=lambda c: order[c.id])
    return TestSet(name="squad-human-sample", documents=human.documents, cases=picked)


def reference_of_unanswerable(human):  # type: ignore[no-untyped-def]
    """SQuAD's unanswerable questions have no reference; give them the one the synthetic set
    uses, so both sets ask the judges the same thing of an abstention."""
    from ragjudge.testset.models import UNANSWERABLE_REFERENCE

    cases = [
        c if c.relevant else c.model_copy(update={"reference": UNANSWERABLE_REFERENCE})
        for c in human.cases
    ]
    return human.model_copy(update={"cases": cases})


def sweeps(syn, human, n: int, seed: int, home: Path) -> None:  # type: ignore[no-untyped-def]
    import ragjudge
    from ragjudge.schema import TestSet

    rng = random.Random(seed)
    syn_cases = rng.sample(syn.cases, min(n, len(syn.cases)))
    syn_s = TestSet(name="synthetic-sample", documents=syn.documents, cases=syn_cases)
    hum_s = sample_like(reference_of_unanswerable(human), syn_s, seed)
    sizes = f"{len(syn_s.cases)} synthetic vs {len(hum_s.cases)} human questions"
    print(f"\n## 2. k-sweep on {sizes}\n")
    from ragjudge.judges.registry import create_judge

    version = create_judge("faithfulness", "offline").version
    print(
        f"BM25, extractive generator, the five offline judges ({version}), equal objective "
        "weights.\n"
    )
    results = {}
    for label, ts in (("synthetic", syn_s), ("human", hum_s)):
        t0 = time.perf_counter()
        out = ragjudge.sweep(
            ts,
            retriever="bm25",
            generator="extractive",
            backend="offline",
            ks=KS,
            store=home / f"runs-{label}.sqlite",
            seed=seed,
        )
        results[label] = (out, time.perf_counter() - t0)
    print("| set | chosen k | " + " | ".join(f"k={k}" for k in KS) + " | time |")
    print("|---|---:|" + "---:|" * len(KS) + "---:|")
    for label, (out, secs) in results.items():
        table = out.summary.table().get("objective", {})
        cells = [pct(table[k].mean) if k in table else "n/a" for k in KS]
        best = out.summary.choice.best_k
        print(f"| {label} | {best} | " + " | ".join(cells) + f" | {secs:.0f} s |")
    for label, (out, _) in results.items():
        ch = out.summary.choice
        print(f"\n{label}: ks within noise of the best: {ch.within_noise}; {ch.reason or ''}")


def llm_path(corpus: Path, n: int) -> None:
    from ragjudge.llm import LLMClient
    from ragjudge.testing.server import FakeLLMServer
    from ragjudge.testset import build_testset
    from ragjudge.testset.models import FILTERS

    with FakeLLMServer() as srv:
        client = LLMClient.from_env(
            base_url=srv.base_url, api_key="sk-bench", model="fake-model", cache=False
        )
        t0 = time.perf_counter()
        build = build_testset(corpus, n, client=client)
        secs = time.perf_counter() - t0
    r = build.manifest.report
    kept = len(build.items)
    total = client.ledger.total()
    by_prompt: dict[str, int] = {}
    for e in client.ledger.calls():
        by_prompt[e.prompt] = by_prompt.get(e.prompt, 0) + 1
    generated = sum(r.generated.values())
    print(f"\n## 3. LLM path against the local test server: {kept} kept of {n} requested\n")
    print(
        f"- LLM calls {total.calls} ({total.calls / kept:.2f} per kept question); by prompt: "
        + ", ".join(f"{p} {c}" for p, c in sorted(by_prompt.items()))
    )
    print(
        f"- tokens {total.prompt_tokens} prompt + {total.completion_tokens} completion "
        f"({(total.prompt_tokens + total.completion_tokens) / kept:.0f} per kept question)"
    )
    print(
        f"- candidates generated {generated}; removed: "
        + ", ".join(
            f"{f} {removed_total(r, f)} ({removed_total(r, f) / generated:.1%})" for f in FILTERS
        )
        + f"; unused after the quota filled {sum(r.unused.values())}; wall time {secs:.0f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="synthetic questions (offline)")
    ap.add_argument("--sweep-n", type=int, default=40, help="questions per k-sweep")
    ap.add_argument("--llm-n", type=int, default=40, help="questions on the LLM path")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-testset-"))
    if not prepare(str(work / "home")):
        return
    from ragjudge.io import load_squad
    from ragjudge.testset import build_testset

    squad = DATA / "squad_v2_dev_subset"
    human = load_squad(squad / "dev-v2.0-first5articles.json")
    corpus = work / "squad-beir"
    corpus.mkdir()
    with (corpus / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for d in human.documents:
            fh.write(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n")
    t0 = time.perf_counter()
    build = build_testset(corpus, args.n, seed=args.seed, backend="offline", out=work / "syn")
    secs = time.perf_counter() - t0
    r = build.manifest.report
    print(
        f"# bench_testset: SQuAD 2.0 subset, {len(human.documents)} paragraphs, "
        f"{len(human.cases)} human questions ({sum(bool(c.relevant) for c in human.cases)} "
        "answerable)\n"
    )
    print(
        f"offline build: {len(build.items)} of {args.n} kept in {secs:.0f} s; per type "
        + ", ".join(f"{t} {k}" for t, k in r.kept.items())
        + "; removed: "
        + ", ".join(f"{f} {removed_total(r, f)}" for f in r.removed)
    )
    difficulty(build.testset, human)
    sweeps(build.testset, human, args.sweep_n, args.seed, work)
    llm_path(corpus, args.llm_n)


if __name__ == "__main__":
    main()
