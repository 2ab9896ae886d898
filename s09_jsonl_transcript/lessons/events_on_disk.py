"""Notebook 1, events on disk: step MockLLM through a DurableTranscript and watch the file grow.

The stepper appends one event per call; the views read everything back from the file itself,
so what the notebook shows is what a fresh process would find on disk. Also here: the picture of
the write path (process, page cache, disk), a record written by a newer version of the code, and
the common mistake of keeping only the final answer.

Every sentence, label and plot text a student sees is in the language in use (i18n.use): the
Chinese is in locale/zh/events_on_disk.json. The notebook's cells print what these functions return, so
the cells are the same in both languages.
"""

from __future__ import annotations

import html
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import ipywidgets as widgets
from IPython.display import HTML
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Patch

from .. import damage, i18n
from ..code import (
    BUG_FIX_SCRIPT,
    SCHEMA_VERSION,
    TYPE_AI_TITLE,
    TYPE_FILE_SNAPSHOT,
    TYPE_FUNCTION_CALL,
    TYPE_FUNCTION_CALL_RESULT,
    TYPE_MESSAGE,
    TYPE_REASONING,
    MockLLM,
    event_id_for,
    event_to_message,
    ticking_clock,
)
from ..lab import BATCH_END_FIELD, RESERVED_FIELDS, DurableTranscript
from .display import MAIN_CONTROL_CLASS, RESULT_CLASS, figure_png, html_table
from .partial_tail_vs_corruption import verdict_text
from .style import EVENT_COLORS, OKABE_ITO

tr = i18n.translator("events_on_disk")


def envelope_field_meanings() -> dict[str, str]:
    """What each envelope field promises (HTML), in the order append writes them, in the language in use."""
    return {
        "schema_version": tr("Format version of this record. A record of a newer version than the reader knows is "
                             "kept as evidence (counted, returned by read_events) but never turned into a message; "
                             "its sequence, session_id and event_id must still check out, or reading fails closed."),
        "sequence": tr("1, 2, 3, ... with no gaps. Replay checks every line is the previous one plus 1, "
                       "so a lost, doubled or reordered line is caught."),
        "event_id": tr("transcript:&lt;session_id&gt;:&lt;sequence&gt;: the durable name of this event. "
                       "Memory candidates point at it instead of copying the body."),
        "session_id": tr("The file's name without .jsonl. A line pasted in from another session is refused."),
        "recorded_at": tr("When append wrote the record, in UTC (an injected ticking clock here). "
                          "Evidence for people; replay orders by sequence, never by time."),
        BATCH_END_FIELD: tr("Only on records written together by one append_batch: the sequence of the batch's last "
                            "record. A batch that did not reach the disk whole is ignored like a partial tail."),
    }


def display_width(text: str) -> int:
    """How many columns text takes in a monospaced font: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """text padded with spaces to width columns (display_width), on the right, or on the left when right=True."""
    spaces = " " * max(0, width - display_width(text))
    return spaces + text if right else text + spaces


# Where the replay fold puts the events that never become chat messages.
METADATA_DESTINATIONS = {
    TYPE_AI_TITLE: "state.title",
    TYPE_FILE_SNAPSHOT: "state.file_snapshots",
    TYPE_REASONING: "state.reasoning_count",
}

_NEWEST_BACKGROUND = "#FFF3C4"  # a pale tint of the palette's yellow: the line just appended


class EventStepper:
    """Appends MockLLM's scripted events to one transcript, one event per call.

    The transcript uses a ticking clock, so the same steps always write the same bytes.
    """

    def __init__(self, folder, session_id: str = "session-1"):
        self.path = Path(folder) / f"{session_id}.jsonl"
        self.total = len(BUG_FIX_SCRIPT)
        self.newest = None  # the envelope of the last append, or None before the first
        self._start_session()

    def _start_session(self) -> None:
        self.transcript = DurableTranscript(self.path, clock=ticking_clock())
        self.llm = MockLLM()
        self.newest = None

    @property
    def appended(self) -> int:
        """How many events this session has appended so far."""
        return self.llm.position

    @property
    def finished(self) -> bool:
        """True once every scripted event is on disk."""
        return self.appended >= self.total

    def next_event(self) -> dict | None:
        """Append the next scripted event and return the envelope written, or None when the script is over."""
        event = self.llm.next_event()
        if event is None:
            return None
        self.newest = self.transcript.append(event)
        return self.newest

    def reset(self) -> None:
        """Delete the demo file and start the session again from its first event.

        An agent never does this to its transcript: it is how the lesson starts over.
        """
        self.transcript.close()
        self.path.unlink(missing_ok=True)
        self._start_session()

    def advance_to(self, count: int) -> None:
        """Leave exactly `count` events on disk.

        Going forward appends. Going back starts a new file and appends `count` events,
        because an append-only file never shrinks.
        """
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= self.total:
            raise ValueError(f"count must be a whole number from 0 to {self.total}, not {count!r}")
        if count < self.appended:
            self.reset()
        while self.appended < count:
            self.next_event()

    def close(self) -> None:
        """Release the transcript's writer (its descriptor and lock)."""
        self.transcript.close()


