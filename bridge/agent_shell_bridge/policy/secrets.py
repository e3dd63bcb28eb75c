"""The user's secrets under ``$HOME``: never read without asking, masked in the sandbox.

One list for the policy (path tools and commands), the sandbox and Emacs (the bridge
sends it in its ``initialize`` result; the user's additions come back in the params).
An entry is a path relative to ``$HOME``: the file or directory it names and
everything below it are secrets. ``*`` matches any characters within one file name
and nothing else is special, so both sides read entries alike. Paths are compared by
components, case-folded, after resolving symlinks, so ``~/./.ssh``, ``~/x/../.SSH``
and a link pointing into ``~/.ssh`` all count.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "BUILTIN",
    "SECRET_GLOBS",
    "SECRET_NAMES",
    "SECRET_PATHS",
    "SecretCheck",
    "SecretList",
    "check_entry",
    "expanded_secret_paths",
    "is_any_secret",
    "is_secret",
    "is_secret_resolved",
    "real_secret_roots",
    "secret_paths",
]

# Relative to $HOME: whole directories or single files. A folder is named whole only
# when everything in it is the user's (keys, tokens, history); in toolchain folders
# (~/.m2, ~/.gradle, ~/.cargo, ~/.pulumi) only the credential files are, so builds
# inside the sandbox keep their caches.
SECRET_NAMES: tuple[str, ...] = (
    # Keys and the stores that unlock them: ssh, gpg, pass, desktop keyrings, NSS's
    # client certificates, password managers' command-line sessions and vaults.
    ".ssh",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".gnome2/keyrings",
    ".local/share/kwalletd",
    ".pki/nssdb",
    ".config/Bitwarden*",
    ".config/op",
    ".config/sops/age/keys.txt",
    # Logins in netrc form (curl, git over https, heroku, ftp) and Emacs's
    # auth-source files; the ~/.netrc* and ~/.authinfo* variants are SECRET_GLOBS.
    ".emacs.d/authinfo*",
    ".emacs.d/.authinfo*",
    ".config/emacs/authinfo*",
    ".config/emacs/.authinfo*",
    # Git hosting: git's credential store (both places it looks), gh, hub, glab.
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    # Cloud command lines: keys, refresh tokens and SSO caches (AWS keeps its SSO
    # and CLI caches under ~/.aws), and the other clouds' equivalents.
    ".aws",
    ".config/gcloud",
    ".boto",
    ".azure",
    ".config/doctl",
    ".config/linode-cli",
    ".oci",
    ".bluemix",
    ".fly",
    ".config/netlify",
    ".netlify",
    ".local/share/com.vercel.cli",
    ".now",
    ".config/hcloud",
    ".config/scw",
    ".config/openstack",
    ".config/rclone",
    ".s3cfg",
    ".wrangler/config",
    ".config/.wrangler",
    ".config/configstore",
    ".terraform.d/credentials.tfrc.json",
    ".terraformrc",
    ".pulumi/credentials.json",
    ".vault-token",
    # Containers and clusters: registry logins, kubeconfigs and cluster keys.
    ".docker/config.json",
    ".config/containers/auth.json",
    ".kube",
    ".minikube",
    ".config/helm/repositories.yaml",
    ".config/helm/registry",
    # Database clients: saved passwords and connections, and the shells' histories,
    # which hold the queries (and passwords typed into them).
    ".pgpass",
    ".pg_service.conf",
    ".my.cnf",
    ".mylogin.cnf",
    ".myclirc",
    ".config/pgcli",
    ".mongoshrc.js",
    ".mongodb",
    ".dbshell",
    ".cassandra",
    ".local/share/DBeaverData",
    # Package registries: publish and read tokens (npm, yarn, gems, Maven, Gradle,
    # NuGet, pip indexes with a password, PyPI, Poetry, Cargo, Composer, Bundler, Ivy).
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".nuget/NuGet/NuGet.Config",
    ".config/NuGet/NuGet.Config",
    ".pypirc",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".config/pypoetry/auth.toml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".bundle/config",
    ".ivy2/.credentials",
    # Other AI agents: their API keys and OAuth tokens, and their transcripts, which
    # hold whatever those sessions read.
    ".claude",
    ".claude.json",
    ".codex",
    ".config/github-copilot",
    ".gemini",
    ".config/openai",
    ".aider.conf.yml",
    ".continue",
    ".cursor",
    ".config/Cursor",
    ".config/goose",
    ".local/share/opencode",
    ".qwen",
    ".ollama/id_ed25519",
    # A .env in the home directory: the keys of every tool that reads one from there.
    ".env",
    # Browser and mail profiles: saved passwords, cookies (logged-in sessions) and
    # mail, for the usual installs, snaps and flatpaks.
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    "snap/firefox",
    "snap/chromium",
    ".var/app/org.mozilla.firefox",
    ".var/app/com.google.Chrome",
    ".var/app/org.chromium.Chromium",
    # Histories that ~/.*history (SECRET_GLOBS) does not catch: commands typed with
    # tokens in them, and editors' registers.
    ".histfile",
    ".lesshst",
    ".viminfo",
    ".local/share/fish/fish_history",
    ".config/fish/fish_history",
    ".local/share/nvim/shada",
    ".local/state/nvim/shada",
    # The user's Emacs: init files often set API keys in plain text (gptel, ellama,
    # Gnus), and savehist keeps the minibuffer's history.
    ".emacs",
    ".emacs.el",
    ".emacs.d/init.el",
    ".emacs.d/custom.el",
    ".emacs.d/secrets.el",
    ".emacs.d/history",
    ".config/emacs/init.el",
    ".config/emacs/custom.el",
    ".config/emacs/secrets.el",
    ".config/emacs/history",
    ".spacemacs",
    ".doom.d",
    ".config/doom",
    ".gnus.el",
    # Time trackers and tunnels with an account key in their config.
    ".wakatime.cfg",
    ".ngrok2",
    ".config/ngrok",
)
# Names directly under $HOME matched as globs: auth-source files in all their
# variants (~/.authinfo.gpg, ~/.netrc-work) and the shells' and REPLs' histories
# (bash, zsh, python, node, psql, mysql, sqlite, redis-cli, irb …).
SECRET_GLOBS: tuple[str, ...] = (".authinfo*", ".netrc*", ".*history")
# Everything above, as the policy, the sandbox and Emacs use it.
SECRET_PATHS: tuple[str, ...] = (*SECRET_NAMES, *SECRET_GLOBS)


def _parts(entry: str) -> tuple[str, ...]:
    return tuple(p for p in entry.split("/") if p not in ("", "."))


def check_entry(entry: str) -> str:
    """``entry`` as a list entry (``~/`` dropped), or :class:`ValueError` saying why not."""
    text = entry[2:] if entry.startswith("~/") else entry
    if not text or text.startswith("/") or "\x00" in text:
        raise ValueError(f"{entry!r}: a secret is named by a path relative to $HOME")
    parts = _parts(text)
    if not parts or ".." in parts:
        raise ValueError(f"{entry!r}: a secret is named by a path below $HOME, without '..'")
    return "/".join(parts)


def _glob_regex(parts: Sequence[str]) -> str:
    """A regex matching the case-folded components ``parts`` (``*`` within one name)."""
    return "/".join("[^/]*".join(re.escape(piece) for piece in p.split("*")) for p in parts)


def _disk_glob(text: str) -> str:
    """``text`` as a :mod:`glob` pattern in which only ``*`` is special."""
    return re.sub(r"([?\[])", r"[\1]", text)


class SecretList:
    """The secret entries, indexed for matching every operand of every command.

    Literal entries are looked up by their first component; entries with ``*`` are one
    anchored regex. Both look at no file; :meth:`existing` and :meth:`real_roots` do.
    """

    __slots__ = ("_by_first", "_globs", "_regex", "entries")

    def __init__(self, entries: Iterable[str]) -> None:
        unique: list[str] = []
        for entry in entries:
            if entry not in unique:
                unique.append(entry)
        self.entries: tuple[str, ...] = tuple(unique)
        by_first: dict[str, list[tuple[str, ...]]] = {}
        globs: list[str] = []
        self._globs: tuple[str, ...] = tuple(e for e in self.entries if "*" in e)
        for entry in self.entries:
            folded = _parts(entry.casefold())
            if not folded:
                continue
            if "*" in entry:
                globs.append(_glob_regex(folded))
            else:
                by_first.setdefault(folded[0], []).append(folded[1:])
        self._by_first = {k: tuple(v) for k, v in by_first.items()}
        self._regex = re.compile("(?:" + "|".join(globs) + r")(?:/|\Z)") if globs else None

    def with_extra(self, extra: Sequence[str]) -> SecretList:
        """This list plus the user's ``extra`` entries (see :func:`check_entry`)."""
        if not extra:
            return self
        return SecretList([*self.entries, *(check_entry(e) for e in extra)])

    def names(self, rel: str) -> bool:
        """Whether ``rel`` (a normalised path below ``$HOME``) is or lies under an entry."""
        folded = rel.casefold()
        parts = folded.split("/")
        rests = self._by_first.get(parts[0])
        if rests is not None:
            for rest in rests:
                if not rest or tuple(parts[1 : 1 + len(rest)]) == rest:
                    return True
        return self._regex is not None and self._regex.match(folded) is not None

    def is_secret_resolved(self, path: Path | str, home: Path | str) -> bool:
        """Whether ``path`` is a secret of ``home``; both absolute and normalised already.

        Looks at no file: fast enough for every operand of every command.
        """
        text, base = str(path), str(home).rstrip("/") + "/"
        if not text.startswith(base) or len(text) == len(base):
            return False
        return self.names(text[len(base) :])

    def existing(self, home: Path) -> list[Path]:
        """The entries present under ``home`` now (dangling links too, by their name).

        One listing of ``home`` decides which entries can be there at all, so the many
        names of tools the user does not have cost nothing.
        """
        base = str(home)
        try:
            with os.scandir(base) as listing:
                present: dict[str, list[str]] = {}
                for item in listing:
                    present.setdefault(item.name.casefold(), []).append(item.name)
        except OSError:
            return []
        found: list[Path] = []
        for entry in self.entries:
            parts = _parts(entry)
            if "*" in entry:
                if "*" in parts[0] or parts[0].casefold() in present:
                    pattern = glob.escape(base) + os.sep + _disk_glob("/".join(parts))
                    found.extend(Path(m) for m in sorted(glob.glob(pattern)))
                continue
            for name in present.get(parts[0].casefold(), ()):
                path = os.path.join(base, name, *parts[1:])
                if len(parts) == 1 or os.path.lexists(path):
                    found.append(Path(path))
        return found

    def real_roots(self, home: Path) -> tuple[Path, ...]:
        """Where secrets really live when they are symlinks: a ``~/.ssh`` that points to
        ``~/dotfiles/ssh`` makes that folder a secret too, under any name."""
        roots: list[Path] = []
        for path in self.existing(home):
            real = _real(path)
            if real != Path(os.path.normpath(os.path.abspath(path))) and real not in roots:
                roots.append(real)
        return tuple(roots)

    def checker(self, home: Path) -> SecretCheck:
        """A :class:`SecretCheck` for many paths of one ``home``."""
        return SecretCheck(self, home)


