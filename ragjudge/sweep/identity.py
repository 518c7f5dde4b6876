"""What a run is: its definition (config plus the ``name@version`` of custom parts), its hash
and manifest, and which stored run a new invocation resumes (a changed definition is refused,
naming each change)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from ragjudge import __version__
from ragjudge.errors import ConfigError
from ragjudge.schema import RunManifest, TestSet
from ragjudge.store.base import RunStore, now
from ragjudge.sweep.components import Components, llm_settings
from ragjudge.sweep.config import SweepConfig, diff_definitions, hash_json


def dataset_fingerprint(testset: TestSet) -> str:
    from ragjudge.io import dataset_hash

    return str(dataset_hash(testset))


def run_definition(config: SweepConfig, comp: Components) -> dict[str, Any]:
    """What identifies a run's computation: the config's definition; with custom parts, each
    one's ``name@version`` (``Components.custom``), replacing the config's entry for the
    retriever and generator roles. Without custom parts it is ``config.definition()``."""
    definition = config.definition()
    if comp.custom:
        for role in ("retriever", "generator"):
            if role in comp.custom:
                definition[role] = {"custom": comp.custom[role]}
        definition["components"] = dict(sorted(comp.custom.items()))
    return definition


def new_run_id(config_hash: str) -> str:
    stamp = now().replace("-", "").replace(":", "").split("+")[0]  # seconds: ids stay short
    return f"{stamp}-{config_hash[:6]}-{secrets.token_hex(2)}"


# ---------------------------------------------------------------------------- run selection


def _identity(m: RunManifest) -> dict[str, Any]:
    return {
        "dataset_hash": m.dataset_hash,
        "definition": m.config.get("definition", {}),
        "models": m.models,
        "prompts": m.prompts,
    }


def changed_components(old: RunManifest, new: RunManifest) -> list[str]:
    """``the code of retriever mod:fn changed (v1 -> v2)`` for each custom part whose
    ``name@version`` differs between two runs (``run_definition``'s ``components``)."""
    before = old.config.get("definition", {}).get("components", {})
    after = new.config.get("definition", {}).get("components", {})
    out = []
    for role in sorted(set(before) & set(after)):
        if before[role] != after[role]:
            name, _, was = str(before[role]).rpartition("@")
            now = str(after[role]).rpartition("@")[2]
            part = role.partition(":")[0]  # judge:NAME -> judge
            out.append(f"the code of {part} {name} changed ({was} -> {now})")
    return out


def check_resumable(old: RunManifest, new: RunManifest) -> None:
    """Refuse to resume ``old`` under a changed definition, naming each change (an edited
    custom part first, by role and name)."""
    changes = diff_definitions(_identity(old), _identity(new))
    if changes:
        raise ConfigError(
            f"refusing to resume run {old.run_id}: its configuration changed:\n  "
            + "\n  ".join(changed_components(old, new) + changes)
            + "\nrun without --resume to start a new run with the new configuration"
        )


def code_change_note(store: RunStore, fresh: RunManifest) -> str | None:
    """Why the newest unfinished run on the same data is not resumed when the code of a
    custom part changed since (``changed_components``): the line to print as a new run
    starts, or None."""
    for m in reversed(store.list_runs()):
        if m.status == "finished" or m.dataset_hash != fresh.dataset_hash:
            continue
        changes = changed_components(m, fresh)
        if changes and _identity(m) != _identity(fresh):
            return f"not resuming unfinished run {m.run_id}: {'; '.join(changes)}; a new run starts"
        return None
    return None


def select_run(
    store: RunStore, fresh: RunManifest, *, resume: str | None, new: bool
) -> tuple[RunManifest, bool]:
    """The manifest to run under and whether it resumes an existing run.

    ``resume`` names a run explicitly; otherwise the newest unfinished run with the same
    identity is resumed (so running the same command again continues a crashed run), unless
    ``new`` is set. Both ``resume`` and ``new`` is a ``ConfigError`` (one continues a run,
    the other starts another: ``new`` was ignored).
    """
    if resume is not None and new:
        raise ConfigError(
            "--resume and --new contradict each other: --resume continues a stored run, --new "
            "starts another; give one"
        )
    if resume is not None:
        old = store.manifest(store.resolve(resume))
        check_resumable(old, fresh)
        return old, True
    if not new:
        for m in reversed(store.list_runs()):
            if m.status != "finished" and _identity(m) == _identity(fresh):
                return m, True
    store.create_run(fresh)
    return fresh, False


def fresh_manifest(
    definition: dict[str, Any],
    config: SweepConfig,
    comp: Components,
    testset: TestSet,
    tags: Mapping[str, str] | None,
    given_names: Sequence[str] | None = None,
) -> RunManifest:
    """The manifest of a new run of ``config`` with ``comp`` on ``testset``: ``definition``
    (``run_definition``) plus the LLM's sampling settings, its hash, the data set hash, the
    full config (its ``judges.names`` as the config gave them, ``given_names``, so that an
    import path stays one and the run can be resumed from it alone), models, prompts and
    ragjudge version."""
    chash = hash_json(definition)
    full = config.model_dump(mode="json", exclude={"store"})
    if given_names is not None:
        full["judges"]["names"] = list(given_names)
    return RunManifest(
        run_id=new_run_id(chash),
        dataset_name=testset.name,
        dataset_hash=dataset_fingerprint(testset),
        config_hash=chash,
        config={
            "definition": definition | llm_settings(comp),
            "full": full,
        },
        ragjudge_version=__version__,
        models=comp.models,
        prompts=comp.prompts,
        tags=dict(tags or {}),
        started_at=now("microseconds"),
    )
