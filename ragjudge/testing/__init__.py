"""Test support that ships with ragjudge: a local OpenAI-compatible server with scripted
responders and fault injection (see ``ragjudge.testing.server``), and the quality gate
``assert_quality`` (``ragjudge.testing.quality``) with its pytest plugin
(``ragjudge.testing.pytest_plugin``). Imported on first use, so that loading the pytest
plugin costs nothing until a test uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragjudge.testing.quality import QualityGateError, assert_quality


def __getattr__(name: str) -> Any:
    if name in ("QualityGateError", "assert_quality"):
        from ragjudge.testing import quality

        return getattr(quality, name)
    raise AttributeError(f"module 'ragjudge.testing' has no attribute {name!r}")


__all__ = ["QualityGateError", "assert_quality"]
