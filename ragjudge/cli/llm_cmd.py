"""Commands of the LLM layer: ``ragjudge fake-llm`` (the local test server) and
``ragjudge llm check | dry-run | ledger | cache``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ragjudge.errors import ConfigError, DataError

if TYPE_CHECKING:
    from ragjudge.llm import LLMSettings

llm_app = typer.Typer(help="The LLM endpoint: check it, estimate a run's cost, read ledgers.")


def fake_llm(
    port: int = typer.Option(8765, help="Port (0 picks a free one)."),
    host: str = typer.Option("127.0.0.1", help="Interface; loopback only by default."),
    latency: float = typer.Option(0.0, help="Seconds each request waits before answering."),
    fault_rate: str = typer.Option(
        "", help="Faults per request, e.g. 429=0.2,500=0.05,malformed=0.05,hang=0.01,drop=0.01"
    ),
    seed: int = typer.Option(0, help="Seed of the fault draws."),
    retry_after: float = typer.Option(1.0, help="Seconds sent in Retry-After with a 429."),
    hang: float = typer.Option(120.0, help="Seconds a 'hang' fault waits."),
    reject_json_schema: bool = typer.Option(False, help="Answer json_schema requests with 400."),
    like_llama_cpp: bool = typer.Option(
        False, help="Answer json_schema requests with a 500, as llama-cpp-python's server does."
    ),
    omit_usage: bool = typer.Option(False, help="Leave usage out of responses."),
    generic: bool = typer.Option(
        False, help="Answer unknown templates generically instead of with a 400."
    ),
    log: Path | None = typer.Option(None, help="Append one JSON line per request here."),
    rpm: int | None = typer.Option(
        None, min=1, help="Chat requests per minute served; more get a 429 (like a provider)."
    ),
) -> None:
    """Serve the local OpenAI-compatible test server until stopped (Ctrl-C)."""
    from ragjudge.testing.faults import FaultPlan
    from ragjudge.testing.server import FakeLLMServer

    plan = FaultPlan.parse(fault_rate, seed=seed, retry_after=retry_after) if fault_rate else None
    if plan is not None:
        plan.hang_seconds = hang
    server = FakeLLMServer(
        host=host,
        port=port,
        latency=latency,
        faults=plan,
        log_path=log,
        reject_json_schema=reject_json_schema,
        like_llama_cpp=like_llama_cpp,
        omit_usage=omit_usage,
        unknown="generic" if generic else "error",
        rpm=rpm,
    )

    def ready(srv: FakeLLMServer) -> None:
        print(
            f"fake LLM server on {srv.base_url} (latency {latency:g} s, faults "
            f"{fault_rate or 'none'}, responders: {', '.join(srv.responder_modules)})",
            flush=True,
        )
        print(f"  export OPENAI_BASE_URL={srv.base_url} OPENAI_API_KEY=sk-local", flush=True)

    try:
        server.serve_forever(on_ready=ready)
    except OSError as exc:
        raise ConfigError(f"cannot serve on {host}:{port}: {exc}; pick another --port") from None
    except KeyboardInterrupt:
        pass


@llm_app.command("check")
def check(
    call: bool = typer.Option(True, help="Also send one tiny chat call."),
) -> None:
    """Show the LLM settings (never the key), list the endpoint's models, try one call and
    one judge call in each structured mode (what works, and the mode ``auto`` uses)."""
    from ragjudge.llm import LLMClient, LLMSettings
    from ragjudge.schema import PromptRef
    from ragjudge.userconfig import config_path

    if not LLMSettings.configured():
        print(
            "no LLM endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY unset, no base_url "
            "in ragjudge.toml): ragjudge uses its offline judges and generator"
        )
        return
    settings = LLMSettings.from_env()
    print(f"{'config file':>18}: {config_path() or 'none'}")
    for k, v in settings.safe_dict().items():
        print(f"{k:>18}: {v}")

    async def run() -> None:
        async with LLMClient(settings, cache=False) as client:
            models = await client.list_models()
            print(f"{'models':>18}: {', '.join(models[:20])}{' ...' if len(models) > 20 else ''}")
            if settings.model not in models:
                print(
                    f"warning: {settings.model!r} is not in the endpoint's list; set RAGJUDGE_MODEL"
                )
            if call:
                res = await client.chat(
                    [{"role": "user", "content": "Reply with the word: ok"}],
                    prompt=PromptRef(name="test/echo", version="v1"),
                    max_tokens=5,
                )
                if res.error is not None:
                    raise ConfigError(f"test call failed: {res.error.message}")
                print(
                    f"{'test call':>18}: ok ({res.usage.prompt_tokens}+"
                    f"{res.usage.completion_tokens} tokens, {res.attempts} attempt(s))"
                )
                await _probe_modes(settings)

    asyncio.run(run())


async def _probe_modes(settings: LLMSettings) -> None:
    """One answer-relevancy judge call in each structured mode; prints what works, teaches
    ``auto`` which modes the endpoint refuses (``ragjudge.llm.modes``) and prints its choice."""
    from ragjudge.judges.llm.schemas import RelevancyOut
    from ragjudge.llm import LLMClient, modes
    from ragjudge.llm.structured import MODES
    from ragjudge.prompts import load_prompt

    prompt = load_prompt("judges/answer_relevancy")
    messages = prompt.render(
        question="What is the capital of France?", answer="Paris is the capital of France."
    )
    memory = modes.memory()
    key = ""
    refused: dict[str, str] = {}
    working = []
    for mode in MODES:
        probe = settings.model_copy(update={"structured_mode": mode, "max_attempts": 2})
        async with LLMClient(probe, cache=False) as client:
            key = client.mode_key
            res = await client.structured(messages, RelevancyOut, prompt=prompt.ref)
        if res.ok:
            working.append(mode)
            shown = (
                f"ok ({res.attempts} request(s){', repaired' if res.meta.get('repaired') else ''})"
            )
        elif res.error is not None and "does not accept structured mode" in res.error.message:
            refused[mode] = res.error.message
            shown = f"refused: {_short(res.error.message.split(': ', 1)[-1], 300)}"
        else:
            kind = res.error.kind if res.error is not None else "no value"
            msg = res.error.message.split(": ", 1)[-1] if res.error is not None else ""
            shown = f"{kind}: {_short(msg, 160)}"
        print(f"{'mode ' + mode:>18}: {shown}")
    # what the probe saw replaces what earlier runs learned: a mode dropped then and working
    # now is used again
    chosen = memory.learn(key, refused)
    print(f"{'auto uses':>18}: {chosen} (remembered in {memory.path})")
    if not working:
        raise ConfigError(
            f"no structured mode gave a usable reply from {settings.display_url} with model "
            f"{settings.model!r}: every judge would fail there (the modes' errors are above)"
        )


def _short(text: str, most: int) -> str:
    """``text`` cut at a word boundary to at most ``most`` characters, "..." marking a cut."""
    if len(text) <= most:
        return text
    return text[: most - 3].rsplit(" ", 1)[0] + "..."


@llm_app.command("dry-run")
def dry_run_cmd(
    plan: Path = typer.Argument(
        ..., help='JSONL: one planned call per line, {"messages": [...]} or a list of messages.'
    ),
    model: str | None = typer.Option(None, help="Model to price (default: RAGJUDGE_MODEL)."),
    completion_tokens: int = typer.Option(256, min=0, help="Expected completion tokens per call."),
    prices: Path | None = typer.Option(None, help="Price table (JSON/YAML) over the defaults."),
    context_window: int | None = typer.Option(None, min=1, help="Count calls over this window."),
) -> None:
    """Estimate tokens and cost of a planned set of calls before sending anything."""
    from ragjudge.llm import LLMSettings, PriceTable, dry_run

    planned = []
    try:
        raw_lines = plan.read_bytes().splitlines()
    except OSError as exc:
        raise DataError(str(exc), path=plan) from None
    for i, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1}); save "
                "the plan as UTF-8",
                path=plan,
                line=i,
            ) from None
        if i == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark, as the other readers allow
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"not JSON: {exc}", path=plan, line=i) from None
        msgs = obj.get("messages") if isinstance(obj, dict) else obj
        if not isinstance(msgs, list) or not all(isinstance(m, dict) for m in msgs):
            raise DataError("expected a list of chat messages", path=plan, line=i)
        for j, m in enumerate(msgs, start=1):
            if not isinstance(m.get("role"), str) or not ("content" in m or "tool_calls" in m):
                raise DataError(
                    f"message {j} needs a 'role' and a 'content' (got keys {sorted(m)})",
                    path=plan,
                    line=i,
                )
        planned.append(msgs)
    table = PriceTable.from_file(prices) if prices else PriceTable()
    name = model or LLMSettings.from_env().model
    est = dry_run(
        planned,
        table,
        model=name,
        completion_tokens=completion_tokens,
        context_window=context_window,
    )
    print(
        f"calls {est.calls}, prompt tokens {est.prompt_tokens:,}, completion tokens "
        f"{est.completion_tokens:,} (assumed), largest prompt {est.max_prompt_tokens:,}"
    )
    cost = f"${est.cost_usd:,.4f}" if est.priced else f"unpriced (add {name} to --prices)"
    print(f"model {name}: estimated cost {cost}")
    if est.over_context:
        print(f"{est.over_context} call(s) exceed the context window of {context_window}")


@llm_app.command("ledger")
def ledger_cmd(
    path: Path = typer.Argument(..., help="A ledger JSONL file (Ledger.to_jsonl)."),
    by: str = typer.Option("judge", help="Comma-separated tags to group by (e.g. judge,k)."),
) -> None:
    """Summarise a ledger: calls, cache hits, repairs, attempts, tokens, cost per group."""
    from rich.console import Console
    from rich.table import Table

    from ragjudge.llm import Ledger

    ledger = Ledger()
    for e in Ledger.read_jsonl(path):
        ledger.record(e)
    keys = tuple(k.strip() for k in by.split(",") if k.strip())
    cols = [
        "calls",
        "cached",
        "repairs",
        "attempts",
        "failed_attempts",
        "errors",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
    ]
    table = Table(*keys, *cols)
    rows = ledger.summary(by=keys)
    for row in rows:
        cells = [str(row[k]) for k in keys]
        cells += [f"{row[c]:.4f}" if c == "cost_usd" else str(row[c]) for c in cols]
        table.add_row(*cells)
    Console().print(table)
    unanswered = sum(row["unanswered"] for row in rows)
    if unanswered:
        print(
            f"{unanswered} attempt(s) were sent with no answer recorded (in flight when the "
            "process stopped); the endpoint may have served and billed them"
        )


@llm_app.command("cache")
def cache_cmd() -> None:
    """Entries in the LLM cache (``<RAGJUDGE_HOME>/cache.sqlite``, or the database of
    ``RAGJUDGE_LLM_CACHE_URL``) per model and prompt."""
    from ragjudge.llm.opencache import open_cache

    cache = open_cache()
    stats = cache.stats()
    print(f"{cache.location}: {stats['entries']} entries")
    for model, prompt, count in stats["by_prompt"]:
        print(f"  {model}  {prompt}: {count}")


def register(app: typer.Typer) -> None:
    """Add this area's commands to the app."""
    app.command("fake-llm")(fake_llm)
    app.add_typer(llm_app, name="llm")
