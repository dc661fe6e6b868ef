"""Run a training command and keep what it measured as a results file:
``python scripts/record.py results/quickstart.json --key seed0 -- python scripts/train.py``.

The command runs as given (its output passes through); its wall time, this machine, the
code's commit and the run's own record (its ``metrics.json``: test scores, update seconds,
validations, processes) become the record ``--key`` of the results file, which README's and
docs' tables are rendered from (scripts/render.py). The run folder is the one the command's
training names in its ``run folder:`` line."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seq2seq.errors import UserError, exit_on_user_error


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_file", type=Path, help="e.g. results/quickstart.json")
    parser.add_argument("--key", required=True, help="the record's name in the file (seed0)")
    parser.add_argument("--beside", default=None, help="what else ran on the machine meanwhile")
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        raise UserError("give the command to run after --, e.g. -- python scripts/train.py")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    from seq2seq.analysis.record import record_run

    record_run(args.results_file, args.key, command, args.beside)
    print(f"recorded {args.results_file} ({args.key}): {shlex.join(command)}", file=sys.stderr)


if __name__ == "__main__":
    main()
