#!/usr/bin/env bash
# The wheels the GPU check carries (docs/gpu.md): on a machine with the network, download into
# .whl/ the project's runtime dependencies that the GPU machines' image lacks, and the test
# runner, as Python 3.12 manylinux wheels at the versions installed here (so the GPU machine
# runs what the tests here ran; torch and what the image already holds are not carried:
# /work/.library/device/KINDS.md lists it). .whl/ is ignored by git (.git/info/exclude) and
# travels by naming it in the device tool's carry; scripts/gpu_check.sh installs it there.
#
#   bash scripts/gpu_wheels.sh        # then the device command it prints
#
# PYTHON names the interpreter whose installed versions are pinned (python3).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}

# what the image lacks (hydra, pydantic, the CJK font, the explorer's server) and what must
# agree with them (typing-extensions, anyio); the test runner and its plugins, carried so that
# pyproject's addopts suit the pytest that reads them
packages=(
    hydra-core omegaconf hydra-joblib-launcher
    pydantic pydantic-core annotated-types typing-inspection typing-extensions
    noto-cjk-sans-otc
    fastapi starlette uvicorn anyio annotated-doc opentelemetry-api
    pytest pytest-xdist pytest-timeout execnet pluggy iniconfig
)
# pure Python, published as a source archive only: built into a wheel here
source_only=(antlr4-python3-runtime)

pinned() {  # NAME==VERSION as installed here (NAME alone when it is not installed)
    "$python" -c 'import importlib.metadata as m, sys
name = sys.argv[1]
try:
    print(f"{name}=={m.version(name)}")
except m.PackageNotFoundError:
    print(name)' "$1"
}

exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"
rm -rf .whl && mkdir .whl  # one version of each: two would stop the install there

platforms=()
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1; do
    platforms+=(--platform "${tag}_x86_64")
done
for package in "${packages[@]}"; do
    "$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp "${platforms[@]}" -d .whl "$(pinned "$package")"
done
for package in "${source_only[@]}"; do
    "$python" -m pip wheel -q --no-deps -w .whl "$(pinned "$package")"
done

echo "$(find .whl -name '*.whl' | wc -l) wheels, $(du -sh .whl | cut -f1), in .whl/:"
ls .whl
commit=$(git rev-parse HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"
cat <<EOF

Give the device tool (one H100, about 8 minutes):
  command: bash scripts/gpu_check.sh --out \$OUT --commit $commit
  carry:   [".whl"]
  timeout_s: 540
EOF
