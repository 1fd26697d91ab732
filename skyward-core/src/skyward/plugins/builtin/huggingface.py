"""`sky.plugins.huggingface()`: Transformers, Datasets and Tokenizers on the workers, logged in to the Hub.

The image transform adds `transformers`, `datasets`, `tokenizers` and `huggingface_hub` to pip and,
when there is a token, `HF_TOKEN` to the worker environment (which huggingface_hub reads on its
own). A bootstrap op then logs the node in with the Hub CLI, `hf auth login --token "$HF_TOKEN"`
(or the older `huggingface-cli login` where only that one is installed), so tools that read the
stored token work too.

The token is a credential, so it is handled as one:

- the op's script refers to `$HF_TOKEN` and never contains the value; the op lists the token in
  `secrets`, which the bootstrap renderer masks in its output and events;
- the value reaches a node in one place only: the node's environment file (`env.sh`, mode 600),
  written by the bootstrap script the pool sends it. `sky.plan(...)` shows that line as
  `export HF_TOKEN=***`, and the image's repr masks it too;
- the token is registered with `skyward.observe.logging.register_secret`, so it is written as `***` in
  every Skyward log line;
- it lives only in the hooks' closures, so `repr(plugin)` cannot show it.

Without `token=`, `HF_TOKEN` from the client's environment is used; with neither, the packages
are installed and nothing is logged in (enough for public models and datasets).
"""

from __future__ import annotations

import os
from typing import Any

from skyward.bootstrap.ops import Op
from skyward.errors import ConfigurationError
from skyward.extension.plugin import Plugin
from skyward.observe.logging import register_secret

__all__ = ["HUGGINGFACE_PACKAGES", "LOGIN_SCRIPT", "huggingface"]

HUGGINGFACE_PACKAGES: tuple[str, ...] = ("transformers", "datasets", "tokenizers", "huggingface_hub")

#: The login op; it reads the token from the environment the image gives the bootstrap.
LOGIN_SCRIPT = """\
# skyward huggingface: log this node in to the Hugging Face Hub with $HF_TOKEN
if [ -z "${HF_TOKEN:-}" ]; then
  echo "skyward huggingface: HF_TOKEN is not set in the bootstrap environment; cannot log in to the Hub" >&2
  exit 1
fi
if command -v hf >/dev/null 2>&1; then
  hf auth login --token "$HF_TOKEN"
elif command -v huggingface-cli >/dev/null 2>&1; then
  huggingface-cli login --token "$HF_TOKEN"
else
  echo "skyward huggingface: neither hf nor huggingface-cli is on PATH; is huggingface_hub installed?" >&2
  exit 1
fi
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
        return image.with_env(HF_TOKEN=secret)

    plugin = Plugin.create("huggingface").with_image_transform(transform)
    if secret is None:
        return plugin

    def bootstrap(cluster: Any) -> tuple[Op, ...]:
        register_secret(secret)
        return (Op(name="huggingface-login", script=LOGIN_SCRIPT, secrets=(secret,)),)

    return plugin.with_bootstrap(bootstrap)