class SecretCheck:
    """Whether paths are secrets of one ``home``: looks at ``home`` once for all of them.

    Both the path as written (``..`` folded) and where it really leads are checked, the
    latter also against where symlinked secrets really live.
    """

    __slots__ = ("_homes", "_roots", "home", "secrets")

    def __init__(
        self, secrets: SecretList, home: Path, roots: tuple[Path, ...] | None = None
    ) -> None:
        self.secrets = secrets
        self.home = home
        self._homes = {Path(os.path.normpath(os.path.abspath(home))), _real(home)}
        self._roots = roots

    def __call__(self, path: Path) -> bool:
        real = _real(path)
        candidates = {Path(os.path.normpath(os.path.abspath(path))), real}
        if any(self.secrets.is_secret_resolved(c, h) for c in candidates for h in self._homes):
            return True
        if self._roots is None:
            self._roots = self.secrets.real_roots(self.home)
        return _under_any(real, self._roots)


BUILTIN = SecretList(SECRET_PATHS)


def secret_paths(home: Path, secrets: SecretList = BUILTIN) -> tuple[Path, ...]:
    """The secret files and directories named literally under ``home`` (they need not
    exist; globs are expanded on disk by :meth:`SecretList.existing`)."""
    return tuple(home / e for e in secrets.entries if "*" not in e)


