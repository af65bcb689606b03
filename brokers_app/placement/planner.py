"""The planner: the plan for a request that moves as little data as possible (ALGORITHMS.md section 5).

`plan()` answers a request (rebalance, decommission, add brokers, change replication factor)
with a `Plan` (placement/result.py).

How the planner works, following the goals' order (hard rules, replica balance, leader balance,
fewest bytes, current leader kept):
1. Every partition the request may touch ("in scope") gets the moves it cannot avoid: replicas off
   brokers being removed (or no longer in the cluster), replicas added or dropped for a new
   replication factor, a replica swapped into a rack the partition lacks. New replicas go to the
   least loaded allowed broker.
2. Replica balance: while the fullest and emptiest brokers differ by more than one, move a replica
   along the cheapest chain of moves from a fullest broker to one holding at least two fewer (or
   into an emptiest one), found by Dijkstra over brokers where an edge is the cheapest single move:
   a replica going back where it was is free, otherwise the partition's size (smallest first,
   followers before leaders). Each chain lowers the sum of squared counts, so this ends.
3. Leader balance, the same way over preferred leaders (first replicas): hand leadership to another
   replica by reordering (copies nothing), preferring to keep the current leader and lists that
   need no change; when reordering cannot help (a broker leading single-replica partitions), move a
   leading replica, alone or swapped with a follower, never worsening replica balance.
Balance is measured over the in-scope partitions on the brokers allowed to hold them: for a
whole-cluster rebalance the whole cluster, for selected topics those topics, as `--generate` does.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from brokers_app.placement.model import ClusterLayout, PlanRequest, resolve
from brokers_app.placement.result import Plan, build_plan
from brokers_app.placement.state import PlannerState
from console.gateway.types import TopicPartition


def plan(layout: ClusterLayout, request: PlanRequest, *, compare_with_generate: bool = True) -> Plan:
    """The plan for a request: hard rules kept, then balance, then fewest bytes, then leaders kept."""
    scope = resolve(layout, request)
    planner = _Planner(layout, scope)
    after = planner.run()
    return build_plan(layout, request, scope, after, planner.required, compare_with_generate)


_LEADER_CLASSES = 4
_DIRECT_MOVES_ABOVE = 50  # replicas still to move before balancing switches from direct moves to chains


class _Planner(PlannerState):
    """The three steps over the working state; replica sets are sets, the order is decided at the end."""

    # Step 1: the moves the request cannot avoid

    def _repair(self, k: TopicPartition) -> None:
        replicas = self.parts[k]
        for b in sorted(replicas - self.target_set):
            self._unplace(k, b)
        keep = self.info[k].current_leader
        rf = self.rf[k]
        while len(replicas) > rf:
            racks = self._racks(replicas)
            drop = max(
                (b for b in replicas if b != keep or len(replicas) == 1),
                key=lambda b: (racks[self.rack.get(b)] > 1, self.count[b], self.total[b], b),
            )
            self._unplace(k, drop)
        need = self._need_racks(k)
        while len(replicas) < rf:
            racks = self._racks(replicas)
            choices = [b for b in self.targets if b not in replicas]
            if len(racks) < need:
                choices = [b for b in choices if self.rack[b] not in racks] or choices
            self._place(k, min(choices, key=lambda b: self._place_key(k, b)))
            self.required += 1
        while True:
            racks = self._racks(replicas)
            if len(racks) >= need:
                break
            crowded = [b for b in replicas if racks[self.rack[b]] > 1]
            out = max(crowded, key=lambda b: (b != keep, b not in self.orig[k], self.count[b], self.total[b], b))
            into = min((b for b in self.targets if self.rack[b] not in racks), key=lambda b: self._place_key(k, b))
            self._move(k, out, into)
            self.required += 1

    # Step 2: balance replica counts with the cheapest moves

    def _best_move(self, src: int, dst: int) -> tuple[int, TopicPartition] | None:
        """The cheapest allowed move of a replica from src to dst, as (bytes it adds, partition)."""
        on_src = self.on.get(src, {})
        if self.rack_aware and self.rack[src] != self.rack[dst]:
            flexible = self.flexible.get(src, {})
            if 4 * len(flexible) < len(on_src):  # few replicas here can change rack: look at those only
                best: tuple[int, TopicPartition] | None = None
                for k in flexible:
                    if self._can_move(k, src, dst):
                        cand = (self._move_cost(k, src, dst), k)
                        best = cand if best is None or cand < best else best
                return best
        # A replica going back to dst, where it was: free, or a refund when this plan put it on src.
        # Any will do (the search values refunds at zero), so stop at the first.
        for k in self.back.get((src, dst), ()):
            if self._can_move(k, src, dst):
                return (self._move_cost(k, src, dst), k)
        for k in self.added.get(src, ()):  # a replica this plan added on src going elsewhere: free
            if self._can_move(k, src, dst):
                return (0, k)
        # The smallest original replica on src (followers first), past those already moved away.
        ordered = self.cheap.get(src, [])
        if not ordered:
            return None
        waiting = self.pending[src].get(dst)
        if waiting:  # entries behind the cursor that changed since: cheaper than any ahead of it
            for index in sorted(waiting):
                k = ordered[index]
                if k in on_src and dst not in self.orig[k] and self._can_move(k, src, dst):
                    return (self.size[k], k)
                waiting.discard(index)
        cursors = self.cursor[src]
        j = cursors.get(dst, 0)
        while j < len(ordered):
            k = ordered[j]
            if k in on_src and dst not in self.orig[k] and self._can_move(k, src, dst):
                cursors[dst] = j
                return (self.size[k], k)
            j += 1
        cursors[dst] = j
        return None

    def _balance_replicas(self) -> None:
        """Move replicas from the fullest brokers to the emptiest along the cheapest chain of moves
        until counts differ by at most one or no chain exists; each chain lowers the sum of squares."""
        if len(self.targets) < 2:
            return
        budget = 4 * sum(self.count[b] for b in self.targets) + 100
        while budget > 0:
            budget -= 1
            hi = max(self.count[b] for b in self.targets)
            lo = min(self.count[b] for b in self.targets)
            if hi - lo <= 1:
                return
            if not self.indexed:
                self._index_for_balancing()
            if self._excess() > _DIRECT_MOVES_ABOVE and self._direct_move(hi, lo):
                continue
            found = self._cheapest_path([b for b in self.targets if self.count[b] == hi],
                                        {b for b in self.targets if self.count[b] <= hi - 2})
            if found is None or found[0][0] > 0:  # filling the emptiest from others may be cheaper
                other = self._cheapest_path([b for b in self.targets if self.count[b] >= lo + 2],
                                            {b for b in self.targets if self.count[b] == lo})
                if other is not None and (found is None or other[0] < found[0]):
                    found = other
            if found is None:
                return
            chain = found[1]
            for s, d in reversed(chain):
                move = self._best_move(s, d)
                if move is None:
                    return
                self._move(move[1], s, d)

    def _excess(self) -> int:
        """Replicas above the rounded-up mean: about how many moves balancing still needs."""
        ceiling = -(-sum(self.count[b] for b in self.targets) // len(self.targets))
        return sum(max(0, self.count[b] - ceiling) for b in self.targets)

    def _direct_move(self, hi: int, lo: int) -> bool:
        """The cheapest single move from a fullest broker, or into an emptiest one. Chains cost a
        search over every pair of brokers per move; with thousands of moves to make, direct moves
        do nearly as well, and chains finish the job."""
        pairs = {(s, d) for s in self.targets if self.count[s] == hi for d in self.targets if self.count[d] <= hi - 2}
        pairs |= {(s, d) for d in self.targets if self.count[d] == lo for s in self.targets if self.count[s] >= lo + 2}
        best: tuple[int, int, bool, int, int, TopicPartition] | None = None
        for s, d in sorted(pairs):
            move = self._best_move(s, d)
            if move is not None:
                rank = (move[0], self.count[d] - self.count[s], d not in self.preferred_targets, d, s, move[1])
                best = rank if best is None or rank < best else best
        if best is None:
            return False
        self._move(best[-1], best[-2], best[-3])
        return True

    def _cheapest_path(self, sources: Sequence[int], sinks: set[int]) -> tuple[tuple[int, int, bool, bool, int], list[tuple[int, int]]] | None:
        """Dijkstra over brokers, an edge being the cheapest single move (refunds count as free):
        a chain through a middle broker can copy far less than the cheapest direct move."""
        if not sources or not sinks:
            return None
        parent: dict[int, int | None] = {b: None for b in sources}
        best: dict[int, tuple[int, int]] = {b: (0, 0) for b in sources}
        # Ties go to sinks first: a chain never costs less than its first link, so stopping early is safe.
        heap: list[tuple[int, int, bool, bool, int]] = [(0, 0, True, False, b) for b in sorted(sources)]
        done: set[int] = set()
        while heap:
            cost, hops, not_sink, not_new, node = heapq.heappop(heap)
            if node in done:
                continue
            done.add(node)
            if node in sinks:
                chain: list[tuple[int, int]] = []
                cur = node
                while (prev := parent[cur]) is not None:
                    chain.append((prev, cur))
                    cur = prev
                return (cost, hops, not_sink, not_new, node), chain[::-1]
            for nxt in self.targets:
                if nxt in done:
                    continue
                move = self._best_move(node, nxt)
                if move is None:
                    continue
                reach = (cost + max(0, move[0]), hops + 1)
                if nxt not in best or reach < best[nxt]:
                    best[nxt] = reach
                    parent[nxt] = node
                    heapq.heappush(heap, (*reach, nxt not in sinks, nxt not in self.preferred_targets, nxt))
        return None

    # Step 3: preferred leaders

    def _leader_class(self, k: TopicPartition, leader: int, other: int) -> int:
        """How much handing k's leadership from `leader` to `other` costs: back home, neutral, new."""
        if other == self.home[k]:
            return 0
        if leader != self.home[k]:
            return 1
        return 2 if self.parts[k] != self.orig[k] else 3

    def _index_leader(self, k: TopicPartition, add: bool) -> None:
        leader = self.leader[k]
        for other in self.parts[k]:
            if other == leader:
                continue
            bucket = self.edges.setdefault((leader, other), [{} for _ in range(_LEADER_CLASSES)])
            cls = self._leader_class(k, leader, other)
            if add:
                bucket[cls][k] = None
            else:
                del bucket[cls][k]

    def _choose_leaders(self) -> None:
        self.leader: dict[TopicPartition, int] = {}
        self.home: dict[TopicPartition, int] = {}
        self.leaders: Counter[int] = Counter({b: 0 for b in self.targets})
        undecided = []
        for k in self.keys:
            info, replicas = self.info[k], self.parts[k]
            if replicas == self.orig[k] and info.replicas[0] in replicas:
                home: int | None = info.replicas[0]  # unchanged: keep the list as it is
            elif info.current_leader in replicas:
                home = info.current_leader
            else:
                home = next((b for b in info.replicas if b in replicas), None)
            if home is None:
                undecided.append(k)
                continue
            self.home[k] = self.leader[k] = home
            self.leaders[home] += 1
        for k in undecided:  # every replica is new: lead from the broker leading least
            home = min(self.parts[k], key=lambda b: (self.leaders[b], self.total[b], b))
            self.home[k] = self.leader[k] = home
            self.leaders[home] += 1
        self.edges: dict[tuple[int, int], list[dict[TopicPartition, None]]] = {}
        for k in self.keys:
            self._index_leader(k, add=True)

    def _hand_over(self, src: int, dst: int) -> bool:
        bucket = self.edges.get((src, dst))
        if not bucket:
            return False
        for candidates in bucket:
            if candidates:
                k = next(iter(candidates))
                self._index_leader(k, add=False)
                self.leader[k] = dst
                self.leaders[src] -= 1
                self.leaders[dst] += 1
                self._index_leader(k, add=True)
                return True
        return False

    def _balance_leaders(self) -> None:
        if len(self.targets) < 2:
            return
        budget = 4 * len(self.keys) + 100

        def reorderable(s: int, d: int) -> bool:
            return any(self.edges.get((s, d), ()))

        def movable(s: int, d: int) -> bool:
            return reorderable(s, d) or self._leader_move(s, d) is not None

        while budget > 0:
            budget -= 1
            hi = max(self.leaders[b] for b in self.targets)
            lo = min(self.leaders[b] for b in self.targets)
            if hi - lo <= 1:
                return
            path = None
            # Reordering replicas first (it copies nothing); moving a leading replica only when stuck.
            for linked in (reorderable, movable):
                for sources, sinks in (
                    ([b for b in self.targets if self.leaders[b] == hi], {b for b in self.targets if self.leaders[b] <= hi - 2}),
                    ([b for b in self.targets if self.leaders[b] >= lo + 2], {b for b in self.targets if self.leaders[b] == lo}),
                ):
                    path = _bfs(sources, sinks, self.targets, linked)
                    if path:
                        break
                if path:
                    break
            if not path:
                return
            for s, d in reversed(path):
                if not self._hand_over(s, d) and not self._apply_leader_move(s, d):
                    return

    def _leader_move(self, src: int, dst: int) -> tuple[int, TopicPartition, TopicPartition | None] | None:
        """The cheapest way to give dst one of src's leaderships by moving data, without worsening replica
        balance: move a replica src leads to dst when dst holds fewer replicas, else swap it with one of
        dst's followers. Needed when a broker leads partitions whose other replicas cannot lead instead
        (single-replica partitions, say). Answers (bytes, partition moved, follower moved back)."""
        lead: tuple[int, TopicPartition] | None = None
        for k in self.on.get(src, ()):
            if self.leader[k] == src and self._can_move(k, src, dst):
                cand = (self._move_cost(k, src, dst), k)
                lead = cand if lead is None or cand < lead else lead
        if lead is None:
            return None
        if self.count[src] > self.count[dst]:
            return (lead[0], lead[1], None)
        back: tuple[int, TopicPartition] | None = None
        for k in self.on.get(dst, ()):
            if self.leader[k] != dst and self._can_move(k, dst, src):
                cand = (self._move_cost(k, dst, src), k)
                back = cand if back is None or cand < back else back
        if back is None:
            return None
        return (lead[0] + back[0], lead[1], back[1])

    def _apply_leader_move(self, src: int, dst: int) -> bool:
        found = self._leader_move(src, dst)
        if found is None:
            return False
        _, lead, follower = found
        self._index_leader(lead, add=False)
        self._move(lead, src, dst)
        self.leader[lead] = dst
        self.leaders[src] -= 1
        self.leaders[dst] += 1
        self._index_leader(lead, add=True)
        if follower is not None:
            self._index_leader(follower, add=False)
            self._move(follower, dst, src)
            self._index_leader(follower, add=True)
        return True

    # The result

    def _order(self, k: TopicPartition) -> tuple[int, ...]:
        """Leader first; a new replica takes the place of the one it replaces, so lists read naturally."""
        before = list(dict.fromkeys(self.info[k].replicas))
        replicas = self.parts[k]
        incoming = iter(sorted(replicas - set(before)))
        after: list[int] = []
        for b in before:
            if b in replicas:
                after.append(b)
            else:
                nb = next(incoming, None)
                if nb is not None:
                    after.append(nb)
        after.extend(incoming)
        leader = self.leader[k]
        after.remove(leader)
        return (leader, *after)

    def run(self) -> dict[TopicPartition, tuple[int, ...]]:
        for k in self.keys:
            self._repair(k)
        self._balance_replicas()
        self._choose_leaders()
        self._balance_leaders()
        return {k: self._order(k) for k in self.keys}


def _bfs(sources: Sequence[int], sinks: set[int], nodes: Sequence[int], linked: Any) -> list[tuple[int, int]] | None:
    """Shortest chain of edges from any source to any sink (sources excluded as sinks)."""
    parent: dict[int, int | None] = {s: None for s in sources}
    queue = deque(sources)
    while queue:
        node = queue.popleft()
        for nxt in nodes:
            if nxt in parent or not linked(node, nxt):
                continue
            parent[nxt] = node
            if nxt in sinks:
                path: list[tuple[int, int]] = []
                cur: int = nxt
                while parent[cur] is not None:
                    prev = parent[cur]
                    assert prev is not None
                    path.append((prev, cur))
                    cur = prev
                return path[::-1]
            queue.append(nxt)
    return None
