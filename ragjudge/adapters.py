"""A user's parts as the Protocols of ``ragjudge.protocols``, and their identity in a run.

- ``load_object("package.module:attr")``: an import path (as a sweep config names a custom
  retriever, generator or judge) -> the object; the working directory is importable, as for
  ``python -m``. A bad path, or a module whose own code fails as it is imported, is a
  ``ConfigError`` naming it (and the file and line where that module failed).
- ``as_retriever(obj)``: a ``Retriever`` is kept; a LangChain retriever (``invoke(question)``
  returning documents) or a callable ``fn(question, k)``, sync or async, returning a ranked
  list of ``(doc_id, text)`` pairs, ``Document``s or LangChain documents, becomes a
  ``FunctionRetriever``. The documents it returns form the corpus the answers are generated
  from (``FunctionRetriever.documents``).
- ``as_generator(obj)``: a ``Generator`` is kept; a LangChain runnable
  (``invoke({"question", "contexts"})``) or a callable ``fn(question, contexts)``, sync or
  async, with ``contexts`` the ranked texts, returning the answer text, becomes a
  ``FunctionGenerator``.
- ``identity(obj)``: ``name@version`` of a component. The name is its ``name`` attribute or
  ``module:qualname``; the version its ``version`` attribute, else the first 12 hex of the
  sha256 of the code it runs: its source and, for a part defined in a user module, the whole
  source of that module and of the user modules it reaches (``source_version``: an edited
  helper the function calls is a changed component), else ``unversioned``. A sweep's
  definition hash includes the identity of every custom part, so two different sets of parts
  never resume into each other's run.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ragjudge.errors import ConfigError, DataError, library_roots, raised_at
from ragjudge.protocols import Generator, Retriever
from ragjudge.schema import Answer, Document, Ranking, ScoredDoc, TestCase, TestSet

T = TypeVar("T")


def import_user_module(module_name: str, what: str) -> Any:
    """The module ``module_name``, imported with the working directory importable (as for
    ``python -m``); a module that is not there, or whose own code fails as it is imported (a
    syntax error, an exception), is a ``ConfigError``: ``cannot import WHAT: ...``, naming the
    file and line where it failed."""
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {what}: {exc}") from None
    except Exception as exc:  # the module's own code failed: say where, as for a bad input
        at = f"{exc.filename}:{exc.lineno}" if isinstance(exc, SyntaxError) else raised_at(exc)
        raise ConfigError(
            f"cannot import {what}: {type(exc).__name__} at {at}: "
            f"{getattr(exc, 'msg', None) or exc}"
        ) from None


def load_object(path: str) -> Any:
    """The object an import path ``package.module:attr`` (``attr`` may be dotted) names."""
    module_name, sep, attr = path.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{path!r} is not an import path: write 'package.module:object'")
    obj = import_user_module(module_name, f"{module_name!r} (from {path!r})")
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{path!r}: module {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def is_import_path(value: str) -> bool:
    """``package.module:attr`` (built-in component names never contain a colon)."""
    module, sep, attr = value.partition(":")
    return bool(sep and module and attr) and all(p.isidentifier() for p in module.split("."))


def identity(obj: Any) -> str:
    """``name@version`` of a component (module docstring)."""
    target = getattr(obj, "wrapped", obj)
    name = getattr(obj, "name", None)
    if not isinstance(name, str) or not name:
        kind = target if inspect.isfunction(target) or inspect.isclass(target) else type(target)
        name = f"{kind.__module__}:{kind.__qualname__}"
    version = getattr(obj, "version", None)
    if not isinstance(version, str) or not version:
        version = source_version(target)
    return f"{name}@{version}"


def source_version(obj: Any) -> str:
    """First 12 hex of the sha256 of the code ``obj`` runs: its own source (or its class's),
    then, when it is defined in a user module, the whole source of that module and of every
    user module reached from it (``user_modules``), so an edited helper, constant or import is
    a new version. ``unversioned`` when no source can be read."""
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) else type(obj)
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        return "unversioned"
    digest = hashlib.sha256(source.encode())
    for name, text in user_modules(sys.modules.get(getattr(target, "__module__", "") or "")):
        digest.update(f"\0{name}\0".encode())
        digest.update(text.encode())
    return digest.hexdigest()[:12]


def _user_file(module: Any) -> Path | None:
    """The source file of ``module`` when it is a user module (not under a library root)."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    path = Path(file).resolve()
    if any(path.is_relative_to(root) for root in library_roots()):
        return None
    return path if path.is_file() else None


def user_modules(start: Any, limit: int = 200) -> list[tuple[str, str]]:
    """(name, source) of ``start`` when it is a user module and of every user module reached
    from it through its globals (modules imported, functions and classes imported from
    them), sorted by name; at most ``limit`` modules."""
    found: dict[str, str] = {}
    todo = [start] if start is not None else []
    while todo and len(found) < limit:
        module = todo.pop()
        name = getattr(module, "__name__", None)
        path = _user_file(module)
        if not isinstance(name, str) or name in found or path is None:
            continue
        try:
            found[name] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for value in list(vars(module).values()):
            ref = (
                value
                if inspect.ismodule(value)
                else sys.modules.get(str(getattr(value, "__module__", "") or ""))
            )
            if ref is not None and getattr(ref, "__name__", None) not in found:
                todo.append(ref)
    return sorted(found.items())


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Await ``make()`` from synchronous code, also while an event loop runs in this thread
    (then on a worker thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(make))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(make)).result()


