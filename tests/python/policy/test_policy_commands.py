"""The adversarial command corpus and the allowlist semantics of the policy engine.

Rows of tests/fixtures/policy/commands.jsonl: ``command``; ``decision`` (allow,
confirm, deny); ``kind``, what the command can do (read, write, exfiltration,
dangerous: a ``dangerous`` row may ask or be denied but is never allowed); and the
optional fields

- ``class``: the bypass class the row belongs to (builtins, assignments-expansions,
  options, reads-network, secrets-substitutions, gtfobins, secrets-home-root,
  arithmetic, expansion-operators, git-repository, git-config, option-reads,
  program-names, output-after-dashdash);
- ``home``: ``"root"`` judges the row with ``$HOME`` being the project root itself (a
  session started from ``~`` and confirmed by the user), where ``.ssh`` and the other
  secrets lie inside the project and must still never be read without asking.

The project (see policy_tree) holds ``src/``, ``tests/``, ``build/``, ``docs/``,
``.git/hooks/``, other repositories git would find (``vendor/lib/.git``, a ``.git``
file in ``wt/``, a bare layout in ``bare.git/``) and, for the ``home`` rows,
``.ssh/id_rsa``, ``.aws/credentials``, ``.netrc`` and a link ``ssh_link`` to ``.ssh``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_shell_bridge.policy import (
    Allowlist,
    AllowlistError,
    PolicyEngine,
    load_allowlist,
    parse_allowlist,
)
from agent_shell_bridge.types import Decision, Risk, Verdict
from policy_tree import build_corpus_project

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "policy" / "commands.jsonl"


def _corpus() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


CASES = _corpus()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_corpus_project(tmp_path_factory.mktemp("proj"))


@pytest.fixture(scope="module")
def engines(project: Path) -> dict[str | None, PolicyEngine]:
    assert not Path(os.path.expanduser("~")).resolve().is_relative_to(project.resolve())
    return {None: PolicyEngine(project), "root": PolicyEngine(project, home=project)}


@pytest.fixture(scope="module")
def engine(engines: dict[str | None, PolicyEngine]) -> PolicyEngine:
    return engines[None]


def _judge(engines: dict[str | None, PolicyEngine], case: dict[str, str]) -> Verdict:
    return engines[case.get("home")].check_command(case["command"])


def test_corpus_is_large_and_covers_every_decision() -> None:
    assert len(CASES) >= 1000
    assert len({(c["command"], c.get("home")) for c in CASES}) == len(CASES)
    counts = {d: sum(c["decision"] == d for c in CASES) for d in ("allow", "confirm", "deny")}
    assert all(n >= 200 for n in counts.values()), counts
    classes = {c.get("class") for c in CASES}
    assert {
        "builtins",
        "assignments-expansions",
        "options",
        "reads-network",
        "secrets-substitutions",
        "gtfobins",
        "secrets-home-root",
        "arithmetic",
        "expansion-operators",
        "git-repository",
        "git-config",
        "option-reads",
        "program-names",
        "output-after-dashdash",
    } <= classes
    assert {c.get("home") for c in CASES} == {None, "root"}


@pytest.mark.parametrize("case", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_corpus_case(engines: dict[str | None, PolicyEngine], case: dict[str, str]) -> None:
    verdict = _judge(engines, case)
    assert verdict.decision.value == case["decision"], (case["command"], verdict)
    assert verdict.reason


def test_no_dangerous_command_is_ever_allowed(engines: dict[str | None, PolicyEngine]) -> None:
    """Invariant: whatever the corpus says, `dangerous` never pairs with `allow`."""
    for case in CASES:
        verdict = _judge(engines, case)
        if verdict.risk is Risk.DANGEROUS:
            assert verdict.decision is Decision.DENY, case
        if case["kind"] in ("dangerous", "exfiltration"):
            assert verdict.decision is not Decision.ALLOW, case


def test_read_commands_report_read_risk(engines: dict[str | None, PolicyEngine]) -> None:
    for case in CASES:
        if case["decision"] == "allow":
            assert _judge(engines, case).risk is Risk.READ, case


def test_cwd_changes_relative_judgement(engine: PolicyEngine, project: Path) -> None:
    assert engine.check_command("rm -rf ..", cwd=project / "src").decision is Decision.DENY
    assert engine.check_command("rm -rf *", cwd=project / "build").decision is Decision.CONFIRM


def test_cd_is_tracked_within_one_command(engine: PolicyEngine) -> None:
    verdict = engine.check_command("cd / && rm -rf usr")
    assert verdict.decision is Decision.DENY
    assert engine.check_command("cd build && rm -rf *").decision is Decision.CONFIRM


def test_hostile_inputs_never_raise(engine: PolicyEngine) -> None:
    for text in ["(((((", "'", '"', "$(", "`", "<<", "\\", "a" * 16384, "))))", "${", "$((1+"]:
        verdict = engine.check_command(text)
        assert verdict.decision is not Decision.ALLOW or text == "a" * 16384


# -- allowlist ---------------------------------------------------------------

SEED_SHAPE = """;; project allowlist
(setq agent-shell-allowlist
      '((command . "git push --force origin main")
        (command . "rm -rf build/")))
