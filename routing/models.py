"""What routing learns and keeps in the shared database."""

from django.db import models


class SpeedSample(models.Model):
    """One measured time to first token of an endpoint, in a prompt-size bucket.

    Written for every real streamed call and every probe (R2.1, R5); the rolling window
    read by every gateway process is the newest ``SPEED_WINDOW_SIZE`` per key.
    """

    endpoint = models.ForeignKey(
        "providers.Endpoint", on_delete=models.CASCADE, related_name="speed_samples"
    )
    bucket = models.CharField(max_length=16)
    ttft_ms = models.PositiveIntegerField()
    prompt_tokens = models.PositiveIntegerField(default=0)
    output_tokens_per_s = models.FloatField(null=True, blank=True)
    is_probe = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "bucket", "-id"])]

    def __str__(self) -> str:
        return f"{self.endpoint_id} {self.bucket} {self.ttft_ms} ms"
