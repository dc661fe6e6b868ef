"""The layout the architecture page promises: leaf modules import without the model (and the
config without torch), and no test module imports another (shared helpers: tests/helpers/)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.helpers.runs import REPO

LEAVES = ("seq2seq.errors", "seq2seq.files", "seq2seq.records", "seq2seq.options",
          "seq2seq.data.config", "seq2seq.config.schema",
          "seq2seq.config.compose")  # fmt: skip


def imported_by(modules: tuple[str, ...]) -> set[str]:
    code = f"import sys; import {', '.join(modules)}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


def test_leaf_modules_import_without_the_model_or_torch() -> None:
    loaded = imported_by(LEAVES)
    assert not {m for m in loaded if m.startswith("seq2seq.model")}
    assert "torch" not in loaded and "matplotlib" not in loaded


def test_the_rooms_below_the_config_do_not_import_it() -> None:
    """Imports flow one way: the config composes the data and model rooms' sections, so no
    module of ``seq2seq/data`` or ``seq2seq/model`` imports the config package (the data
    section is the data room's own: ``seq2seq/data/config.py``)."""
    upward = re.compile(r"^\s*(from|import) seq2seq\.config\b", re.M)
    offenders = [
        str(path.relative_to(REPO))
        for room in ("data", "model")
        for path in sorted((REPO / "seq2seq" / room).rglob("*.py"))
        if upward.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_runtime_imports_torch_but_not_the_model() -> None:
    loaded = imported_by(("seq2seq.runtime",))
    assert "torch" in loaded and not any(m.startswith("seq2seq.model.") for m in loaded)


def test_the_launcher_loads_no_trainer() -> None:
    """A process that only starts the workers (``train.processes`` > 1) loads the launch room,
    not the trainer, matplotlib or TensorBoard, so its workers start that much sooner."""
    loaded = imported_by(("seq2seq.launch.entry", "seq2seq.launch.command"))
    assert "torch.distributed" in loaded
    assert not {"seq2seq.training.run", "matplotlib", "tensorboard"} & loaded


def test_the_package_exports_extraction_on_first_use() -> None:
    import seq2seq
    from seq2seq.evaluation.extract import extract_attention_weights

    assert seq2seq.extract_attention_weights is extract_attention_weights


def test_no_test_module_imports_another() -> None:
    pattern = re.compile(
        r"^\s*from tests\.(test_\w+|conftest) import|^\s*import tests\.test_", re.M
    )
    offenders = [
        path.name for path in (REPO / "tests").glob("*.py") if pattern.search(path.read_text())
    ]
    assert offenders == []
