"""The attention explorer's page in a real browser, as a person uses it: Debian's Chromium,
headless and off the network, driven by Playwright; the server is ``scripts/serve.py``.

``SEQ2SEQ_EXPLORER_RUNS="RUN RUN2"`` points the page at other run folders (README's
screenshot: the comparison's ``none`` and ``multihead`` runs) and
``SEQ2SEQ_EXPLORER_SCREENSHOT=path.png`` keeps the screenshot this test takes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from seq2seq.evaluation.inference import TrainedRun
from seq2seq.evaluation.interventions import every_intervention
from seq2seq.explorer.inputs import MAX_CHARACTERS
from tests.helpers.explorer import Server, start_server

sync_api = pytest.importorskip("playwright.sync_api", reason='needs pip install -e ".[dev]"')
pytest.importorskip("fastapi", reason='the explorer needs pip install -e ".[demo]"')

CHROMIUM = Path("/usr/bin/chromium")
#: Chromium off the network: no background requests, updates, sync or first-run pages.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
WAIT_MS = 60_000
EMPTY_OUTPUT = "(an empty translation: the model wrote <eos> first)"

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)")
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def runs(tiny_run) -> list[Path]:
    chosen = os.environ.get("SEQ2SEQ_EXPLORER_RUNS")
    if chosen:
        return [Path(p) for p in chosen.split()]
    return [tiny_run("none"), tiny_run("multihead")]


@pytest.fixture(scope="module")
def server(runs: list[Path]) -> Iterator[Server]:
    running = start_server(*runs, shared=True)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def page(server: Server, tmp_path: Path) -> Iterator[sync_api.Page]:
    """A fresh headless Chromium (its own empty profile) on the explorer; every URL the page
    asks for is recorded in ``page.requested``."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            tab = browser.pages[0] if browser.pages else browser.new_page()
            tab.set_default_timeout(WAIT_MS)
            requested: list[str] = []
            tab.on("request", lambda request: requested.append(request.url))
            tab.requested = requested  # type: ignore[attr-defined]
            tab.goto(server.url)
            tab.wait_for_selector("body[data-state=ready]")
            yield tab
        finally:
            browser.close()


def submit(page: sync_api.Page, text: str) -> None:
    """Type ``text`` into the box, click Translate and wait for the answer."""
    page.evaluate("document.body.dataset.state = 'busy'")
    page.fill("#sentence", text)
    page.click("#translate")
    page.wait_for_selector("body[data-state=ready]")


def cell_weights(table: sync_api.Locator) -> np.ndarray:
    """A heatmap table's weights as the page holds them, (rows, columns)."""
    rows = table.locator("tbody tr")
    return np.array(
        [
            [float(w) for w in rows.nth(j).locator("td").evaluate_all(
                "cells => cells.map(c => c.dataset.weight)"
            )]
            for j in range(rows.count())
        ]
    )  # fmt: skip


def test_a_typed_sentence_shows_the_translation_and_every_heads_map(
    page: sync_api.Page, runs: list[Path], server: Server
) -> None:
    submit(page, "我 爱 中国")
    sections = page.locator("section.run")
    assert sections.count() == len(runs)
    for k, run_dir in enumerate(runs):
        run = TrainedRun.load(run_dir)
        (expected,) = run.translate(["我 爱 中国"])
        section = sections.nth(k)
        assert section.locator(".output").inner_text() == (expected.text or EMPTY_OUTPUT)
        tables = section.locator("table.heatmap")
        if expected.weights is None:
            assert tables.count() == 0
            assert "No attention" in section.locator(".no-attention").inner_text()
            continue
        heads = expected.weights.shape[0]
        assert tables.count() == heads
        for h in range(heads):
            table = tables.nth(h)
            labels = table.locator("thead th.src").all_inner_texts()
            assert labels == ["我", "爱", "中国", "<eos>"]
            rows = table.locator("tbody th.tgt").all_inner_texts()
            assert rows == [*expected.output, "<eos>"]
            weights = cell_weights(table)
            assert weights.shape == (len(expected.output) + 1, 4)
            np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-3)
            assert (weights.argmax(1) == expected.weights[h].argmax(1)).all()
    assert all(url.startswith(server.url) for url in page.requested), page.requested


def switch(page: sync_api.Page, method: str) -> None:
    """Turn the map switch to ``method``."""
    page.check(f"#map-switch input[value={method}]")


def test_the_switch_draws_each_map_without_asking_the_server_again(
    page: sync_api.Page, runs: list[Path]
) -> None:
    submit(page, "我 爱 中国")
    asked = len(page.requested)  # type: ignore[attr-defined]
    sections = page.locator("section.run")
    for method, value in (("grad_x_input", " share "), ("integrated_gradients", " share ")):
        switch(page, method)
        for k in range(len(runs)):  # every run has attribution maps, one without attention too
            (table,) = sections.nth(k).locator("table.heatmap").all()
            assert table.get_attribute("data-method") == method
            assert table.locator("thead th.src").all_inner_texts() == ["我", "爱", "中国", "<eos>"]
            np.testing.assert_allclose(cell_weights(table).sum(1), 1.0, atol=1e-3)
        table.locator("td").first.hover()
        assert value in page.locator("#readout").inner_text()
        assert "as shares of the row" in page.locator("#map-note").inner_text()
    assert "steps" in page.locator("figcaption").last.inner_text()  # integrated gradients'
    switch(page, "gold")
    assert page.locator("table.heatmap").count() == 0
    notes = page.locator(".no-gold").all_inner_texts()
    assert notes and all("pick one from the list" in note for note in notes)
    switch(page, "attention")
    for k, run_dir in enumerate(runs):
        tables = sections.nth(k).locator("table.heatmap")
        heads = TrainedRun.load(run_dir).model.attention.num_heads
        assert tables.count() == heads
        assert all(t.get_attribute("data-method") == "attention" for t in tables.all())
    assert len(page.requested) == asked  # type: ignore[attr-defined]


