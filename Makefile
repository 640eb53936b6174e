# Every target bootstraps the repo-local .venv it needs; nothing is done by hand.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# installs by role (requirements/*.txt: names; requirements.txt: the one source of pins): grading only,
# the site, the cluster; $(STAMP) is everything (the tests need every role)
GRADE_STAMP   := $(VENV)/.installed-grade
SITE_STAMP    := $(VENV)/.installed-site
CLUSTER_STAMP := $(VENV)/.installed-cluster
SUBMISSIONS ?= examples/class
OUT     ?= grading-out
WORKERS ?=
SCHEDULER ?=
DB_URL  ?=
# where handed-out notebooks install the checks from (the site's wheel URL, an index name, a git URL)
export BYHAND_SOURCE
# releases by lesson (make handout|exchange|book LESSONS="09 12"); FORCE=1 hands out another lesson's
# graded answer anyway; CONFIG=course.toml: a lesson whose deadline has not passed is not released yet
LESSONS ?=
PUBLISH_FLAGS = $(if $(filter 1,$(FORCE)),--force,) $(if $(CONFIG),--config '$(CONFIG)',)

.PHONY: breadth refresh messages review-zh mutation postgres test-full test-oldest-torch test-catalogue help venv lab release handout exchange formgrader execute examples grade test test-fast lint nbval-other-cpu bench book wheel clean browser

help:
	@echo "make grade [SUBMISSIONS=dir|zip] [OUT=dir]   grade a class (default: the bundled example class)"
	@echo "make test                                    the gate CI runs (target 8 min on 2 cores; docs/testing.md): lint, the loop first, then the rest"
	@echo "make test-full                               everything: every layer, clean venvs, cluster, browser, claims"
	@echo "make test-fast                               lint and a sample of the in-process tests (target 1 min on 2 cores; docs/testing.md)"
	@echo "make test-oldest-torch                       the student notebooks in a clean venv with torch 2.4.1"
	@echo "make test-catalogue                          every catalogued mistake graded in sandboxed kernels"
	@echo "make lab                                     JupyterLab on notebooks/ (students)"
	@echo "make book [ANSWERS=0] [LESSONS=...]          the rendered course site (self-learners; ANSWERS=0: a graded class)"
	@echo "make release                                 regenerate notebooks/ from solutions/"
	@echo "make handout [LESSONS=...]                   build/handout/*.zip: the student notebooks for an LMS"
	@echo "make exchange [LESSONS=...]                  nbgrader release_assignment (English and Chinese) into the exchange"
	@echo "    (publishing: BYHAND_SOURCE=<the wheel's URL>, FORCE=1, CONFIG=course.toml; docs/grading.md)"
	@echo "make formgrader [OUT=dir]                    nbgrader's formgrader on a grading output folder"
	@echo "make review-zh [LESSON=09_modern_block]      build/review/NN.html: English and Chinese side by side, stale cells flagged"
	@echo "make breadth [ALL=1]                         the catalogue's breadth of the stale lessons (ALL=1: every one); records those that passed (tests/breadth_verified.json)"
	@echo "make refresh [ALL=1] [BUMP=0]               redo what is derived from the sources: catalogues, stored outputs, release, example class, version"
	@echo "make messages                                the pages' words into student/byhand/locale/*.po, compiled to .mo"
	@echo "make wheel                                   the student package (byhand) as a wheel in build/wheel/"
	@echo "make bench                                   grading benchmark table"
	@echo "make mutation [LESSONS=...]                  mutate the reference answers, run the checks on each (docs/mutation.md)"

$(STAMP): requirements.txt pyproject.toml student/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	-$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q --no-deps -e student
	$(BIN)/python -c "import torch, nbgrader, nbval, jupyterlab, byhand"
	touch $(STAMP) $(GRADE_STAMP) $(SITE_STAMP) $(CLUSTER_STAMP)

