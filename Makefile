# svmtrain — everything a fresh machine needs is created from here.
#   make demo   environment + build + train/predict/verify on data/
#   make test   environment + build + the whole test suite
#   make bench  benchmarks against the peers (scikit-learn, LIBLINEAR), printed as ratios
#   make man    regenerate man/ from the CLI
#   make docs   the user guide (docs/, mkdocs.yml) as HTML in site/
#   make slurm-train TRAIN=FILE [MODEL=FILE] [SLURM_OPTIONS=...]  submit slurm/svmtrain-dask.sbatch

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP_ENV   := $(VENV)/.installed
STAMP_BUILD := $(VENV)/.built
STAMP_PYC   := $(VENV)/.compiled
SHARED_DATA ?= ../shared/data
export SOURCE_DATE_EPOCH ?= 1767225600

.PHONY: env build test demo bench man docs clean slurm-train

env: $(STAMP_ENV)
$(STAMP_ENV): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

build: $(STAMP_BUILD) $(STAMP_PYC)
# compat: a .pth entry rather than setuptools' import finder, which every process paid for (14 ms,
# it imports pathlib)
$(STAMP_BUILD): $(STAMP_ENV) setup.py pyproject.toml $(wildcard pyx/*.pyx pyx/*.pxd pyx/*.h)
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e . --config-settings editable_mode=compat
	touch $@

# bytecode: an editable install compiles none, an installed one does. Redone whenever a module
# changes (a pull, an edit): where Python cannot write it (PYTHONDONTWRITEBYTECODE, a read-only
# tree) every command would compile each changed module again (svmtrain/pipeline.py: 13 ms)
$(STAMP_PYC): $(STAMP_BUILD) $(wildcard svmtrain/*.py svmtrain/*/*.py svmtools/*.py)
	$(PY) -m compileall -q svmtrain svmtools
	touch $@

test: build
	$(PY) -m pytest -q tests

demo: build
	@SVMTRAIN=$(VENV)/bin/svmtrain SVMTOOLS=$(VENV)/bin/svmtools sh data/demo.sh

bench: build
	$(PY) bench/run.py --shared-data $(SHARED_DATA)

man: build
	$(PY) -m svmtools.manpages man

# the guide's tool is the optional `docs` extra, installed here rather than by `make env`
docs: $(STAMP_ENV)
	$(PY) -m pip install --quiet 'mkdocs>=1.6'
	$(PY) -m mkdocs build --strict --site-dir site

# train (and verify-bound) on a Dask cluster inside one SLURM job; see README.md, "Past one machine"
slurm-train:
	@test -n "$(TRAIN)" || { echo "make slurm-train: give TRAIN=FILE (a plain file on a shared file system)"; exit 2; }
	sbatch --export=ALL,TRAIN=$(abspath $(TRAIN)),MODEL=$(abspath $(or $(MODEL),$(basename $(TRAIN)).model)) \
		$(SLURM_OPTIONS) slurm/svmtrain-dask.sbatch

clean:
	rm -rf build dist site *.egg-info pyx/*.c pyx/*.html svmtrain/*.so $(STAMP_BUILD) $(STAMP_PYC)
