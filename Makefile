# agent-shell — every target installs what it needs on a fresh Debian machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BRIDGE := $(abspath $(VENV)/bin/agent-shell-bridge)
EMACS ?= emacs
ELISP_FILES := $(wildcard elisp/*.el)
ELISP_TESTS := $(wildcard tests/elisp/test-*.el)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export AGENT_SHELL_TEST_BRIDGE := $(BRIDGE)

.PHONY: test test-python test-elisp test-e2e test-recordings lint compile demo bench deps venv system-deps clean

test: deps test-python test-elisp

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml | system-deps
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

system-deps:
	@missing=""; \
	$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v $(EMACS) >/dev/null || missing="$$missing emacs-nox"; \
	command -v rg >/dev/null || missing="$$missing ripgrep"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	command -v git >/dev/null || missing="$$missing git"; \
	[ -d /usr/share/emacs/site-lisp/elpa/magit-3.3.0 ] || ls -d /usr/share/emacs/site-lisp/elpa/magit-* >/dev/null 2>&1 || missing="$$missing elpa-magit"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# System packages first: Debian's python3 needs python3-venv to make the venv.
deps: system-deps venv

test-python: deps
	$(PY) -m pytest -q

test-elisp: deps
	@test -n "$(ELISP_TESTS)" || { echo "no ERT tests found"; exit 1; }
	$(EMACS) -Q --batch -L elisp -L tests/elisp \
	  --eval '(setq load-prefer-newer t)' \
	  $(foreach t,$(ELISP_TESTS),-l $(t)) \
	  -f ert-run-tests-batch-and-exit

lint: deps
	$(VENV)/bin/ruff check bridge tests/python tests/e2e tests/recordings bench
	$(VENV)/bin/ruff format --check bridge tests/python tests/e2e tests/recordings bench
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict bench
	$(EMACS) -Q --batch -L elisp \
	  --eval '(setq byte-compile-error-on-warn t)' \
	  -f batch-byte-compile $(ELISP_FILES) bench/agent-shell-bench.el
	$(EMACS) -Q --batch -L elisp -L tests/elisp \
	  --eval '(setq byte-compile-error-on-warn t)' \
	  -f batch-byte-compile $(wildcard tests/elisp/*.el)
	@rm -f bench/*.elc tests/elisp/*.elc
	$(EMACS) -Q --batch -L elisp -l tests/elisp/lint.el $(ELISP_FILES)
	@rm -f elisp/*.elc

# Byte-compiles the package in place, for a checkout loaded with use-package.
compile: system-deps
	$(EMACS) -Q --batch -L elisp -f batch-byte-compile $(ELISP_FILES)

# Copies demo/project to a temporary git repository and opens Emacs there with
# agent-shell started; without an API key a scripted mock model answers.
demo: deps
	@demo/run-demo.sh

test-e2e: deps
	$(PY) -m pytest -q -m e2e tests/e2e

# Real provider streams (other projects' captures, kept outside the repository)
# replayed through the model client and compared with the official openai SDK.
RECORDINGS ?= ../shared/provider-recordings
test-recordings: deps $(VENV)/.recordings
	RECORDINGS=$(abspath $(RECORDINGS)) $(PY) -m pytest -q -p no:cacheprovider tests/recordings

$(VENV)/.recordings: pyproject.toml
	$(PY) -m pip install -q -e '.[test,recordings]'
	@touch $@

bench: deps
	$(PY) -m bench --emacs $(EMACS) --out bench/results.json
	$(PY) -m bench.readme --results bench/results.json --readme README.org

clean:
	rm -rf $(VENV) elisp/*.elc .pytest_cache .mypy_cache .ruff_cache
