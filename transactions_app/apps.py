from django.apps import AppConfig


class TransactionsAppConfig(AppConfig):
    name = "transactions_app"
    verbose_name = "Transactions and producers: hanging transactions and their abort"

    def ready(self) -> None:
        from console import live
        from console.watcher import registry
        from transactions_app import watch

        # The watcher lists the transactions while it holds the cluster's lease: events, and the
        # hanging ones kept for alerts_app's `transaction_hanging` (transactions_app/watch.py).
        registry.register_side_watch("transactions", watch.watch)
        live.register_view("transactions", action="transactions.view")  # (the status bar's cluster state, live)
