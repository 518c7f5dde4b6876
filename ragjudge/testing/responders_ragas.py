"""Scripted answers to ragas 0.4.3's metric prompts, so ragas can run against the local test
server (the ragas adapter's tests and the side-by-side benchmarks).

ragas renders a ``PydanticPrompt`` as: instruction, output-format note, examples, then
``Now perform the same with the following input\\ninput: {json}\\nOutput:``. Each prompt kind
is recognised by its instruction and answered from the input JSON, in the shape of the ragas
output model (checked in tests against the ragas classes):

- statement generation (faithfulness): ``{"statements": [sentences of the answer]}``
- NLI verdicts: ``{"statements": [{"statement", "reason", "verdict"}]}``, verdict 1 when
  >= ``SUPPORT`` of the statement's content words occur in the context
- question generation (answer relevancy): ``{"question", "noncommittal"}``
- context recall: ``{"classifications": [{"statement", "reason", "attributed"}]}``
- context precision: ``{"reason", "verdict"}``, verdict 1 when >= ``USEFUL`` of the answer's
  content words occur in the context
- output-format fix: the output string it was given.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragjudge.testing.responders import content_responder
from ragjudge.text import content_words, split_sentences

INPUT_MARKER = "Now perform the same with the following input\ninput: "
SUPPORT = 0.6
USEFUL = 0.3
_HEDGE = re.compile(
    r"\b(i don't know|i do not know|i am not sure|i'm not sure|cannot answer)\b", re.I
)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def ragas_prompt(body: dict[str, Any]) -> str:
    """The message text carrying the ragas input (the last one with the marker)."""
    for m in reversed(body.get("messages", [])):
        text = _text(m.get("content"))
        if INPUT_MARKER in text or "output string did not satisfy" in text:
            return text
    return ""


def ragas_input(body: dict[str, Any]) -> dict[str, Any]:
    prompt = ragas_prompt(body)
    at = prompt.rfind(INPUT_MARKER)
    if at < 0:
        return {}
    try:
        obj, _ = json.JSONDecoder().raw_decode(prompt, at + len(INPUT_MARKER))
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _has(*phrases: str) -> Any:
    def predicate(body: dict[str, Any]) -> bool:
        head = ragas_prompt(body)[:500]
        return any(p in head for p in phrases)

    return predicate


def overlap(part: str, whole: str) -> float:
    words = set(content_words(part))
    return len(words & set(content_words(whole))) / len(words) if words else 0.0


def _sentences(text: str) -> list[str]:
    return split_sentences(text) or ([text] if text.strip() else [])


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@content_responder("ragas/faithfulness.statements", _has("analyze the complexity of each sentence"))
def statements(body: dict[str, Any]) -> str:
    return _json({"statements": _sentences(str(ragas_input(body).get("answer", "")))})


@content_responder(
    "ragas/faithfulness.nli", _has("judge the faithfulness of a series of statements")
)
def nli(body: dict[str, Any]) -> str:
    data = ragas_input(body)
    context = str(data.get("context", ""))
    out = []
    for s in data.get("statements", []):
        ok = overlap(str(s), context) >= SUPPORT
        reason = "The context states this." if ok else "The context does not support this."
        out.append({"statement": s, "reason": reason, "verdict": int(ok)})
    return _json({"statements": out})


@content_responder(
    "ragas/answer_relevancy.question", _has("Generate a question for the given answer")
)
def question(body: dict[str, Any]) -> str:
    response = str(ragas_input(body).get("response", ""))
    first = (_sentences(response) or [""])[0]
    stems = ("What is known about", "What can be said about", "Which facts describe")
    stem = stems[int(body.get("_ragjudge_choice", 0)) % len(stems)]
    words = re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", first)[:14]
    return _json(
        {
            "question": f"{stem} {' '.join(words)}?",
            "noncommittal": int(bool(_HEDGE.search(response))),
        }
    )


@content_responder(
    "ragas/context_recall.classify",
    _has(
        "classify if the sentence can be attributed", "classify if the statement can be attributed"
    ),
)
def recall(body: dict[str, Any]) -> str:
    data = ragas_input(body)
    context = str(data.get("context", ""))
    out = []
    for s in _sentences(str(data.get("answer", ""))):
        ok = overlap(s, context) >= SUPPORT
        reason = "Found in the context." if ok else "Not in the context."
        out.append({"statement": s, "reason": reason, "attributed": int(ok)})
    return _json({"classifications": out})


@content_responder("ragas/context_precision.verdict", _has("verify if the context was useful"))
def precision(body: dict[str, Any]) -> str:
    data = ragas_input(body)
    ok = overlap(str(data.get("answer", "")), str(data.get("context", ""))) >= USEFUL
    reason = "The context was used in the answer." if ok else "The context is unrelated."
    return _json({"reason": reason, "verdict": int(ok)})


@content_responder("ragas/fix_output_format", _has("output string did not satisfy"))
def fix_format(body: dict[str, Any]) -> str:
    return str(ragas_input(body).get("output_string", "{}"))
