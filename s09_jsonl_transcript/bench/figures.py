"""The figures the benchmark prints: each a target (a ratio or a difference, its goal, its
verdict when the interval decides it)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .stats import median_interval, medians, paired_differences, paired_ratios, quartiles
from .workload import Sizes


@dataclass(frozen=True)
class Target:
    """One measured figure (the median over rounds of a paired ratio or difference) and the bound the
    issue sets for it.

    With the rounds' values, a verdict needs the median's 95% interval (median_interval) on one
    side of the bound; where the interval holds the bound, the run's spread is too wide to decide.
    """

    label: str
    value: float
    bound: float | None = None  # None: shown for context, no target
    at_most: bool = False  # False: the value must be at least the bound
    rounds: tuple = ()  # the value of each round (value is their median); empty: one measurement

    @property
    def interval(self) -> tuple[float, float]:
        """Where the median lies with 95% confidence, from the rounds (the value itself without them)."""
        return median_interval(self.rounds) if self.rounds else (self.value, self.value)

    @property
    def verdict(self) -> str:
        """"met", "MISSED", "undecided" (the median's interval holds the bound) or "context" (no bound)."""
        if self.bound is None:
            return "context"
        low, high = self.interval
        if self.at_most:
            low, high = -high, -low  # at most b is -value at least -b
        bound = -self.bound if self.at_most else self.bound
        if low >= bound:
            return "met"
        return "MISSED" if high < bound else "undecided"

    @property
    def met(self) -> bool:
        """Whether the value is on the right side of the bound, decidedly (a context line always is)."""
        return self.verdict in ("met", "context")

    def __str__(self):
        spread = ""
        if len(self.rounds) > 1:
            (first, third), (low, high) = quartiles(self.rounds), self.interval
            spread = f"  quartiles {first:.2f}..{third:.2f}, median's 95% interval {low:.2f}..{high:.2f}"
        text = f"{self.label:<86} {self.value:8.2f}{spread}"
        if self.bound is None:
            return f"{text}   (context, no target)"
        verdict = {"undecided": "UNDECIDED: the spread is too wide to decide"}.get(self.verdict, self.verdict)
        return f"{text}   target {'<=' if self.at_most else '>='} {self.bound:g} {verdict}"


def target(label: str, rounds: list[float], bound: float | None = None, at_most: bool = False,
           scale: float = 1.0) -> Target:
    """A Target whose value is the median of rounds (each multiplied by scale: 1e6 for microseconds)."""
    scaled = tuple(value * scale for value in rounds)
    return Target(label, statistics.median(scaled), bound, at_most, scaled)


@dataclass(frozen=True)
class Figure:
    """One of the seven benchmark figures: its ratios and the raw numbers behind them."""

    number: int
    targets: tuple
    raw: dict  # medians in seconds per event or per call, sizes in bytes

    @property
    def met(self) -> bool:
        """Whether every target of this figure is met."""
        return all(target.met for target in self.targets)


# The issues' goals for each decoder: append / its floor (issue 45), µs append adds to its floor
# (None: context), batch / same-bytes peer and recover / json.loads (issue 29)
GOALS = {"stdlib": (0.97, 15, 1.0, 1.15), "msgspec": (0.97, None, 1.3, 2.2)}


OWN_DECODER_GOAL = 0.85  # msgspec: recover() / a bare loop of msgspec's own decode


CHECK_GOAL_US = 3  # issue 43: what its check adds to each append


US = 1e6


def single_targets(single: dict, decoders: list[str]) -> list[Target]:
    """Figure 1: for each decoder, the lab's append against its floor (the plain writer of the same
    bytes), the bare write + fsync as information, and issue 43's check before and after."""
    lines = []
    for name in decoders:
        append, plain = f"append[{name}]", f"plain_writer[{name}]"
        floor_goal, added_goal = GOALS[name][:2]
        fsync_us = statistics.median(single["fsync"]) * US
        lines += [
            target(f"[{name}] lab append / the plain writer of the same bytes (its floor), events per s",
                   paired_ratios(single, plain, append), floor_goal),
            target(f"[{name}] us the lab's append adds to the plain writer",
                   paired_differences(single, append, plain), added_goal, at_most=True, scale=US),
            target(f"[{name}] lab append / bare os.write + fsync, events per s (median fsync {fsync_us:.0f} us)",
                   paired_ratios(single, "bare", append)),
            target(f"[{name}] us the lab's append adds to each bare write + fsync",
                   paired_differences(single, append, "bare"), scale=US),
            target(f"[{name}] us the plain writer adds to each bare write + fsync",
                   paired_differences(single, plain, "bare"), scale=US)]
    if len(decoders) > 1:
        first, *others = decoders
        for name in others:
            ratios = [(p / a) / (first_p / first_a) for p, a, first_p, first_a in zip(
                single[f"plain_writer[{name}]"], single[f"append[{name}]"],
                single[f"plain_writer[{first}]"], single[f"append[{first}]"])]
            lines.append(target(f"[{name}] its append / floor ratio over [{first}]'s, paired by round",
                                ratios, 1.0))
    for name in decoders:
        if f"checked[{name}]" not in single:
            continue
        checked, unchecked = f"checked[{name}]", f"unchecked[{name}]"
        lines += [  # issue 43: the same append with and without its check, side by side
            target(f"[{name}] us the lab's append adds to the plain writer, before issue 43's check",
                   paired_differences(single, unchecked, f"plain_writer[{name}]"), scale=US),
            target(f"[{name}] us the lab's append adds to the plain writer, after it",
                   paired_differences(single, checked, f"plain_writer[{name}]"), scale=US),
            target(f"[{name}] us issue 43's check adds to each append (after - before, paired by round)",
                   paired_differences(single, checked, unchecked), CHECK_GOAL_US, at_most=True, scale=US),
            target(f"[{name}] us the check adds outside the fsync (each side's time less its fsync's)",
                   paired_differences(single, f"checked_work[{name}]", f"unchecked_work[{name}]"), scale=US)]
    lines.append(target("lesson append (code.py) / bare os.write + fsync, events per s",
                        paired_ratios(single, "bare", "lesson_append"), 0.9))
    return lines


def figures_from(measured: dict, sizes: Sizes) -> list[Figure]:
    """Turn the samples of run_all into the seven figures (ratios of paired samples, see paired_ratio).

    Figures 1, 2 and 6 depend on the decoder the lab's fast paths use: they hold lines for each.
    """
    by_decoder, single = measured["decoders"], measured["single"]
    decoders = list(by_decoder)
    replay, opened, memory = measured["replay"], measured["open_append"], measured["memory"]
    extra_mb = (memory["peak_bytes"] - memory["baseline_bytes"]) / 2**20
    big, small, batch_size = f"{sizes.big_events:,}", f"{sizes.small_events:,}", sizes.batch_size

    def raw(samples):
        return {"median_seconds": medians(samples), "samples": samples}

    batch_lines, recover_lines = [], []
    for name, samples in by_decoder.items():
        batch, recover = samples["batch"], samples["recover"]
        batch_goal, recover_goal = GOALS[name][2:]
        batch_lines += [
            target(f"[{name}] append_batch({batch_size}) / same bytes by json.dumps each, one write, one fsync",
                   paired_ratios(batch, "dumps_batch", "append_batch"), batch_goal),
            target(f"[{name}] append_batch({batch_size}) / single append, events per s",
                   paired_ratios(batch, "append", "append_batch"), 20),
            target(f"[{name}] append_batch({batch_size}) / bare writes of encoded bytes + one fsync",
                   paired_ratios(batch, "bare", "append_batch"))]
        recover_lines.append(target(f"[{name}] recover() / bare json.loads per line, lines per s",
                                    paired_ratios(recover, "json_loads", "recover"), recover_goal))
        if "own_decoder" in recover:
            recover_lines.append(target(f"[{name}] recover() / bare loop of its own decoder, lines per s",
                                        paired_ratios(recover, "own_decoder", "recover"), OWN_DECODER_GOAL))
    return [
        Figure(1, tuple(single_targets(single, decoders)), raw(single)),
        Figure(2, tuple(batch_lines), {name: raw(samples["batch"]) for name, samples in by_decoder.items()}),
        Figure(3, (target("append / SQLite WAL synchronous=FULL insert, events per s",
                          paired_ratios(single, "sqlite_FULL", f"append[{decoders[0]}]"), 1.0),), raw(single)),
        Figure(4, (target(f"replay({sizes.window}) time, {big} events / {small} events",
                          paired_ratios(replay, "big", "small"), 1.5, at_most=True),), raw(replay)),
        Figure(5, (target(f"open + append one event time, {big} events / empty",
                          paired_ratios(opened, "big", "empty"), 2.0, at_most=True),), raw(opened)),
        Figure(6, tuple(recover_lines), {name: raw(samples["recover"]) for name, samples in by_decoder.items()}),
        Figure(7, (Target(f"replay({sizes.window}) peak memory above baseline, MB "
                          f"({measured['big_bytes'] / 2**30:.2f} GiB file)", extra_mb, 50, at_most=True),), memory),
    ]
