"""The bad-input table shared by the entry points' error tests (``test_*_errors.py``).

Each row (:class:`Case`) names a script, its arguments, how to prepare the files it reads, and
the parts its one error line must contain. A module's rows run as subprocesses concurrently
(:func:`outcomes_fixture`), then one test per row checks the outcome
(:func:`check_fails_cleanly`): exit code, exactly one ``error:`` line, no traceback, nothing
changed or left behind.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pytest
import torch

from seq2seq.model.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from tests.helpers.runs import REPO, TINY_OVERRIDES, TINY_SAMPLE, run_script, script_env

PROCESS_TIMEOUT = 300  # seconds; generous, other test suites may share the CPUs
WAIT_TIMEOUT = 240  # for a file to appear while a training subprocess runs


# ---------------------------------------------------------------------------- helpers
def overrides(*extra: str) -> tuple[str, ...]:
    """``TINY_OVERRIDES`` plus ``extra``; a later ``key=value`` replaces an earlier one."""
    merged: dict[str, str] = {}
    for override in (*TINY_OVERRIDES, *extra):
        merged[override.split("=", 1)[0]] = override
    return tuple(merged.values())


def run_with_stdin(
    script: str, args: list[str], stdin: str | bytes = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``scripts/<script>``; ``stdin`` as text, or as bytes (e.g. not UTF-8) given as is."""
    if isinstance(stdin, str):
        return run_script(script, *args, timeout=PROCESS_TIMEOUT, input_text=stdin, **(env or {}))
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        cwd=REPO, capture_output=True, timeout=PROCESS_TIMEOUT, env=script_env(env), input=stdin,
    )  # fmt: skip
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(errors="replace"),
        result.stderr.decode(errors="replace"),
    )  # fmt: skip


#: A ``sitecustomize`` that makes one folder (``$SEQ2SEQ_TEST_READ_ONLY``) behave like a
#: read-only file system for the process: every write into it fails with EROFS. Root ignores
#: chmod, so this is how the tables give a script a read-only place, whoever runs them.
READ_ONLY_SITE = """
import builtins, errno, io, os

_ROOT = os.environ.get("SEQ2SEQ_TEST_READ_ONLY")


def _inside(path):
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False  # a file descriptor
    path = os.path.abspath(os.fsdecode(path))
    return path == _ROOT or path.startswith(_ROOT + os.sep)


def _refuse(path):
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))


def _guard_open(real):
    def guarded(file, mode="r", *args, **kwargs):
        if any(flag in mode for flag in "wax+") and _inside(file):
            _refuse(file)
        return real(file, mode, *args, **kwargs)
    return guarded


def _guard_os_open(real):
    def guarded(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and _inside(path):
            _refuse(path)
        return real(path, flags, *args, **kwargs)
    return guarded


def _guard_paths(real):
    def guarded(*args, **kwargs):
        for path in args[:2]:
            if _inside(path):
                _refuse(path)
        return real(*args, **kwargs)
    return guarded


if _ROOT:
    _ROOT = os.path.abspath(_ROOT)
    builtins.open = io.open = _guard_open(io.open)
    os.open = _guard_os_open(os.open)
    for _name in ("mkdir", "replace", "rename", "unlink", "remove", "rmdir"):
        setattr(os, _name, _guard_paths(getattr(os, _name)))
"""


def read_only_env(folder: Path, site: Path) -> dict[str, str]:
    """The environment that makes ``folder`` read-only for a script (see READ_ONLY_SITE)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(READ_ONLY_SITE, encoding="utf-8")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {"PYTHONPATH": path, "SEQ2SEQ_TEST_READ_ONLY": str(folder)}


def start_training(run_dir: Path, *extra: str, log: Path) -> subprocess.Popen:
    """A training subprocess whose stdout and stderr go to ``log`` (no pipe to fill up)."""
    command = [sys.executable, str(REPO / "scripts/train.py"), *extra, f"hydra.run.dir={run_dir}"]
    with open(log, "w", encoding="utf-8") as handle:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
            env=script_env(),
        )


def wait_for(
    condition: Callable[[], bool], process: subprocess.Popen, log: Path, interval: float = 0.05
) -> None:
    """Poll ``condition`` while ``process`` runs; fail with its output if it ends first."""
    deadline = time.monotonic() + WAIT_TIMEOUT
    while not condition():
        if process.poll() is not None:
            pytest.fail(f"training ended early ({process.returncode}):\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"timed out waiting for training:\n{log.read_text()[-3000:]}")
        time.sleep(interval)


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """Changes whenever the file is replaced (an atomic save makes a new inode)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def snapshot(folder: Path, ignore: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under ``folder`` (top-level names in ``ignore`` skipped)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.relative_to(folder).parts[0] not in ignore
    }