# --------------------------------------------------------------------------- reading the file back


@dataclass(frozen=True)
class LineGrowth:
    """The file just after one append."""

    sequence: int
    event_type: str
    lines: int  # complete lines in the file
    bytes: int  # size of the file
    line_bytes: int  # size of the line this append added, newline included


def growth_of(path) -> list[LineGrowth]:
    """The file's line count and size after each of its appends, read back from the file.

    A partial tail (bytes after the last newline) is not counted: no append wrote it completely.
    """
    events = DurableTranscript(path).read_events()
    raw_lines = Path(path).read_bytes().split(b"\n")[:-1] if Path(path).exists() else []
    growth, size = [], 0
    for number, (event, raw) in enumerate(zip(events, raw_lines), start=1):
        size += len(raw) + 1
        growth.append(LineGrowth(event["sequence"], event["type"], number, size, len(raw) + 1))
    return growth


def file_listing_html(path) -> str:
    """The raw file as numbered lines of HTML, the newest complete line highlighted."""
    data = Path(path).read_bytes() if Path(path).exists() else b""
    *lines, fragment = data.split(b"\n")
    name = f"<code>{html.escape(Path(path).name)}</code>"
    if not lines and not fragment:
        return "<p>" + tr("{name} is empty: no event appended yet.", name=name) + "</p>"
    rows = []
    for number, raw in enumerate(lines, start=1):
        newest = number == len(lines) and not fragment
        style = f' style="background:{_NEWEST_BACKGROUND};font-weight:bold"' if newest else ""
        note = "   &lt;- " + tr("newest line") if newest else ""
        rows.append(f"<div{style}>{number:>2}  {html.escape(raw.decode('utf-8', 'replace'))}{note}</div>")
    if fragment:
        text = html.escape(fragment.decode("utf-8", "replace"))
        rows.append(f"<div>..  {text}   &lt;- " + tr("no newline: partial tail") + "</div>")
    size = tr("{lines} lines, {size} bytes", lines=len(lines), size=len(data))
    return ("<p>" + tr("{name}: {size}", name=name, size=size) + "</p>"
            '<pre style="white-space:pre-wrap;word-break:break-all;font-size:11px;line-height:1.35">'
            + "".join(rows) + "</pre>")


def envelope_html(record: dict | None) -> str:
    """A table of one record's envelope fields, their values and what each promises."""
    if record is None:
        return "<p>" + tr("No record yet: press <b>{button}</b>.", button=tr("Next event")) + "</p>"
    absent = tr("(absent)")
    rows = "".join(
        f"<tr><td><code>{name}</code></td><td><code>{html.escape(str(record.get(name, absent)))}</code></td>"
        f"<td style='text-align:left'>{meaning}</td></tr>"
        for name, meaning in envelope_field_meanings().items()
    )
    payload = {key: value for key, value in record.items() if key not in RESERVED_FIELDS}
    rows += (f"<tr><td>{tr('the event')}</td><td colspan='2' style='text-align:left'>"
             f"<code>{html.escape(_shorten(repr(payload), 110))}</code></td></tr>")
    return (f"<table><tr><th>{tr('field')}</th><th>{tr('value')}</th>"
            f"<th style='text-align:left'>{tr('what it promises')}</th></tr>" + rows + "</table>")


