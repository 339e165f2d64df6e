from django.core.management.base import BaseCommand

from providers.credentials import rotate_all


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored provider credential with the first key of "
        "UBERLLM_CREDENTIAL_KEYS (put the new key first, run this, then drop the old key)."
    )

    def handle(self, *args, **options):
        self.stdout.write(f"Re-encrypted {rotate_all()} credential(s).")
