"""Docs that run: every fenced block of README.md and docs/*.md is executed or explicitly marked.

The convention (info string of a fenced block):

- ``bash`` / ``sh``: run with ``bash -e``; ``python``: executed in one namespace per Markdown
  file (a worker interpreter per file, like a notebook kernel; top-level ``await`` allowed).
  Blocks of one file run in order, in one scratch folder per file that holds a copy of the
  repository's ``datasets/`` and its own ``RAGJUDGE_HOME``, offline (``HF_HUB_OFFLINE=1``, no
  endpoint configured), with this interpreter's ``ragjudge`` first on ``PATH`` (and ``.venv``
  in the scratch folder pointing at this interpreter's environment), and ``PYTHONPATH`` set to
  this repository, so that the blocks run the package of the tree under test.
- the word ``llm`` (``bash llm``, ``python llm``): ``RAGJUDGE_BASE_URL`` / ``RAGJUDGE_API_KEY``
  / ``RAGJUDGE_MODEL`` point at the local test server (scripted responders; a prompt no
  responder knows gets a minimal instance of its JSON schema) for that block.
- ``file=NAME`` (any language): not run, written to NAME in the scratch folder before the
  following blocks run.
- the word ``illustration``: not run (real keys, crontab lines, CI YAML, ``make test``).
- data and output (``text``, ``console``, ``json``, ``yaml``, ``csv``, ``cron``, plain ```` ``` ````
  ...): not run, but checked where that is cheap: YAML and JSON must parse, a cron block's
  entries need five schedule fields and a command, and none of them may hold shell commands
  (``ragjudge ...``, ``python ...``), so a command cannot dodge the test by its info string.

``test_every_block_has_a_decision`` fails on any other info string or word, so a new doc cannot
slip past the harness. Both tests are parametrized by the Markdown file's name (``-k nightly``).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from ragjudge.testing.server import FakeLLMServer

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

RUN_LANGS = {"bash": "bash", "sh": "bash", "python": "python"}
DATA_LANGS = {
    "",
    "text",
    "console",
    "output",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "toml",
    "csv",
    "tsv",
    "cron",
    "ini",
    "html",
    "markdown",
    "md",
    "diff",
}
FLAGS = {"llm", "illustration"}
BLOCK_TIMEOUT = 600.0
"""Seconds one block may take before it counts as failed."""

LLM_KEY = "sk-docs-test"
LLM_MODEL = "fake-model"
_ENDPOINT_VARS = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "RAGJUDGE_BASE_URL",
    "RAGJUDGE_API_KEY",
    "RAGJUDGE_MODEL",
    "RAGJUDGE_STRUCTURED",
)

# A line of a data block that is a shell command: `ragjudge ...`, `python ...`, `pip ...`,
# `.venv/bin/...`, `make ...`, optionally after a `$ ` prompt.
_COMMAND = re.compile(
    r"^\s*(\$\s+)?(ragjudge\s|python3?\s|pip3?\s|\.venv/bin/|make\s|uv\s|export\s|cp\s)"
)
_CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$|^@\w+$")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    doc: Path
    line: int
    """1-based line of the opening fence."""
    info: str
    text: str
    lang: str = ""
    words: list[str] = field(default_factory=list)
    file: str | None = None

    @property
    def where(self) -> str:
        name = self.doc.relative_to(REPO) if self.doc.is_relative_to(REPO) else self.doc
        return f"{name}:{self.line}"

    @property
    def llm(self) -> bool:
        return "llm" in self.words

    @property
    def action(self) -> str:
        """``write``, ``skip``, ``bash``, ``python`` or ``data``."""
        if self.file is not None:
            return "write"
        if "illustration" in self.words:
            return "skip"
        return RUN_LANGS.get(self.lang, "data")


def parse_blocks(doc: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order (CommonMark fences, ``` or ~~~)."""
    blocks: list[Block] = []
    lines = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, indent, start = m["fence"], len(m["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = _FENCE.match(lines[i])
            if (
                close
                and close["fence"][0] == fence[0]
                and len(close["fence"]) >= len(fence)
                and not close["info"].strip()
            ):
                break
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i])
            i += 1
        i += 1
        info = m["info"].strip()
        parts = info.split()
        block = Block(doc, start + 1, info, "\n".join(body) + "\n")
        block.lang = parts[0].lower() if parts else ""
        for word in parts[1:]:
            if word.startswith("file="):
                block.file = word[len("file=") :]
            else:
                block.words.append(word)
        blocks.append(block)
    return blocks