"""


def test_allowlist_allows_exactly_the_named_simple_command(project: Path) -> None:
    engine = PolicyEngine(project, allowlist=parse_allowlist(SEED_SHAPE))
    allowed = engine.check_command("rm -rf build/")
    assert allowed.decision is Decision.ALLOW
    assert "allowlist" in allowed.reason
    forced = engine.check_command("git push --force origin main")
    assert forced.decision is Decision.ALLOW
    assert forced.risk is Risk.DANGEROUS
    # Normalised argv, not raw text: quoting does not change what runs.
    assert engine.check_command("rm -rf 'build/'").decision is Decision.ALLOW
    assert engine.check_command('git push --force "origin" main').decision is Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build/ /",
        "rm -rf build/; rm -rf ~",
        "rm -rf build/ && rm -rf /",
        "rm -rf build/ || rm -rf ~",
        "rm -rf build/ | rm -rf /",
        "git push --force origin main:prod",
        "git push --force origin",
        "git push --force origin +main",
        "echo $(rm -rf build/)",
        "rm -rf build/ $HOME",
    ],
)
def test_allowlist_does_not_leak_to_other_commands(project: Path, command: str) -> None:
    engine = PolicyEngine(project, allowlist=parse_allowlist(SEED_SHAPE))
    assert engine.check_command(command).decision is not Decision.ALLOW


def test_allowlisted_compound_needs_every_part_allowed(project: Path) -> None:
    engine = PolicyEngine(project, allowlist=parse_allowlist(SEED_SHAPE))
    assert engine.check_command("git status && rm -rf build/").decision is Decision.ALLOW
    assert engine.check_command("rm -rf build/ && make install").decision is Decision.CONFIRM
    assert engine.check_command("rm -rf build/ > out.txt").decision is Decision.CONFIRM
    assert engine.check_command("rm -rf build/ 2>&1").decision is Decision.ALLOW


def test_for_project_reads_the_file_as_data(project: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".agent-shell").mkdir(parents=True)
    marker = tmp_path / "evaluated"
    (root / ".agent-shell" / "allowlist.el").write_text(
        SEED_SHAPE + f'\n;; (shell-command "touch {marker}")\n', encoding="utf-8"
    )
    engine = PolicyEngine.for_project(root)
    assert engine.check_command("rm -rf build/").decision is Decision.ALLOW
    assert not marker.exists()
    bare = PolicyEngine.for_project(tmp_path)
    assert bare.check_command("rm -rf build/").decision is Decision.CONFIRM


def test_load_allowlist_accepts_the_seed_variable_spelling(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.el"
    path.write_text(
        '(setq agent-shell/allowlist \'((command . "git checkout .")))\n', encoding="utf-8"
    )
    allowlist = load_allowlist(path)
    assert [e.argv for e in allowlist.entries] == [("git", "checkout", ".")]


@pytest.mark.parametrize(
    "text",
    [
        '(setq agent-shell-allowlist \'((command . "ls")',  # unclosed
        '(setq agent-shell-allowlist #.(shell-command "id"))',  # read-time eval
        "(setq agent-shell-allowlist `((command . ,x)))",  # backquote
        "(setq agent-shell-allowlist '((command . ls)))",  # not a string
        '(setq agent-shell-allowlist \'((shell . "ls")))',  # unknown kind
        '(setq agent-shell-allowlist \'((command . "ls; rm -rf /")))',  # compound entry
        '(setq agent-shell-allowlist \'((command . "rm -rf $HOME")))',  # expansion
        '(setq agent-shell-allowlist \'((command . "ls > out")))',  # redirection
        '(shell-command "id")',  # code, not a setting
        "(setq other-variable '())",
        "(setq agent-shell-allowlist '((command . \"unterminated)))",
        '(setq agent-shell-allowlist \'((command . "bad \\q escape")))',
    ],
)
def test_malformed_allowlists_fail_with_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "allowlist.el"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AllowlistError) as info:
        load_allowlist(path)
    assert "allowlist" in str(info.value)


def test_empty_allowlist_file_is_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.el"
    path.write_text(";; nothing yet\n", encoding="utf-8")
    assert load_allowlist(path) == Allowlist()


def test_allowlist_entries_keep_chinese_text(project: Path) -> None:
    allowlist = Allowlist.from_commands(["rm -rf 构建/"])
    engine = PolicyEngine(project, allowlist=allowlist)
    assert engine.check_command("rm -rf 构建/").decision is Decision.ALLOW
    assert engine.check_command("rm -rf 构建/ /").decision is Decision.DENY
