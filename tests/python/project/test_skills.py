"""Agent Skills found on disk: frontmatter, caps, and no link followed out of a folder."""

from __future__ import annotations

from pathlib import Path

from agent_shell_bridge.project.skills import BODY_CAP, find_skills, load_skill


def _skill(base: Path, folder: str, text: str) -> Path:
    (base / folder).mkdir(parents=True, exist_ok=True)
    path = base / folder / "SKILL.md"
    path.write_text(text, encoding="utf-8")
    return path


SKILL = "---\nname: 发布-release\ndescription: x\n---\n"
GOOD = (
    "---\nname: release\ndescription: 发布 Cut a release: tag, changelog\n"
    "allowed-tools: run_command, read_file\n---\n# 发布 Release\nStep one.\n"
)


def test_project_and_user_skills_with_their_frontmatter(tmp_path: Path) -> None:
    root, user = tmp_path / "proj", tmp_path / "home-skills"
    _skill(root / ".agents/skills", "release", GOOD)
    (root / ".agents/skills/release/scripts").mkdir()
    (root / ".agents/skills/release/scripts/tag.sh").write_text("git tag\n")
    _skill(root / ".claude/skills", "lint", "---\ndescription: Lint the code\n---\nRun it.\n")
    _skill(user, "release", "---\nname: release\ndescription: the user's one\n---\n")
    _skill(user, "notes", "no frontmatter, so no description\n")
    skills = find_skills(root, [user])
    assert [(s.name, s.origin) for s in skills] == [("release", "project"), ("lint", "project")]
    release = skills[0]
    assert release.description == "发布 Cut a release: tag, changelog"
    assert release.allowed_tools == ("run_command", "read_file")
    body = load_skill(release)
    assert body is not None
    assert body.text == "# 发布 Release\nStep one."
    assert body.files == ["scripts/tag.sh"]
    assert not body.truncated


def test_a_skill_md_linking_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    outside = tmp_path / "outside.md"
    outside.write_text("---\ndescription: 秘密 secret outside\n---\nsecret body\n")
    (root / ".agents/skills/evil").mkdir(parents=True)
    (root / ".agents/skills/evil/SKILL.md").symlink_to(outside)
    (root / ".agents/skills/evil2").symlink_to(tmp_path)  # the folder itself a link
    _skill(tmp_path / "elsewhere", "far", "---\ndescription: far away\n---\n")
    (root / ".claude").mkdir()
    (root / ".claude/skills").symlink_to(tmp_path / "elsewhere")
    assert find_skills(root, []) == []


def test_a_10_mb_skill_md_is_read_only_to_its_cap(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    path = _skill(root / ".agents/skills", "big", "---\ndescription: big one\n---\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("字" * (10 * 1024 * 1024 // 3))
    assert path.stat().st_size > 10_000_000
    (skill,) = find_skills(root, [])
    body = load_skill(skill)
    assert body is not None and body.truncated
    assert len(body.text.encode("utf-8")) <= BODY_CAP


def test_a_bad_name_or_no_description_is_no_skill(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _skill(root / ".agents/skills", "a", SKILL)
    _skill(root / ".agents/skills", "b", "---\nname: b\n---\nbody\n")
    assert find_skills(root, []) == []
