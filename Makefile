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

.PHONY: help venv lab release execute examples grade test test-fast lint bench book wheel clean browser

help:
	@echo "make grade [SUBMISSIONS=dir|zip] [OUT=dir]   grade a class (default: the bundled example class)"
	@echo "make test                                    everything CI checks"
	@echo "make test-fast                               the in-process tests (under a minute)"
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

# everything CI checks; fails too when the run changed the working tree (tests write only to temp folders)
test: $(STAMP) browser lint
	@before="$$(git status --porcelain 2>/dev/null)"; \
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 $(NBVAL) tests solutions; rc=$$?; \
	after="$$(git status --porcelain 2>/dev/null)"; \
	if [ "$$before" != "$$after" ]; then \
		echo "make test changed the working tree (a test wrote into the checkout):"; \
		echo "before:"; echo "$$before"; echo "after:"; echo "$$after"; exit 1; \
	fi; exit $$rc

# the in-process layer: checks, lessons, release, units (no end-to-end grading, nbval, browser, cluster)
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not (e2e or browser or cluster)" tests

lint: $(STAMP)
	$(BIN)/ruff check --exclude '*.ipynb' . solutions/02_layernorm.ipynb
	$(BIN)/ruff format --check --exclude '*.ipynb' .

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
