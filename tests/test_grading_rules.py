"""Each rule an exercise's text states, the check that tests it, and a plausible wrong answer that
breaks that rule and so loses that check (issue 14, part 4).

The table is the review of every exercise's checks against its own text. These tests keep it true
without a kernel: the check exists, the wrong answer exists and declares that it loses the check.
That each wrong answer really loses exactly what it declares is tested in test_grader_seeds.py
(every one, run in plain Python) and test_grading_runs.py (a sample, through the grader).
"""

import pytest
from test_grading_support import EXERCISES, SOURCES, wrong_answers

WRONG = {wrong.name: wrong for wrong in wrong_answers()}

RULES = [
    # exercise 1: last-turn replay
    ("ex01", "the last turn is the last user message and every event after it", "ex01-turn-of-four",
     "excludes_user_message"),
    ("ex01", "a tool result is replayed with role user, but it is not a user message", "ex01-turn-of-four",
     "counts_a_tool_result_as_a_user_message"),
    ("ex01", "stop taking events from the iterator as soon as the user message is reached", "ex01-stops-at-user",
     "reads_everything"),
    ("ex01", "the newest event being a user message makes a turn of that message alone", "ex01-user-alone",
     "excludes_user_message"),
    ("ex01", "with no user message at all, the whole transcript is one turn", "ex01-no-turn-edges",
     "no_user_message_means_no_turn"),
    ("ex01", "with no events, the answer is 0", "ex01-no-turn-edges", "fails_on_an_empty_transcript"),
    ("ex01", "replay_last_turn gives the chat messages of the last turn, oldest first", "ex01-second-turn",
     "excludes_user_message"),
    ("ex01", "built on replay(max_items=n): a turn longer than the default window comes back whole", "ex01-long-turn",
     "slices_replayed_messages"),
    # exercise 2: the corruption boundary
    ("ex02", "a torn write is the start of one more record, with no newline after it", "ex02-partial-tail-made",
     "tail_ends_with_a_newline"),
    ("ex02", "make_partial_tail keeps every record already in the file exactly as it was", "ex02-partial-tail-made",
     "tail_replaces_the_last_newline"),
    ("ex02", "make_bad_line replaces complete line line_number, counted from 1; the others stay", "ex02-bad-line-made",
     "bad_line_counts_from_zero"),
    ("ex02", "make_bad_line keeps the file's number of lines", "ex02-bad-line-made",
     "bad_line_drops_the_final_newline"),
    ("ex02", "(PARTIAL_TAIL, None) when the only damage is a torn last write", "ex02-clean-and-torn",
     "cannot_tell_a_torn_tail"),
    ("ex02", "(CORRUPT, line_number) names the line the reader blames, 1 for the first", "ex02-bad-middle-line",
     "zero_based_line"),
    ("ex02", "CORRUPT is whatever makes replay raise, not only lines that are not JSON", "ex02-deleted-line",
     "checks_json_only"),
    ("ex02", "(CLEAN, None) when the reader accepts every line, a last record without newline too",
     "ex02-last-line-endings",
     "no_final_newline_is_a_torn_tail"),
    ("ex02", "some reading methods read only the end of the file", "ex02-far-corruption", "reads_only_the_tail"),
    # exercise 3: sharding
    ("ex03", "when the current shard holds max_lines lines, the next event goes to <session>_2.jsonl, ...",
     "ex03-shard-files", "rolls_over_late"),
    ("ex03", "the file, not the index, says how many lines a shard holds (the index may have missed one)",
     "ex03-full-by-file", "rolls_over_by_the_index_count"),
    ("ex03", "the index holds each shard's session, number, file, first and last sequence and line count",
     "ex03-index-rows", "rolls_over_late"),
    ("ex03", "append returns the record with the session's sequence, session_id and event_id", "ex03-session-numbers",
     "append_returns_shard_ids"),
    ("ex03", "read_events numbers the session's events 1, 2, 3, ... without a gap", "ex03-session-numbers",
     "shard_numbers_leak"),
    ("ex03", "a new ShardedTranscript on the same folder carries on where the last one stopped", "ex03-restart",
     "rolls_over_late"),
    ("ex03", "max_lines defaults to 10,000; max_lines=1 gives one shard per event", "ex03-default-limit",
     "rolls_over_late"),
    ("ex03", "a max_lines that is not a whole number >= 1 is refused with ValueError", "ex03-refused-limit",
     "accepts_a_fractional_limit"),
    ("ex03", "several sessions share one folder and one index", "ex03-paced-sessions", "index_ignores_the_session"),
    ("ex03", "a shard file that is missing is corruption", "ex03-missing-shard", "trusts_missing_files"),
    ("ex03", "a shard holding fewer records than its row says is corruption", "ex03-lost-records",
     "checks_only_that_files_exist"),
    ("ex03", "a shard that does not start right after the one before it is corruption", "ex03-lost-records",
     "trusts_the_index_numbers"),
    ("ex03", "the newest shard may hold more records than its row says: keep them", "ex03-unindexed-record",
     "requires_exact_counts"),
    # exercise 4: the tail reader
    ("ex04", "the last count records, oldest first", "ex04-last-three", "newest_first"),
    ("ex04", "count == 0 gives []", "ex04-counts-at-edges", "count_zero_returns_everything"),
    ("ex04", "read block_size bytes at a time from the end and stop as soon as there are enough lines",
     "ex04-reads-little", "reads_whole_file"),
    ("ex04", "an unterminated last line that does not parse is a torn write: skip it", "ex04-partial-tail",
     "parses_a_torn_tail"),
    ("ex04", "a line can be longer than a block", "ex04-block-boundaries", "splits_each_block"),
    ("ex04", "a block boundary can fall inside a multi-byte UTF-8 character", "ex04-block-boundaries",
     "decodes_each_block"),
    ("ex04", "an unterminated last line that parses is a record that lost its newline: keep it",
     "ex04-last-line-endings",
     "drops_a_record_without_newline"),
    ("ex04", "a negative count raises ValueError", "ex04-negative-count", "splits_each_block"),
    # exercise 5: the hash chain
    ("ex05", "prev is the line_hash of the last complete line's raw bytes (GENESIS for the first)", "ex05-prev-links",
     "hashes_reencoded_json"),
    ("ex05", "each line is compact JSON", "ex05-compact-json", "pretty_printed_lines"),
    ("ex05", "an event that already has prev is refused with ValueError, and nothing is written",
     "ex05-own-prev-refused",
     "overwrites_a_given_prev"),
    ("ex05", "verify gives None when the chain holds (a chain with no file yet too)", "ex05-intact-chain",
     "missing_file_raises"),
    ("ex05", "the first break is the first line whose prev does not match: after line 3 is edited, line 4",
     "ex05-middle-damage", "blames_the_edited_line"),
    ("ex05", "with head, the chain must end at head, else it breaks at the last line", "ex05-head-protects-end",
     "ignores_the_head"),
    ("ex05", "with head, an empty file breaks at line 1", "ex05-empty-with-head", "empty_file_with_a_head"),
    ("ex05", "only complete lines count: a torn fragment at the end is not a line", "ex05-partial-tail",
     "counts_a_torn_write_as_a_line"),
    ("ex05", "verify reports what it finds and never raises on a damaged file", "ex05-not-records",
     "decodes_before_parsing"),
    # exercise 6: your own transcript (the capstone, crash-graded)
    ("ex06", "append writes its line, then fsyncs it: the record is on the disk when append returns",
     "ex06-nothing-lost", "no_fsync"),
    ("ex06", "the fsync comes after the write it makes durable", "ex06-nothing-lost", "fsync_before_write"),
    ("ex06", "writing a file's first record, append fsyncs its folder too", "ex06-nothing-lost", "no_folder_fsync"),
    ("ex06", "one os.write per event, holding its whole line", "ex06-one-write", "two_writes"),
    ("ex06", "no other writer's line can land inside a record", "ex06-records-whole", "two_writes"),
    ("ex06", "any damage but a partial tail raises TranscriptCorruptionError", "ex06-damage-fails-closed",
     "forgives_mid_file_damage"),
    ("ex06", "a partial tail is forgiven", "ex06-partial-tail-cut", "rejects_partial_tail"),
    ("ex06", "recover cuts the partial tail from the file, durably", "ex06-partial-tail-cut", "keeps_the_partial_tail"),
    ("ex06", "the cut leaves exactly the committed records: it is made at the tail's first byte",
     "ex06-partial-tail-cut", "cuts_one_byte_short"),
]


