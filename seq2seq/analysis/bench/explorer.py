"""How long the attention explorer takes to answer a sentence:
``python scripts/bench.py --explorer RUN [--explorer RUN2] [--sentence "我 爱 中国"]``.

What is timed is what the page's ``POST /api/translate`` does for each run
(:func:`seq2seq.explorer.app.create_app`): the translation, every map (attention, gradient ×
input, integrated gradients, gold) and every intervention the model takes, turned into the
answer's JSON -- in this process, on one thread as ``scripts/serve.py`` runs it, without the
HTTP round trip on the loopback. The sentences: the page's own test sentences at the shortest,
the middle and the longest length of its list (a test sentence whose output is not the
reference gets two sets of maps), then the typed ones given.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

#: Requests timed per sentence (after one untimed, which warms the caches).
REPEATS = 20


def _case(explorers: Sequence[Any], text: str, kind: str, repeats: int) -> dict[str, Any]:
    """One sentence answered ``repeats`` times by every run in turn, as the page asks."""

    def answer() -> bytes:
        answers = [explorer.explain(text) for explorer in explorers]
        return json.dumps({"text": text, "runs": [asdict(a) for a in answers]}).encode()

    body = answer()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        answer()
        times.append((time.perf_counter() - started) * 1000)
    runs = json.loads(body)["runs"]
    first = runs[0]
    return {
        "sentence": text,
        "kind": kind,
        "source_words": len(first["source"]) - 1,  # without <eos>
        "output_words": len(first["output"]),
        # a reading: the maps along the output, and along the reference where they differ
        "readings": sum(len(run["views"]) for run in runs),
        "json_bytes": len(body),
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
    }


def time_explorer(
    runs: Sequence[Path],
    sentences: Sequence[str] = (),
    repeats: int = REPEATS,
    progress: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """Time the explorer of ``runs`` (one, or two side by side) on the page's shortest,
    middle and longest test sentence and on ``sentences``; the document ``--record`` keeps."""
    from seq2seq.explorer.explain import PAGE_IG_STEPS, RunExplorer, run_names
    from seq2seq.runtime import set_threads

    set_threads(1)  # as scripts/serve.py: one thread answers each request
    started = time.perf_counter()
    explorers = [
        RunExplorer.load(name, path) for name, path in zip(run_names(runs), runs, strict=True)
    ]
    examples = explorers[0].examples
    picked = [examples[0], examples[len(examples) // 2], examples[-1]] if examples else []
    cases = [(e.text, "test sentence") for e in dict.fromkeys(picked)]
    cases += [(text, "typed") for text in sentences]
    timings = []
    for text, kind in cases:
        progress(f"explorer: {kind} {text!r}")
        timings.append(_case(explorers, text, kind, repeats))
    described = [
        {
            "name": explorer.name,
            "folder": str(path),
            "attention": explorer.summary.attention,
            "decoder": explorer.summary.decoder,
            "parameters": sum(p.numel() for p in explorer.run.model.parameters()),
        }
        for explorer, path in zip(explorers, runs, strict=True)
    ]
    return {
        "runs": described,
        "threads": 1,
        "repeats": repeats,
        "ig_steps": PAGE_IG_STEPS,
        "cases": timings,
        "bench_wall_seconds": round(time.perf_counter() - started, 1),
    }


def format_explorer(result: dict[str, Any]) -> str:
    """The timings as a Markdown table (what docs/explorer.md renders from the record)."""
    rows = [
        "| sentence | words in → out | readings | answer | median (min, max) |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in result["cases"]:
        rows.append(
            f"| {case['kind']}: {case['sentence']} | {case['source_words']} → "
            f"{case['output_words']} | {case['readings']} | {case['json_bytes'] / 1000:.1f} KB | "
            f"**{case['median_ms']:.0f} ms** ({case['min_ms']:.0f}, {case['max_ms']:.0f}) |"
        )
    return "\n".join(rows)
