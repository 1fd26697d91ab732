"""`sky.LambdaCloud(...)`: the frozen value a user writes to run a pool on Lambda Cloud.

Everything is checked when the value is built, so a misspelt region fails on the line that wrote
it. The API keys are resolved when a pool starts (`account`), never here: an environment key would
otherwise travel inside every pickled spec; one given explicitly is kept out of `repr` and
registered for masking. The config names its provider, price estimate, offers and key check
(`skyward.providers.keyed_config`), imported only when used: building one loads no HTTP client.
"""

from __future__ import annotations

import re

import attrs

from skyward.errors import ConfigurationError
from skyward.extension.settings import api_url, secret
from skyward.providers.keyed_config import KeyedConfig
from skyward_lambda.account import ACCOUNT

#: Lambda's region names: "us-east-1", "us-south-2", "europe-central-1", "asia-northeast-1".
_REGION = re.compile(r"^[a-z]+(?:-[a-z]+)*-\d+$")


def _region(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _REGION.match(value.strip().lower()):
        raise ConfigurationError(f'LambdaCloud(region={value!r}): expected a region name such as "us-east-1"')
    return value.strip().lower()


@attrs.frozen(kw_only=True)
class LambdaCloud(KeyedConfig):
    """Run a pool on Lambda Cloud GPU VMs (on-demand: Lambda sells no spot), one VM per node,
    reached over SSH as `ubuntu`.

    `api_key` defaults to `LAMBDA_API_KEY`; `guardian_api_key` (default `LAMBDA_GUARDIAN_API_KEY`,
    else the pool's key) is the key each VM keeps to terminate itself when its client is gone
    (see docs/lambda.md). `region` limits where VMs go (else `Spec.region`, else any region with
    capacity); `image_family` picks Lambda's image (None: Lambda's default, Lambda Stack).
    `ssh_user` / `ssh_port` say how to log in; `python` names an interpreter already on the image
    instead of installing one; `api_url` points at another endpoint (tests, proxies).
    """

    region: str | None = attrs.field(default=None, converter=_region)
    api_key: str | None = attrs.field(default=None, repr=False, validator=secret("LambdaCloud"))
    guardian_api_key: str | None = attrs.field(default=None, repr=False, validator=secret("LambdaCloud"))
    image_family: str | None = None
    ssh_user: str = "ubuntu"
    ssh_port: int = 22
    python: str | None = None
    api_url: str | None = attrs.field(default=None, converter=api_url("LambdaCloud"))

    account = ACCOUNT
    provider_name = "lambda"
    provider_class = "skyward_lambda.provider:LambdaProvider"
    price_estimate = "skyward_lambda.pricing:estimate_hourly_price"
    offers_class = "skyward_lambda.offers:LambdaOffers"
    key_check = "skyward_lambda.sweep:verify"