@pytest.mark.parametrize("exercise, rule, check, wrong", RULES, ids=[f"{rule[0]}-{rule[3]}" for rule in RULES])
def test_a_rule_has_a_check_that_its_wrong_answer_loses(exercise, rule, check, wrong):
    assert check in {entry.id for entry in SOURCES[exercise].checks}
    name = f"{exercise}_{wrong}"
    assert name in WRONG, f"no wrong answer {name}"
    assert check in WRONG[name].loses, f"{name} does not lose {check}"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_every_check_is_lost_by_some_wrong_answer(exercise):
    lost = set().union(*(wrong.loses for wrong in WRONG.values() if wrong.exercise == exercise))
    checks = {check.id for check in SOURCES[exercise].checks}
    assert checks <= lost, f"checks no wrong answer fails: {sorted(checks - lost)}"


def test_every_wrong_answer_stands_for_a_rule():
    assert set(WRONG) == {f"{exercise}_{wrong}" for exercise, _, _, wrong in RULES}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_answer_is_a_small_edit_of_the_reference(name):
    """A few lines changed, each edit found exactly once in the reference (or the file cannot be applied)."""
    wrong = WRONG[name]
    assert wrong.edits and wrong.loses and wrong.words
    changed = sum(len(old) + len(new) for _, old, new in wrong.edits)
    assert changed <= 30, f"{name} rewrites {changed} lines: write the edit, not a copy"
    assert wrong.answers  # every edit applies