def appended_text(record: dict) -> str:
    """One line saying which record an append just wrote: sequence, type and event_id."""
    return tr("appended sequence {sequence:>2}  {type:<22} event_id {event_id}",
              sequence=record["sequence"], type=record["type"], event_id=record["event_id"])


def complete_lines_text(path) -> str:
    """How many complete lines a fresh reader finds in the file."""
    return tr("complete lines: {count}", count=DurableTranscript(path).count_lines())


def read_back_text(transcript: DurableTranscript) -> str:
    """What a transcript that never saw the agent reads back: its complete lines and the type of each event."""
    return "\n".join([complete_lines_text(transcript.path),
                      tr("event types:    {types}", types=[event["type"] for event in transcript.read_events()])])


def refused_text(error: Exception) -> str:
    """A refused writer, and the library's reason (its exception message, in the language in use)."""
    return tr("refused: {error}", error=i18n.library_text(error))


def newer_schema_text(record: dict, rebuilt: dict, before: dict, last_read: dict) -> str:
    """What happened to a record of a newer schema: how it was written, how it reads back, and whether it is kept."""
    return "\n".join([
        tr("appended by hand: sequence {sequence}, schema_version {version}, type {type!r}",
           sequence=record["sequence"], version=record["schema_version"], type=record["type"]),
        tr("read back: {total} events, {unknown} of a newer schema kept as evidence, {messages} messages "
           "(as before: {before})", total=rebuilt["total_events"], unknown=rebuilt["unknown_schema_events"],
           messages=rebuilt["message_count"], before=before["message_count"]),
        tr("the last event read: {same}", same=last_read == record),
    ])


def write_newer_schema_record(path, event: dict) -> dict:
    """Append one record of schema_version SCHEMA_VERSION + 1 by hand, as a newer version of the code would.

    The envelope continues the file (next sequence, this session's id and event id); this code's
    append refuses to write envelope fields, so the line is written directly. Returns the record.
    """
    path = Path(path)
    scanned = DurableTranscript(path).scan()
    sequence = scanned.last_sequence + 1
    record = {"schema_version": SCHEMA_VERSION + 1, "sequence": sequence,
              "event_id": event_id_for(path.stem, sequence), "session_id": path.stem,
              "recorded_at": "2026-01-05T10:00:00+00:00", **event}
    with open(path, "ab") as file:
        file.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
    return record


def tool_call_lines(path) -> list[str]:
    """The tool calls of a transcript as compact JSON (sequence, name, arguments): what the notebook's jq prints."""
    return [json.dumps({"sequence": event["sequence"], "name": event["name"], "arguments": event["arguments"]},
                       separators=(",", ":"))
            for event in DurableTranscript(path).read_events() if event["type"] == TYPE_FUNCTION_CALL]


def jq_fallback_text(path) -> str:
    """What notebook 1 prints where jq is missing: a sentence saying so, then the same selection made in Python."""
    return "\n".join([tr("jq is not installed here; the same selection in Python:"), *tool_call_lines(path)])


def same_events_text(copy, events: list[dict], start) -> str:
    """Whether a copy of a transcript (path shown relative to start) reads back exactly these events."""
    name = Path(copy).relative_to(start).as_posix()
    return tr("{name} reads back the same events: {same}", name=name,
              same=DurableTranscript(copy).read_events() == events)


def reader_verdict_text(path, start) -> str:
    """The reader's verdict on a file (path shown relative to start), in the language in use."""
    name = Path(path).relative_to(start).as_posix()
    return tr("{name}: {verdict}", name=name, verdict=verdict_text(damage.verdict(path)))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- tables printed as text

_GROWTH_COLUMNS = (8, 22, 6, 6)  # widths of sequence, event type, lines, bytes


def growth_table(growth: list[LineGrowth]) -> str:
    """The file after each append as a text table: sequence, event type, lines, bytes and the new line's size."""
    seq, kind, lines, size = _GROWTH_COLUMNS
    header = (pad(tr("sequence"), seq) + "  " + pad(tr("event type"), kind) + " " + pad(tr("lines"), lines, True)
              + "  " + pad(tr("bytes"), size - 1, True) + "  " + tr("(this line)"))
    rows = [f"{point.sequence:>{seq}}  {point.event_type:<{kind}} {point.lines:>{lines}} {point.bytes:>{size}}"
            f"  (+{point.line_bytes})" for point in growth]
    return "\n".join([header, *rows])


