"""Test helpers for packages built on Skyward (they need pytest, which Skyward itself does not).

`skyward.testing.provider_contract.ProviderContract` checks a provider package against the
provider contract (`skyward.providers.base`).
"""