class CodeOnLoad:
    """Unpickling this creates ``marker``: a stand-in for a malicious checkpoint."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def full_disk_open(real_open: Callable = open) -> Callable:
    """A stand-in for ``open`` on a full disk: a file opened for writing gets its first
    kilobyte (the partial file a full disk leaves), then every write fails with ENOSPC (the
    writes go to ``/dev/full``). Reading is left alone. Patch a module's ``open`` with it."""

    def fake_open(file, mode="r", *args, **kwargs):
        if not any(flag in mode for flag in "wax"):
            return real_open(file, mode, *args, **kwargs)
        with real_open(file, "wb") as partial:
            partial.write(b"\0" * 1024)
        return real_open("/dev/full", mode.replace("x", "w"), *args, **kwargs)

    return fake_open


def failing_with(code: int, *names: str) -> Callable:
    """A stand-in for ``os.replace``/``os.mkdir``/...: raises ``OSError(code)`` (e.g.
    ``errno.EROFS``: what a read-only place gives, even to root, who ignores chmod)."""

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code), str(args[-1] if args else ""))

    return fail


# ---------------------------------------------------------------------------- damage
def truncate(path: Path, marker: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def scramble(path: Path, marker: Path) -> None:
    """Random bytes of the same length (seeded)."""
    size = path.stat().st_size
    path.write_bytes(random.Random(size).randbytes(size))


def plant_code(path: Path, marker: Path) -> None:
    torch.save({"format_version": 1, "model": CodeOnLoad(marker)}, path)


def double_hidden_size(path: Path, marker: Path) -> None:
    """A checkpoint whose model spec does not fit its weights (as if swapped in from elsewhere)."""
    payload = torch.load(path, weights_only=True)
    payload["model_spec"]["hidden_size"] *= 2
    save_checkpoint(path, Checkpoint.from_dict(payload))


class Deleted:
    """The value :func:`hand_edited` gives a key to remove it."""

    def __repr__(self) -> str:
        return "<deleted>"


DELETE = Deleted()


def hand_edited(key: str, value: object) -> Callable[[Path, Path], None]:
    """A damage: the checkpoint with its dotted ``key`` (``model_spec.hidden_size``) set to
    ``value``, or removed (:data:`DELETE`); still plain data, so ``weights_only`` loads it."""

    def damage(path: Path, marker: Path) -> None:
        payload = torch.load(path, weights_only=True)
        *parents, last = key.split(".")
        node = payload
        for parent in parents:
            node = node[parent]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
        torch.save(payload, path)

    return damage


# ---------------------------------------------------------------------------- the table
class Shared(NamedTuple):
    corpus: Path  # the session toy corpus (read only)
    run: Path  # a finished tiny run trained on it (read only)


Prepare = Callable[[Shared, Path], dict[str, Path]]


def fresh_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "out": tmp / "run"}


def corpus_with(split: str, line_no: int, content: bytes | None) -> Prepare:
    """A copy of the toy corpus whose ``split`` has line ``line_no`` replaced by ``content``
    (``None``: the whole file emptied)."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        corpus = tmp / "corpus"
        shutil.copytree(shared.corpus, corpus)
        path = corpus / f"{split}.tsv"
        if content is None:
            path.write_bytes(b"")
        else:
            lines = path.read_bytes().split(b"\n")
            lines[line_no - 1] = content
            path.write_bytes(b"\n".join(lines))
        return {"corpus": corpus, "out": tmp / "run"}

    return prepare


#: JSON that Python's parser cannot read: nested past its recursion limit, and a number of
#: more digits than it converts (``sys.get_int_max_str_digits()``, 4300).
NESTED_JSON = "[" * 5000 + "]" * 5000
LONG_NUMBER_JSON = '{"attention": "additive", "step": ' + "1" * 4301 + "}"


def run_copy(
    checkpoint: str = "best.pt", damage: Callable | None = None, metrics: str | None = None
) -> Prepare:
    """A copy of the tiny run, with ``checkpoints/<checkpoint>`` damaged and/or ``metrics``
    as its metrics.json."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        run = tmp / "run"
        shutil.copytree(shared.run, run)
        if damage is not None:
            damage(run / "checkpoints" / checkpoint, tmp / "marker")
        if metrics is not None:
            (run / "metrics.json").write_text(metrics, encoding="utf-8")
        return {"corpus": shared.corpus, "run": run, "marker": tmp / "marker"}

    return prepare


