"""Per-(organisation, day) totals of the daily rollups, for the Usage page's per-day
chart over long ranges (docs/operations.md, "Activity at 10 million rows"). Built here
from the daily ``UsageDaily`` rows already rolled; ``rollup_day`` keeps them after."""

from django.db import migrations, models
import django.db.models.deletion


def build(apps, schema_editor):
    from billing.rollups import day_totals

    usage = apps.get_model("billing", "UsageDaily")
    total = apps.get_model("billing", "UsageDayTotal")
    total.objects.all().delete()
    total.objects.bulk_create(day_totals(usage, total), batch_size=2000)


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0011_rollup_indexes_by_period'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageDayTotal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('calls', models.BigIntegerField()),
                ('cost_usd', models.DecimalField(decimal_places=10, max_digits=24)),
                ('prompt_tokens', models.BigIntegerField()),
                ('cached_tokens', models.BigIntegerField()),
                ('completion_tokens', models.BigIntegerField()),
                ('estimated', models.BigIntegerField()),
                ('list_cost_usd', models.DecimalField(decimal_places=10, max_digits=24, null=True)),
                ('cost_with_list_usd', models.DecimalField(decimal_places=10, max_digits=24, null=True)),
                ('cheapest_cost_usd', models.DecimalField(decimal_places=10, max_digits=24, null=True)),
                ('cost_with_cheapest_usd', models.DecimalField(decimal_places=10, max_digits=24, null=True)),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='billing.organisation')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('organisation', 'day'), name='usagedaytotal_org_day')],
            },
        ),
        migrations.RunPython(build, migrations.RunPython.noop),
    ]
