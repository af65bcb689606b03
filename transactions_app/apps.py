from django.apps import AppConfig


class TransactionsAppConfig(AppConfig):
    name = "transactions_app"
    verbose_name = "Transactions and producers: hanging transactions and their abort"
