from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("console", "0002_roles")]
    operations = [
        migrations.AddField("auditentry", "client_ip", models.CharField(max_length=64, blank=True)),
        migrations.AddField("auditentry", "user_agent", models.CharField(max_length=300, blank=True)),
    ]
