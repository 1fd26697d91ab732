"""Hook implementations that skyward-core discovers through the `skyward` entry point.

`sky.AWS` and `provider="aws"` resolve here. The class is imported when the hook runs, which is
only when a name is looked up, so `import skyward` stays fast and boto3 loads only for AWS users.
"""

from __future__ import annotations

from skyward.extension.hookspecs import hookimpl


@hookimpl
def skyward_providers() -> dict[str, object]:
    from skyward_aws.config import AWS

    return {"AWS": AWS}


@hookimpl
def skyward_plugins() -> dict[str, object]:
    return {}


@hookimpl
def skyward_sweepers() -> list[object]:
    from skyward_aws.sweep import AWSSweeper

    return [AWSSweeper()]


@hookimpl
def skyward_offer_sources() -> list[object]:
    from skyward_aws.config import AWS
    from skyward_aws.offers import AWSOffers

    return [AWSOffers(AWS.credentials)]
