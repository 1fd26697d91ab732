"""Where Lambda's Cloud API is and where its API keys come from: the package's lowest layer.

The pool's key is `LambdaCloud(api_key=...)`, else `$LAMBDA_API_KEY`; it is resolved when a pool
starts (never inside the config, so an environment key never travels in a pickled spec) and
registered for masking; none is a `ConfigurationError` naming the variable, before any request.

The *guardian's* key is the one a machine keeps to terminate itself when its client is gone
(`machine.py`): Lambda's keys all have full access to the account and none is scoped to one
instance, so a machine holding one holds the account. `LambdaCloud(guardian_api_key=...)`, else
`$LAMBDA_GUARDIAN_API_KEY`, names a second key made only for the machines, revocable on its own
without touching the one the client uses; without one, the pool's key goes to the machines.
"""

from __future__ import annotations

import os

from skyward.providers.api_key import ApiKeyAccount
from skyward.providers.credentials import resolve_secret

API_KEY_VARIABLE = "LAMBDA_API_KEY"
GUARDIAN_KEY_VARIABLE = "LAMBDA_GUARDIAN_API_KEY"
API_URL = "https://cloud.lambda.ai/api/v1"
KEYS_PAGE = "https://cloud.lambda.ai/api-keys/cloud-api"
#: The pool's key and the endpoint; `$LAMBDA_API_URL` points `sky ls`/`down`/`offers` elsewhere.
ACCOUNT = ApiKeyAccount(
    cloud="LambdaCloud",
    variable=API_KEY_VARIABLE,
    url=API_URL,
    url_variable="LAMBDA_API_URL",
    keys_page=KEYS_PAGE,
)


def resolve_guardian_key(value: object, api_key: str) -> str:
    """The key the machines keep: `value`, else `$LAMBDA_GUARDIAN_API_KEY`, else `api_key`."""
    if value is None and not os.environ.get(GUARDIAN_KEY_VARIABLE, "").strip():
        return api_key
    return resolve_secret(
        value,
        GUARDIAN_KEY_VARIABLE,
        provider="LambdaCloud",
        argument="guardian_api_key",
        hint=f"create one at {KEYS_PAGE}",
    )
