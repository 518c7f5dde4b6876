"""Bounded work on hostile input: one 5 MB document through the five offline judges and the
extractive generator, against a 6,000-character document (what the cut keeps) measured in the
same run. Without the cut the 5 MB document kept the offline judges busy for more than 5
minutes at 1 GB; with it the two should cost about the same (ratio near 1).

    HF_HUB_OFFLINE=1 python bench/bench_long_text.py [--mb 5]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import tempfile
import time

from ragjudge.generate import ExtractiveGenerator
from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.judges.runner import run_judges
from ragjudge.schema import Document, JudgeInput, TestCase

WORDS = "The copper mine near the river produced ore for many years before it closed".split()


def text(n_chars: int, seed: int) -> str:
    """Sentences of random demo words (a new seed: no cached sentence is reused)."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < n_chars:
        s = " ".join(rng.choice(WORDS) for _ in range(15)).capitalize() + "."
        out.append(s)
        size += len(s) + 1
    return " ".join(out)[:n_chars]


def measure(
    judges: list, gen: ExtractiveGenerator, doc: str, tag: str
) -> tuple[float, float, dict]:
    item = JudgeInput(
        id=tag,
        question="Where was the copper mine?",
        answer="The copper mine was near the river.",
        contexts=[doc, "Copper was mined near the river."],
        reference="Near the river.",
    )
    t0 = time.perf_counter()
    out = asyncio.run(run_judges(judges, [item], progress=False))
    t_judge = time.perf_counter() - t0
    t0 = time.perf_counter()
    gen.answer(TestCase(id=tag, question=item.question), [Document(id=tag, text=doc)], 1)
    return t_judge, time.perf_counter() - t0, out["faithfulness"][0].evidence.features


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=5.0, help="Size of the long document in MB.")
    args = ap.parse_args()
    import os

    os.environ.setdefault("RAGJUDGE_HOME", tempfile.mkdtemp(prefix="ragjudge-bench-"))
    judges = [create_judge(n, "offline") for n in JUDGE_NAMES]
    gen = ExtractiveGenerator()
    measure(judges, gen, text(500, 0), "warm")  # model loading is not timed
    peer = measure(judges, gen, text(6_000, 1), "peer")
    long = measure(judges, gen, text(int(args.mb * 1_000_000), 2), "long")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{'document':<18}{'judges (s)':>12}{'generator (s)':>15}  cut recorded")
    print(f"{'6,000 chars':<18}{peer[0]:>12.2f}{peer[1]:>15.2f}  {peer[2].get('truncated', 0):g}")
    print(
        f"{f'{args.mb:g} MB':<18}{long[0]:>12.2f}{long[1]:>15.2f}  {long[2].get('truncated', 0):g}"
    )
    print(
        f"ratio long / peer: judges {long[0] / peer[0]:.2f}, generator {long[1] / peer[1]:.2f}; "
        f"peak RSS {rss} MB; characters dropped {long[2].get('context_chars_dropped', 0):,.0f}"
    )


if __name__ == "__main__":
    main()
