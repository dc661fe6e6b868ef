"""Explore a trained run's attention in the browser: ``python scripts/serve.py RUN [RUN2]``.

Serves a local page (needs ``pip install -e ".[demo]"``): type a Chinese sentence, see the
translation, the translations with the attention replaced (uniform, shuffled, argmax, each
head), and a switch between maps of where each word came from: every head's attention,
gradient × input, integrated gradients; a test sentence from the list adds its gold links,
drawn over the maps and as a map of their own, and each map's AER. Two run folders are shown
side by side (e.g. ``attention=none`` beside ``attention=additive``). Binds to 127.0.0.1
unless ``--host`` says otherwise; ``--port 0`` picks a free port. Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from seq2seq.errors import UserError, exit_on_user_error
from seq2seq.evaluation.run_files import finished_run_metrics

DEMO_ADVICE = 'install the page\'s server with `pip install -e ".[demo]"`'


@exit_on_user_error
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="one or two run folders")
    parser.add_argument("--port", type=int, default=8000, help="0 = any free port")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--checkpoint", default="best.pt", help="file in RUN/checkpoints")
    parser.add_argument("--device", default="cpu", help="auto, cpu, cuda, cuda:N or mps")
    args = parser.parse_intermixed_args(argv)  # RUN --port 0 RUN as well
    if len(args.runs) > 2:
        raise UserError(f"{len(args.runs)} run folders given; the page shows one or two")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port} is not a port number; use 0 to 65535")
    for path in args.runs:  # a wrong folder: one line, before torch and the server load
        finished_run_metrics(path, args.checkpoint)
    try:
        from seq2seq.explorer.app import create_app
        from seq2seq.explorer.server import serve
    except ImportError as err:
        raise UserError(f"{err.name} is missing: {DEMO_ADVICE}") from None
    from seq2seq.explorer.explain import RunExplorer, run_names
    from seq2seq.runtime import resolve_device, set_threads

    set_threads(1)  # one thread: a second one slows every answer when the cores are shared
    device = str(resolve_device(args.device, option="--device"))
    explorers = [
        RunExplorer.load(name, path, args.checkpoint, device)
        for name, path in zip(run_names(args.runs), args.runs, strict=True)
    ]
    for explorer in explorers:
        for note in explorer.notes:
            print(f"note: {explorer.name}: {note}")
    names = " and ".join(e.name for e in explorers)
    serve(create_app(explorers, args.host), args.host, args.port, names)


if __name__ == "__main__":
    main()
