"""A chat API's rules, checked on replayed messages: every imported replay in the tests must pass them (issue 43).

`api_problems` says what Anthropic's Messages API would refuse in a messages[] list. `every_replay_checked`
makes an autouse fixture for a test module: every import it runs (importer._new_target is where each
import's target is made) has its replay checked at the end of the test, so no test can leave a
replay the API would refuse unchecked.
"""

from __future__ import annotations

import pytest

from s09_jsonl_transcript.importers import importer, replay_imported


def turns_of(messages: list) -> list[tuple[str, list]]:
    """messages[] with consecutive messages of one role merged, as the API combines them: [(role, blocks)]."""
    turns = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if turns and turns[-1][0] == message["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((message["role"], blocks))
    return turns


def api_problems(messages: list) -> list[str]:
    """What a chat API (Anthropic's Messages API) would refuse in messages; [] when it accepts them.

    Consecutive messages of one role are one turn (the API combines them; the lesson's replay writes one
    block a message). Then: every tool_use is answered by a tool_result in the very next turn (only the
    last turn may leave calls open: the runtime answers them next), every tool_result answers a tool_use
    of the turn just before, each id is used once, tool_results come before any text in their turn, and
    no text is empty or only white space.
    """
    turns = turns_of(messages)
    problems, used_ids, answered_ids = [], set(), set()
    for index, (role, blocks) in enumerate(turns):
        for block in blocks:
            if block["type"] == "text" and not str(block["text"]).strip():
                problems.append(f"turn {index}: a text block holds only white space")
        calls = [block["id"] for block in blocks if block["type"] == "tool_use"]
        for call in calls:
            if call in used_ids:
                problems.append(f"turn {index}: tool_use id {call} used twice")
            used_ids.add(call)
        answers = [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"]
        asked = [block["id"] for block in turns[index - 1][1] if block["type"] == "tool_use"] if index else []
        for answer in answers:
            if answer in answered_ids:
                problems.append(f"turn {index}: tool_use {answer} answered twice")
            elif answer not in asked:
                problems.append(f"turn {index}: tool_result {answer} answers no tool_use of the turn before")
            answered_ids.add(answer)
        kinds = [block["type"] for block in blocks]
        if "tool_result" in kinds and "text" in kinds[:kinds.index("tool_result")]:
            problems.append(f"turn {index}: text before a tool_result")
        if calls and index + 1 < len(turns):
            following = {block.get("tool_use_id") for block in turns[index + 1][1] if block["type"] == "tool_result"}
            problems.extend(f"turn {index}: tool_use {call} not answered in the next turn"
                            for call in calls if call not in following)
    return problems


def every_replay_checked():
    """An autouse fixture: after each test, the replay of every transcript an import made passes api_problems."""

    @pytest.fixture(autouse=True)
    def replays_pass_the_api(monkeypatch):
        made = []
        real = importer._new_target

        def recording(root, planned, clock):
            transcript = real(root, planned, clock)
            made.append(transcript.path)
            return transcript

        monkeypatch.setattr(importer, "_new_target", recording)
        yield made
        for path in made:
            if path.exists():  # an import that failed removed its target
                assert api_problems(replay_imported(path)) == [], path

    return replays_pass_the_api
