"""A password hasher for the test session only (tests/conftest.py)."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's ``pbkdf2_sha256`` with 1,000 rounds instead of a million: the hash names
    its rounds, so gateway processes started by the tests with the production settings
    still verify it (a dashboard login through a subprocess gateway)."""

    iterations = 1000
