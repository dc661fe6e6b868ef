"""Tests for seq2seq.analysis.bench.explorer: timing the explorer's answers
(``scripts/bench.py --explorer``) and the record docs/explorer.md renders from."""

from __future__ import annotations

import json
from pathlib import Path

from seq2seq.analysis.bench.explorer import format_explorer, time_explorer
from seq2seq.analysis.render import RENDERERS
from seq2seq.analysis.results import load_records
from seq2seq.explorer.explain import RunExplorer
from tests.helpers.runs import run_script


def test_the_page_s_shortest_middle_and_longest_sentences_then_the_typed_ones(tiny_run) -> None:
    run = tiny_run("additive")
    examples = RunExplorer.load("additive", run).examples
    typed = " ".join(examples[-1].source[:3])
    result = time_explorer([run], [typed], repeats=2)

    cases = result["cases"]
    expected = [examples[0], examples[len(examples) // 2], examples[-1]]
    assert [case["sentence"] for case in cases] == [e.text for e in expected] + [typed]
    assert [case["kind"] for case in cases] == ["test sentence"] * 3 + ["typed"]
    assert [case["source_words"] for case in cases] == [len(e.source) for e in expected] + [3]
    for case in cases:
        assert 0 < case["min_ms"] <= case["median_ms"] <= case["max_ms"]
        assert case["readings"] in (1, 2) and case["json_bytes"] > 1000
    assert result["runs"][0]["attention"] == "additive" and result["threads"] == 1
    table = format_explorer(result).splitlines()
    assert table[0].startswith("| sentence |") and len(table) == 2 + len(cases)
    assert f"| typed: {typed} | 3 → " in table[-1]


def test_bench_explorer_records_what_docs_render(tiny_run, tmp_path: Path) -> None:
    run = tiny_run("transformer")
    record = tmp_path / "explorer.json"
    out = tmp_path / "timings.json"
    result = run_script(
        "bench.py", "--explorer", str(run), "--out", str(out), "--record", str(record)
    )
    assert result.returncode == 0, result.stderr
    (kept,) = load_records(record)
    assert kept.key == "explorer" and kept.data == json.loads(out.read_text())
    assert kept.provenance.command.startswith("python scripts/bench.py --explorer ")
    assert RENDERERS["explorer.latency"](tmp_path) in result.stdout
    line = RENDERERS["explorer.provenance"](tmp_path)
    assert "transformer" in line and "1 thread" in line and "of wall time" in line


def test_more_than_two_runs_or_an_unfinished_folder_is_one_line(tmp_path: Path) -> None:
    for args in (["--explorer", "a", "--explorer", "b", "--explorer", "c"], ["--explorer", "a"]):
        result = run_script("bench.py", *args, "--out", str(tmp_path / "x.json"))
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith("error:")
    assert not (tmp_path / "x.json").exists()
