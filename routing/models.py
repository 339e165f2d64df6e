"""What routing learns and keeps in the shared database."""

from decimal import Decimal

from django.db import models

NANO = Decimal(1_000_000_000)  # nano-dollars per dollar


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
    # Most of the prompt was a cache read: timed in the bucket's cached window (issue 10).
    cached = models.BooleanField(default=False)
    # A confirmed probe shift (R5): older samples of this endpoint and bucket no longer count.
    restarts_window = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "bucket", "-id"])]

    def __str__(self) -> str:
        return f"{self.endpoint_id} {self.bucket} {self.ttft_ms} ms"


class HedgeBudgetDay(models.Model):
    """The hedge budget of one UTC day (R3.4), shared by every gateway process.

    Amounts are whole nano-dollars (exact integer arithmetic on every database; SQLite
    would do decimals in floating point). Spending is one conditional UPDATE
    (``spent + x <= budget``), atomic on PostgreSQL and SQLite alike; a new day is a new
    row, so a restart can neither reset it early nor spend it twice.
    """

    day = models.DateField(unique=True)
    budget_nanousd = models.BigIntegerField()
    spent_nanousd = models.BigIntegerField(default=0)
    hedges = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day"]

    def __str__(self) -> str:
        return f"{self.day}: {self.spent_usd} of {self.budget_usd} USD"

    @property
    def budget_usd(self) -> Decimal:
        return Decimal(self.budget_nanousd) / NANO

    @property
    def spent_usd(self) -> Decimal:
        return Decimal(self.spent_nanousd) / NANO


class ProbeResult(models.Model):
    """One probe (R5): a max_tokens=1 streaming call at a set prompt size. Its cost is
    platform cost, never billed. (cycle, endpoint, size) is unique: a cycle run twice
    probes nothing twice."""

    cycle = models.BigIntegerField()
    endpoint = models.ForeignKey(
        "providers.Endpoint", on_delete=models.CASCADE, related_name="probe_results"
    )
    prompt_tokens = models.PositiveIntegerField()
    status = models.CharField(max_length=32)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal(0))
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cycle", "endpoint", "prompt_tokens"], name="unique_probe_per_cycle"
            )
        ]

    def __str__(self) -> str:
        return f"probe {self.endpoint_id} @{self.prompt_tokens}: {self.status}"