def run_file_edited(name: str, old: str, new: str) -> Prepare:
    """A copy of the tiny run whose file ``name`` (``metrics.json``, ``.hydra/config.yaml``)
    says ``new`` where it said ``old``: as if its checkpoint came from another run."""

    def prepare(shared: Shared, tmp: Path) -> dict[str, Path]:
        paths = run_copy()(shared, tmp)
        path = paths["run"] / name
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} is not in {path}"
        path.write_text(text.replace(old, new), encoding="utf-8")
        return paths

    return prepare


def shared_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "run": shared.run}


def other_vocabulary(shared: Shared, tmp: Path) -> dict[str, Path]:
    """A run whose checkpoint names a corpus that has since gained a word."""
    corpus = tmp / "corpus"
    shutil.copytree(shared.corpus, corpus)
    with open(corpus / "train.tsv", "a", encoding="utf-8") as handle:
        handle.write("熊猫\tpandas\t0-0\n")
    run = tmp / "run"
    shutil.copytree(shared.run, run)
    last = run / "checkpoints" / "last.pt"
    payload = torch.load(last, weights_only=True)
    payload["config"]["data"]["dir"] = str(corpus)
    save_checkpoint(last, Checkpoint.from_dict(payload))
    return {"corpus": corpus, "run": run}


def run_and_bad_test_split(shared: Shared, tmp: Path) -> dict[str, Path]:
    """A run copy plus a corpus copy whose test split has an out-of-range alignment."""
    corpus = corpus_with("test", 2, "我\tI\t0-0 5-5".encode())(shared, tmp)["corpus"]
    return {**run_copy()(shared, tmp), "corpus": corpus}


def user_folders(shared: Shared, tmp: Path) -> dict[str, Path]:
    """Places the user made before the command: an empty folder, a link to an empty folder,
    and a file."""
    (tmp / "mine").mkdir()
    (tmp / "target").mkdir()
    (tmp / "link").symlink_to(tmp / "target", target_is_directory=True)
    (tmp / "file").write_text("notes\n", encoding="utf-8")
    return {"corpus": shared.corpus, "mine": tmp / "mine", "link": tmp / "link",
            "target": tmp / "target", "file": tmp / "file", "out": tmp / "run"}  # fmt: skip


def user_folders_kept(paths: dict[str, Path], message: str) -> None:
    """A refused command removes only what it made: the user's folders and file stay."""
    assert paths["mine"].is_dir() and paths["target"].is_dir() and paths["link"].is_symlink()
    assert paths["file"].read_text(encoding="utf-8") == "notes\n"


def no_sweep_folder(paths: dict[str, Path], message: str) -> None:
    """A refused sweep started no job: its folder was never made."""
    assert not (paths["tmp"] / "sweep").exists()


def non_finite_run(shared: Shared, tmp: Path) -> dict[str, Path]:
    return {"corpus": shared.corpus, "nan_run": tmp / "run"}


def last_good_checkpoint_loads(paths: dict[str, Path], message: str) -> None:
    """The message names the checkpoint left behind (if any), and it loads."""
    last = paths["nan_run"] / "checkpoints" / "last.pt"
    if "no checkpoint was written" in message:
        assert not last.exists()
        return
    assert f"last good checkpoint is {last}" in message
    payload = torch.load(last, weights_only=True)
    assert payload["state"]["step"] >= 1
    load_checkpoint(last)  # also passes the project's own checks


@dataclass(frozen=True)
class Case:
    id: str
    script: str
    args: tuple[str, ...]  # "{corpus}", "{run}", "{out}", "{tmp}"… filled from ``prepare``
    message: tuple[str, ...]  # all must appear in the error line (Hydra: in stderr)
    code: int = 2
    prepare: Prepare = fresh_run
    stdin: str | bytes = ""
    env: dict[str, str] = field(default_factory=dict)
    read_only: str | None = None  # a folder ("{run}", "{tmp}/ro") that is read-only for it
    stdout: tuple[str, ...] = ()  # what must have been printed before the error
    check: Callable[[dict[str, Path], str], None] | None = None  # (paths, message)


def train(*extra: str, run: str = "{out}") -> tuple[str, ...]:
    return overrides("data.dir={corpus}", f"hydra.run.dir={run}", *extra)