def decision_problems(block: Block) -> list[str]:
    """Why a block has no valid decision (empty when it has one)."""
    out = []
    unknown = [w for w in block.words if w not in FLAGS]
    if unknown:
        out.append(f"unknown word(s) {unknown} in info string {block.info!r}")
    known = block.lang in RUN_LANGS or block.lang in DATA_LANGS
    if block.file is None and "illustration" not in block.words and not known:
        out.append(
            f"info string {block.info!r}: language {block.lang!r} is neither run "
            f"({', '.join(sorted(RUN_LANGS))}) nor data ({', '.join(sorted(DATA_LANGS - {''}))}"
            ", plain); add `illustration` or use a known language"
        )
    if block.llm and block.action not in ("bash", "python"):
        out.append("`llm` marks a block that runs (bash, sh or python)")
    if block.file is not None:
        name = Path(block.file)
        if not block.file or name.is_absolute() or ".." in name.parts:
            out.append(f"file={block.file!r} must be a relative path inside the scratch folder")
    return out


def data_problems(block: Block) -> list[str]:
    """Cheap checks of blocks that do not run: they parse, and they hold no shell commands."""
    out = []
    lang = block.lang
    if lang in ("yaml", "yml"):
        try:
            yaml.safe_load(block.text)
        except yaml.YAMLError as exc:
            out.append(f"YAML does not parse: {exc}")
    elif lang == "json":
        try:
            json.loads(block.text)
        except ValueError as exc:
            out.append(f"JSON does not parse: {exc}")
    elif lang == "cron":
        for n, line in enumerate(block.text.splitlines()):
            line = line.strip()
            if not line or line.startswith("#") or re.match(r"^[A-Z_]+=", line):
                continue
            fields = line.split()
            nsched = 1 if fields[0].startswith("@") else 5
            if len(fields) <= nsched or not all(_CRON_FIELD.match(f) for f in fields[:nsched]):
                out.append(
                    f"cron entry on block line {n + 1} needs {nsched} schedule field(s) "
                    f"and a command: {line!r}"
                )
    if block.action == "data" and lang not in ("cron",):
        for n, line in enumerate(block.text.splitlines()):
            if _COMMAND.match(line):
                out.append(
                    f"block line {n + 1} is a shell command in a block that does not run "
                    f"({line.strip()!r}): mark the block `bash` (or `bash illustration`)"
                )
                break
    return out


def _doc_id(doc: Path) -> str:
    return doc.stem


# --------------------------------------------------------------------------- running


WORKER = textwrap.dedent(
    r"""
    import ast, asyncio, inspect, json, os, sys, traceback, types
    proto = os.fdopen(os.dup(1), "w")
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    ns = module.__dict__
    for line in sys.stdin:
        cmd = json.loads(line)
        saved = {k: os.environ.get(k) for k in [*cmd["env"], *cmd["unset"]]}
        os.environ.update(cmd["env"])
        for k in cmd["unset"]:
            os.environ.pop(k, None)
        error = None
        with open(cmd["out"], "wb") as fh:
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(fh.fileno(), 1); os.dup2(fh.fileno(), 2)
            try:
                code = compile(cmd["code"], cmd["where"], "exec",
                               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                if code.co_flags & inspect.CO_COROUTINE:
                    asyncio.run(eval(code, ns))
                else:
                    exec(code, ns)
            except BaseException:
                error = traceback.format_exc()
            finally:
                sys.stdout.flush(); sys.stderr.flush()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proto.write(json.dumps({"error": error}) + "\n"); proto.flush()
    """
)


