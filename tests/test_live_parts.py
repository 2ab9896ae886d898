"""The objects a live log hands out stand on their own: a Subscription needs only a paging function and an
unregister callback, a Stream only a publish and a commit function. Here they run with no log at all,
against a list of events playing the file, so what each promises is checked apart from the log's locks.
"""

import threading

from s09_jsonl_transcript.production.live import Delta, Stream, Subscription

WAIT = 600  # seconds: reached only when the code is broken, never on a slow or loaded machine


class ListFile:
    """The committed events 1..count, paged as SessionEventLog._page_for pages the file."""

    def __init__(self, count: int):
        self.events = [{"type": "message", "sequence": sequence} for sequence in range(1, count + 1)]
        self.pages = []  # (first, room) of every page asked for

    def append(self) -> dict:
        event = {"type": "message", "sequence": len(self.events) + 1}
        self.events.append(event)
        return event

    def page(self, first, room, offset, hold_live):
        self.pages.append((first, room))
        last = len(self.events)
        final = first + room - 1 >= last
        if final:
            hold_live()  # the log does this under its lock: live items are held from here on
        page_last = last if final else first + room - 1
        return self.events[first - 1:page_last], max(page_last, first - 1), page_last, final


def sequences(items):
    return [item["sequence"] for item in items]


def test_a_subscription_replays_in_pages_then_takes_live_items_in_order_with_no_log():
    file, unregistered = ListFile(5), []
    subscription = Subscription(2, None, 1, max_queued=2, page=file.page, unregister=unregistered.append)
    subscription.start()
    assert sequences(subscription.poll()) == [2, 3]  # the queue never holds more than max_queued
    assert sequences(subscription.poll()) == [4, 5]  # the last page: live delivery from here
    assert file.pages == [(2, 2), (4, 2)]
    subscription.offer(file.events[4])  # event 5 arrives live too: the hand-over drops the duplicate
    subscription.offer(file.append())
    subscription.offer(Delta("p1", "text", "Hel", 0))
    assert [item if isinstance(item, Delta) else item["sequence"] for item in subscription.poll()] == [
        6, Delta("p1", "text", "Hel", 0)]
    assert subscription.duplicates_dropped == 1 and subscription.next_sequence == 7
    subscription.release()
    assert unregistered == [subscription]
    subscription.offer(file.append())
    assert subscription.poll() == []  # released: nothing more is queued


def test_a_full_queue_drops_live_items_and_pages_the_missed_ones_back_from_the_file():
    file = ListFile(0)
    subscription = Subscription(1, None, 1, max_queued=2, page=file.page, unregister=lambda s: None)
    subscription.start()
    for _ in range(5):
        subscription.offer(file.append())
    subscription.offer(Delta("p1", "text", "lost", 0))
    assert subscription.resyncs == 1 and subscription.deltas_dropped == 1
    received = []
    while batch := subscription.poll():
        received += sequences(batch)
    assert received == [1, 2, 3, 4, 5]  # none lost, none twice: the rest came back from the file


def test_a_callback_subscription_delivers_on_its_own_thread_and_a_failing_callback_ends_only_itself():
    file, unregistered, seen = ListFile(3), [], []

    def on_event(item):
        seen.append((item["sequence"], threading.current_thread().name))
        if item["sequence"] == 4:
            raise RuntimeError("this subscriber is broken")

    subscription = Subscription(1, on_event, 7, max_queued=2, page=file.page, unregister=unregistered.append)
    subscription.start()
    assert subscription.wait_delivered(WAIT)
    assert seen == [(1, "s09-subscriber-7"), (2, "s09-subscriber-7"), (3, "s09-subscriber-7")]
    subscription.offer(file.append())
    assert subscription.wait_delivered(WAIT)
    assert isinstance(subscription.error, RuntimeError) and subscription.released
    assert unregistered == [subscription] and subscription.next_sequence == 4  # event 4 was not delivered


def test_a_stream_publishes_its_deltas_and_commits_its_final_part_through_what_it_was_given():
    published, committed = [], []

    def commit_part(stream, event):
        committed.append((stream.part_id, event))
        stream.outcome = "committed"
        return {**event, "part_id": stream.part_id, "sequence": 1}

    stream = Stream("part-1", "text", 3, publish=published.extend, commit_part=commit_part)
    stream.delta("Hel")
    stream.delta("lo")
    assert published == [Delta("part-1", "text", "Hel", 0), Delta("part-1", "text", "lo", 1)]
    record = stream.commit({"type": "message", "role": "assistant", "content": stream.text})
    assert committed == [("part-1", {"type": "message", "role": "assistant", "content": "Hello"})]
    assert record["part_id"] == "part-1" and stream.outcome == "committed"