def replay_text(events: list[dict], state: dict) -> str:
    """What replay makes of a transcript: a summary line, then each line and where it goes."""
    summary = tr("{events} events -> {messages} messages, title {title!r}, {snapshots} file snapshot, "
                 "{reasoning} reasoning event", events=len(events), messages=state["message_count"],
                 title=state["title"], snapshots=len(state["file_snapshots"]), reasoning=state["reasoning_count"])
    rows = [tr("  line {sequence:>2}  {type:<22} -> {label}", sequence=event["sequence"], type=event["type"],
               label=message_label(event)) for event in events]
    return "\n".join([summary, *rows])


# --------------------------------------------------------------------------- plots


def draw_growth(fig: Figure, growth: list[LineGrowth]) -> Figure:
    """Draw lines and bytes after each append, each append coloured by its event type."""
    ax_lines, ax_bytes = fig.subplots(1, 2)
    sequences = [point.sequence for point in growth]
    colors = [EVENT_COLORS[point.event_type] for point in growth]
    ax_lines.plot(sequences, [point.lines for point in growth], color=OKABE_ITO["grey"], zorder=1)
    ax_lines.scatter(sequences, [point.lines for point in growth], c=colors, s=60, edgecolors="black", zorder=2)
    ax_lines.set(title=tr("Lines in the file after each append"), xlabel=tr("append (sequence)"),
                 ylabel=tr("complete lines"))

    previous = [point.bytes - point.line_bytes for point in growth]
    ax_bytes.bar(sequences, previous, color="#DDDDDD", edgecolor="black", linewidth=0.5)
    ax_bytes.bar(sequences, [point.line_bytes for point in growth], bottom=previous, color=colors,
                 edgecolor="black", linewidth=0.5)
    ax_bytes.set(title=tr("Bytes in the file after each append"), xlabel=tr("append (sequence)"),
                 ylabel=tr("file size (bytes)"))

    ax_lines.set_ylim(0, max(sequences, default=1) + 1)
    for ax in (ax_lines, ax_bytes):
        ax.set_xlim(0.3, max(sequences, default=1) + 0.7)
        ax.set_xticks(sequences)
        ax.yaxis.get_major_locator().set_params(integer=True)
        if not growth:
            ax.text(0.5, 0.5, tr("no events yet"), transform=ax.transAxes, ha="center", color=OKABE_ITO["grey"])
    handles = [_patch(color, event_type) for event_type, color in EVENT_COLORS.items()]
    handles.append(_patch("#DDDDDD", tr("bytes already on disk")))
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize="small", title=tr("appended event type"))
    fig.subplots_adjust(bottom=0.33, wspace=0.3)
    return fig


def message_label(event: dict) -> str:
    """Where replay puts one event: the chat message it becomes, or the piece of state it feeds."""
    message = event_to_message(event)
    if message is None:
        return METADATA_DESTINATIONS.get(event["type"]) or tr("ignored by replay")
    if event["type"] == TYPE_MESSAGE:
        return tr("{role}: text", role=message["role"])
    block = message["content"][0]  # a tool_use or a tool_result block
    detail = block.get("name") or block.get("tool_use_id")
    return tr("{role}: {block} {detail}", role=message["role"], block=block["type"], detail=detail)