def real_secret_roots(home: Path, secrets: SecretList = BUILTIN) -> tuple[Path, ...]:
    """See :meth:`SecretList.real_roots`."""
    return secrets.real_roots(home)


def _under_any(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def is_secret_resolved(path: Path | str, home: Path | str, secrets: SecretList = BUILTIN) -> bool:
    """See :meth:`SecretList.is_secret_resolved`."""
    return secrets.is_secret_resolved(path, home)


def is_secret(path: Path, home: Path, secrets: SecretList = BUILTIN) -> bool:
    """Whether ``path`` is, or lies under, one of the secrets of ``home``.

    Both the path as written (``..`` folded) and where it really leads are checked.
    """
    return SecretCheck(secrets, home)(path)


def is_any_secret(
    paths: Sequence[Path],
    home: Path,
    secrets: SecretList = BUILTIN,
    roots: tuple[Path, ...] | None = None,
) -> bool:
    """Whether any of ``paths`` is a secret of ``home`` (:func:`is_secret` of each).

    ``roots`` are :meth:`SecretList.real_roots` when the caller found them already.
    """
    check = SecretCheck(secrets, home, roots)
    return any(check(path) for path in paths)


def expanded_secret_paths(
    home: Path,
    *,
    extra: Sequence[str] = (),
    existing_only: bool = False,
) -> list[Path]:
    """Absolute paths of the secrets under ``home`` (plus the user's ``extra`` entries).

    Globs are expanded against the disk; with ``existing_only`` only paths present
    on disk (dangling symlinks' names, never) are returned, as the sandbox needs.
    Otherwise every literal entry is named, and a glob ``NAME*`` that matches nothing
    by its stem (``~/.authinfo``).
    """
    home = Path(os.path.abspath(home))
    secrets = BUILTIN.with_extra(extra)
    found = [p for p in secrets.existing(home) if not existing_only or p.exists()]
    if not existing_only:
        for entry in secrets.entries:
            stem = entry[:-1]
            if "*" not in entry:
                found.append(home / entry)
            elif entry.endswith("*") and "*" not in stem and not stem.endswith("/"):
                matched = any(str(p).startswith(str(home / stem)) for p in found)
                if not matched:
                    found.append(home / stem)
    unique: list[Path] = []
    seen: set[Path] = set()
    for path in found:
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique
