"""The read model of a cluster: the snapshot the watcher writes and every page, API and socket reads.

Apps read cluster state only through this package: `live(cluster)` for the latest snapshot, and
`note_change` after a change they made, so the next read waits until the snapshot shows it."""

from console.snapshots.reader import Live, change_shown, live, note_change, require_snapshot

__all__ = ["Live", "change_shown", "live", "note_change", "require_snapshot"]
