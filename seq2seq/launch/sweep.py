"""A sweep (``-m``) planned before its first job starts: every job's config is checked, and
every job's folder is named after each value the sweep varies.

Hydra's basic sweeper makes one job per combination of the swept values (the values of
``hydra.sweeper.params`` and of the command line, in that order, the last key varying
fastest). :class:`SweepPlan` makes the same list from Hydra's public override parser, so that

* every job's config is composed and converted (:func:`seq2seq.config.compose.load_config`)
  before any job trains: one bad value refuses the whole sweep in one line naming the job,
  and nothing is made (about 70 ms a job; the 15 jobs of ``+experiment=compare`` in a second);
* a job's folder names every swept value. The sweep's subfolder
  (``hydra.sweep.subdir``, ``additive_seed0``) names the variant and the seed; a sweep over
  anything else adds a folder of Hydra's ``override_dirname`` made of those values alone,
  e.g. ``additive_seed0/model.hidden_size=48``, so two jobs never share a folder.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf, read_write

from seq2seq.config.compose import load_config
from seq2seq.errors import UserError

#: The settings the sweep's subfolder names already (``conf/config.yaml``: the variant, made
#: of the model and the attention, and the seed; ``+experiment=compare``: ``+variant``).
NAMED_BY_SUBDIR = frozenset(
    {"seed", "attention", "attention.type", "model", "model.kind", "variant"}
)
#: The sweeper whose jobs this plan reproduces (Hydra's default).
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def sweep_jobs(overrides: list[Override]) -> list[list[str]]:
    """Every combination of the overrides' values, as the basic sweeper runs them: one
    ``key=value`` list per job, the last override varying fastest. Only a list of values
    (``a,b``, ``choice(a,b)``) sweeps; ranges and intervals are other sweepers' (refused)."""
    choices = []
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            choices.append([f"{key}={override.get_value_element_as_str()}"])
        elif override.is_discrete_sweep():
            choices.append([f"{key}={value}" for value in override.sweep_string_iterator()])
        else:
            raise UserError(
                f"{override.input_line}: the basic sweeper takes lists of values (a,b,c), not "
                "ranges or intervals"
            )
    return [list(job) for job in itertools.product(*choices)]


@dataclass(frozen=True)
class SweepPlan:
    """The jobs of a sweep: each one's overrides (``key=value`` strings, the command line's
    and ``hydra.sweeper.params``' together) and the keys whose value differs between jobs."""

    jobs: list[list[str]]
    keys: list[str]  # each override's key or group (``+variant`` -> ``variant``), in job order
    swept: list[str]

    @classmethod
    def of(cls, config: DictConfig) -> SweepPlan | None:
        """The plan of the sweep ``config`` (Hydra's composed config, ``hydra`` node included)
        starts; None for a sweeper other than Hydra's basic one (its jobs are its own)."""
        if OmegaConf.select(config, "hydra.sweeper._target_") != BASIC_SWEEPER:
            return None
        params = OmegaConf.select(config, "hydra.sweeper.params") or {}
        lines = [f"{key}={value}" for key, value in params.items()]
        lines += list(config.hydra.overrides.task)
        parser = OverridesParser.create(config_loader=GlobalHydra.instance().config_loader())
        try:
            jobs = sweep_jobs(parser.parse_overrides(lines))
        except HydraException as err:
            raise UserError(" ".join(str(err).split())) from None
        first = parser.parse_overrides(jobs[0])
        keys = [override.key_or_group for override in first]
        swept = [key for i, key in enumerate(keys) if len({job[i] for job in jobs}) > 1]
        return cls(jobs=jobs, keys=keys, swept=swept)

    def label(self, job: list[str]) -> str:
        """A job as the values it sweeps (``attention=multihead seed=1``)."""
        return " ".join(line for key, line in zip(self.keys, job, strict=True) if key in self.swept)

    def check(self) -> None:
        """Compose and check every job's config; raise one :class:`UserError` naming the first
        bad job (and how many more are bad) before any job starts."""
        refused: list[tuple[int, UserError]] = []
        for number, job in enumerate(self.jobs, start=1):
            try:
                load_config(job)
            except UserError as err:
                refused.append((number, err))
        if not refused:
            return
        number, err = refused[0]
        label = self.label(self.jobs[number - 1])
        more = len(refused) - 1
        others = f"; {more} more job{'s are' if more != 1 else ' is'} refused too" if more else ""
        raise UserError(
            f"the sweep's job {number} of {len(self.jobs)} ({label or 'its only job'}) is "
            f"refused: {err}{others}; no job was started: fix the value, or leave it out of "
            "the sweep"
        )

    def unnamed(self, config: DictConfig) -> list[str]:
        """The swept keys the sweep's subfolder does not name (none when the command line
        sets ``hydra.sweep.subdir`` itself: its names are the user's)."""
        given = [line.split("=", 1)[0] for line in config.hydra.overrides.hydra]
        if "hydra.sweep.subdir" in given:
            return []
        return [key for key in self.swept if key not in NAMED_BY_SUBDIR]

    def name_folders(self, config: DictConfig) -> None:
        """Give every job a folder of its own: when the sweep varies what its subfolder does
        not name, each job's folder is ``<subdir>/<those values>`` (Hydra's
        ``override_dirname`` of the job, every other override excluded). Done by adding two
        Hydra overrides to ``config``, from which Hydra composes every job's config."""
        unnamed = self.unnamed(config)
        if not unnamed:
            return
        excluded = sorted(set(self.keys) - set(unnamed))
        subdir = OmegaConf.to_container(config.hydra.sweep, resolve=False)["subdir"]
        with read_write(config.hydra.overrides):
            config.hydra.overrides.hydra.append(
                f"hydra.job.config.override_dirname.exclude_keys=[{','.join(excluded)}]"
            )
            config.hydra.overrides.hydra.append(
                f"hydra.sweep.subdir='{subdir}/${{hydra.job.override_dirname}}'"
            )
