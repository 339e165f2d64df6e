from django.core.management.base import BaseCommand

from providers.services import credentials_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored provider credential with the first key of "
        "UBERLLM_CREDENTIAL_KEYS (put the new key first, run this, then drop the old key)."
    )

    def handle(self, *args, **options):
        self.stdout.write(f"Re-encrypted {credentials_rotate()} credential(s).")
