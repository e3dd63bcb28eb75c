# agent-shell — every target installs what it needs on a fresh Debian machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BRIDGE := $(abspath $(VENV)/bin/agent-shell-bridge)
EMACS ?= emacs
ELISP_FILES := $(wildcard elisp/*.el)
ELISP_TESTS := $(wildcard tests/elisp/test-*.el)
ELPA := /usr/share/emacs/site-lisp/elpa
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian's Emacs 30 from bookworm-backports, unpacked beside the system's Emacs.
EMACS30_DIR := .cache/emacs-30
EMACS30 := $(abspath $(EMACS30_DIR))/bin/emacs
export AGENT_SHELL_TEST_BRIDGE := $(BRIDGE)

.PHONY: test test-python test-no-sandbox test-elisp test-emacs30 emacs30 test-e2e test-recordings lint compile demo bench bench-deps deps venv system-deps clean

test: deps test-python test-elisp test-emacs30

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
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	{ command -v dbus-daemon && command -v dbus-send; } >/dev/null || missing="$$missing dbus"; \
	{ command -v ssh-agent && command -v ssh-keygen; } >/dev/null || missing="$$missing openssh-client"; \
	[ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v podman >/dev/null || missing="$$missing podman"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	command -v dockerd >/dev/null || missing="$$missing docker.io"; \
	[ -d /usr/share/emacs/site-lisp/elpa/magit-3.3.0 ] || ls -d /usr/share/emacs/site-lisp/elpa/magit-* >/dev/null 2>&1 || missing="$$missing elpa-magit"; \
	ls -d $(ELPA)/package-lint-[0-9]* >/dev/null 2>&1 || missing="$$missing elpa-package-lint"; \
	ls -d $(ELPA)/flycheck-[0-9]* >/dev/null 2>&1 || missing="$$missing elpa-flycheck"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# System packages first: Debian's python3 needs python3-venv to make the venv.
deps: system-deps venv

# The tests whose path depends on the sandbox (marked sandbox_sensitive) run a second
# time with it forced off (the fallback: only strictly read-only commands run unasked).
test-python: deps
	$(PY) -m pytest -q
	AGENT_SHELL_SANDBOX=off $(PY) -m pytest -q -m sandbox_sensitive

# The whole Python suite with the sandbox forced off.
test-no-sandbox: deps
	AGENT_SHELL_SANDBOX=off $(PY) -m pytest -q

# The ERT suite on the Emacs $(1).  Each test file loads once: none requires
# another (what several share is in tests/elisp/agent-shell-test-*.el).
define ert-suite
@test -n "$(ELISP_TESTS)" || { echo "no ERT tests found"; exit 1; }
$(1) -Q --batch -L elisp -L tests/elisp \
  --eval '(setq load-prefer-newer t)' \
  --eval '(message "ERT on Emacs %s" emacs-version)' \
  $(foreach t,$(ELISP_TESTS),-l $(t)) \
  -f ert-run-tests-batch-and-exit
endef

# Byte-compiles the package, the benchmarks and the tests on the Emacs $(1),
# warnings as errors, and removes the .elc files whatever happens: another
# Emacs must never load them.
define byte-compile-all
trap 'rm -f elisp/*.elc bench/*.elc tests/elisp/*.elc' EXIT; set -e; \
$(1) -Q --batch -L elisp \
  --eval '(setq byte-compile-error-on-warn t)' \
  -f batch-byte-compile $(ELISP_FILES) $(wildcard bench/*.el); \
$(1) -Q --batch -L elisp -L tests/elisp \
  --eval '(setq byte-compile-error-on-warn t)' \
  -f batch-byte-compile $(wildcard tests/elisp/*.el)
endef

# Any Emacs: make test-elisp EMACS=/path/to/emacs
test-elisp: deps
	$(call ert-suite,$(EMACS))

# Installs Emacs 30 into $(EMACS30_DIR) when it is not there yet (a few seconds
# and about 45 MB of packages; nothing outside that directory changes).
emacs30:
	@tests/emacs/install-emacs30.sh $(EMACS30_DIR) >/dev/null

# What make test runs on Emacs 30 besides the Python suite's run on the system
# Emacs: the ERT suite, the byte-compilation, the end-to-end tests and the start
# in a container's Dired buffer (TRAMP's /podman: and /docker: came with Emacs 29).
test-emacs30: deps emacs30
	$(call ert-suite,$(EMACS30))
	$(call byte-compile-all,$(EMACS30))
	EMACS=$(EMACS30) $(PY) -m pytest -q -p no:cacheprovider -m e2e tests/e2e
	EMACS=$(EMACS30) $(PY) -m pytest -q -p no:cacheprovider tests/python/remote/test_remote_container_emacs.py

lint: deps
	$(VENV)/bin/ruff check bridge tests/python tests/e2e tests/recordings bench
	$(VENV)/bin/ruff format --check bridge tests/python tests/e2e tests/recordings bench
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict bench
	$(call byte-compile-all,$(EMACS))
	@# package-lint comes from elpa-package-lint (system-deps installs it); lint.el
	@# fails when it cannot load it, and on any finding it does not accept by name.
	pl=$$(ls -d $(ELPA)/package-lint-[0-9]* | sort -V | tail -1) && \
	$(EMACS) -Q --batch -L elisp -L "$$pl" -l tests/elisp/lint.el $(ELISP_FILES)

# Byte-compiles the package in place, for a checkout loaded with use-package.
compile: system-deps
	$(EMACS) -Q --batch -L elisp -f batch-byte-compile $(ELISP_FILES)

# Copies demo/project to a temporary git repository and opens Emacs there with
# agent-shell started; without an API key a scripted mock model answers.
demo: deps
	@demo/run-demo.sh

test-e2e: deps
	$(PY) -m pytest -q -m e2e tests/e2e

# curl is the direct consumer the streaming benchmark compares the shell against.
bench-deps: deps
	@command -v curl >/dev/null || { echo "Installing: curl"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq curl >/dev/null; }

# Real provider streams (other projects' captures, kept outside the repository)
# replayed through the model client and compared with the official openai SDK.
RECORDINGS ?= ../shared/provider-recordings
test-recordings: deps $(VENV)/.recordings
	RECORDINGS=$(abspath $(RECORDINGS)) $(PY) -m pytest -q -p no:cacheprovider tests/recordings

$(VENV)/.recordings: pyproject.toml
	$(PY) -m pip install -q -e '.[test,recordings]'
	@touch $@

bench: bench-deps
	$(PY) -m bench --emacs $(EMACS) --out bench/results.json
	$(PY) -m bench.readme --results bench/results.json --readme README.org

clean:
	rm -rf $(VENV) $(EMACS30_DIR) elisp/*.elc .pytest_cache .mypy_cache .ruff_cache
