"""Locations of the files ragjudge ships: prompt templates and the demo data set.

In a source checkout they live at the top level (``prompts/``, ``datasets/``); in an installed
wheel they are copied into ``ragjudge/_data/``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"ragjudge's bundled folder {name!r} is missing from {_PKG}")


def prompts_dir() -> Path:
    return _find("prompts")


def datasets_dir() -> Path:
    return _find("datasets")


def demo_dir() -> Path:
    return datasets_dir() / "demo"
