"""``scripts/train.py --help``: every option with its value and the help text the schema gives
it (:mod:`seq2seq.config.schema` is the reference documentation; this renders it).

Hydra's help template (``conf/hydra/help/seq2seq.yaml``) calls the ``seq2seq_options``
resolver registered by :func:`seq2seq.config.schema.register_configs`, which renders the
composed config — so ``--help`` shows the values the given overrides produce.
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Any

from omegaconf import DictConfig, OmegaConf

WIDTH = 100


def option_lines(schema: type, values: Any, prefix: str = "") -> list[str]:
    """``key=value`` and its help text for every field of ``schema`` (nested dataclasses as
    ``group.key``), values taken from ``values`` (a config node) where present."""
    lines: list[str] = []
    for field in dataclasses.fields(schema):
        name = f"{prefix}{field.name}"
        value = values.get(field.name) if isinstance(values, DictConfig) else None
        group = field.default_factory
        if isinstance(group, type) and dataclasses.is_dataclass(group):  # a config group
            lines += ["", f"{name}:", *option_lines(group, value, f"{name}.")]
            continue
        shown = OmegaConf.to_yaml({"v": value}).strip()[3:] if value is not None else "null"
        shown = shown.replace("\n", " ")
        lines.append(f"  {name}={shown}")
        help_text = field.metadata.get("help", "")
        lines += textwrap.wrap(help_text, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return lines


def options_help(root: DictConfig, schema: type) -> str:
    """The options section of ``--help`` for the composed config ``root`` of the dataclass
    ``schema`` (``$`` escaped for Hydra's ``string.Template``)."""
    task = OmegaConf.masked_copy(root, [k for k in root if k != "hydra"])
    return "\n".join(option_lines(schema, task)).replace("$", "$$")
