"""`sky.plugins.huggingface()`: Transformers, Datasets and Tokenizers on the workers, logged in to the Hub.

The image transform adds `transformers`, `datasets`, `tokenizers` and `huggingface_hub` to pip and,
when there is a token, `HF_TOKEN` to the worker environment (which huggingface_hub reads on its
own) and `HF_TOKEN_PATH` naming a file in the pool's node folder. A bootstrap op writes the token
there, so tools that read the stored token (`hf auth whoami`, `get_token()`) find it too.

The token is a credential, so it is handled as one:

- the op's script refers to `$HF_TOKEN` and never contains the value; the op lists the token in
  `secrets`, which the bootstrap renderer masks in its output and events;
- it is never a command's argument (`hf auth login --token` would show it to every user of the
  node in `ps`): the shell's own `printf` writes it, mode 600;
- the value reaches a node in two files of the node folder only, both mode 600 and both removed
  with the folder when the pool ends: the environment file (`env.sh`) and the token file. Nothing
  is left in `~/.cache/huggingface`. `sky.plan(...)` shows `export HF_TOKEN=***`, and the image's
  repr masks it too;
- the token is registered with `skyward.observe.logging.register_secret`, so it is written as `***` in
  every Skyward log line;
- it lives only in the hooks' closures, so `repr(plugin)` cannot show it.

Without `token=`, `HF_TOKEN` from the client's environment is used; with neither, the packages
are installed and nothing is logged in (enough for public models and datasets).
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from skyward.bootstrap.ops import Op
from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin
from skyward.secrets import register_secret

__all__ = ["HUGGINGFACE_PACKAGES", "LOGIN_SCRIPT", "TOKEN_PATH_SNIPPET", "huggingface"]

HUGGINGFACE_PACKAGES: tuple[str, ...] = ("transformers", "datasets", "tokenizers", "huggingface_hub")

#: Where the token file goes: the node folder, which the pool removes when it ends.
TOKEN_PATH_SNIPPET = 'printf "%s" "$SKYWARD_WORKDIR/huggingface-token"'

#: The login op; it reads the token from the environment the image gives the bootstrap.
LOGIN_SCRIPT = """\
# skyward huggingface: store $HF_TOKEN for the Hub's tools at $HF_TOKEN_PATH (the node folder's)
if [ -z "${HF_TOKEN:-}" ] || [ -z "${HF_TOKEN_PATH:-}" ]; then
  echo "skyward huggingface: HF_TOKEN or HF_TOKEN_PATH is not set in the bootstrap environment" >&2
  exit 1
fi
rm -f "$HF_TOKEN_PATH"
(umask 077 && printf '%s' "$HF_TOKEN" > "$HF_TOKEN_PATH")
"""


def _token(token: object) -> str | None:
    if token is None:
        return os.environ.get("HF_TOKEN", "").strip() or None
    if not isinstance(token, str) or not token.strip():
        raise ConfigurationError(
            "sky.plugins.huggingface(token=...): the token must be a non-empty string (an access token "
            "from https://huggingface.co/settings/tokens); leave it out to use HF_TOKEN from the environment"
        )
    if any(c.isspace() for c in token.strip()):
        raise ConfigurationError(
            "sky.plugins.huggingface(token=...): the token contains whitespace; paste it exactly as "
            "https://huggingface.co/settings/tokens shows it"
        )
    return token.strip()


def huggingface(*, token: str | None = None) -> Plugin:
    """Install the Hugging Face libraries on every worker and log the nodes in to the Hub.

    `token` defaults to `HF_TOKEN` from the client's environment. It never appears in the plugin's
    repr, in a plan, in events or in Skyward's logs; on the node it is in the environment file only.
    """
    secret = _token(token)
    if secret is not None:
        register_secret(secret)

    def transform(image: Any, cluster: Any) -> Any:
        image = image.with_pip(*HUGGINGFACE_PACKAGES)
        if secret is None:
            return image
        register_secret(secret)  # again, in case logging was reset since the factory ran
        image = image.with_env(HF_TOKEN=secret)
        return attrs.evolve(image, shell_vars={**image.shell_vars, "HF_TOKEN_PATH": TOKEN_PATH_SNIPPET})

    plugin = Plugin.create("huggingface").with_image_transform(transform)
    if secret is None:
        return plugin

    def bootstrap(cluster: Any) -> tuple[Op, ...]:
        register_secret(secret)
        return (Op(name="huggingface-login", script=LOGIN_SCRIPT, secrets=(secret,)),)

    return plugin.with_bootstrap(bootstrap)

