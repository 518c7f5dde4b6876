"""SQuAD v1.1 / v2.0 JSON as a ``TestSet``.

Paragraph ``j`` of the article titled ``T`` becomes Document ``f"{T}_{j}"`` (the convention of
``../shared/data/squad_v2_dev_subset/corpus.jsonl``). Every question becomes a TestCase: the
reference is its first gold answer and ``relevant = {paragraph_id: 1}``; an unanswerable (v2
``is_impossible``) question has reference None and no relevant document. ``metadata`` keeps
the unique gold answers, ``plausible_answers``, ``is_impossible`` and the source paragraph.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragjudge.errors import DataError
from ragjudge.schema import Document, TestCase, TestSet

from .rows import existing_file, open_text


def _texts(answers: Any, where: str, path: Path) -> list[str]:
    if not isinstance(answers, list):
        raise DataError(f"{where}: answers must be a list", path=path)
    out: list[str] = []
    for a in answers:
        text = a.get("text") if isinstance(a, dict) else None
        if not isinstance(text, str):
            raise DataError(f"{where}: every answer needs a text", path=path)
        if text not in out:
            out.append(text)
    return out


def load_squad(path: str | Path) -> TestSet:
    p = existing_file(path)
    try:
        with open_text(p) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"malformed JSON: {exc.msg}", path=p, line=exc.lineno) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 ({exc.reason})", path=p) from exc
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError("not a SQuAD file: expected an object with a 'data' list", path=p)
    docs: list[Document] = []
    cases: list[TestCase] = []
    seen_docs: set[str] = set()
    seen_cases: set[str] = set()
    for a, article in enumerate(data["data"]):
        title = article.get("title") if isinstance(article, dict) else None
        if not isinstance(title, str) or not isinstance(article.get("paragraphs"), list):
            raise DataError(
                f"data[{a}]: an article needs a 'title' and a 'paragraphs' list", path=p
            )
        for j, para in enumerate(article["paragraphs"]):
            where = f"data[{a}].paragraphs[{j}]"
            context = para.get("context") if isinstance(para, dict) else None
            if not isinstance(context, str) or not context.strip():
                raise DataError(f"{where}: empty or missing context", path=p)
            pid = f"{title}_{j}"
            if pid in seen_docs:
                raise DataError(f"{where}: duplicate paragraph id {pid!r}", path=p)
            seen_docs.add(pid)
            docs.append(Document(id=pid, text=context, title=title))
            for n, qa in enumerate(para.get("qas", [])):
                qwhere = f"{where}.qas[{n}]"
                qid, question = qa.get("id"), qa.get("question")
                if (
                    not isinstance(qid, str)
                    or not qid
                    or not isinstance(question, str)
                    or not question.strip()
                ):
                    raise DataError(f"{qwhere}: a question needs an 'id' and a 'question'", path=p)
                if qid in seen_cases:
                    raise DataError(f"{qwhere}: duplicate question id {qid!r}", path=p)
                seen_cases.add(qid)
                impossible = bool(qa.get("is_impossible", False))
                answers = [] if impossible else _texts(qa.get("answers", []), qwhere, p)
                if not impossible and not answers:
                    raise DataError(f"{qwhere}: an answerable question without answers", path=p)
                plausible = _texts(qa.get("plausible_answers", []), qwhere, p)
                cases.append(
                    TestCase(
                        id=qid,
                        question=question,
                        reference=None if impossible else answers[0],
                        relevant={} if impossible else {pid: 1},
                        metadata={
                            "answers": answers,
                            "plausible_answers": plausible,
                            "is_impossible": impossible,
                            "source_paragraph": pid,
                        },
                    )
                )
    return TestSet(name=p.stem, documents=docs, cases=cases)