class PythonWorker:
    """One interpreter per Markdown file: python blocks share its namespace, in order."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def run(self, block: Block, out: Path, env: dict[str, str], unset: list[str]) -> str | None:
        """Execute the block; its traceback, or None when it ran through."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        # padded so that a traceback's line numbers are the Markdown file's
        code = "\n" * block.line + block.text
        where = block.where.rsplit(":", 1)[0]
        cmd = {"code": code, "where": where, "out": str(out), "env": env}
        cmd["unset"] = unset
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], BLOCK_TIMEOUT)
        if not ready:
            self.close()
            return f"timed out after {BLOCK_TIMEOUT:.0f} s"
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return f"the Python worker died (exit code {self.proc.wait()})"
            if line.startswith('{"error"'):
                return json.loads(line)["error"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def docs_llm() -> Iterator[FakeLLMServer]:
    """The local OpenAI-compatible test server that `llm` blocks talk to."""
    with FakeLLMServer(unknown="generic") as server:
        yield server


@pytest.fixture(scope="module")
def shared_embeddings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One document-vector cache for every scratch folder (vectors depend on the text only)."""
    return tmp_path_factory.mktemp("docs_embeddings")


def _base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENDPOINT_VARS}
    env.update(
        RAGJUDGE_HOME=str(home),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(REPO),  # the blocks run this tree's ragjudge (a worktree's, not the venv's)
    )
    return env


def _llm_env(server: FakeLLMServer) -> dict[str, str]:
    return {
        "RAGJUDGE_BASE_URL": server.base_url,
        "RAGJUDGE_API_KEY": LLM_KEY,
        "RAGJUDGE_MODEL": LLM_MODEL,
        "RAGJUDGE_TIMEOUT": "10",
        "RAGJUDGE_BACKOFF": "0.01",
        "RAGJUDGE_BACKOFF_MAX": "0.05",
    }


def _scratch(tmp: Path, shared_embeddings: Path) -> tuple[Path, Path]:
    work = tmp / "work"
    shutil.copytree(REPO / "datasets", work / "datasets")
    venv = Path(sys.prefix)
    if venv != Path(sys.base_prefix):
        (work / ".venv").symlink_to(venv, target_is_directory=True)
    home = tmp / "home"
    home.mkdir()
    (home / "embeddings").symlink_to(shared_embeddings, target_is_directory=True)
    return work, home


def _failure(block: Block, what: str, output: str) -> str:
    tail = output[-6000:]
    return (
        f"{block.where}: block failed ({what})\n"
        f"--- block ({block.info or 'plain'}) ---\n{block.text}"
        f"--- output ---\n{tail}"
    )


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_doc_blocks_run(
    doc: Path,
    tmp_path: Path,
    docs_llm: FakeLLMServer,
    shared_embeddings: Path,
) -> None:
    """Every runnable block of the file runs, in order, in the file's own scratch folder."""
    run_doc_blocks(doc, tmp_path, docs_llm, shared_embeddings)


def run_doc_blocks(
    doc: Path,
    tmp_path: Path,
    docs_llm: FakeLLMServer,
    shared_embeddings: Path,
    extra_env: dict[str, str] | None = None,
) -> Path | None:
    """Run the file's blocks (module docstring) with ``extra_env`` added to every block's
    environment; fails the test at the first block that fails. Returns the scratch
    ``RAGJUDGE_HOME`` (None when nothing in the file runs)."""
    blocks = parse_blocks(doc)
    undecided = [f"{b.where}: {p}" for b in blocks for p in decision_problems(b)]
    assert not undecided, "\n".join(undecided)
    if not any(b.action in ("bash", "python") for b in blocks):
        return None  # nothing runs here; test_every_block_has_a_decision checks the rest
    work, home = _scratch(tmp_path, shared_embeddings)
    env = {**_base_env(home), **(extra_env or {})}
    llm = _llm_env(docs_llm)
    worker: PythonWorker | None = None
    try:
        for n, block in enumerate(blocks):
            if block.action == "write":
                assert block.file is not None
                target = work / block.file
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text, encoding="utf-8")
            elif block.action == "bash":
                script = tmp_path / f"block{n:02d}.sh"
                script.write_text(block.text, encoding="utf-8")
                try:
                    proc = subprocess.run(
                        ["bash", "-e", str(script)],
                        cwd=work,
                        env={**env, **llm} if block.llm else env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                        timeout=BLOCK_TIMEOUT,
                    )
                except subprocess.TimeoutExpired as exc:
                    out = exc.output or ""
                    if isinstance(out, bytes):
                        out = out.decode(errors="replace")
                    pytest.fail(_failure(block, f"timed out after {BLOCK_TIMEOUT:.0f} s", out))
                if proc.returncode != 0:
                    pytest.fail(_failure(block, f"exit code {proc.returncode}", proc.stdout))
            elif block.action == "python":
                if worker is None:
                    worker = PythonWorker(work, env)
                out_path = tmp_path / f"block{n:02d}.out"
                error = worker.run(block, out_path, llm if block.llm else {}, [])
                if error is not None:
                    output = out_path.read_text(errors="replace") if out_path.exists() else ""
                    pytest.fail(_failure(block, "Python raised", output + "\n" + error))
    finally:
        if worker is not None:
            worker.close()
    return home


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_block_has_a_decision(doc: Path) -> None:
    """Each block runs, is written to a file, is marked `illustration`, or is data that
    parses and holds no commands; anything else (an unknown info string) fails."""
    problems = []
    for block in parse_blocks(doc):
        problems += [f"{block.where}: {p}" for p in decision_problems(block)]
        problems += [f"{block.where}: {p}" for p in data_problems(block)]
    assert not problems, "\n".join(problems)