# one role's packages (requirements/$(1).txt) at requirements.txt's pins, then the two packages
define ROLE_INSTALL
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	-$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements/$(1).txt -c requirements.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip install -q --no-deps -e student
endef

$(GRADE_STAMP): requirements.txt requirements/grade.txt pyproject.toml student/pyproject.toml
	$(call ROLE_INSTALL,grade)
	$(BIN)/python -c "import torch, nbgrader, nbclient, byhand"
	touch $@

$(SITE_STAMP): $(GRADE_STAMP) requirements/site.txt
	$(call ROLE_INSTALL,site)
	touch $@

$(CLUSTER_STAMP): $(GRADE_STAMP) requirements/cluster.txt
	$(call ROLE_INSTALL,cluster)
	touch $@

venv: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root,)

review-zh: $(STAMP)
	$(BIN)/python -m autograder review --lang zh_CN $(LESSON)

release: $(STAMP)
	$(BIN)/python -m autograder release

# everything derived from the sources, what changed only (autograder/tooling/refresh.py):
# catalogues, solutions' stored outputs, student notebooks (English and translated), the example
# class and docs/mistakes.md, the checks' version and fingerprint. ALL=1 redoes every step; BUMP=0
# records the current version's fingerprint without a new version
refresh: $(STAMP)
	$(BIN)/python -m autograder refresh $(if $(filter 1,$(ALL)),--all,) $(if $(filter 0,$(BUMP)),--no-bump,)

# the grader pages' words into each language's gettext catalogue (student/byhand/locale), compiled
messages: $(STAMP)
	$(BIN)/python -m autograder messages

handout: $(GRADE_STAMP)
	$(BIN)/python -m autograder handout $(LESSONS) $(PUBLISH_FLAGS)

