"""How the benchmarks measure: sides interleaved in balanced orders, paired ratios and differences,
and the 95% interval of a median that decides a verdict."""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable


def timed(action: Callable[[], object]) -> float:
    """Seconds action took on the wall clock."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def interleaved(measurements: dict[str, Callable[[], float]], rounds: int, *,
                alternate: bool = False) -> dict[str, list[float]]:
    """Run each measurement once per round, in turn (A, B, A, B, ...); return every sample of each.

    Interleaving spreads the machine's changing load evenly over the things compared. With
    alternate, every other round runs them in reverse order (A, B, B, A, ...), so that no
    measurement always runs right after the same other one.
    """
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    samples = {name: [] for name in measurements}
    for round_number in range(rounds):
        order = list(measurements.items())
        for name, measure in (reversed(order) if alternate and round_number % 2 else order):
            samples[name].append(measure())
    return samples


def balanced_orders(names: list[str]) -> list[list[str]]:
    """Orders in which to run names, one order per event, so that across them each name runs right
    after each other name equally often (a Williams design), and first and last equally often.

    What ran just before a side colours its time (a heavy neighbour empties the caches), so no
    side may have the same neighbour more often than another side does.
    """
    n = len(names)
    first = [0] + [(j + 1) // 2 if j % 2 else n - j // 2 for j in range(1, n)]  # 0, 1, n-1, 2, n-2, ...
    orders = [[names[(position + shift) % n] for position in first] for shift in range(n)]
    return orders if n % 2 == 0 else orders + [order[::-1] for order in orders]


def paired_ratios(samples: dict[str, list[float]], numerator: str, denominator: str) -> list[float]:
    """numerator / denominator in each round, each pair measured in the same round.

    Pairing cancels load that changes from one round to the next.
    """
    return [a / b for a, b in zip(samples[numerator], samples[denominator])]


def paired_differences(samples: dict[str, list[float]], minuend: str, subtrahend: str) -> list[float]:
    """minuend - subtrahend in each round, each pair measured in the same round."""
    return [a - b for a, b in zip(samples[minuend], samples[subtrahend])]


def paired_ratio(samples: dict[str, list[float]], numerator: str, denominator: str) -> float:
    """The median over rounds of numerator / denominator, each pair measured in the same round."""
    return statistics.median(paired_ratios(samples, numerator, denominator))


def paired_difference(samples: dict[str, list[float]], minuend: str, subtrahend: str) -> float:
    """The median over rounds of minuend - subtrahend, each pair measured in the same round."""
    return statistics.median(paired_differences(samples, minuend, subtrahend))


CONFIDENCE = 0.95  # of the interval that must lie on one side of a target's bound for a verdict


def median_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """An interval that holds the median of what was sampled with at least that confidence (or
    from the least to the greatest value, when there are too few values for it).

    Distribution-free: the k-th smallest and the k-th largest of n values, for the largest k
    such that fewer than k values fall below the median with a chance of at most
    (1 - confidence) / 2, each value falling below it with a chance of one half.
    """
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        raise ValueError("no values")

    def fewer_below(k: int) -> float:  # the chance that fewer than k of the n values fall below the median
        return sum(math.comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= (n + 1) // 2 and 1 - 2 * fewer_below(k + 1) >= confidence:
        k += 1
    return ordered[k - 1], ordered[n - k]


def quartiles(values) -> tuple[float, float]:
    """The first and third quartile of values: their spread."""
    if len(values) < 2:
        return values[0], values[0]
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, third


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    """Each measurement's median sample."""
    return {name: statistics.median(values) for name, values in samples.items()}
