"""What runs inside Hydra before it makes a folder (``hydra.callbacks`` in
``conf/config.yaml``): Hydra composes the config, calls these hooks, then makes the run folder
(or the sweep's folder) and starts the job(s).

* A run (:meth:`BeforeFolders.on_run_start`): ``hydra.run.dir`` must be a place for a folder
  (not a file), and whether the folder is new is recorded, so that a refused command removes
  only a folder it made (:mod:`.run_folder`).
* A sweep (:meth:`BeforeFolders.on_multirun_start`): the same for ``hydra.sweep.dir``; then
  every job's config is checked and every job gets a folder of its own (:mod:`.sweep`).

Hydra turns any exception a hook raises into a warning and goes on, so each hook ends a
refused command itself, in one line (:func:`seq2seq.errors.one_line_errors`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from seq2seq.errors import one_line_errors
from seq2seq.launch.run_folder import check_folder_path, note_new_folder
from seq2seq.launch.sweep import SweepPlan
from seq2seq.launch.workers import quiet_worker


class BeforeFolders(Callback):
    """Checks before Hydra makes a folder; see the module's docstring."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        with one_line_errors(quiet_worker()):
            run_dir = Path(config.hydra.run.dir)
            check_folder_path(run_dir, "hydra.run.dir")
            note_new_folder(run_dir)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        with one_line_errors():
            check_folder_path(Path(config.hydra.sweep.dir), "hydra.sweep.dir", "the sweep")
            plan = SweepPlan.of(config)
            if plan is not None:
                plan.check()
                plan.name_folders(config)
