"""The console. Its Celery app (console.celery) is loaded by what sends or runs tasks: every task
module imports it, so a task is always sent through it, and `celery -A console` finds it. It is not
loaded by every process that imports the console: the watcher's two processes never send a task,
so they do not carry Celery and its messaging libraries."""