# nbgrader's exchange: NBGRADER_EXCHANGE=/srv/nbgrader/exchange on a JupyterHub (default build/course/exchange)
# nbgrader runs `alembic` from PATH when it creates a gradebook: the venv's bin first
exchange: $(GRADE_STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m autograder exchange $(LESSONS) $(PUBLISH_FLAGS)

# formgrader on a graded class: JupyterLab in OUT (Nbgrader menu > Formgrader, or /formgrader)
formgrader: $(GRADE_STAMP)
	@test -f $(OUT)/nbgrader_config.py || { echo "no $(OUT)/nbgrader_config.py: run make grade OUT=$(OUT) first"; exit 2; }
	cd $(OUT) && PATH="$(abspath $(BIN)):$$PATH" JUPYTER_PATH="$(abspath $(OUT))/formgrader_assets/share:$$JUPYTER_PATH" $(abspath $(BIN))/jupyter lab --notebook-dir=. $(if $(filter 0,$(shell id -u)),--allow-root,)

execute: $(STAMP)
	$(BIN)/python -m autograder execute

examples: $(STAMP)
	$(BIN)/python -m autograder examples

# the options given, as one line (a recipe continued over lines echoes a bare `\` for each one left out)
GRADE_FLAGS = $(strip $(if $(WORKERS),--workers $(WORKERS),) \
	$(if $(SCHEDULER),--scheduler $(SCHEDULER),) $(if $(DB_URL),--db-url '$(DB_URL)',) \
	$(if $(CONFIG),--config '$(CONFIG)',) $(if $(ONLY),--only $(ONLY),) $(foreach m,$(MAP),--map '$(m)') \
	$(if $(LESSONS),--lessons $(LESSONS),) $(if $(CELL_TIMEOUT),--cell-timeout $(CELL_TIMEOUT),) \
	$(if $(NOTEBOOK_TIMEOUT),--notebook-timeout $(NOTEBOOK_TIMEOUT),) \
	$(if $(QUESTION_TIMEOUT),--question-timeout $(QUESTION_TIMEOUT),))

grade: $(GRADE_STAMP) $(if $(SCHEDULER)$(DB_URL),$(CLUSTER_STAMP),)
	$(BIN)/python -m autograder grade $(SUBMISSIONS) --out $(OUT) $(GRADE_FLAGS)

# nbval re-executes every solution notebook and compares its stored outputs
NBVAL := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=300

# nbval once more as another machine would run it: the other instruction set (this CPU's AVX2 ->
# no vectorization; AVX-512 -> AVX2), MKL and oneDNN capped at AVX2, and one thread instead of all
OTHER_ISA = $$($(BIN)/python -c "import torch; print('default' if torch.backends.cpu.get_cpu_capability() == 'AVX2' else 'avx2')")
OTHER_CPU = ATEN_CPU_CAPABILITY=$(OTHER_ISA) MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1
NBVAL_OTHER := --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=900

nbval-other-cpu: $(STAMP)
	env $(OTHER_CPU) $(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL_OTHER) solutions

# when make started: the gate's time includes creating the venv
START := $(shell date +%s)
ELAPSED = echo "$@: $$(( $$(date +%s) - $(START) )) s wall (venv, lint and tests)"

# fails when the command in $(1) changed the working tree (tests write only to temp folders)
define UNCHANGED_TREE
	@before="$$(git status --porcelain 2>/dev/null)"; \
	$(1); rc=$$?; \
	after="$$(git status --porcelain 2>/dev/null)"; \
	if [ "$$before" != "$$after" ]; then \
		echo "$@ changed the working tree (a test wrote into the checkout):"; \
		echo "before:"; echo "$$before"; echo "after:"; echo "$$after"; rc=1; \
	fi; \
	$(ELAPSED); exit $$rc
endef

# The gate, what CI runs (.ci/run), meant to take under 8 minutes on 2 cores (docs/testing.md): lint, then
# the loop first (`make test-fast`'s selection, $(FAST): a grader whose verdicts always pass, or a check
# that passes its mistakes, fails here within two minutes, before anything slow starts), then the rest
# (marked `slow` or `breadth`, or a layer's: nbval of solutions/, the shared graded class and every
# end-to-end test that reads it (tests/shared_class.py; the gate's part of the example class:
# --shared-class=gate), a run killed and resumed, the sandbox's facts, two browser checks). Two pytest processes each time;
# tests/conftest.py keeps a notebook's nbval cells in one and every reader of the shared class in one.
# What it leaves out is marked `full`; `fast` marks a stand-in only the loop runs.
REST := -m "not (full or fast) and (e2e or browser or cluster or claims or nbval or slow or breadth)"
GATE := -n 2 --dist loadgroup
test: $(STAMP) browser lint
	$(call UNCHANGED_TREE,$(BIN)/python -m pytest -q -p no:cacheprovider -p no:nbval -rs --durations=10 -n 2 $(FAST) tests \
		&& $(BIN)/python -m pytest -q -p no:cacheprovider -rs --durations=15 $(GATE) $(REST) --skip-verified-breadth \
			--shared-class=gate $(NBVAL) tests solutions)

# the catalogue's breadth (every `breadth` test of tests/breadth.py's CACHED files) of the lessons
# not verified at their digest now (ALL=1: every lesson), and the digests of the lessons whose tests
# all passed recorded in tests/breadth_verified.json (commit it): the gate leaves a lesson's breadth
# out while its digest is the recorded one.
breadth: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -p no:nbval -rs -n 2 -m "breadth and not full" --record-breadth \
		$(if $(filter 1,$(ALL)),,--skip-verified-breadth) \
		$(addprefix tests/,test_lessons.py test_verdict.py test_zh_output.py); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "every lesson's breadth is verified at its digest: nothing to run"; rc=0; \
	else $(BIN)/python tests/breadth.py --merge; fi; $(ELAPSED); exit $$rc

# Everything: every test of every layer (the catalogue graded in kernels, the student notebooks in a
# clean venv, the claims sweeps, the cluster, formgrader, JupyterLab and the whole site in Chromium)
# in two pytest processes grouped as the gate's are ($(GATE): a notebook's nbval cells in one, every
# reader of the shared class in one), and nbval again under another CPU beside them (its log in build/).
# In one process it took over two hours on 2 cores (3,800 tests).
test-full: $(STAMP) browser postgres lint
	@mkdir -p build
	$(call UNCHANGED_TREE,$(MAKE) --no-print-directory nbval-other-cpu > build/nbval-other-cpu.log 2>&1 & other=$$!; \
	$(BIN)/python -m pytest -q -p no:cacheprovider -rs --durations=25 $(GATE) $(NBVAL) tests solutions; first=$$?; \
	wait $$other; second=$$?; \
	echo "== nbval of solutions/ under another CPU (make nbval-other-cpu; build/nbval-other-cpu.log) =="; \
	grep -E "^(FAILED|ERROR)|passed|failed|error" build/nbval-other-cpu.log | tail -n 20; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ])

