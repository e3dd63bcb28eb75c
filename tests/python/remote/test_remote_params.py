"""The ``remote`` param of session/new: ssh options that would run a program are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_shell_bridge.methods.remote_session import RemoteParams


def test_plain_options_pass() -> None:
    p = RemoteParams.model_validate(
        {"tramp": "/ssh:h:/srv", "sshOptions": ["IdentityFile=/k", "ProxyJump=bastion"]}
    )
    assert p.sshOptions == ["IdentityFile=/k", "ProxyJump=bastion"]


@pytest.mark.parametrize(
    "option",
    [
        "ProxyCommand=nc %h %p",
        "proxycommand=x",
        "LocalCommand=touch /tmp/x",
        "PermitLocalCommand=yes",
        "KnownHostsCommand=/bin/x",
        "ControlPath=/tmp/other",
        "RemoteCommand=id",
        "PKCS11Provider=/tmp/evil.so",
        "ForwardAgent=yes",
        "RemoteForward=2222 localhost:22",
        "IdentityFile=/k\nProxyCommand=x",
        "-oProxyCommand=x",
        "NoValue",
    ],
)
def test_options_that_run_programs_or_are_not_one_line_are_refused(option: str) -> None:
    with pytest.raises(ValidationError):
        RemoteParams.model_validate({"tramp": "/ssh:h:/srv", "sshOptions": [option]})
