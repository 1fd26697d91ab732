"""What the storage tests share besides fixtures: the fake keys moto is given (they look like
secrets, so tests can check that they never show)."""

ACCESS_KEY = "AKIASTORAGETESTING01"
SECRET_KEY = "storage-test-secret-key-0123456789abcdef"
