#!/usr/bin/env bash
# The GPU check (docs/gpu.md), one command on a machine with a CUDA GPU and its own PyTorch:
#
#   bash scripts/gpu_check.sh --out DIR [--commit HASH] [--stages a,b] [--budget SECONDS]
#
# installs the project's other runtime dependencies from the wheels carried in .whl/
# (scripts/gpu_wheels.sh downloads them on a machine with the network; nothing is fetched
# here and torch is the machine's own), then runs scripts/gpu_check.py: the CUDA tests, the
# quick start, the step profile, the benchmark and the comparison sweep, each capped, timed
# and recorded in DIR/gpu.json (the GPU, driver and torch in every record), its output in
# DIR/gpu_check.log. On a CPU machine:
#
#   bash scripts/gpu_check.sh --dry-run                  # what it would install and run
#   bash scripts/gpu_check.sh --rehearse --out DIR       # every stage, tiny, on the CPU
#
# PYTHON names the interpreter (python3); SEQ2SEQ_SITE where the wheels go (/tmp/seq2seq-site).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
site=${SEQ2SEQ_SITE:-/tmp/seq2seq-site}
mode=gpu
for arg in "$@"; do
    case $arg in
        --dry-run) mode=dry-run ;;
        --rehearse) [ "$mode" = dry-run ] || mode=rehearse ;;
    esac
done

shopt -s nullglob
wheels=(.whl/*.whl)
case $mode in
    dry-run)
        echo "would install ${#wheels[@]} wheel(s) from .whl/ into $site (no network, no torch):"
        for wheel in "${wheels[@]}"; do echo "  $wheel"; done
        [ ${#wheels[@]} -gt 0 ] || echo "  (none yet: bash scripts/gpu_wheels.sh downloads them)"
        ;;
    gpu)
        if [ ${#wheels[@]} -gt 0 ]; then
            "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
                --upgrade --target "$site" "${wheels[@]}"
            export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        fi
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
        ;;
esac
# this checkout first: the scripts import the package from here, not an installed copy
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
"$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
      "GPUs", torch.cuda.device_count() if torch.cuda.is_available() else 0)'
exec "$python" scripts/gpu_check.py "$@"
