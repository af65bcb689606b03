from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("console", "0003_audit_client")]
    operations = [
        migrations.CreateModel(
            name="RoleBinding",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("subject_kind", models.CharField(choices=[("user", "user"), ("group", "group")], default="user", max_length=8)),
                ("subject", models.CharField(max_length=150)),
                ("role", models.CharField(blank=True, max_length=16)),
                ("actions", models.JSONField(blank=True, default=list)),
                ("cluster", models.CharField(default="*", max_length=64)),
                ("topic_kind", models.CharField(choices=[("all", "all"), ("literal", "literal"), ("prefix", "prefix"), ("regex", "regex"), ("none", "none")], default="all", max_length=8)),
                ("topic_pattern", models.CharField(blank=True, max_length=500)),
                ("group_kind", models.CharField(choices=[("all", "all"), ("literal", "literal"), ("prefix", "prefix"), ("regex", "regex"), ("none", "none")], default="all", max_length=8)),
                ("group_pattern", models.CharField(blank=True, max_length=500)),
                ("note", models.CharField(blank=True, max_length=300)),
                ("created_by", models.CharField(blank=True, max_length=150)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={"ordering": ["subject_kind", "subject", "id"],
                     "indexes": [models.Index(fields=["subject_kind", "subject"], name="console_rol_subject_6a1e1d_idx")]},
        ),
    ]
