"""The session checkpoint as snapshot + journal: deltas, compaction, torn lines, and
checkpoints written before the journal existed."""

from __future__ import annotations

import json
from pathlib import Path

from agent_shell_bridge.agent.session import journal as journal_mod
from agent_shell_bridge.agent.session.journal import SessionJournal, journal_path
from agent_shell_bridge.agent.session.store import SessionState, SessionStore


def _state(root: Path) -> SessionState:
    return SessionState(id="s1", root=str(root), title="测试 session")


def _save(journal: SessionJournal, state: SessionState) -> int:
    """Save STATE; the bytes written (0 when there was nothing to write)."""
    delta = journal.delta(state)
    if delta is None:
        return 0
    before = _sizes(journal)
    journal.write(delta)
    after = _sizes(journal)
    return after[1] - before[1] if delta.full_lists is None else after[0]


def _sizes(journal: SessionJournal) -> tuple[int, int]:
    def size(p: Path) -> int:
        return p.stat().st_size if p.exists() else 0

    return size(journal.snapshot), size(journal.journal)


def test_journal_writes_only_what_a_step_adds(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    state = _state(tmp_path)
    journal = SessionJournal(store.path("s1"), state, on_disk=False)
    assert _save(journal, state) > 0 and not journal.journal.exists()  # first: a snapshot
    sizes = []
    for i in range(50):
        state.messages.append({"role": "user", "content": f"第{i}步 " + "x" * 200})
        state.visible.append({"role": "user", "text": f"第{i}步"})
        state.turns = i
        sizes.append(_save(journal, state))
    assert max(sizes) < 2 * min(sizes), "a step's line does not grow with the session"
    assert _save(journal, state) == 0, "nothing new: nothing written"
    loaded = store.load("s1")
    assert loaded.messages == state.messages and loaded.visible == state.visible
    assert loaded.turns == 49 and loaded.title == "测试 session"
    # A message replaced (not appended) is saved from where it changed.
    state.messages[3] = {"role": "tool", "tool_call_id": "c", "content": "stub"}
    del state.messages[40:]
    _save(journal, state)
    assert store.load("s1").messages == state.messages


def test_journal_compacts_into_an_atomic_snapshot(tmp_path: Path, monkeypatch: object) -> None:
    store = SessionStore(tmp_path)
    state = _state(tmp_path)
    journal = SessionJournal(store.path("s1"), state, on_disk=False)
    setattr(journal_mod, "COMPACT_FLOOR", 2000)  # noqa: B010
    try:
        _save(journal, state)
        compactions = 0
        for i in range(200):
            state.messages.append({"role": "assistant", "content": f"answer {i} 完成"})
            delta = journal.delta(state)
            assert delta is not None
            compactions += delta.full_lists is not None
            journal.write(delta)
    finally:
        setattr(journal_mod, "COMPACT_FLOOR", 256 * 1024)  # noqa: B010
    assert 1 <= compactions < 20
    assert store.load("s1").messages == state.messages
    assert sorted(p.name for p in store.directory.iterdir()) == [
        "s1.journal.jsonl",
        "s1.json",
    ], "no temporary file is left"
    # A kill between the snapshot's rename and the journal's truncation: the old
    # lines are covered by the snapshot's journal_seq and not applied twice.
    old_lines = journal.journal.read_bytes()
    state.messages.append({"role": "user", "content": "last"})
    delta = journal.delta(state)
    assert delta is not None
    delta.full_lists = {"messages": list(state.messages), "visible": []}
    delta.small = {n: journal_mod._encode_small(state, n) for n in journal._names}
    journal.write(delta)
    journal.journal.write_bytes(old_lines)
    assert store.load("s1").messages == state.messages


def test_journal_ignores_a_torn_last_line_and_goes_on(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    state = _state(tmp_path)
    journal = SessionJournal(store.path("s1"), state, on_disk=False)
    _save(journal, state)
    state.messages.append({"role": "user", "content": "kept"})
    _save(journal, state)
    whole = journal.journal.read_bytes()
    state.messages.append({"role": "user", "content": "torn away"})
    _save(journal, state)
    data = journal.journal.read_bytes()
    for cut in range(len(whole), len(data)):  # a kill at any byte of the last line
        journal.journal.write_bytes(data[:cut])
        assert [m["content"] for m in store.load("s1").messages] == ["kept"]
    loaded = store.load("s1")
    again = SessionJournal(store.path("s1"), loaded, on_disk=True)
    assert journal.journal.read_bytes() == whole, "the torn line is cut off on open"
    loaded.messages.append({"role": "user", "content": "after the kill"})
    _save(again, loaded)
    assert [m["content"] for m in store.load("s1").messages] == ["kept", "after the kill"]


def test_checkpoint_of_an_older_bridge_loads_and_goes_on(tmp_path: Path) -> None:
    """A plain ``<id>.json`` as bridges before the journal wrote it (no journal_seq)."""
    old = _state(tmp_path)
    old.messages = [{"role": "user", "content": "旧的"}]
    old.turns = 7
    path = SessionStore(tmp_path).path("s1")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old.to_json(), ensure_ascii=False), encoding="utf-8")
    store = SessionStore(tmp_path)
    state = store.load("s1")
    assert state.turns == 7 and state.messages == old.messages
    journal = SessionJournal(path, state, on_disk=True)
    state.messages.append({"role": "assistant", "content": "新的"})
    assert _save(journal, state) > 0
    assert journal_path(path).exists(), "an old checkpoint gets a journal, not a rewrite"
    assert json.loads(path.read_text(encoding="utf-8")) == old.to_json()
    assert [m["content"] for m in store.load("s1").messages] == ["旧的", "新的"]
    assert store.list()[0]["turns"] == 7


def test_the_chosen_model_is_journalled_without_a_key(tmp_path: Path) -> None:
    """A switch of model survives a restart; a state without one writes none."""
    store = SessionStore(tmp_path)
    state = _state(tmp_path)
    journal = SessionJournal(store.path("s1"), state, on_disk=False)
    _save(journal, state)
    state.chosen_model = {"name": "第二", "model": "model-b", "api_base": "http://127.0.0.1:9/v1"}
    _save(journal, state)
    assert store.load("s1").chosen_model == state.chosen_model
    assert "chosen_model" not in SessionState(id="s2", root=str(tmp_path)).to_json()