def resume(*extra: str) -> tuple[str, ...]:
    return train("resume=true", TINY_SAMPLE, *extra, run="{run}")


# The table's processes run side by side: one thread each, so none spins waiting for a core.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# Hydra writes these into the run folder before the app starts, even for a refused resume.
HYDRA_WRITES = (".hydra", "train.log")


@dataclass
class Outcome:
    result: subprocess.CompletedProcess
    paths: dict[str, Path]
    changed: list[str]  # files under the watched folders that changed
    made: list[str]  # run outputs created in a fresh run folder


def run_case(case: Case, tmp: Path, shared: Shared) -> Outcome:
    paths = {"tmp": tmp, **case.prepare(shared, tmp)}
    ignore = HYDRA_WRITES if case.script == "train.py" else ()
    watched = {
        name: snapshot(path, ignore)
        for name, path in paths.items()
        if name != "tmp" and path.is_dir()
    }
    names = {k: str(v) for k, v in paths.items()}
    args = [arg.format_map(names) for arg in case.args]
    env = {**ONE_THREAD, **case.env}
    if case.read_only is not None:
        env |= read_only_env(Path(case.read_only.format_map(names)), tmp / ".read_only_site")
    result = run_with_stdin(case.script, args, case.stdin, env)
    changed = []
    for name, before in watched.items():
        after = snapshot(paths[name], ignore)
        changed += [f"{name}/{f}" for f in sorted(before | after) if before.get(f) != after.get(f)]
    out = paths.get("out")
    made = [n for n in ("checkpoints", "tb", "metrics.json") if out and (out / n).exists()]
    return Outcome(result, paths, changed, made)


def outcomes_fixture(table: list[Case]) -> Callable[..., dict[str, Outcome]]:
    """A module fixture ``outcomes`` that runs the selected rows of ``table`` concurrently."""

    @pytest.fixture(scope="module")
    def outcomes(request, tmp_path_factory, toy_corpus, tiny_run) -> dict[str, Outcome]:
        """``{case id: Outcome}`` for the rows the session selected."""
        selected = {
            item.callspec.params["case"].id
            for item in request.session.items
            if item.module is request.module
            and hasattr(item, "callspec")
            and "case" in item.callspec.params
        }
        shared = Shared(toy_corpus, tiny_run("additive"))
        shared_before = {name: snapshot(path) for name, path in shared._asdict().items()}
        cases = [case for case in table if case.id in selected]
        workers = min(4, (os.cpu_count() or 1) + 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {
                case.id: pool.submit(run_case, case, tmp_path_factory.mktemp(case.id), shared)
                for case in cases
            }
            results = {case_id: future.result() for case_id, future in futures.items()}
        for name, path in shared._asdict().items():
            assert snapshot(path) == shared_before[name], f"the shared {name} folder was modified"
        return results

    return outcomes


def check_fails_cleanly(case: Case, outcome: Outcome) -> None:
    """One clear line (or Hydra's own short message), the expected exit code, no traceback,
    nothing changed or left behind."""
    result = outcome.result
    output = result.stdout + result.stderr
    assert result.returncode == case.code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    if case.code == 2:  # our own UserError: exactly one `error:` line, and it ends stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, result.stderr[-3000:]
        assert result.stderr.rstrip().splitlines()[-1] == errors[0]
        message = errors[0]
    else:  # Hydra's own config error (exit 1): its short message, no stack trace
        message = result.stderr
    for part in case.message:
        assert part in message, message
    for part in case.stdout:
        assert part in result.stdout, result.stdout[-3000:]
    assert not outcome.changed, f"files changed: {outcome.changed}"
    assert not outcome.made, f"a failed run left outputs behind: {outcome.made}"
    if "marker" in outcome.paths:
        assert not outcome.paths["marker"].exists(), "code inside a checkpoint was executed"
    if case.check:
        case.check(outcome.paths, message)


def check_shows_traceback(case: Case, outcome: Outcome) -> None:
    """With a debug switch set, the same failure shows its traceback."""
    result = outcome.result
    assert result.returncode == case.code, result.stderr[-3000:]
    assert "Traceback" in result.stderr
    for part in case.message:
        assert part in result.stderr, result.stderr[-3000:]


def run_processes(command: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    """A multi-process training command (the default launch or torchrun), with DDP's waits
    bounded and no stdin; never raises on a failed run."""
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        env=script_env({"SEQ2SEQ_DDP_TIMEOUT_S": "120"}),
        stdin=subprocess.DEVNULL,
    )