def test_parser_reads_the_convention(tmp_path: Path) -> None:
    """The parser sees info strings, flags, file names, nested fences and line numbers."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "intro\n"
        "```bash llm\nragjudge llm check\n```\n"
        "````markdown\n```python\nnot a block\n```\n````\n"
        "```yaml file=t.yaml\na: 1\n```\n"
        "```bash illustration\ncrontab -e\n```\n"
        "```\nragjudge sweep\n```\n"
        "```rust\nfn main() {}\n```\n",
        encoding="utf-8",
    )
    blocks = parse_blocks(doc)
    assert [(b.line, b.lang, b.action) for b in blocks] == [
        (2, "bash", "bash"),
        (5, "markdown", "data"),
        (10, "yaml", "write"),
        (13, "bash", "skip"),
        (16, "", "data"),
        (19, "rust", "data"),
    ]
    assert blocks[0].llm and blocks[2].file == "t.yaml"
    assert "```python" in blocks[1].text
    assert data_problems(blocks[4]) and not data_problems(blocks[1])
    assert decision_problems(blocks[5]) and not decision_problems(blocks[3])


def test_copied_demo_config_runs_from_any_folder(tmp_path: Path) -> None:
    """README's `cp datasets/demo/sweep.yaml my-sweep.yaml`: the copy names the bundled demo set
    (`bundled:demo`), not a folder relative to where it was copied; a wrong name is refused."""
    from ragjudge.errors import ConfigError
    from ragjudge.resources import demo_dir
    from ragjudge.sweep.config import load_config

    copy = tmp_path / "my-sweep.yaml"
    shutil.copy(REPO / "datasets" / "demo" / "sweep.yaml", copy)
    assert Path(load_config(copy).dataset.path) == demo_dir()
    copy.write_text(copy.read_text().replace("bundled:demo", "bundled:dmeo"))
    with pytest.raises(ConfigError, match=r"no bundled data set 'dmeo'; bundled: bundled:demo"):
        load_config(copy)