# the loop after a change to a check or the grader, meant to take under a minute on 2 cores
# (docs/testing.md): the in-process layer, two processes, without what the gate runs besides
# (`slow`: seconds of real work; `breadth`: the catalogue past the cheapest mistake of each question,
# tests/tiers.py) or only test-full has (`full`); no nbval plugin (it compiles jsonschema's IRI
# grammars in every process). The gate runs the same selection first.
FAST := -m "not (e2e or browser or cluster or claims or nbval or slow or breadth or full)"
test-fast: $(STAMP) lint
	@$(BIN)/python -m pytest -q -p no:cacheprovider -p no:nbval -n 2 $(FAST) tests; rc=$$?; $(ELAPSED); exit $$rc

# ruff check: the package, tests, site code and the lesson notebooks (solutions/; the generated
# notebooks/ and the example class's deliberately broken notebooks are excluded in pyproject.toml).
# ruff format leaves the notebooks alone: it would undo the lessons' column-aligned shape comments.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check --exclude '*.ipynb' .

browser:
	@if [ -f .ci/install-browser.sh ]; then bash .ci/install-browser.sh; fi

# PostgreSQL's server for the cluster tests (make test-full), from Debian when missing
postgres:
	@bash .ci/install-postgres.sh

# the students' clean-venv test with the oldest torch the student package declares (torch>=2.4 in
# student/pyproject.toml); PyPI serves it as a CUDA build, about 3 GB with its libraries
OLDEST_TORCH ?= torch==2.4.1
test-oldest-torch: $(STAMP)
	STUDENT_TORCH='$(OLDEST_TORCH)' $(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/test_students_anywhere.py

# every catalogued mistake graded in sandboxed kernels (make test grades the first of each question
# that way and judges all of them in-process, through the same wire and verdict)
test-catalogue: $(STAMP)
	TBB_CATALOGUE=all $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_grading.py -k "classic_mistake or correct_alternative"

# mutation testing of the checks (docs/mutation.md): fails on a survivor not listed as equivalent in
# tests/mutation_equivalents.toml, or a mutant only the hidden checks kill; make test-full runs the
# same through tests/test_mutation.py
mutation: $(STAMP)
	$(BIN)/python -m autograder mutation $(LESSONS)

bench: $(STAMP)
	$(BIN)/python -m autograder bench

wheel: $(GRADE_STAMP)
	$(BIN)/python -m autograder wheel --out build/wheel

# ANSWERS=0: a graded class's site, no reference answers (the default keeps them for self-learners)
ANSWERS ?= 1
book: $(SITE_STAMP)
	$(BIN)/python site/build.py $(if $(filter 0,$(ANSWERS)),--no-answers,) $(if $(LESSONS),--lessons $(LESSONS),) $(PUBLISH_FLAGS)
	@echo "open build/site/index.html"

clean:
	rm -rf build grading-out _build
	find . -name __pycache__ -prune -exec rm -rf {} +
