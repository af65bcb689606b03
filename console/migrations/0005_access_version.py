from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("console", "0004_role_bindings")]
    operations = [
        migrations.CreateModel(
            name="AccessVersion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("value", models.BigIntegerField(default=0)),
            ],
        ),
    ]