def draw_message_mapping(fig: Figure, events: list[dict]) -> Figure:
    """Draw every event in one of two columns: becomes a chat message, or metadata only."""
    ax = fig.subplots()
    for event in events:
        is_message = event_to_message(event) is not None
        column = 0 if is_message else 1
        ax.barh(event["sequence"], 0.95, left=column, height=0.8, color=EVENT_COLORS[event["type"]],
                edgecolor="black", linewidth=0.5)
        ax.text(column + 0.03, event["sequence"], message_label(event), va="center", fontsize=9,
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1})
    ax.set_xlim(0, 2)
    ax.set_ylim(len(events) + 0.7, 0.3)  # the first event at the top, as in the file
    ax.set_xticks([0.5, 1.5], [tr("messages[] (sent to the model)"), tr("metadata (state only, not sent)")])
    ax.set_yticks([event["sequence"] for event in events])
    ax.set(title=tr("What replay makes of each line"), ylabel=tr("line (sequence)"))
    handles = [_patch(color, event_type) for event_type, color in EVENT_COLORS.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", title=tr("event type"))
    fig.subplots_adjust(right=0.72)
    return fig


def _patch(color: str, label: str) -> Patch:
    return Patch(facecolor=color, edgecolor="black", linewidth=0.5, label=label)


# --------------------------------------------------------------------------- where an appended line lives

WRITE_PATH_STEPS = ("os.write\n(O_APPEND)", "fsync")  # calls: the same in every language


def write_path_boxes() -> tuple[tuple[str, str], ...]:
    """The three places an appended line passes through: (name, what it is), in the language in use."""
    return ((tr("agent process"), tr("messages[] in its memory")),
            (tr("kernel page cache"), tr("RAM owned by the kernel")),
            (tr("disk"), tr("the .jsonl file")))


def write_path_losses() -> tuple[str, ...]:
    """What each kind of crash loses at each of the three places."""
    return (tr("SIGKILL loses this"), tr("survives SIGKILL,\nlost on power loss"), tr("survives both"))


def write_path_boundary() -> str:
    """The label of the durable boundary in the write-path picture."""
    return tr("durable boundary:\nfsync returned, append returns\n(acknowledged)")


def write_path_title() -> str:
    """The title of the write-path picture."""
    return tr("Where an appended line lives")


def draw_write_path(fig: Figure) -> Figure:
    """Draw process -> kernel page cache -> disk, what each crash loses, and the durable boundary."""
    ax = fig.subplots()
    lefts, width = (0.01, 0.39, 0.77), 0.22
    colors = (OKABE_ITO["blue"], OKABE_ITO["sky"], OKABE_ITO["green"])
    for left, (name, detail), color, loss in zip(lefts, write_path_boxes(), colors, write_path_losses()):
        ax.add_patch(FancyBboxPatch((left, 0.45), width, 0.35, boxstyle="round,pad=0.01", facecolor=color,
                                    edgecolor="black", alpha=0.85))
        ax.text(left + width / 2, 0.68, name, ha="center", va="center", fontsize=11, fontweight="bold")
        ax.text(left + width / 2, 0.55, detail, ha="center", va="center", fontsize=9)
        ax.text(left + width / 2, 0.36, loss, ha="center", va="top", fontsize=9)
    for (start, end), step in zip(zip(lefts, lefts[1:]), WRITE_PATH_STEPS):
        ax.annotate("", xy=(end - 0.01, 0.62), xytext=(start + width + 0.01, 0.62),
                    arrowprops={"arrowstyle": "-|>", "lw": 2})
        ax.text((start + width + end) / 2, 0.66, step, ha="center", va="bottom", fontsize=8)
    boundary = lefts[2] - 0.03
    ax.vlines(boundary, 0.0, 0.95, colors=OKABE_ITO["vermillion"], linestyles="dashed", lw=2)
    ax.text(boundary + 0.01, 0.0, write_path_boundary(), ha="left", va="bottom", fontsize=8,
            color=OKABE_ITO["vermillion"])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title(write_path_title())
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.9)
    return fig


# --------------------------------------------------------------------------- the mistake: final answer only


def not_recorded() -> str:
    """What the final-answer-only transcript answers to every question but one."""
    return tr("not recorded")


def save_final_answer_only(events: list[dict], path) -> DurableTranscript:
    """Write, to a new transcript at path, only the session's last assistant message (the mistake)."""
    final = [event for event in events if event["type"] == TYPE_MESSAGE and event["role"] == "assistant"][-1]
    payload = {key: value for key, value in final.items() if key not in RESERVED_FIELDS}
    transcript = DurableTranscript.create(path, clock=ticking_clock())
    with transcript:
        transcript.append(payload)
    return transcript


def _user_report(events):
    texts = [event["content"] for event in events if event["type"] == TYPE_MESSAGE and event["role"] == "user"]
    return texts[0] if texts else not_recorded()


def _call_text(event) -> str:
    # A written file's new content is left out: the call's name and path say enough here.
    arguments = ", ".join(f"{key}={value!r}" for key, value in event.get("arguments", {}).items() if key != "content")
    return f"{event['name']}({arguments})"


def _tool_calls(events):
    calls = [_call_text(event) for event in events if event["type"] == TYPE_FUNCTION_CALL]
    return ", ".join(calls) if calls else not_recorded()


