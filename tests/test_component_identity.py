"""A user's Python component is identified by the code it runs (issue 30 §1): its whole
module's source and the user-module code it reaches, so editing a helper that the retriever
calls changes the run's identity; resuming across the change is refused naming the component,
and running again starts a new run instead of resuming with the old numbers."""

from __future__ import annotations

import importlib
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from ragjudge.adapters import as_generator, as_retriever, identity
from ragjudge.cli import main
from ragjudge.store import open_store
from tests.test_sweep_kill import write_dataset

HELPERS = """
DOCS = {
    "tin": "Tin is mined in Bolivia and China.",
    "copper": "Copper is mined in Chile and Peru.",
}


def rank(question):
    first = "tin" if "tin" in question.lower() else "copper"
    return sorted(DOCS, key=lambda d: d != first)
"""

PARTS = """
import ragjudge
import {helpers} as helpers
from {helpers} import DOCS


def retrieve(question, k):
    return [(d, DOCS[d]) for d in helpers.rank(question)][:k]


def generate(question, contexts):
    return contexts[0]


@ragjudge.judge(name="brief", needs=("answer",))
def brief(answer):
    return float(len(answer) < 80)
"""


class UserModules:
    """Two user modules written to a folder on sys.path: parts.py imports helpers.py."""

    def __init__(self, folder: Path) -> None:
        tag = uuid.uuid4().hex[:8]
        self.helpers_name, self.parts_name = f"helpers_{tag}", f"parts_{tag}"
        self.folder = folder
        (folder / f"{self.helpers_name}.py").write_text(HELPERS)
        (folder / f"{self.parts_name}.py").write_text(PARTS.format(helpers=self.helpers_name))
        sys.path.insert(0, str(folder))
        self.parts = importlib.import_module(self.parts_name)

    def edit_helpers(self, old: str, new: str) -> ModuleType:
        """Edit helpers.py and load both modules again, as a new process would."""
        path = self.folder / f"{self.helpers_name}.py"
        path.write_text(path.read_text().replace(old, new))
        for name in (self.helpers_name, self.parts_name):
            sys.modules.pop(name, None)
        importlib.invalidate_caches()
        self.parts = importlib.import_module(self.parts_name)
        return self.parts

    def close(self) -> None:
        sys.path.remove(str(self.folder))
        for name in (self.helpers_name, self.parts_name):
            sys.modules.pop(name, None)


@pytest.fixture
def user_modules(tmp_path):
    mods = UserModules(tmp_path)
    yield mods
    mods.close()


def test_editing_a_helper_the_retriever_calls_changes_its_identity(user_modules):
    before = identity(as_retriever(user_modules.parts.retrieve))
    gen_before = identity(as_generator(user_modules.parts.generate))
    same = user_modules.edit_helpers("# nothing", "# nothing")  # reloaded, unchanged
    assert identity(as_retriever(same.retrieve)) == before
    parts = user_modules.edit_helpers('first = "tin"', 'first = "copper"')
    after = identity(as_retriever(parts.retrieve))
    assert after != before and after.rsplit("@", 1)[0] == before.rsplit("@", 1)[0]
    # the generator reaches the same modules: it is a changed component too
    assert identity(as_generator(parts.generate)) != gen_before


def test_a_resume_across_a_helper_edit_is_refused_naming_the_component(
    user_modules, tmp_path, capsys, monkeypatch
):
    write_dataset(tmp_path / "data")
    cfg = tmp_path / "sweep.yaml"
    parts = user_modules.parts_name
    cfg.write_text(
        f"dataset: {{path: data}}\nretriever: {{kind: '{parts}:retrieve'}}\n"
        f"generator: {{kind: '{parts}:generate'}}\njudges: {{names: ['{parts}:brief']}}\n"
        "ks: [1, 2]\n"
    )
    monkeypatch.chdir(tmp_path)

    def sweep(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as exc:
            main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "out"), *args])
        return int(exc.value.code or 0), capsys.readouterr().err

    code, err = sweep()
    assert code == 0, err
    with open_store() as store:
        (first,) = store.list_runs()
        store.set_status(first.run_id, "interrupted")  # as if killed before it finished
    user_modules.edit_helpers('first = "tin"', 'first = "copper"')
    code, err = sweep("--resume", first.run_id)
    said = " ".join(err.split())
    assert code == 2 and f"refusing to resume run {first.run_id}" in said, said
    assert f"the code of retriever {parts}:retrieve changed" in said, said
    code, err = sweep()  # the same command again: a new run, not the old numbers, and why
    said = " ".join(err.split())
    assert code == 0 and "resuming run" not in said, err
    assert f"not resuming unfinished run {first.run_id}: the code of " in said, said
    assert f"the code of retriever {parts}:retrieve changed" in said
    assert "the code of judge brief changed" in said
    with open_store() as store:
        runs = store.list_runs()
    assert len(runs) == 2 and runs[-1].run_id != first.run_id
