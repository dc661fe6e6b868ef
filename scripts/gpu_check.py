"""The GPU check's stages: ``python scripts/gpu_check.py --out DIR [--rehearse] [--stages a,b]``.

Started by ``scripts/gpu_check.sh`` (which installs the carried wheels first); see
seq2seq.analysis.gpu for the stages and docs/gpu.md for what to read in ``DIR/gpu.json``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from seq2seq.errors import UserError, exit_on_user_error


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from seq2seq.analysis.gpu import BUDGET_S, STAGES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where gpu.json, the logs and reports go")
    parser.add_argument("--work", type=Path, help="where the runs go (a new temporary folder)")
    parser.add_argument(
        "--stages", help=f"a comma-separated subset of {','.join(STAGES)} (all, in that order)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=BUDGET_S,
        help=f"wall seconds for the stages together, shared by their caps ({BUDGET_S:g})",
    )
    parser.add_argument(
        "--rehearse", action="store_true", help="every stage tiny on the CPU (no GPU needed)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the stages and their commands; run nothing"
    )
    parser.add_argument(
        "--commit", help="the code's commit, for a copy of the checkout without git"
    )
    return parser.parse_args(argv)


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from seq2seq.analysis.gpu import chosen_stages, describe, run_checks

    stages = chosen_stages(args.stages)
    if args.budget <= 0:
        raise UserError(f"--budget {args.budget:g} must be a positive number of seconds")
    if args.dry_run:
        out, work = args.out or Path("OUT"), args.work or Path("WORK")
        print(describe(out, work, stages, args.rehearse, args.budget))
        return
    if args.out is None:
        raise UserError("--out DIR is missing: the folder gpu.json and the logs are written to")
    import torch

    if not args.rehearse and not torch.cuda.is_available():
        raise UserError(
            "no CUDA device is visible (nvidia-smi lists the GPUs): the GPU check needs one; "
            "on a CPU machine, --rehearse runs its stages tiny and --dry-run lists them"
        )
    work = args.work or Path(tempfile.mkdtemp(prefix="seq2seq-gpu-check-"))
    records = run_checks(
        args.out, work, stages=stages, rehearse=args.rehearse, budget_s=args.budget,
        commit=args.commit,
    )  # fmt: skip
    print(f"wrote {len(records)} record(s) to {args.out / 'gpu.json'}; the runs are in {work}")


if __name__ == "__main__":
    main()
