"""The widget actions of the 15-minute live route (docs/teaching.md): its five stops in notebooks 1 to 5, and
its extras in notebooks 6 and 8 (beyond the lesson: notebooks/<language>/beyond-s09/).

Each step is what the instructor does at one stop: the settings, then one press (or one move of a
slider or checkbox), written as the kernel would run it after Run All. `shows` is a piece of text the
result must then hold, in each language (the code of a step is the same in both: the notebooks share
their code). tests/test_live_route.py runs the whole sequence twice in each notebook's own kernel, in
notebooks/en and in notebooks/zh; the README's route describes the same steps in words.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    heading: str  # the notebook section the stop is in
    settings: str  # what the instructor sets, in words
    code: str  # the same, as code run in the notebook's kernel
    result: str  # an expression for the text the step changes
    shows: str | dict  # a piece of that text after the step: one for both languages, or {"en": ..., "zh": ...}

    def shown(self, language: str) -> str:
        """The piece of text the result must hold in this language."""
        return self.shows if isinstance(self.shows, str) else self.shows[language]


FLIPS = "4. Every flipped bit, with the hash chain off and on"  # notebook 6's section of the byte slider
ROUTE = {
    "01_events_on_disk.ipynb": [
        # Run All leaves the panel at 7 events (its drive cell ends on the slider): Reset first, then step
        Step("Your turn: step through it yourself", "Reset", "panel.reset_button.click()", "panel.status.value",
             {"en": "0 of 12 events on disk", "zh": "磁盘上有 0 个事件（共 12 个"}),
        *[Step("Your turn: step through it yourself", "Next event", "panel.next_button.click()",
               "panel.status.value", {"en": " of 12 events on disk (session-2.jsonl exists: True)",
                                      "zh": "个事件（共 12 个；session-2.jsonl 存在：True）"}) for _ in range(3)],
        Step("Your turn: step through it yourself", "events slider to 12", "panel.slider.value = 12",
             "panel.status.value", {"en": "12 of 12 events on disk", "zh": "磁盘上有 12 个事件（共 12 个"}),
        Step("Your turn: step through it yourself", "events slider back to 4", "panel.slider.value = 4",
             "panel.status.value", {"en": "4 of 12 events on disk", "zh": "磁盘上有 4 个事件（共 12 个"}),
    ],
    "02_crash_injection.ipynb": [
        Step("Your turn: crash it yourself", "kill after 8, kill mid-write ticked, Crash now",
             "crash_panel.slider.value = 8\ncrash_panel.tear.value = True\ncrash_panel.crash_button.click()",
             "crash_panel.result_text",
             {"en": "8 acknowledged; on disk 8 complete lines and a partial tail of 109 bytes; 8 recovered",
              "zh": "已确认 8 个；磁盘上 8 个完整行，外加 109 字节的 partial tail；恢复出 8 个"}),
        Step("Your turn: crash it yourself", "kill mid-write unticked, Crash now",
             "crash_panel.tear.value = False\ncrash_panel.crash_button.click()", "crash_panel.result_text",
             {"en": "on disk 8 complete lines and no partial tail",
              "zh": "磁盘上 8 个完整行，没有 partial tail"}),
        Step("From one crash to evidence: 30 kills at random moments", "Run 30 kills",
             "campaign.run_button.click()", "campaign.result_text",
             {"en": "every acknowledged event survived every kill: True",
              "zh": "每个已确认的事件都挺过了每一次杀进程：True"}),
    ],
    "03_partial_tail_vs_corruption.ipynb": [
        Step("Try it: pick a damage and a position", "Damage flip a byte, Position 191, Apply damage",
             "lab.picker.value = 'flip'\nlab.position.value = 191\nlab.apply_button.click()", "lab.result_text",
             {"en": "accepted with different content (5 events)", "zh": "内容被改却照样接受（5 个事件）"}),
        Step("Try it: pick a damage and a position", "Position 1104, Apply damage",
             "lab.position.value = 1104\nlab.apply_button.click()", "lab.result_text",
             {"en": "partial tail ignored (4 events)", "zh": "已忽略 partial tail（4 个事件）"}),
        Step("Try it: pick a damage and a position", "truncate at byte 646, Apply damage",
             "lab.picker.value = 'truncate'\nlab.position.value = 646\nlab.apply_button.click()",
             "lab.result_text", {"en": "clean (3 events)", "zh": "完好（3 个事件）"}),
        Step("Try it: pick a damage and a position", "delete a line 5, Apply damage",
             "lab.picker.value = 'delete_line'\nlab.position.value = 5\nlab.apply_button.click()",
             "lab.result_text", {"en": "clean (4 events)", "zh": "完好（4 个事件）"}),
    ],
    "04_replay_window.ipynb": [
        Step("Try it: move the window", "max_items 8, Replay",
             "explorer.max_items.value = 8\nexplorer.replay_button.click()", "explorer.result.value",
             {"en": "<b>replay(max_items=8)</b> sends 6 messages; dropped: sequence 5",
              "zh": "<b>replay(max_items=8)</b> 发出 6 条消息；丢弃了 sequence 5"}),
        Step("Try it: move the window", "max_items 4, Replay",
             "explorer.max_items.value = 4\nexplorer.replay_button.click()", "explorer.result.value",
             {"en": "<b>replay(max_items=4)</b> sends 3 messages; dropped: sequence 9",
              "zh": "<b>replay(max_items=4)</b> 发出 3 条消息；丢弃了 sequence 9"}),
        Step("Try it: move the window", "max_items 6, Replay",
             "explorer.max_items.value = 6\nexplorer.replay_button.click()", "explorer.result.value",
             {"en": "<b>replay(max_items=6)</b> sends 5 messages; nothing dropped",
              "zh": "<b>replay(max_items=6)</b> 发出 5 条消息；没有丢弃任何事件"}),
    ],
    "05_memory_gate.ipynb": [
        Step("Try it: submit a selection", "Event 3: reasoning, any summary and reason, Submit",
             "form.event_id.value = event_id_for(session, 3)\n"
             "form.summary.value = 'the model suspected subtraction'\n"
             "form.reason.value = 'to see what the gate says'\n"
             "form.submit_button.click()", "form.result.value",
             {"en": "event type &#x27;reasoning&#x27; is not eligible for memory selection",
              "zh": "事件类型 &#x27;reasoning&#x27; 不能被选作 Memory 候选"}),
        Step("Try it: submit a selection", "Event 7: file-history-snapshot, Reason emptied, Submit",
             "form.event_id.value = event_id_for(session, 7)\n"
             "form.summary.value = 'calc.py before the fix'\n"
             "form.reason.value = ''\n"
             "form.submit_button.click()", "form.result.value",
             {"en": "reason is required (a non-blank string)", "zh": "必须给出 reason（不能是空白的字符串）"}),
        Step("Try it: submit a selection", "Reason 'to undo the edit if needed', Submit",
             "form.reason.value = 'to undo the edit if needed'\n"
             "form.submit_button.click()", "form.result.value",
             {"en": "<b>candidate</b> (no event body inside)", "zh": "<b>候选</b>（不含事件正文）"}),
    ],
    "beyond-s09/06_crash_lab.ipynb": [
        Step("1. Kill writers at random moments", "Kill 12 writers",
             "kill_panel.button.click()", "kill_panel.result.value",
             {"en": "every acknowledged event survived every kill", "zh": "每个已确认的事件都挺过了每一次杀进程"}),
        Step(FLIPS, "hash chain off, byte 200",
             "flip_panel.chain.value = False\nflip_panel.offset.value = 200", "flip_panel.result.value",
             {"en": "accepted with different content (12 events)", "zh": "内容被改却照样接受（12 个事件）"}),
        Step(FLIPS, "hash chain on", "flip_panel.chain.value = True", "flip_panel.result.value",
             {"en": "chain mismatch", "zh": "哈希链对不上"}),
        Step(FLIPS, "byte slider all the way right (the final newline)",
             "flip_panel.offset.value = flip_panel.offset.max", "flip_panel.result.value",
             {"en": "partial tail ignored (11 events)", "zh": "已忽略 partial tail（11 个事件）"}),
    ],
    "beyond-s09/08_read_model_and_turns.ipynb": [
        Step("Crash lab", "crash after 6, Crash and recover", "lab.point.value = 6\nlab.button.click()",
             "lab.summary", {"en": "killed after 6 events; a fresh process reads state running and must: write_file "
                                   "(call_2) may have run: repeat it only with an idempotency key",
                             "zh": "写入 6 个事件后被杀；新进程读出的状态是 running，必须："
                                   "write_file (call_2) 可能已经执行过"}),
        Step("Crash lab", "crash after 19, Crash and recover", "lab.point.value = 19\nlab.button.click()",
             "lab.summary", {"en": "reads state paused and must: wait for a resume_command",
                             "zh": "新进程读出的状态是 paused，必须：等待 resume_command"}),
        Step("Crash lab", "crash after 35, Crash and recover", "lab.point.value = 35\nlab.button.click()",
             "lab.summary", {"en": "reads state expired and must: start a new session (expired is terminal)",
                             "zh": "新进程读出的状态是 expired，必须：新建会话（expired 是终态）"}),
    ],
}


def step_cell(step: Step, language: str = "en") -> str:
    """The step as one code cell: it prints 'ok' only if the result changed and shows what it should."""
    return (f"_before = {step.result}\n{step.code}\n_after = {step.result}\n"
            f"assert _after != _before, 'the step did not change the result: ' + _after[:200]\n"
            f"assert {step.shown(language)!r} in _after, _after[:500]\n"
            "print('ok')")
