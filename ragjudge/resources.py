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


BUNDLED = "bundled:"
"""Prefix of a data set shipped with ragjudge in a sweep config: ``path: bundled:demo``."""


def bundled_dataset(name: str) -> Path:
    """The folder of the bundled data set ``name`` (``bundled:demo`` in a sweep config), found
    the same way in a source checkout and in an installed wheel."""
    from ragjudge.errors import ConfigError

    root = datasets_dir()
    folder = root / name
    if not name or "/" in name or "\\" in name or not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if p.is_dir())
        raise ConfigError(
            f"no bundled data set {name!r}; bundled: {', '.join(BUNDLED + k for k in known)}"
        )
    return folder
