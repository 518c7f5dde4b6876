"""``ragjudge judge`` (score question/answer/contexts rows) and ``ragjudge generate`` (retrieve
top-k contexts for a test set and answer them, producing such rows)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from ragjudge.cli.executor_opts import ADDRESS, EXECUTOR, WORKERS, executor_config
from ragjudge.errors import ConfigError

"""Built-in backends; a plugin may register judges under any other backend name."""


def parse_names(judges: str | None) -> list[str]:
    """The names of ``--judges`` (None: the five built-ins, ``JUDGE_NAMES``)."""
    if judges is None:
        from ragjudge.judges.registry import JUDGE_NAMES

        return list(JUDGE_NAMES)
    names = [n.strip() for n in judges.split(",") if n.strip()]
    if not names:
        raise ConfigError("--judges names no judge")
    if len(set(names)) != len(names):
        raise ConfigError(f"--judges repeats a name: {judges}")
    return names


def summary_table(aggregates: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="judges: mean ± half-width of the 95% bootstrap CI")
    for col in ("judge", "mean ± CI", "scored / total", "statuses"):
        table.add_column(col)
    for name, agg in aggregates.items():
        half = (agg.ci_high - agg.ci_low) / 2 if agg.mean is not None else 0.0
        mean = "—" if agg.mean is None else f"{agg.mean:.3f} ± {half:.3f}"
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(agg.status_counts.items()))
        table.add_row(name, mean, f"{agg.n_scored} / {agg.n_total}", statuses)
    return table


def write_ledger(judges: Sequence[Any], path: Path) -> None:
    """The ledger entries of the judges' LLM clients (judge clients share one ledger) as
    JSONL at ``path``; none for judges without a client."""
    from ragjudge.llm import Ledger, LLMClient

    merged, seen = Ledger(), set()
    for judge in judges:
        client = getattr(judge, "client", None)
        if isinstance(client, LLMClient) and id(client.ledger) not in seen:
            seen.add(id(client.ledger))
            for entry in client.ledger.entries:
                merged.record(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    merged.to_jsonl(path)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``--option KEY=VALUE`` pairs as keyword options, each VALUE read as JSON (a bare word
    that is not JSON stays a string); a pair without ``=`` is a ``ConfigError`` naming it."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--option {pair!r}: expected KEY=VALUE, e.g. --option low=0.1")
        try:
            out[key.strip()] = json.loads(raw)
        except ValueError:
            out[key.strip()] = raw
    return out


def register(app: typer.Typer) -> None:
    """Add ``judge`` and ``generate`` to the app."""

    @app.command("judge")
    def judge(
        input: Path = typer.Option(..., "--input", "-i", help="Rows: question, answer, contexts."),
        judges: str | None = typer.Option(
            None, "--judges", help="Comma-separated names (default: the five built-ins)."
        ),
        backend: str | None = typer.Option(
            None,
            "--backend",
            help="offline | llm | ragas | cascade | a plugin's (default: llm if configured).",
        ),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Result rows, JSON Lines (a .jsonl file)."
        ),
        json_summary: Path | None = typer.Option(None, "--json", help="Summary as JSON."),
        ledger: Path | None = typer.Option(
            None,
            "--ledger",
            help="Write every LLM call and HTTP attempt of this process here (JSONL; read it "
            "with `ragjudge llm ledger`).",
        ),
        concurrency: int | None = typer.Option(
            None,
            "--concurrency",
            min=1,
            help="Calls in flight (default: RAGJUDGE_MAX_CONCURRENCY, else ragjudge.toml's "
            "[llm] max_concurrency, else 8).",
        ),
        progress: bool = typer.Option(True, "--progress/--no-progress"),
        option: list[str] = typer.Option(
            [],
            "--option",
            help="KEY=VALUE for every judge's factory, VALUE read as JSON (the cascade's band: "
            "--option low=0.08 --option high=0.5 --option 'platt=[1.373,-2.398]').",
        ),
        plugin: list[str] = typer.Option(
            [],
            "--plugin",
            help="Module to import first (registers your own judges); the working directory "
            "is importable.",
        ),
        executor: str | None = EXECUTOR,
        ray_address: str | None = ADDRESS,
        workers: int | None = WORKERS,
    ) -> None:
        """Score each row with the judges; print mean ± CI and coverage per judge, and the
        distinct error of every unscored result. Exit code 2, one line, when the endpoint
        cannot be used (a pre-flight call finds an unreachable endpoint, a bad key or an unknown
        model before any row is judged) or a judge's coverage is below the floor
        (``RAGJUDGE_MIN_COVERAGE``): the rows are then still written. ``--executor ray``
        judges the rows in batches on Ray workers (``--concurrency`` calls in flight across
        all of them; ``RAGJUDGE_RPM``/``RAGJUDGE_TPM`` kept for the whole cluster)."""
        from rich.console import Console

        from ragjudge.cli.failures import check_endpoint_used, failure_lines
        from ragjudge.judges.coverage import coverage_floor
        from ragjudge.judges.items import output_rows, read_items, write_jsonl
        from ragjudge.judges.registry import build_judges, default_backend, import_plugins
        from ragjudge.judges.runner import estimate_spend, run_judges
        from ragjudge.llm import preflight_judges
        from ragjudge.llm.settings import resolve_concurrency
        from ragjudge.schema import TokenUsage
        from ragjudge.stats import aggregate

        if output is not None and output.suffix.lower() not in (".jsonl", ".ndjson"):
            raise ConfigError(
                f"--output {output}: the rows are written as JSON Lines; name the file .jsonl "
                "(pandas.read_json(PATH, lines=True) reads it)"
            )
        import_plugins(plugin)
        concurrency = resolve_concurrency(concurrency)
        coverage_floor()  # a bad floor is refused before any work, not after the calls are paid
        names = parse_names(judges)
        ex = executor_config(executor, ray_address, workers)
        rows, items = read_items(input)
        chosen = backend or default_backend()
        options = parse_options(option)
        built = build_judges(names, chosen, concurrency, options)
        asyncio.run(preflight_judges(built))
        estimates = asyncio.run(estimate_spend(built, items))
        for est in estimates:
            Console(stderr=True).print(f"pre-flight: {est.describe()}", highlight=False)
        if ex.kind == "ray":
            from ragjudge.distributed.jobs import judge_on_ray

            by_name = judge_on_ray(
                names,
                chosen,
                plugin,
                items,
                address=ex.address,
                num_workers=ex.num_workers,
                concurrency=concurrency,
                options=options,
            )
            results = {j.name: by_name[n] for n, j in zip(names, built, strict=True)}
        else:
            results = asyncio.run(
                run_judges(built, items, concurrency=concurrency, progress=progress)
            )
        aggregates = {name: aggregate(rs) for name, rs in results.items()}
        usage = sum((r.usage for rs in results.values() for r in rs), TokenUsage())
        console = Console()
        console.print(summary_table(aggregates))
        console.print(
            f"backend {chosen}: {len(items)} rows, {usage.calls} calls "
            f"({usage.cached_calls} cached), {usage.prompt_tokens} prompt + "
            f"{usage.completion_tokens} completion tokens",
            highlight=False,
        )
        if output is not None:
            write_jsonl(output_rows(rows, items, results), output)
        if json_summary is not None:
            json_summary.parent.mkdir(parents=True, exist_ok=True)
            doc = {
                "input": str(input),
                "backend": chosen,
                "n_rows": len(items),
                "judges": {n: a.model_dump(mode="json") for n, a in aggregates.items()},
                "usage": usage.model_dump(mode="json"),
                "preflight": [e.model_dump(mode="json") for e in estimates],
            }
            json_summary.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        if ledger is not None:
            write_ledger(built, ledger)
        for line in failure_lines(results):
            console.print(line, style="yellow", highlight=False, markup=False, soft_wrap=True)
        check_endpoint_used(results)

    @app.command("generate")
    def generate(
        dataset: Path = typer.Option(..., "--dataset", "-d", help="Test set folder."),
        retriever: str = typer.Option("bm25", "--retriever", help="bm25 | dense | hybrid."),
        k: int = typer.Option(5, "--k", min=1, help="Contexts per question."),
        generator: str = typer.Option("extractive", "--generator", help="extractive | chat."),
        output: Path = typer.Option(..., "--output", "-o", help="Rows for `ragjudge judge`."),
        concurrency: int | None = typer.Option(
            None,
            "--concurrency",
            min=1,
            help="Calls in flight (default: RAGJUDGE_MAX_CONCURRENCY, else ragjudge.toml's "
            "[llm] max_concurrency, else 8).",
        ),
    ) -> None:
        """Retrieve the top-k contexts of every test case and answer from them."""
        from rich.console import Console

        from ragjudge.generate import build_generator, generate_answers
        from ragjudge.io import load_testset
        from ragjudge.judges.items import case_row, write_jsonl
        from ragjudge.llm.settings import resolve_concurrency
        from ragjudge.retrieval import build_retriever

        concurrency = resolve_concurrency(concurrency)
        testset = load_testset(dataset)
        ret = build_retriever(retriever)
        ret.index(testset.documents)
        rankings = ret.retrieve({c.id: c.question for c in testset.cases}, k)
        options: dict[str, Any] = {}
        if generator == "chat":
            from ragjudge.llm import default_client

            options["client"] = default_client(max_concurrency=concurrency)
        gen = build_generator(generator, **options)
        answers = asyncio.run(
            generate_answers(
                testset.cases,
                rankings,
                testset.doc_index(),
                [k],
                gen,
                concurrency=concurrency,
            )
        )
        by_id = {c.id: c for c in testset.cases}
        write_jsonl([case_row(by_id[a.case_id], a) for a in answers], output)
        failed = sum(1 for a in answers if a.error)
        abstained = sum(1 for a in answers if a.abstained)
        Console().print(
            f"{len(answers)} answers ({abstained} abstained, {failed} failed) by "
            f"{gen.name} from {retriever} top-{k} -> {output}",
            highlight=False,
            soft_wrap=True,
        )
