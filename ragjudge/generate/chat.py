"""The chat generator: answers from numbered contexts through any OpenAI-compatible endpoint.

Prompt ``prompts/generate/answer.v1.j2``: numbered, fenced contexts; citations ``[n]`` after
each sentence; the exact ``NO_ANSWER`` text when the contexts do not contain the answer.
Contexts are cut to the ``ContextBudget`` first (``Answer.contexts`` holds what the model saw).
A failed call gives an ``Answer`` with empty text and ``error`` set (the loop never crashes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragjudge.llm.types import ChatClient
from ragjudge.prompts import ContextBudget, fit_contexts, load_prompt
from ragjudge.schema import Answer, Document, TestCase

NO_ANSWER = "I don't know based on the given contexts."
_CITATION = re.compile(r"\[(\d+)\]")


def parse_citations(text: str, n_contexts: int) -> list[int]:
    """0-based indices of the contexts cited as ``[n]`` (numbers out of range dropped)."""
    return sorted({int(m) - 1 for m in _CITATION.findall(text) if 1 <= int(m) <= n_contexts})


class ChatGenerator:
    """``Generator`` calling an LLM through ``ragjudge.llm``."""

    name = "chat"

    def __init__(
        self,
        client: ChatClient | None = None,
        *,
        prompt: str = "generate/answer",
        max_sentences: int = 4,
        budget: ContextBudget | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> None:
        self._client = client
        self.prompt = load_prompt(prompt)
        self.version = self.prompt.version
        self.max_sentences = max_sentences
        self.budget = budget or ContextBudget()
        self.sampling: dict[str, Any] = {"temperature": temperature}
        """Generation settings sent with every call (``max_tokens`` None: the client's)."""
        if max_tokens is not None:
            self.sampling["max_tokens"] = max_tokens

    @property
    def client(self) -> ChatClient:
        if self._client is None:
            from ragjudge.llm import default_client

            self._client = default_client()
        return self._client

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        texts, _ = fit_contexts([d.text for d in contexts], self.budget)
        messages = self.prompt.render(
            question=case.question,
            contexts=texts,
            max_sentences=self.max_sentences,
            no_answer=NO_ANSWER,
        )
        res = await self.client.chat(
            messages, prompt=self.prompt.ref, tags={"case": case.id, "k": k}, **self.sampling
        )
        base: dict[str, Any] = {
            "case_id": case.id,
            "k": k,
            "context_ids": [d.id for d in contexts],
            "contexts": texts,
            "generator": self.name,
            "prompt": self.prompt.ref,
            "usage": res.usage,
        }
        if not res.ok or res.value is None:
            message = res.error.message if res.error else "no text returned"
            kind = res.error.kind if res.error else "provider_error"
            return Answer(text="", error=f"{kind}: {message}"[:2000], **base)
        text = res.value.strip()
        abstained = text.lower().startswith(NO_ANSWER.lower().rstrip("."))
        return Answer(
            text=text,
            citations=[] if abstained else parse_citations(text, len(texts)),
            abstained=abstained,
            **base,
        )
