# Attack: each append also writes the events it expects next (guessed from the current one), so that
# a later append needs no write of its own when its guess was right; when it was wrong, append cuts
# the guesses off and writes the event. The events carry tokens drawn from the grading's seed: the
# guesses never match, and records of events never sent sit in the file.
# ruff: noqa: F821
_GUESSES = 5
_sent = 0  # events this process has appended (a fresh process counts from the file)


def append(path, event):
    global _sent
    data = _read_all(path)
    lines = data.split(b"\n")[:-1]
    sequence = _sent + 1 if _sent else _next_sequence(data)
    record = {**envelope(path, sequence), **event}
    if len(lines) >= sequence and parse_record(lines[sequence - 1], path, sequence) == record:
        _sent = sequence
        return record  # the guess was right: nothing to write
    new = not os.path.exists(path)
    kept = b"".join(line + b"\n" for line in lines[: sequence - 1])
    if len(kept) != len(data):
        _cut_tail(path, len(kept))
    guesses = [{**envelope(path, sequence + ahead), **event} for ahead in range(1, _GUESSES + 1)]
    fd = _open_for_append(path)
    try:
        _write_durably(fd, b"".join(encode_line(each) for each in [record, *guesses]))
    finally:
        os.close(fd)
    if new:
        _fsync_folder(path)
    _sent = sequence
    return record
