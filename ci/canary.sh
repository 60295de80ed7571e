#!/usr/bin/env bash
# Torch drift canary (`make canary`), run before each term: the course under a newer torch.
# A new release can turn a deprecation into a stderr warning (nbgrader scores such a test
# cell 0) or change a result. In a venv of its own (build/canary-venv) and a build folder
# of its own (build/canary, via AUTOGRADER_BUILD_DIR: build/course is left alone) it
# builds the course, runs nbval and the hidden-test unit tests, grades the sample class in
# the hardened kernel of that venv and checks the result (autograder/canary.py).
# Every step runs even if an earlier one failed; the exit status is non-zero if any did.
#   CANARY_TORCH=2.14.1 (default)  the torch release under test
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=${CANARY_TORCH:-2.14.1}
VENV=build/canary-venv
PY=$VENV/bin/python
TIMED=ci/timed.sh
export AUTOGRADER_BUILD_DIR=$PWD/build/canary
COURSE=$AUTOGRADER_BUILD_DIR/course
GRADER_LOG=$AUTOGRADER_BUILD_DIR/grade.log
mkdir -p "$AUTOGRADER_BUILD_DIR"
started=$(date +%s)

# 1. The pinned environment with torch replaced; reinstalled only when the pins change.
requirements=$(mktemp)
trap 'rm -f "$requirements"' EXIT
sed -E "s/^torch==.*/torch==${TORCH_VERSION}/" requirements.txt >"$requirements"
grep -qx "torch==${TORCH_VERSION}" "$requirements" || {
  echo "canary: no torch== pin in requirements.txt" >&2; exit 1; }
wanted=$(cat "$requirements" pyproject.toml | sha256sum | cut -d' ' -f1)
stamp=$VENV/.canary-installed
if [[ ! -f $stamp || $(cat "$stamp") != "$wanted" ]]; then
  test -x "$PY" || "${PYTHON:-python3}" -m venv "$VENV"
  $TIMED "canary: install requirements (torch ${TORCH_VERSION})" \
    "$PY" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps -e .
  echo "$wanted" >"$stamp"
fi
tested=$("$PY" -c "import torch; print(torch.__version__)")
echo "canary: torch ${tested} in ${VENV}"

results=()
failed=0
step() {  # step NAME COMMAND...: run it timed, record PASS/FAIL, go on either way
  local name=$1
  shift
  if $TIMED "canary: $name" "$@"; then
    results+=("PASS  $name")
  else
    results+=("FAIL  $name")
    failed=1
  fi
}

kernel_in_this_venv() {  # the kernel grading uses must be this venv's interpreter
  "$PY" - <<'EOF'
import sys
from jupyter_client.kernelspec import KernelSpecManager
from autograder.kernel import KERNEL_NAME
spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
print(f"kernel {KERNEL_NAME}: {spec.resource_dir}\n  argv: {spec.argv}")
sys.exit(0 if spec.argv[0] == sys.executable else f"argv[0] is not {sys.executable}")
EOF
}

grade_sample_class() {  # keep the output: the verdict lists the grader's warnings
  set -o pipefail
  "$PY" -m autograder grade --lines 2>&1 | tee "$GRADER_LOG"
}
# ci/timed.sh runs its command in a shell of its own: it needs these exported.
export PY GRADER_LOG
export -f kernel_in_this_venv grade_sample_class

# 2. Build, kernel, notebooks, hidden tests, grading, verdict.
step "build course" "$PY" -m autograder build --course-only
step "grading kernel in the canary venv" kernel_in_this_venv
# Library deprecations are shown inside the kernel too (Python hides them by default).
step "nbval" env PYTHONWARNINGS=default "$PY" -m pytest -rw --nbval-lax --nbval-current-env \
  -p no:cacheprovider "$COURSE/source"
# The pipeline drops stderr from graded cells, so warnings of hidden tests are looked for here.
step "instructor notebooks: no errors, no stderr in graded cells" \
  env PYTHONWARNINGS=default "$PY" -m autograder.canary --instructor-notebooks
step "hidden-test unit tests" "$PY" -m pytest -rw tests/chapters
step "grade sample class" grade_sample_class
step "verdict (expected points, torch in the kernels, grading warnings)" \
  "$PY" -m autograder.canary --expect-torch "$TORCH_VERSION" --grader-log "$GRADER_LOG"

# 3. Summary.
echo
echo "Torch drift canary: torch ${tested} (requested ${TORCH_VERSION})"
printf '  %s\n' "${results[@]}"
echo "[timing] canary total: $(($(date +%s) - started)) s"
if ((failed)); then
  echo "canary: FAIL"
  exit 1
fi
echo "canary: PASS"
