#!/usr/bin/env bash
# GPU check (`make gpu-check`): chapters 6 and 7 on a real CUDA GPU, in one run of under
# 6 minutes on one H100. Without CUDA it says so in one line (and in summary.txt) and exits 0.
# With CUDA, each step under a time limit, its output in a log under $OUT, the next step run
# whatever the last one did; non-zero exit if any failed; summary.txt lists each step's status
# and duration:
#   setup    wheels and bubblewrap from build/gpu-wheels, where that folder exists (setup.log)
#   tests    pytest tests/test_gpu.py (test_gpu.log)
#   nbval    the instructor notebooks of chapters 6 and 7, built from solutions/, under nbval;
#            fails if a GPU cell took its CPU path (nbval.log: the chapters' own GPU lines)
#   grade    where CUDA works (process, forked worker, sandbox, kernel limits); then a small
#            chapter 6 class (reference, stubs, sample mistakes, a patched torch.allclose)
#            graded by `python -m autograder grade` with its kernels in the sandbox, which
#            must see the GPU: its hidden tests then draw CUDA fp16 + GradScaler and bf16
#            cases; then a student who takes the whole GPU, beside an honest one
#            (autograder/gpu_check.py; grade.log, grades.csv)
#   bench    autocast fp16 and bf16 against fp32 (autograder/gpu_bench.py; bench.log, bench.json)
# Environment:
#   OUT=DIR          where it all goes (default build/gpu-check; the device tool sets it)
#   GPU_PY=PYTHON    the interpreter (default .venv/bin/python; on the device machine python3)
#   GPU_CHECK_ON_CPU=1   run every step without CUDA: tests the plumbing, checks no GPU
#   GPU_CHECK_WORK=DIR   the scratch course (default build/gpu-check-work, emptied first)
#   GPU_WHEELS=DIR       the carried packages (default build/gpu-wheels)
#   GPU_CHECK_SLACK=N    every time limit N times longer (the plumbing on slow cores)
# `ci/gpu_check.sh --wheels`, run here, fills build/gpu-wheels (ignored by git) with what the
# device machine lacks: the course's Python packages for its python3 (3.12) and bubblewrap.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${GPU_PY:-.venv/bin/python}
WHEELS=${GPU_WHEELS:-build/gpu-wheels}
WORK=${GPU_CHECK_WORK:-$PWD/build/gpu-check-work}  # never the instructor's build/course
# Not carried to the device machine: its image has them (torch with CUDA, numpy, matplotlib,
# pytest, jinja2, ...), or the check does not use them (the plumbing run without them passed).
NOT_CARRIED="autograder torch numpy matplotlib pillow contourpy cycler fonttools kiwisolver \
pyparsing pytest pluggy iniconfig coverage playwright pyee greenlet ruff dask distributed \
partd locket zict tblib cloudpickle msgpack toolz sortedcontainers psutil psycopg \
psycopg-binary sympy mpmath networkx filelock fsspec setuptools pip jinja2 markupsafe pyyaml \
pygments requests urllib3 idna certifi charset-normalizer six python-dateutil packaging attrs \
typing-extensions zipp tqdm anyio h11 httpcore httpx click markdown-it-py mdurl \
prometheus-client jupyterlab notebook notebook-shim jupyterlab-server jupyter-lsp json5 babel \
async-lru widgetsnbextension"

if [[ ${1:-} == --wheels ]]; then
  rm -rf "$WHEELS"
  mkdir -p "$WHEELS"
  wanted=$("$PY" - $NOT_CARRIED <<'EOF'
import re, sys
from importlib import metadata
skip = set(sys.argv[1:])
for dist in metadata.distributions():
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    if name not in skip:
        print(f"{name}=={dist.version}")
EOF
)
  # shellcheck disable=SC2086  # one package per word
  "$PY" -m pip download --quiet --no-deps --only-binary=:all: --dest "$WHEELS" \
    --python-version 3.12.3 --implementation cp --abi cp312 --abi abi3 --abi none \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any $wanted 2> >(grep -v "is ignored" >&2)
  (cd "$WHEELS" && apt-get download bubblewrap 2>&1 >/dev/null | grep -v unsandboxed >&2 || true)
  ls "$WHEELS"/bubblewrap_*.deb >/dev/null
  echo "gpu-check: $(ls "$WHEELS" | wc -l) files, $(du -sh "$WHEELS" | cut -f1), in $WHEELS;" \
       "carry it to the device machine (README, CI)"
  exit 0
fi

OUT=${OUT:-build/gpu-check}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
started=$(date +%s)

if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "gpu-check: no Python with torch at $PY (set GPU_PY)" | tee "$SUMMARY" >&2
  exit 2
fi
if ! "$PY" -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
  line="gpu-check: no CUDA GPU here (torch $("$PY" -c 'import torch; print(torch.__version__)'))"
  line+=": nothing run. Unverified: tests/test_gpu.py, chapters 6 and 7's GPU cells under"
  line+=" nbval, grading chapter 6 with a CUDA kernel in the sandbox (fp16 + GradScaler, bf16),"
  line+=" the autocast speed-ups and memory (autograder/gpu_bench.py)."
  if [[ ${GPU_CHECK_ON_CPU:-0} != 1 ]]; then
    echo "$line" | tee "$SUMMARY"
    exit 0
  fi
  echo "gpu-check: GPU_CHECK_ON_CPU=1: every step on the CPU, nothing checked of a GPU"
  CUDA_FLAG=""