async def _await(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, awaited when it is a coroutine function or returns an awaitable."""
    out = fn(*args)
    if inspect.isawaitable(out):
        out = await out
    return out


# ----------------------------------------------------------------------------- retrievers


def _as_document(hit: Any, where: str) -> Document:
    if isinstance(hit, Document):
        return hit
    if isinstance(hit, tuple | list) and len(hit) == 2:
        return Document(id=str(hit[0]), text=str(hit[1]))
    content = getattr(hit, "page_content", None)
    if isinstance(content, str):  # a LangChain Document
        meta = getattr(hit, "metadata", None) or {}
        doc_id = getattr(hit, "id", None) or meta.get("id") or meta.get("doc_id")
        if not doc_id:
            raise DataError(f"{where}: a returned document has no id (set Document.id)")
        return Document(id=str(doc_id), text=content)
    raise DataError(
        f"{where}: expected (doc_id, text) pairs or Documents, got {type(hit).__name__}"
    )


class FunctionRetriever:
    """A retrieval function as a ``Retriever``. Each question is asked once per k (results
    are kept), so retrieving again at the same k costs nothing."""

    def __init__(self, fn: Callable[[str, int], Any], *, name: str | None = None) -> None:
        self.wrapped = fn
        self.name = name or identity(fn).rsplit("@", 1)[0]
        self.version = source_version(fn)
        self.documents: dict[str, Document] = {}
        self._seen: dict[tuple[str, int], list[Document]] = {}

    def index(self, documents: Sequence[Document]) -> None:
        """The function owns its index: nothing to do."""

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        todo = {q: text for q, text in queries.items() if (text, k) not in self._seen}

        async def ask_all() -> list[Any]:
            return list(
                await asyncio.gather(*(_call(self.wrapped, text, k) for text in todo.values()))
            )

        for (qid, text), hits in zip(todo.items(), run_sync(ask_all) if todo else [], strict=True):
            if hits is None or isinstance(hits, str | bytes):
                raise DataError(f"retriever {self.name} returned {hits!r} for query {qid!r}")
            docs: list[Document] = []
            for hit in list(hits)[:k]:
                doc = _as_document(hit, f"retriever {self.name}, query {qid!r}")
                if all(d.id != doc.id for d in docs):
                    docs.append(doc)
                    self.documents.setdefault(doc.id, doc)
            self._seen[(text, k)] = docs
        out = {}
        for qid, text in queries.items():
            docs = self._seen[(text, k)]
            scored = [ScoredDoc(doc_id=d.id, score=1.0 / r) for r, d in enumerate(docs, 1)]
            out[qid] = Ranking(query_id=qid, docs=scored)
        return out


def with_retrieved(testset: TestSet, retriever: Any, k: int) -> TestSet:
    """``testset`` with the documents a ``FunctionRetriever`` returns for its questions at
    ``k`` added to the corpus (asked now, kept for the run); any other retriever owns an
    index of the test set's own documents, and the test set is returned as is."""
    if not isinstance(retriever, FunctionRetriever):
        return testset
    retriever.retrieve({c.id: c.question for c in testset.cases}, k)
    docs = {d.id: d for d in testset.documents}
    for doc in retriever.documents.values():
        docs.setdefault(doc.id, doc)
    return testset.model_copy(update={"documents": list(docs.values())})


def as_retriever(obj: Any) -> Retriever:
    """``obj`` as a ``Retriever`` (module docstring)."""
    if isinstance(obj, Retriever):
        return obj
    invoke = getattr(obj, "invoke", None)
    if callable(invoke) and not callable(obj):
        name = f"langchain({type(obj).__name__})"
        fn = FunctionRetriever(lambda question, k: invoke(question)[:k], name=name)
        fn.version = source_version(obj)
        return fn
    if callable(obj):
        return FunctionRetriever(obj)
    raise ConfigError(
        f"{obj!r} is not a retriever: pass a function (question, k) -> [(doc_id, text), ...], "
        "a LangChain retriever or an object with index() and retrieve()"
    )


# ----------------------------------------------------------------------------- generators


def _answer_text(out: Any, where: str) -> str:
    text = getattr(out, "content", out)  # a LangChain message
    if not isinstance(text, str):
        raise DataError(f"{where} returned {type(out).__name__}, not the answer text")
    return text


class FunctionGenerator:
    """A generation function ``fn(question, contexts)`` as a ``Generator``."""

    def __init__(self, fn: Callable[[str, list[str]], Any], *, name: str | None = None) -> None:
        self.wrapped = fn
        self.name = name or identity(fn).rsplit("@", 1)[0]
        self.version = source_version(fn)

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        texts = [d.text for d in contexts]
        out = await _call(self.wrapped, case.question, texts)
        if isinstance(out, Answer):
            return out
        return Answer(
            case_id=case.id,
            k=k,
            text=_answer_text(out, f"generator {self.name}"),
            context_ids=[d.id for d in contexts],
            contexts=texts,
            generator=self.name,
        )


def as_generator(obj: Any) -> Generator:
    """``obj`` as a ``Generator`` (module docstring)."""
    if isinstance(obj, Generator):
        return obj
    ainvoke = getattr(obj, "ainvoke", None)
    if callable(ainvoke) and not inspect.isfunction(obj):
        name = f"langchain({type(obj).__name__})"

        async def run(question: str, contexts: list[str]) -> Any:
            return await ainvoke({"question": question, "contexts": contexts})

        gen = FunctionGenerator(run, name=name)
        gen.version = source_version(obj)
        return gen
    if callable(obj):
        return FunctionGenerator(obj)
    raise ConfigError(
        f"{obj!r} is not a generator: pass a function (question, contexts) -> answer text, "
        "a LangChain runnable or an object with an async generate()"
    )
