# Task runner. Every target creates the virtual environment first if it is missing.
#   make grade   grade the bundled sample class, in a course of its own (build/sample)
#   make check   the inner loop: lint + every test not marked slow (CH=03: one chapter)
#   make test    lint, stale-notebook check, unit tests, nbval, end-to-end grading (CI)
#   make build   rebuild notebooks/ from solutions/
#   make lab     JupyterLab on the course (formgrader): prints URL and token; Ctrl+C stops it
#   make fairness  grade the variant corpus through the hidden tests (table; fails if unfair)
#   make canary  torch drift canary: the course under CANARY_TORCH (default 2.14.1)
#   make gpu-check  chapters 6 and 7 on a CUDA GPU (ci/gpu_check.sh); says so and passes without one
#   make clean   remove what can be regenerated; keeps (and lists) the secret, gradebook, grades

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: env sandbox build check-build grade report check test lint nbval exercises fairness lab clean \
	clean-private gpu-check

TIMED := ci/timed.sh

$(STAMP): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(TIMED) "install requirements" $(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

env: $(STAMP)

# bubblewrap, the OS sandbox of grading kernels (installed when root, else explained).
sandbox:
	@ci/sandbox.sh

build: env
	$(PY) -m autograder build

check-build: env
	$(TIMED) "notebooks in sync" $(PY) -m autograder build --check

grade: env sandbox
	$(PY) -m autograder grade

report: env
	$(PY) -m autograder report --sample

exercises: env
	$(PY) -m autograder exercises

fairness: env
	$(PY) -m autograder fairness

lint: env
	$(TIMED) lint $(PY) -m ruff check .

# nbval runs the instructor notebooks (solutions + hidden tests) built from solutions/.
nbval: env
	$(TIMED) "build course" $(PY) -m autograder build --course-only
	$(TIMED) nbval env OMP_NUM_THREADS=1 $(PY) -m pytest --nbval-lax --nbval-current-env -p no:cacheprovider build/course/source

# The inner loop: lint, then every test not marked slow (none runs a notebook, a kernel or
# nbgrader). CH=03 (or CH=03,04): only the tests about chapters, for those chapters alone
# (AUTOGRADER_CHAPTERS): their contract and own tests, notebooks, diagnosis and fairness.
# One torch thread: the tensors are tiny, and on busy shared cores torch's spinning worker
# threads made the same tests several times slower.
CHAPTER_TESTS := tests/chapters tests/student tests/test_notebooks.py tests/test_fairness.py
check: lint
	$(TIMED) "fast tests" env OMP_NUM_THREADS=1 $(if $(CH),AUTOGRADER_CHAPTERS=$(CH)) \
		$(PY) -m pytest -q -m "not slow" $(if $(CH),$(CHAPTER_TESTS))

# One torch thread here too (see check): grading runs two kernels at once on two cores, and
# each kernel's own thread pool only made them fight over the cores. Test files run in
# TEST_WORKERS processes (pytest-xdist, one file per process: its module fixtures stay
# shared): most tests wait on kernels and subprocesses, and one process left a core idle.
TEST_WORKERS ?= 2
test: sandbox lint check-build nbval
	$(TIMED) pytest env OMP_NUM_THREADS=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=40

# JupyterLab on build/course (autograder/lab.py): prints the URL, the token and how to stop it;
# Ctrl+C stops the server and its kernels (nothing is left running). notebooks/ is untouched.
lab: env
	$(PY) -m autograder build --course-only
	$(PY) -m autograder lab

# Only what can be regenerated (sample class, bench, built source/release, ...): the course
# secret, gradebook, submissions and grades are kept, and it says so (autograder/clean.py).
# System python3: no environment needed.
clean:
	@$(PYTHON) -m autograder.clean

# Deletes ALL of build/, the instructor's private data included, naming each thing.
clean-private:
	@$(PYTHON) -m autograder.clean --private

# Chapters 6 and 7 verified on a CUDA GPU, each step timed and logged under OUT (default
# build/gpu-check; README, CI). GPU_PY=python3: a machine whose own python3 has CUDA torch
# (the device machine), no virtual environment made.
gpu-check: $(if $(GPU_PY),,env)
	GPU_PY=$(or $(GPU_PY),$(PY)) ci/gpu_check.sh

# Torch drift canary, before each term: its own venv and build folder (ci/canary.sh).
.PHONY: canary
canary:
	PYTHON=$(PYTHON) ci/canary.sh
