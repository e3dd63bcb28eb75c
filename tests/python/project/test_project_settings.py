"""config.el's session settings read as Emacs reads them: literals of the right type."""

from __future__ import annotations

from pathlib import Path

from agent_shell_bridge.project.settings import SessionSettings, read_session_settings


def settings_of(tmp_path: Path, text: str) -> SessionSettings:
    (tmp_path / ".agent-shell").mkdir(exist_ok=True)
    (tmp_path / ".agent-shell" / "config.el").write_text(text, encoding="utf-8")
    return read_session_settings(tmp_path)


def test_literals_of_the_right_type_are_kept(tmp_path: Path) -> None:
    found = settings_of(
        tmp_path,
        '(setq agent-shell-model "深度" agent-shell-max-steps 9)\n'
        "(setq agent-shell-default-mode 'ask agent-shell-context-window 200000)\n",
    )
    assert found == SessionSettings("深度", 200_000, 9, "ask")


def test_wrong_types_and_other_forms_are_ignored(tmp_path: Path) -> None:
    found = settings_of(
        tmp_path,
        "(setq agent-shell-max-steps -1 agent-shell-default-mode 'yolo)\n"
        '(setq agent-shell-model (getenv "X"))\n'
        '(load "evil.el")\n'
        "(setq agent-shell-context-window nil agent-shell-max-steps)\n",
    )
    assert found == SessionSettings()
    assert settings_of(tmp_path, "(setq agent-shell-context-window nil)\n").context_window == 0
    assert settings_of(tmp_path, "(setq agent-shell-context-window 'nil)\n").context_window == 0


def test_an_unreadable_file_sets_nothing(tmp_path: Path) -> None:
    assert settings_of(tmp_path, '(setq agent-shell-model "x"') == SessionSettings()
    assert settings_of(tmp_path, '#.(shell-command "x")') == SessionSettings()
    assert read_session_settings(tmp_path / "none") == SessionSettings()
