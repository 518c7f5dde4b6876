"""Answer generation: the offline extractive generator, the chat generator and the loop.

``build_generator("extractive" | "chat", **options)`` builds a built-in ``Generator``;
``generate_answers`` runs test cases x k through one (see ``ragjudge.generate.loop``).
"""

from __future__ import annotations

from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.generate.chat import ChatGenerator
from ragjudge.generate.extractive import ExtractiveGenerator
from ragjudge.generate.loop import AnswerKey, answer_key, generate_answers
from ragjudge.protocols import Generator

GENERATORS = ("extractive", "chat")


def build_generator(name: str, **options: Any) -> Generator:
    """A built-in generator by name; options go to its constructor."""
    if name == "extractive":
        return ExtractiveGenerator(**options)
    if name == "chat":
        return ChatGenerator(**options)
    raise ConfigError(f"unknown generator {name!r}; known generators: {', '.join(GENERATORS)}")


__all__ = [
    "GENERATORS",
    "AnswerKey",
    "ChatGenerator",
    "ExtractiveGenerator",
    "answer_key",
    "build_generator",
    "generate_answers",
]
