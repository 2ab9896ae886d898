"""The hash chain's cost per append is measured, not assumed."""

import pytest

from s09_jsonl_transcript.crashlab.cost import measure_integrity_cost


def test_the_chain_makes_records_longer_and_the_ratio_is_measured():
    cost = measure_integrity_cost(appends=30, runs=1, synced=False)
    assert cost.on_bytes - cost.off_bytes == pytest.approx(len(',"chain":""') + 64)
    assert cost.off_us > 0 and cost.on_us > 0
    assert cost.ratio == cost.on_us / cost.off_us


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        measure_integrity_cost(appends=0)
