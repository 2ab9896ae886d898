"""Property test of subscribe: random interleavings of commits, batches, deltas, attaches, polls and releases.

Whatever the interleaving, every subscriber sees every committed event after its cursor exactly
once and in order, then the live items (committed and deltas) in the order they happened, and
nothing after its release.
"""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s09_jsonl_transcript.production.live import Delta, SessionEventLog, is_delta

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("commit"), st.integers(1, 3)),  # one event, or a batch of 2 or 3
        st.tuples(st.just("delta"), st.integers(0, 0)),
        st.tuples(st.just("attach"), st.integers(0, 100)),  # the cursor, as a percentage of the last sequence
        st.tuples(st.just("poll"), st.integers(0, 20)),
        st.tuples(st.just("release"), st.integers(0, 20)),
    ),
    max_size=40,
)


def key(item):
    return ("delta", item.text) if is_delta(item) else ("event", item["sequence"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS)
def test_every_subscriber_sees_each_committed_event_after_its_cursor_once_in_order(operations):
    with tempfile.TemporaryDirectory() as folder:
        log = SessionEventLog.create(Path(folder) / "s.jsonl")
        subscribers = []  # [subscription, expected keys, received items, still attached]
        deltas = 0
        for operation, value in operations:
            if operation == "commit":
                events = [{"type": "message", "role": "user", "content": f"m{i}"} for i in range(value)]
                records = log.commit_batch(events) if value > 1 else [log.commit(events[0])]
                for entry in subscribers:
                    if entry[3]:
                        entry[1] += [("event", record["sequence"]) for record in records]
            elif operation == "delta":
                deltas += 1
                log.emit_delta(Delta("p", "text", f"d{deltas}", deltas))
                for entry in subscribers:
                    if entry[3]:
                        entry[1].append(("delta", f"d{deltas}"))
            elif operation == "attach":
                cursor = log.last_sequence * value // 100
                subscription = log.subscribe(after_sequence=cursor)
                past = [("event", n) for n in range(cursor + 1, log.last_sequence + 1)]
                subscribers.append([subscription, past, [], True])
            elif subscribers:
                entry = subscribers[value % len(subscribers)]
                entry[2] += entry[0].poll()
                if operation == "release" and entry[3]:
                    entry[0].release()
                    entry[3] = False
        for subscription, expected, received, _ in subscribers:
            received += subscription.poll()
            assert [key(item) for item in received] == expected
            assert subscription.duplicates_dropped == 0
        log.close()