else
  CUDA_FLAG="--cuda"
fi

export PY WORK OUT WHEELS CUDA_FLAG PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # no editable install on the device machine
export AUTOGRADER_BUILD_DIR=$WORK AUTOGRADER_CHAPTERS=06,07
export AUTOGRADER_SANDBOX=${AUTOGRADER_SANDBOX:-required}
rm -rf "$WORK"
mkdir -p "$WORK"

setup() {  # what the device machine lacks, from build/gpu-wheels (ci/gpu_check.sh --wheels)
  if [[ ! -d $WHEELS ]]; then
    echo "no $WHEELS: using $PY as it is"
    return 0
  fi
  if ! command -v bwrap >/dev/null; then
    for deb in "$WHEELS"/bubblewrap_*.deb; do dpkg -x "$deb" "$WORK/bwrap"; done
    echo "bubblewrap from $(ls "$WHEELS"/bubblewrap_*.deb)"
  fi
  local missing
  missing=$("$PY" - "$WHEELS" <<'EOF'
import re, sys
from importlib import metadata
from pathlib import Path
have = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower() for d in metadata.distributions()}
for wheel in sorted(Path(sys.argv[1]).glob("*.whl")):
    if re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower() not in have:
        print(wheel)
EOF
)
  [[ -z $missing ]] && { echo "every carried package is already installed"; return 0; }
  echo "installing $(wc -w <<<"$missing") wheels into $("$PY" -c 'import sys; print(sys.prefix)')"
  # shellcheck disable=SC2086  # one wheel per word
  "$PY" -m pip install --quiet --no-index --no-deps --no-compile --disable-pip-version-check \
    $missing
}

tests() {
  "$PY" -m pytest -rs -p no:cacheprovider tests/test_gpu.py
}

nbval() {
  "$PY" -m autograder build --course-only || return 1
  # shellcheck disable=SC2086  # CUDA_FLAG: empty or one word
  "$PY" -m autograder.gpu_check nbval $CUDA_FLAG "$WORK"/course/source/0[67]_*/*.ipynb
}

grade() {
  local failed=0
  [[ -d $WORK/course/release/06_precision_mixta ]] ||
    "$PY" -m autograder build --course-only || return 1
  echo "-- where CUDA works"
  # shellcheck disable=SC2086
  "$PY" -m autograder.gpu_check probe $CUDA_FLAG || failed=1
  for phase in class hog; do
    echo "-- phase $phase"
    local workers=() grades=$WORK/grades-$phase
    [[ $phase == hog ]] && workers=(--workers 2)  # side by side
    # shellcheck disable=SC2086
    { "$PY" -m autograder.gpu_check class "$phase" "$WORK/$phase" &&
      "$PY" -m autograder grade --submissions "$WORK/$phase" --out "$grades" --lines \
        "${workers[@]}" &&
      "$PY" -m autograder.gpu_check verdict "$phase" --grades "$grades/grades.csv" $CUDA_FLAG
    } || failed=1
    [[ $phase == class && -f $grades/grades.csv ]] && cp "$grades/grades.csv" "$OUT/grades.csv"
  done
  return $failed
}

bench() {
  "$PY" -m autograder.gpu_bench --out "$OUT"
}
export -f setup tests nbval grade bench

results=()
failed=0
step() {  # step NAME LIMIT_S LOG: the function NAME under a time limit, logged, recorded
  local name=$1 limit=$(($2 * ${GPU_CHECK_SLACK:-1})) begin status verdict
  begin=$(date +%s)
  echo "== $name (limit ${limit} s)"
  set +e
  PATH=$WORK/bwrap/usr/bin:$PATH timeout --kill-after=10 "$limit" bash -c "$name" 2>&1 |
    tee "$OUT/$3"
  status=${PIPESTATUS[0]}
  set -e
  case $status in
    0) verdict=PASS ;;
    124 | 137) verdict=TIMEOUT ;;
    *) verdict=FAIL ;;
  esac
  ((status == 0)) || failed=1
  results+=("$(printf '%-7s %4d s  %-6s (limit %d s, %s)' "$verdict" \
    "$(($(date +%s) - begin))" "$name" "$limit" "$3")")
  echo "[timing] gpu-check $name: $(($(date +%s) - begin)) s ($verdict)"
}

# Limits: 6 minutes in all on one H100 (about 3 expected).
step setup 40 setup.log
step tests 90 test_gpu.log
step nbval 90 nbval.log
step grade 110 grade.log
step bench 30 bench.log

device=$(PYTHONPATH=$PYTHONPATH "$PY" -c "import torch; print(torch.cuda.get_device_name() \
  if torch.cuda.is_available() else 'no CUDA device', '· torch', torch.__version__)")
{
  echo "gpu-check $(date -u +%FT%TZ): $device"
  printf '  %s\n' "${results[@]}"
  echo "total $(($(date +%s) - started)) s: $( ((failed)) && echo FAIL || echo PASS)"
} | tee "$SUMMARY"
exit $failed
