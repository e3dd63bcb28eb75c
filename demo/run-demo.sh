#!/usr/bin/env bash
# Run the agent-shell demo: copy the sample project to a temporary directory,
# make it a git repository, and open Emacs there with agent-shell started.
#
#   demo/run-demo.sh            (what `make demo` runs after installing deps)
#
# Environment:
#   AGENT_SHELL_DEMO_MOCK=1     use the scripted mock model even with an API key
#   AGENT_SHELL_DEMO_DIR=DIR    put the project copy under DIR (kept afterwards)
#   AGENT_SHELL_DEMO_GUI=1      a graphical frame instead of `emacs -nw`
#   EMACS=PROGRAM               the Emacs to run (default: emacs)
set -euo pipefail

demo_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
checkout=$(dirname "$demo_dir")
emacs=${EMACS:-emacs}

if [ ! -x "$checkout/.venv/bin/agent-shell-bridge" ]; then
  echo "run-demo: $checkout/.venv/bin/agent-shell-bridge is missing; run 'make demo'" >&2
  exit 1
fi

# `make demo` installs bubblewrap (system-deps); the agent runs the demo's tests
# inside it without asking. Without it, the header line says "no sandbox" and
# test runs wait for your yes.
if ! command -v bwrap >/dev/null 2>&1; then
  echo "run-demo: bubblewrap (bwrap) is not installed: no sandbox, so the agent" \
       "will ask before running the tests" >&2
fi

base=${AGENT_SHELL_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/agent-shell-demo.XXXXXX")}
mkdir -p "$base"
project="$base/glossary"
rm -rf "$project"
mkdir -p "$project" "$base/state"
cp -R "$demo_dir/project/." "$project/"
(
  cd "$project"
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
  git init -q -b main
  git add -A
  git -c user.name="agent-shell demo" -c user.email=demo@example.invalid \
      commit -q -m "glossary: sample project with a failing test"
)

# Chinese text must reach the terminal and the keyboard as UTF-8.
case "${LC_ALL:-${LC_CTYPE:-${LANG:-}}}" in
  *UTF-8*|*utf8*|*UTF8*|*utf-8*) ;;
  *) export LC_ALL=C.UTF-8 ;;
esac

export AGENT_SHELL_DEMO_STATE="$base/state"
echo "agent-shell demo: project copied to $project"
args=(-Q -l "$demo_dir/init.el")
if [ -z "${AGENT_SHELL_DEMO_GUI:-}" ] || [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  if [ ! -t 0 ] || [ ! -t 1 ]; then
    echo "run-demo: needs a terminal (or AGENT_SHELL_DEMO_GUI=1 with a display)" >&2
    exit 1
  fi
  args=(-nw "${args[@]}")
fi
cd "$project"
status=0
"$emacs" "${args[@]}" || status=$?
echo "agent-shell demo: the project (with its .agent-shell/ log and memory) is in $project"
exit $status
