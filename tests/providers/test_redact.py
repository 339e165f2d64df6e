"""providers.redact: what of a provider's error text may reach a customer."""

from providers.redact import REDACTED, redact


def test_the_calls_own_credential_is_removed_in_either_form():
    text = "bad key sk-prov-123456789 (header 'Bearer sk-prov-123456789')"
    assert redact(text, "Bearer sk-prov-123456789") == (f"bad key {REDACTED} (header '{REDACTED}')")


def test_key_shaped_tokens_are_removed_without_the_credential():
    assert redact("Incorrect API key provided: sk-abcdefghijklmnop1234.") == (
        f"Incorrect API key provided: {REDACTED}."
    )
    assert redact("sent Authorization: Bearer abc.def-123") == (
        f"sent Authorization: Bearer {REDACTED}"
    )
    assert redact("x-api-key sk-ant-api03-secret99") == f"x-api-key {REDACTED}"


def test_ordinary_error_text_is_kept():
    text = "This model's maximum context length is 131072 tokens; sk- prefixes are keys"
    assert redact(text, "Bearer short") == text  # a short "secret" blanks nothing
    masked = "Incorrect API key provided: sk-...cdef"  # OpenAI's own masking: harmless
    assert redact(masked) == masked
