# ex05: decodes each line as UTF-8 before the try that catches bad JSON, so a line that is not
# UTF-8 makes verify raise instead of reporting it.
# loses: ex05.6
# %% ex05-verify
def verify(path, head=None):
    """None when the chain holds (and ends at head, if given); else the first line where it breaks."""
    expected_prev, number = GENESIS, 0
    for number, raw in enumerate(complete_lines(path), start=1):
        text = raw.decode("utf-8")
        try:
            record = json.loads(text)
        except json.JSONDecodeError:
            return number
        if not isinstance(record, dict) or record.get("prev") != expected_prev:
            return number
        expected_prev = line_hash(raw)
    if head is not None and expected_prev != head:
        return max(number, 1)
    return None
