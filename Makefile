# Every target bootstraps the repo-local .venv it needs; nothing is done by hand.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
SUBMISSIONS ?= autograder/examples/class
OUT     ?= grading-out
WORKERS ?=
SCHEDULER ?=
DB_URL  ?=

.PHONY: help venv lab release execute examples grade test nbval-other-cpu bench book wheel clean browser

help:
	@echo "make grade [SUBMISSIONS=dir|zip] [OUT=dir]   grade a class (default: the bundled example class)"
	@echo "make test                                    everything CI checks"
	@echo "make lab                                     JupyterLab on notebooks/ (students)"
	@echo "make book                                    the rendered course site (self-learners)"
	@echo "make release                                 regenerate notebooks/ from solutions/"
	@echo "make wheel                                   the student package (byhand) as a wheel in build/wheel/"
	@echo "make bench                                   grading benchmark table"

$(STAMP): requirements.txt pyproject.toml student/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	-$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q --no-deps -e student
	$(BIN)/python -c "import torch, nbgrader, nbval, jupyterlab, byhand"
	touch $(STAMP)

venv: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

release: $(STAMP)
	$(BIN)/python -m autograder release

execute: $(STAMP)
	$(BIN)/python -m autograder execute

examples: $(STAMP)
	$(BIN)/python -m autograder examples

grade: $(STAMP)
	$(BIN)/python -m autograder grade $(SUBMISSIONS) --out $(OUT) $(if $(WORKERS),--workers $(WORKERS),) \
		$(if $(SCHEDULER),--scheduler $(SCHEDULER),) $(if $(DB_URL),--db-url '$(DB_URL)',)

# nbval re-executes every solution notebook and compares its stored outputs
NBVAL := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=300

# nbval once more as another machine would run it: the other instruction set (this CPU's AVX2 ->
# no vectorization; AVX-512 -> AVX2), MKL and oneDNN capped at AVX2, and one thread instead of all
OTHER_ISA = $$($(BIN)/python -c "import torch; print('default' if torch.backends.cpu.get_cpu_capability() == 'AVX2' else 'avx2')")
OTHER_CPU = ATEN_CPU_CAPABILITY=$(OTHER_ISA) MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1

nbval-other-cpu: $(STAMP)
	env $(OTHER_CPU) $(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL) --nbval-cell-timeout=900 solutions

# the main pass and the other-CPU nbval pass run side by side; either failing fails the target
test: $(STAMP) browser
	@mkdir -p build
	@$(MAKE) --no-print-directory nbval-other-cpu > build/nbval-other-cpu.log 2>&1 & other=$$!; \
	$(BIN)/python -m pytest -q -p no:cacheprovider -rs --durations=15 $(NBVAL) tests solutions; main=$$?; \
	wait $$other; second=$$?; \
	echo "== nbval of solutions/ under another CPU (make nbval-other-cpu): build/nbval-other-cpu.log =="; \
	grep -E "^(FAILED|ERROR)|passed|failed|error" build/nbval-other-cpu.log | tail -n 20; \
	test $$main -eq 0 && test $$second -eq 0

browser:
	@if [ -f .ci/install-browser.sh ]; then bash .ci/install-browser.sh; fi

bench: $(STAMP)
	$(BIN)/python -m autograder bench

wheel: $(STAMP)
	$(BIN)/python -m autograder wheel --out build/wheel

book: $(STAMP)
	$(BIN)/python site/build.py
	@echo "open build/site/index.html"

clean:
	rm -rf build grading-out _build
	find . -name __pycache__ -prune -exec rm -rf {} +
