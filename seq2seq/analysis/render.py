"""README's and docs' results, rendered from the committed results files (``results/*.json``,
:mod:`seq2seq.analysis.results`), never typed: ``python scripts/render.py`` writes them,
``python scripts/render.py --check`` (and ``tests/test_docs.py``) fails where a page differs
from its rendering.

A rendered block in a Markdown page is its name between two comments::

    <!-- results: compare.table -->
    | variant | BLEU | ... |
    <!-- /results -->

and :data:`RENDERERS` maps each name to what draws it from the results files. The comparison's
figures (``docs/bleu_by_length.png``, ``docs/aer.png``, ``docs/valid_loss.png``,
``docs/explain_aer.png``, ``docs/interventions.png``) are drawn from ``results/compare.json`` the
same way (:data:`FIGURES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seq2seq.analysis.compare.aggregate import COLUMNS, EXPLAIN_COLUMNS, Column, Stat, mean_sd
from seq2seq.analysis.compare.render import format_stat
from seq2seq.analysis.results import RESULTS_DIR, Machine, Provenance, Record, load_records
from seq2seq.errors import UserError

BLOCK = re.compile(
    r"(?P<open><!-- results: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(?P<close><!-- /results -->)",
    re.S,
)
REPOSITORY = RESULTS_DIR.parent


def pages(repository: Path = REPOSITORY) -> list[Path]:
    """The pages that hold rendered blocks: README.md and docs/*.md."""
    return [repository / "README.md", *sorted((repository / "docs").glob("*.md"))]


# --------------------------------------------------------------------------- the renderers


def only_record(name: str, results: Path) -> Record:
    """The one record of ``results/<name>.json``."""
    records = load_records(results / f"{name}.json")
    if len(records) != 1:
        raise UserError(
            f"{results / name}.json holds {len(records)} records; the renderers expect one"
        )
    return records[0]


def machine_text(machine: Machine) -> str:
    """ "an Intel Xeon (2 cores, CPU only), torch 2.13.0"."""
    device = f"{machine.gpu}, CUDA {machine.cuda}" if machine.gpu else "CPU only"
    return f"{machine.cpu} ({machine.cores} cores, {device}), torch {machine.torch}"


def provenance_line(provenance: Provenance) -> str:
    """ "measured 2026-12-06 on an Intel Xeon (2 cores, CPU only), torch 2.13.0: 48.6 min"."""
    line = (
        f"measured {provenance.date[:10]} on {machine_text(provenance.machine)}, "
        f"{provenance.beside} beside it"
    )
    seconds = provenance.wall_seconds
    if seconds is None:
        return line
    wall = f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"
    return f"{line}: {wall} of wall time"


def _markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, numbers: bool = True
) -> str:
    """A Markdown table; its columns after the first right-aligned when they hold ``numbers``."""
    align = ["---"] + ["---:" if numbers else "---"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _stat(data: dict[str, Any]) -> Stat:
    return Stat(data["mean"], data["sd"], data["n"])


def variant_table(document: dict[str, Any], columns: Sequence[Column]) -> str:
    """A comparison document's variants × ``columns`` table (mean ± sd over seeds)."""
    rows = [
        [variant["variant"], str(variant["n_seeds"])]
        + [format_stat(_stat(variant["metrics"][c.key]), c.fmt, show_sd=c.show_sd) for c in columns]
        for variant in document["variants"]
    ]
    return _markdown_table(["variant", "seeds", *(c.label for c in columns)], rows)


#: The main table's columns in README (the comparison's own markdown has them all).
FRONT_COLUMNS = ("bleu", "exact_match", "aer", "parameters", "train_seconds",
                 "decoding_sentences_per_second")  # fmt: skip


def compare_table(results: Path) -> str:
    document = only_record("compare", results).data
    return variant_table(document, [c for c in COLUMNS if c.key in FRONT_COLUMNS])


def compare_full_table(results: Path) -> str:
    return variant_table(only_record("compare", results).data, COLUMNS)


def compare_explain_table(results: Path) -> str:
    return variant_table(only_record("compare", results).data, EXPLAIN_COLUMNS)


def compare_by_length(results: Path, name: str = "compare") -> str:
    """A comparison's BLEU per source-length bucket (mean over seeds), variants × buckets."""
    document = only_record(name, results).data
    sizes = document["bucket_sizes"] or {}
    buckets = document["buckets"]
    header = ["variant", *(f"{b} ({sizes[b]})" if b in sizes else b for b in buckets)]
    rows = [
        [variant["variant"]]
        + [format_stat(_stat(variant["bleu_by_length"][b]), ".2f", show_sd=False) for b in buckets]
        for variant in document["variants"]
    ]
    return _markdown_table(header, rows)


def compare_provenance(results: Path, name: str = "compare") -> str:
    record = only_record(name, results)
    runs = sum(v["n_runs"] for v in record.data["variants"])
    return f"`{record.provenance.command}`: {runs} runs, {provenance_line(record.provenance)}."


def corpus_summary(results: Path) -> str:
    """The synthetic corpus as ``make_corpus.py`` describes it: the command, then its output."""
    record = only_record("corpus", results)
    return f"```\n$ {record.provenance.command}\n{record.data['output'].rstrip()}\n```"


def record_provenance(name: str, results: Path) -> str:
    """The command and provenance of the one record of ``results/<name>.json``."""
    record = only_record(name, results)
    return f"`{record.provenance.command}`: {provenance_line(record.provenance)}."


def explain_layers(results: Path) -> str:
    """Each explained Transformer's AER per decoder layer: attention and Shift-Att, heads
    averaged and per head (mean over seeds)."""
    rows = []
    for variant in only_record("compare", results).data["variants"]:
        maps = variant["explain"].get("maps", {})
        for key in sorted(k for k in maps if "@" in k):
            method, layer = key.split("@")
            found = maps[key]
            heads = " / ".join(
                "n/a" if h["mean"] is None else f"{h['mean']:.3f}" for h in found["aer_per_head"]
            )
            label = "attention" if method == "attention" else "Shift-Att"
            rows.append([variant["variant"], layer, label,
                         format_stat(_stat(found["aer"]), ".3f"), heads])  # fmt: skip
    return _markdown_table(["variant", "layer", "map", "AER", "AER per head"], rows)


def explain_heads(results: Path) -> str:
    """BLEU with one head at a time replaced by uniform attention (mean over seeds)."""
    rows = []
    for variant in only_record("compare", results).data["variants"]:
        interventions = variant["explain"].get("interventions", {})
        own = interventions.get("none")
        for name, scores in interventions.items():
            if not name.startswith("head:"):
                continue
            drop = None
            if own and own["bleu"]["mean"] is not None and scores["bleu"]["mean"] is not None:
                drop = own["bleu"]["mean"] - scores["bleu"]["mean"]
            rows.append([variant["variant"], name.removeprefix("head:"),
                         format_stat(_stat(scores["bleu"]), ".2f"),
                         "n/a" if drop is None else f"{drop:.2f}"])  # fmt: skip
    return _markdown_table(["variant", "head (layer.head)", "BLEU", "BLEU lost"], rows)


def _number(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def runs_table(name: str, results: Path) -> str:
    """A results file of training runs (``scripts/record.py``): one row per record; a value a
    record does not hold is n/a."""
    rows = []
    for record in load_records(results / f"{name}.json"):
        test = record.data.get("test", {})
        wall = record.provenance.wall_seconds
        rows.append([
            record.key,
            _number(test.get("bleu"), ".2f"),
            _number(test.get("exact_match"), ".3f"),
            _number(test.get("aer"), ".3f"),
            _number(record.data.get("train_seconds"), ".0f"),
            _number(None if wall is None else wall / 60, ".1f"),
        ])  # fmt: skip
    header = ["run", "test BLEU", "exact match", "AER", "update seconds", "wall minutes"]
    return _markdown_table(header, rows)


#: A command's seed, written ``seed=N`` where a file's runs differ only in it.
SEED = re.compile(r"(?<![\w.])seed=\d+")


def runs_provenance(name: str, results: Path) -> str:
    """Which commands made a file's runs (seeds as ``seed=N``), when, on what; what ran beside
    each run is said when the runs share it, else left to the file."""
    records = load_records(results / f"{name}.json")
    if not records:
        raise UserError(f"{results / name}.json holds no run")
    commands = sorted({SEED.sub("seed=N", r.provenance.command) for r in records})
    days = sorted({r.provenance.date[:10] for r in records})
    machines = sorted({machine_text(r.provenance.machine) for r in records})
    besides = {r.provenance.beside for r in records}
    beside = (
        f"{besides.pop()} beside each"
        if len(besides) == 1
        else f"what ran beside each: results/{name}.json"
    )
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return (
        f"{len(records)} runs of {', '.join(f'`{c}`' for c in commands)}; measured {when} on "
        f"{' and '.join(machines)}; {beside} (each run's wall time in the table)."
    )


#: The Tatoeba comparison's columns (a corpus without gold alignments: no AER).
TATOEBA_COMPARE_COLUMNS = ("bleu", "chrf", "exact_match", "parameters", "train_seconds")


def tatoeba_compare_table(results: Path) -> str:
    document = only_record("tatoeba_compare", results).data
    return variant_table(document, [c for c in COLUMNS if c.key in TATOEBA_COMPARE_COLUMNS])


#: A run's key past its name: its seed (``gru-seed1`` is a run of ``gru``).
SEED_SUFFIX = re.compile(r"-seed\d+$")


def presets_table(name: str, results: Path) -> str:
    """A results file of runs grouped by their key without its ``-seed<N>`` (``gru-seed0``,
    ``gru-seed1`` → ``gru``), in key order: per group the runs, test BLEU and chrF (mean ±
    sd), update seconds (mean) and wall minutes (the fastest and slowest run)."""
    groups: dict[str, list[Record]] = {}
    for record in load_records(results / f"{name}.json"):
        groups.setdefault(SEED_SUFFIX.sub("", record.key), []).append(record)
    rows = []
    for preset, records in groups.items():
        tests = [r.data.get("test", {}) for r in records]
        walls = [r.provenance.wall_seconds for r in records]
        known = [w / 60 for w in walls if w is not None]
        wall = (
            f"{min(known):.1f}–{max(known):.1f}"
            if len(known) > 1
            else _number(known[0] if known else None, ".1f")
        )
        rows.append([
            preset,
            str(len(records)),
            format_stat(mean_sd([t.get("bleu") for t in tests]), ".2f"),
            format_stat(mean_sd([t.get("chrf") for t in tests]), ".2f"),
            format_stat(mean_sd([r.data.get("train_seconds") for r in records]), ".0f",
                        show_sd=False),
            wall,
        ])  # fmt: skip
    header = ["runs of", "runs", "test BLEU", "test chrF", "update seconds", "wall minutes"]
    return _markdown_table(header, rows)


def sentences_table(name: str, results: Path) -> str:
    """The translations of the records that keep some (``data["own_sentences"]``: the
    ``command`` and ``[source, translation]`` pairs): one row per source, one column per
    record."""
    kept = [r for r in load_records(results / f"{name}.json") if "own_sentences" in r.data]
    if not kept:
        raise UserError(f"{results / name}.json holds no record with own_sentences")
    sources = [source for source, _ in kept[0].data["own_sentences"]["translations"]]
    outputs = [dict(r.data["own_sentences"]["translations"]) for r in kept]
    rows = [[source, *(found.get(source, "n/a") for found in outputs)] for source in sources]
    table = _markdown_table(["source", *(r.key for r in kept)], rows, numbers=False)
    commands = " or ".join(
        f"`{c}`" for c in sorted({r.data["own_sentences"]["command"] for r in kept})
    )
    return f"{table}\n\nTranslated by {commands}, RUN the run a column names."


def levers_table(page: str, results: Path) -> str:
    """What was tried for a page's subject: the records of ``results/levers/<page>.json``
    (data: ``lever``, ``effect``, ``kept``, ``why``), one row each, with when and where it
    was measured (the commit and the command are in the file)."""
    rows = [
        [
            record.data["lever"],
            record.data["effect"],
            record.data["kept"],
            record.data["why"],
            f"{record.provenance.date[:10]}, {record.provenance.machine.cpu}",
        ]
        for record in sorted(
            load_records(results / "levers" / f"{page}.json"),
            key=lambda record: record.data.get("order", 0),
        )
    ]
    if not rows:
        raise UserError(f"results/levers/{page}.json holds no lever")
    header = ["lever", "measured effect", "kept?", "why", "measured"]
    return _markdown_table(header, rows, numbers=False)


def _bench(results: Path) -> dict[str, Any]:
    return only_record("bench", results).data


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def bench_throughput(results: Path) -> str:
    """Target tokens/s of every trainer the benchmark measured, in its order (whatever rows
    the record holds), then the tutorial-style reference; GFLOP/s against the fp32 GEMM rate
    at the trainer's thread count."""
    document = _bench(results)
    rows = [*document["training"].items(), ("reference (tutorial)", document["reference"])]
    table = [
        [
            name,
            _number(entry.get("tokens_per_s"), ",.0f"),
            _number(entry.get("achieved_gflops"), ".1f"),
            _percent(entry.get("fraction_of_peak")),
            _percent(entry.get("target_padding_share")),
            _number(entry.get("speedup_vs_reference", 1.0), ".2f") + "×",
        ]
        for name, entry in rows
    ]
    header = ["trainer", "target tokens/s", "GFLOP/s", "of GEMM peak", "padding", "× reference"]
    return _markdown_table(header, table)


def bench_decoding(results: Path) -> str:
    """Greedy and beam search over the valid split with the time-to-99% run's model."""
    decoding = _bench(results)["decoding"]
    searches = [("greedy", "greedy"), (f"beam {decoding['beam_size']}", "beam")]
    rows = [
        [
            label,
            _number(decoding.get(f"{key}_sentences_per_s"), ",.1f"),
            _number(decoding.get(f"{key}_seconds"), ".2f"),
            _number(decoding.get(f"{key}_mean_output_words"), ".1f"),
        ]
        for label, key in searches
    ]
    table = _markdown_table(["search", "sentences/s", "seconds", "words per output"], rows)
    matched = decoding.get("model_exact_match")
    model = "" if matched is None else f", valid exact match {matched:.3f}"
    return (
        f"{table}\n\n{decoding['sentences']:,} valid sentences in batches of "
        f"{decoding['batch_size']} (the time-to-target run's model{model})."
    )


def _time_to_target(run: dict[str, Any]) -> str:
    if not run["reached"]:
        return (
            f"not reached within {run['budget_s']:.0f} s (best {run['best_exact_match']:.3f} "
            f"after {run['steps_run']:,} steps)"
        )
    return (
        f"{run['seconds']:.1f} s of updates (step {run['step']:,}; "
        f"{run['wall_seconds_used']:.0f} s of wall time)"
    )


def bench_summary(results: Path) -> str:
    """The machine's GEMM rate, one and two training processes, the time to the target and
    the benchmark's peak memory."""
    document = _bench(results)
    run = document["time_to_99"]
    processes = document.get("processes")
    if processes is None:
        scaling = f"skipped ({document.get('processes_skipped')})"
    else:
        one, two = processes["1"], processes["2"]
        scaling = (
            f"{one['tokens_per_s']:,.0f} → {two['tokens_per_s']:,.0f} target tokens/s "
            f"({processes['speedup']:.2f}×, {one['steps']} steps each)"
        )
    workers = f"{run['processes']} process{'es' if run['processes'] != 1 else ''}"
    normalised = document.get("time_to_99_gflop")
    rows = [
        ["fp32 GEMM, one core", f"{document['gemm_gflops_per_core']:.1f} GFLOP/s"],
        [
            f"fp32 GEMM at the trainer's {document['gemm_threads']} thread(s)",
            f"{document['gemm_gflops_at_threads']:.1f} GFLOP/s",
        ],
        ["scripts/train.py on 1 → 2 processes (DDP)", scaling],
        [
            f"time to {run['target']:.0%} valid exact match ({run['attention']}, {workers})",
            _time_to_target(run),
        ],
        [
            "… × one core's GEMM rate",
            "n/a" if normalised is None else f"{normalised:,.0f} GFLOP",
        ],
        [
            f"peak memory ({document['peak_memory_source']})",
            f"{document['peak_memory_mb']:,.0f} MiB",
        ],
    ]
    return _markdown_table(["measure", "value"], rows)


def bench_provenance(results: Path) -> str:
    record = only_record("bench", results)
    config, machine = record.data["config"], record.data["machine"]
    setting = (
        f"data={config['data']}, batch {config['batch_size']}, embed {config['embed_size']}, "
        f"hidden {config['hidden_size']}, decoder {config['decoder']}, "
        f"{machine['torch_threads']} thread(s) on {machine['device']}"
    )
    return f"`{record.provenance.command}` ({setting}): {provenance_line(record.provenance)}."


def explorer_latency(results: Path) -> str:
    """How long the explorer took to answer each timed sentence (``bench.py --explorer``)."""
    from seq2seq.analysis.bench.explorer import format_explorer

    return format_explorer(only_record("explorer", results).data)


def explorer_provenance(results: Path) -> str:
    record = only_record("explorer", results)
    runs = ", ".join(
        f"{run['name']} ({run['attention']}, {run['decoder']}, {run['parameters']:,} parameters)"
        for run in record.data["runs"]
    )
    setting = (
        f"{runs}; {record.data['threads']} thread, integrated gradients in "
        f"{record.data['ig_steps']} steps, {record.data['repeats']} requests per sentence"
    )
    return f"`{record.provenance.command}` ({setting}): {provenance_line(record.provenance)}."


def runs_line(name: str, results: Path) -> str:
    """A results file of runs of one command (over seeds) in a sentence: the runs' test exact
    match, BLEU and wall time side by side, then where and when they were measured."""
    records = load_records(results / f"{name}.json")
    if not records:
        raise UserError(f"{results / name}.json holds no record")

    def each(value: Callable[[Record], float | None], fmt: str) -> str:
        return " / ".join(_number(value(r), fmt) for r in records)

    def minutes(record: Record) -> float | None:
        seconds = record.provenance.wall_seconds
        return None if seconds is None else seconds / 60

    first = records[0].provenance
    machine = first.machine
    device = f"{machine.gpu}" if machine.gpu else "CPU only"
    return (
        f"{', '.join(r.key for r in records)}: test exact match "
        f"{each(lambda r: r.data['test'].get('exact_match'), '.3f')}, BLEU "
        f"{each(lambda r: r.data['test'].get('bleu'), '.2f')}, "
        f"{each(minutes, '.1f')} minutes of wall time (`{first.command}` and its seeds; "
        f"{machine.cpu}, {machine.cores} cores, {device}, torch {machine.torch}, "
        f"{first.date[:10]}, {first.beside} beside it)."
    )


RENDERERS: dict[str, Callable[[Path], str]] = {
    "compare.table": compare_table,
    "compare.full-table": compare_full_table,
    "compare.by-length": compare_by_length,
    "compare.explain": compare_explain_table,
    "compare.provenance": compare_provenance,
    "explain.layers": explain_layers,
    "explain.heads": explain_heads,
    "quickstart.table": lambda results: runs_table("quickstart", results),
    "quickstart.provenance": lambda results: runs_provenance("quickstart", results),
    "quickstart.line": lambda results: runs_line("quickstart", results),
    "tatoeba.table": lambda results: runs_table("tatoeba", results),
    "tatoeba.provenance": lambda results: runs_provenance("tatoeba", results),
    "corpus.summary": corpus_summary,
    "corpus.provenance": lambda results: record_provenance("corpus", results),
    "bench.throughput": bench_throughput,
    "bench.decoding": bench_decoding,
    "bench.summary": bench_summary,
    "bench.provenance": bench_provenance,
    "explorer.latency": explorer_latency,
    "explorer.provenance": explorer_provenance,
    "tatoeba.presets": lambda results: presets_table("tatoeba", results),
    "tatoeba.sentences": lambda results: sentences_table("tatoeba", results),
    "tatoeba-compare.table": tatoeba_compare_table,
    "tatoeba-compare.by-length": lambda results: compare_by_length(results, "tatoeba_compare"),
    "tatoeba-compare.provenance": lambda results: compare_provenance(results, "tatoeba_compare"),
    **{
        f"levers.{page}": (lambda results, page=page: levers_table(page, results))
        for page in (
            "performance",
            "alignment",
            "transformer",
            "tatoeba",
            "corpus",
            "model",
            "explorer",
        )
    },
}

#: docs/ figure -> the comparison figure it is (drawn from results/compare.json).
FIGURES = {
    "docs/bleu_by_length.png": "bleu_by_length.png",
    "docs/aer.png": "aer.png",
    "docs/valid_loss.png": "valid_loss.png",
    "docs/explain_aer.png": "explain_aer.png",
    "docs/interventions.png": "interventions.png",
}


# --------------------------------------------------------------------------- rendering


def render_text(text: str, results: Path = RESULTS_DIR) -> str:
    """``text`` with every rendered block drawn again from ``results``."""

    def draw(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in RENDERERS:
            raise UserError(
                f"<!-- results: {name} --> names no rendering; use one of {', '.join(RENDERERS)}"
            )
        return f"{match['open']}{RENDERERS[name](results).rstrip()}\n{match['close']}"

    return BLOCK.sub(draw, text)


def stale_pages(repository: Path = REPOSITORY, results: Path = RESULTS_DIR) -> list[Path]:
    """The pages whose rendered blocks differ from a rendering of ``results``."""
    return [
        page
        for page in pages(repository)
        if render_text(text := page.read_text(encoding="utf-8"), results) != text
    ]


def render_pages(repository: Path = REPOSITORY, results: Path = RESULTS_DIR) -> list[Path]:
    """Render every page's blocks and the figures; return the pages that changed."""
    from seq2seq.analysis.compare.figures import make_figures
    from seq2seq.files import atomic_write_text
    from seq2seq.viz.figures import save_figure

    changed = stale_pages(repository, results)
    for page in changed:
        atomic_write_text(page, render_text(page.read_text(encoding="utf-8"), results))
    if (results / "compare.json").exists():
        figures = make_figures(only_record("compare", results).data)
        for target, name in FIGURES.items():
            save_figure(figures[name], repository / target)
    return changed
