"""The generation loop: test cases x k, concurrently, each distinct context list answered once.

Answers are keyed by ``(case_id, tuple of context ids)``: when two k give the same top-k list
(k beyond the ranking's length) the answer is generated once and returned for both k (with
``k`` set to each); an answer already in ``existing`` (e.g. from a crashed run) is never
generated again. A generator that raises becomes an ``Answer`` with ``error`` set: ``generator
NAME raised Type: message (at file:line in function)`` (``ragjudge.errors.raised_at``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence

from ragjudge.errors import DataError, raised_at
from ragjudge.llm.settings import error_text
from ragjudge.protocols import Generator
from ragjudge.schema import Answer, Document, Ranking, TestCase

AnswerKey = tuple[str, tuple[str, ...]]


def answer_key(answer: Answer) -> AnswerKey:
    return (answer.case_id, tuple(answer.context_ids))


async def generate_answers(
    cases: Sequence[TestCase],
    rankings: Mapping[str, Ranking],
    documents: Mapping[str, Document] | Iterable[Document],
    ks: Sequence[int],
    generator: Generator,
    *,
    concurrency: int = 16,
    existing: Mapping[AnswerKey, Answer] | None = None,
) -> list[Answer]:
    """One ``Answer`` per (case, k), in case order then ``ks`` order.

    A case without a ranking is answered from no contexts; a ranking naming a document that is
    not in ``documents`` is a ``DataError``.
    """
    docs = documents if isinstance(documents, Mapping) else {d.id: d for d in documents}
    known: dict[AnswerKey, Answer] = dict(existing or {})
    plan: list[tuple[TestCase, int, AnswerKey]] = []
    todo: dict[AnswerKey, tuple[TestCase, list[Document], int]] = {}
    for case in cases:
        ranking = rankings.get(case.id)
        ids = ranking.doc_ids if ranking is not None else []
        for k in ks:
            top = ids[:k]
            key: AnswerKey = (case.id, tuple(top))
            plan.append((case, k, key))
            if key in known or key in todo:
                continue
            missing = [d for d in top if d not in docs]
            if missing:
                raise DataError(f"ranking of case {case.id!r} names unknown documents {missing}")
            todo[key] = (case, [docs[d] for d in top], k)

    sem = asyncio.Semaphore(max(1, concurrency))

    async def run(key: AnswerKey, case: TestCase, contexts: list[Document], k: int) -> None:
        async with sem:
            try:
                known[key] = await generator.generate(case, contexts, k)
            except Exception as exc:
                known[key] = Answer(
                    case_id=case.id,
                    k=k,
                    text="",
                    context_ids=[d.id for d in contexts],
                    contexts=[d.text for d in contexts],
                    generator=generator.name,
                    error=f"generator {generator.name} raised {error_text(exc)} "
                    f"(at {raised_at(exc)})",
                )

    await asyncio.gather(*(run(key, *args) for key, args in todo.items()))
    out: list[Answer] = []
    for _, k, key in plan:
        answer = known[key]
        out.append(answer if answer.k == k else answer.model_copy(update={"k": k}))
    return out
