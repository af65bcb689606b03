"""Names shared by the watcher (which broadcasts) and the websocket consumers (which listen)."""


def cluster_group(cluster: str) -> str:
    # Channels group names allow only ASCII letters, digits, hyphens, periods and underscores.
    return f"cluster.{cluster}"
