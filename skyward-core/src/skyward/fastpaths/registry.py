"""Every fast path Skyward takes through a library's private internals, in one list.

A fast path is kept only while it pays for its risk: each entry says what it saves (measured with
`SKYWARD_FAST_PATHS` on against off, benchmarks/), what it relies on that the library does not
promise, how its use is decided, and what runs instead.
"""

from __future__ import annotations

import attrs

__all__ = ["FAST_PATHS", "FastPath"]


@attrs.frozen
class FastPath:
    #: Short name, as logged and documented.
    name: str
    #: The module that detects and applies it (imported only where that library is).
    module: str
    #: The internals it uses that the library does not promise to keep.
    internals: tuple[str, ...]
    #: What it saves, with the figure that justifies it.
    saves: str
    #: How its use is decided on the object at hand.
    detection: str
    #: What runs instead when it is not used.
    fallback: str


FAST_PATHS: tuple[FastPath, ...] = (
    FastPath(
        name="asyncio-drive",
        module="skyward.fastpaths.asyncio_drive",
        internals=(
            "BaseEventLoop._run_once", "BaseEventLoop._ready", "BaseEventLoop._scheduled",
            "BaseEventLoop._stopping", "BaseSelectorEventLoop._ssock", "asyncio.events._set_running_loop",
            "asyncio.events._get_running_loop",
        ),
        saves=(
            "A lone task's hand-off to the loop thread and the loop thread's wake-up of the caller: "
            "the caller sends on the loop's behalf and runs the loop's iterations itself while it "
            "waits (client/loop.py's LoopThread.run_here, drive, send_and_drive). A no-op `>>` over "
            "SSH on loopback: p50 399 us on, 559 us with it off (2-core VM; nothing on a 50 ms link)."
        ),
        detection=(
            "Every internal present on the pool's loop when its LoopThread starts (a SelectorEventLoop "
            "of CPython's asyncio); otherwise, or with the switch off, never used."
        ),
        fallback=(
            "A plain SelectorEventLoop: every call is handed to the loop thread with "
            "call_soon_threadsafe and its answer awaited on a future."
        ),
    ),
    FastPath(
        name="asyncssh-unpadded",
        module="skyward.fastpaths.asyncssh_send",
        internals=(
            "SSHConnection.send_packet(pkttype, *args, handler=None)", "asyncssh.constants.MSG_IGNORE",
        ),
        saves=(
            "The empty SSH_MSG_IGNORE asyncssh sends before each packet (a second encryption and socket "
            "write, and a second wake-up of sshd), pointless with AES-GCM, chacha20-poly1305 or CTR. "
            "Small: a raw channel echo on loopback ~6% less (median 87 against 93 us), within the noise "
            "of a no-op `>>` there (399 against 405 us); kept for its low risk (one connection, exact "
            "asyncssh behaviour wherever the signature differs)."
        ),
        detection=(
            "The connection negotiated one of those ciphers, and its class's send_packet takes "
            "(pkttype, *args, handler=...); otherwise, or with the switch off, the connection is left alone."
        ),
        fallback="asyncssh's own send_packet, an IGNORE before each packet.",
    ),
    FastPath(
        name="asyncssh-early-auth",
        module="skyward.fastpaths.asyncssh_early_auth",
        internals=(
            "SSHConnection._packet_handlers[MSG_EXT_INFO, MSG_SERVICE_ACCEPT]", "SSHConnection._next_service",
            "SSHConnection._auth_in_progress", "SSHConnection._owner", "SSHClientConnection.try_next_auth",
        ),
        saves=(
            "A round trip per login: the user-auth request follows the service request on the wire "
            "instead of waiting for its acceptance (OpenSSH handles them in order). Every SSH login: "
            "a pool's start, a reconnect (benchmarks/case_wan.py, warm start)."
        ),
        detection=(
            "The handler table and login internals present on the connection being made; the early "
            "login begins when the server's extension info arrives (a server that sends none is "
            "logged in to as asyncssh does); with the switch off, never used."
        ),
        fallback="asyncssh's login, begun on the server's SERVICE_ACCEPT.",
    ),
    FastPath(
        name="asyncssh-preopen",
        module="skyward.fastpaths.asyncssh_preopen",
        internals=(
            "SSHClientChannel(conn, loop, utf8_decode_errors, encoding, errors, window, max_pktsize)",
            "SSHChannel._open", "SSHChannel._make_request", "SSHChannel._start_reading",
            "SSHChannel._session", "SSHClientConnection._options", "SSHClientConnection._update_recv_pktlen",
        ),
        saves=(
            "A round trip per request of a pool's start over SSH: the session channels of the worker's "
            "start and the bootstrap open right after the login, while the client renders them, and "
            "each request then waits for its exec request only (benchmarks/case_wan.py, warm start)."
        ),
        detection=(
            "The channel and connection internals present on the connection just logged in to; "
            "otherwise, or with the switch off, nothing is opened ahead."
        ),
        fallback="asyncssh's create_session: each request opens its channel, then sends its exec request.",
    ),
    FastPath(
        name="asyncssh-sign-first",
        module="skyward.fastpaths.asyncssh_auth",
        internals=(
            "SSHClientConnection._auth_methods", "asyncssh.auth._client_auth_handlers[b'publickey']",
            "ClientAuth._start", "_ClientPublicKeyAuth._send_signed_request",
        ),
        saves=(
            "Two of a login's round trips with a named key (SSH(key_file=...), a cloud pool's key): "
            "the `none` request and the unsigned key query (wan 50 ms: connect 6.8 -> 4.8 RTTs)."
        ),
        detection=(
            "A connection opened with a key file, whose asyncssh has the auth-method list and a "
            "public key handler with _start and _send_signed_request; otherwise, or with the switch "
            "off, asyncssh's own login."
        ),
        fallback="asyncssh's login: `none`, then a key query, then the signed request.",
    ),
    FastPath(
        name="torch-default-group",
        module="skyward_torch.group_patch",
        internals=(
            "torch.distributed.init_process_group", "torch.distributed.destroy_process_group",
            "torch.distributed.GroupMember.WORLD",
        ),
        saves=(
            "No time: user code written for torchrun (init_process_group, destroy_process_group) runs "
            "unchanged inside the torch plugin's process group, which it would fail to form twice or "
            "tear down under later tasks."
        ),
        detection=(
            "torch.distributed has init_process_group, destroy_process_group, is_initialized, "
            "get_backend and GroupMember.WORLD; replaced for the plugin's context only, then put back."
        ),
        fallback=(
            "torch's own functions: the plugin still forms and destroys the group, and user code "
            "that forms it again gets torch's error (the code must skip that call)."
        ),
    ),
)
