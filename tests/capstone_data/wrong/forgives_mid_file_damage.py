# Wrong answer "forgiving mid-file damage": a damaged line is skipped, as real agent CLIs do on resume.
# Loses: closed.
# ruff: noqa: F821
def _committed(lines, path):
    records = []
    for line in lines:
        record = parse_record(line, path, len(records) + 1)
        if record is not None:
            records.append(record)
    return records