def test_the_translation_under_each_intervention_stands_beside_the_models_own(
    page: sync_api.Page, runs: list[Path]
) -> None:
    submit(page, "我 爱 中国")
    sections = page.locator("section.run")
    for k, run_dir in enumerate(runs):
        run = TrainedRun.load(run_dir)
        table = sections.nth(k).locator("table.interventions")
        if not run.model.attention.has_weights:
            assert table.count() == 0  # nothing to replace
            continue
        (own,) = run.translate(["我 爱 中国"])
        assert table.locator("tr.own td").first.inner_text() == (own.text or EMPTY_OUTPUT)
        interventions = [i for i in every_intervention(run.model.spec) if i.free_running]
        assert table.locator("tr[data-intervention]").count() == len(interventions)
        for intervention in interventions:
            cells = table.locator(f'tr[data-intervention="{intervention.name}"] td')
            (expected,) = run.translate(["我 爱 中国"], intervention=intervention)
            assert cells.first.inner_text() == (expected.text or EMPTY_OUTPUT)
            same = "= the same" if expected.output == own.output else "≠ differs"
            assert cells.nth(1).inner_text() == same


def test_chinese_labels_are_drawn_with_the_served_cjk_font(page: sync_api.Page, runs) -> None:
    submit(page, "我 爱 中国")
    if page.locator("table.heatmap").count() == 0:
        pytest.skip("no run with attention here")
    session = page.context.new_cdp_session(page)
    session.send("DOM.enable")
    session.send("CSS.enable")
    root = session.send("DOM.getDocument")["root"]["nodeId"]
    label = session.send("DOM.querySelector", {"nodeId": root, "selector": "th.src span"})
    fonts = session.send("CSS.getPlatformFontsForNode", {"nodeId": label["nodeId"]})["fonts"]
    assert [f["familyName"] for f in fonts] == ["Noto Sans CJK SC"], fonts
    assert fonts[0]["isCustomFont"] and fonts[0]["glyphCount"] == 1  # 我, from /cjk.otf


def test_a_test_sentence_shows_gold_links_over_the_map(page: sync_api.Page, tmp_path: Path) -> None:
    options = page.locator("#examples option")
    assert options.count() > 10
    page.evaluate("document.body.dataset.state = 'busy'")
    page.select_option("#examples", index=options.count() // 2)
    page.wait_for_selector("body[data-state=ready]")
    section = page.locator("section.run").last
    assert section.locator(".reference").count() == 1
    scored = section.locator(".view").last
    assert scored.locator(".aer").inner_text().startswith("sentence AER ")
    tables = scored.locator("table.heatmap")
    sure = tables.first.locator("td.sure").count()
    assert sure > 0
    assert all(tables.nth(h).locator("td.sure").count() == sure for h in range(tables.count()))
    shot = Path(os.environ.get("SEQ2SEQ_EXPLORER_SCREENSHOT") or tmp_path / "explorer.png")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.locator("table.heatmap td").first.hover()
    assert " weight " in page.locator("#readout").inner_text()
    reference_rows = tables.first.locator("tbody th.tgt").all_inner_texts()
    switch(page, "gold")
    (gold,) = scored.locator("table.heatmap").all()
    assert gold.get_attribute("data-method") == "gold"
    assert gold.locator("td.sure").count() == sure  # the links drawn are the map's own cells
    assert gold.locator("tbody th.tgt").all_inner_texts() == reference_rows
    if section.locator(".view").count() == 2:  # the output is not the reference
        note = section.locator(".no-gold").inner_text()
        assert "see the maps while reading the reference" in note
    switch(page, "grad_x_input")
    assert scored.locator(".aer").inner_text().startswith("sentence AER ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty input: type a Chinese sentence, e.g. 我 爱 中国"),
        ("我\u0007爱", "the sentence holds a control character (U+0007) at position 2"),
        ("我" * (MAX_CHARACTERS + 1), f"more than the limit of {MAX_CHARACTERS}"),
        ("火星 人", "none of these words is in the vocabulary of"),
    ],
)
def test_bad_input_is_a_message_on_the_page_and_the_page_still_works(
    page: sync_api.Page, text: str, message: str
) -> None:
    submit(page, text)
    alert = page.locator("#message")
    assert alert.is_visible() and message in alert.inner_text()
    assert page.locator("section.run").count() == 0
    submit(page, "我 爱 中国")
    assert not alert.is_visible() and page.locator("section.run").count() >= 1


def test_the_page_says_so_when_the_server_is_gone(tiny_run) -> None:
    running = start_server(tiny_run("none"))
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS
        )
        try:
            tab = browser.new_page()
            tab.set_default_timeout(WAIT_MS)
            tab.goto(running.url)
            tab.wait_for_selector("body[data-state=ready]")
            running.stop()
            submit(tab, "我 爱 中国")
            assert "is scripts/serve.py still running?" in tab.locator("#message").inner_text()
        finally:
            browser.close()