def _result_of(tool_name):
    def answer(events):
        call_ids = {event["callId"] for event in events
                    if event["type"] == TYPE_FUNCTION_CALL and event["name"] == tool_name}
        outputs = [event["output"] for event in events
                   if event["type"] == TYPE_FUNCTION_CALL_RESULT and event["callId"] in call_ids]
        return repr(outputs[0]) if outputs else not_recorded()
    return answer


def _messages_replayed(events):
    return str(sum(event_to_message(event) is not None for event in events))


def replay_questions(full: list[dict], final_only: list[dict]) -> list[tuple[str, str, str]]:
    """Each question a later reader asks, answered from the full transcript and from the final answer only."""
    questions = (
        (tr("What error did the user report?"), _user_report),
        (tr("Which tools ran, with which arguments?"), _tool_calls),
        (tr("What did read_file return (the bug)?"), _result_of("read_file")),
        (tr("What did run_tests report?"), _result_of("run_tests")),
        (tr("Chat messages a fresh process can replay"), _messages_replayed),
    )
    return [(question, answer(full), answer(final_only)) for question, answer in questions]


def replay_questions_table(full: list[dict], final_only: list[dict]) -> HTML:
    """replay_questions as an HTML table with its column headers."""
    return html_table([tr("question"), tr("full transcript"), tr("final answer only")],
                      replay_questions(full, final_only))


# --------------------------------------------------------------------------- the widget


class StepperPanel:
    """Next event / Reset buttons and a slider over an EventStepper; each redraws the views.

    Every control calls a plain method of the stepper, so a notebook cell or a test can do the same.
    """

    def __init__(self, stepper: EventStepper):
        self.stepper = stepper
        self.next_button = widgets.Button(description=tr("Next event"), button_style="primary",
                                          icon="plus").add_class(MAIN_CONTROL_CLASS)
        self.reset_button = widgets.Button(description=tr("Reset"), icon="undo")
        self.slider = widgets.IntSlider(value=stepper.appended, min=0, max=stepper.total,
                                        description=tr("events"), continuous_update=False)
        self.status = widgets.Label()
        self.listing = widgets.HTML().add_class(RESULT_CLASS)
        self.envelope = widgets.HTML()
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="640px"))
        self.next_button.on_click(self._on_next)
        self.reset_button.on_click(self._on_reset)
        self.slider.observe(self._on_slider, names="value")
        self.widget = widgets.VBox([
            widgets.HBox([self.next_button, self.reset_button, self.slider]),
            self.status, self.listing, self.envelope, self.plot,
        ])
        self.refresh()

    def _on_next(self, _button) -> None:
        self.stepper.next_event()
        self.refresh()

    def _on_reset(self, _button) -> None:
        self.stepper.reset()
        self.refresh()

    def _on_slider(self, change) -> None:
        if change["new"] != self.stepper.appended:  # refresh() moving the slider is not a request
            self.stepper.advance_to(change["new"])
            self.refresh()

    def status_text(self) -> str:
        """How many events are on disk, and whether the session is over."""
        stepper = self.stepper
        if stepper.finished:
            return tr("{count} of {total} events on disk: the session is over", count=stepper.appended,
                      total=stepper.total)
        return tr("{count} of {total} events on disk", count=stepper.appended, total=stepper.total)

    def file_exists_text(self) -> str:
        """Whether the panel's file exists, in parentheses."""
        return tr("({name} exists: {exists})", name=self.stepper.path.name, exists=self.stepper.path.exists())

    def last_line_text(self, limit: int = 100) -> str:
        """The start of the last line on disk (its first `limit` characters)."""
        lines = self.stepper.path.read_text(encoding="utf-8").splitlines() if self.stepper.path.exists() else []
        return tr("last line on disk: {line} ...", line=lines[-1][:limit] if lines else "")

    def refresh(self) -> None:
        """Redraw every view from the file on disk."""
        stepper = self.stepper
        self.slider.value = stepper.appended
        self.next_button.disabled = stepper.finished
        self.status.value = self.status_text()
        self.listing.value = file_listing_html(stepper.path)
        self.envelope.value = envelope_html(stepper.newest)
        self.plot.value = figure_png(draw_growth(Figure(figsize=(9, 4)), growth_of(stepper.path)))
