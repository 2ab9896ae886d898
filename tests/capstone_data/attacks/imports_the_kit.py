# Attack: the answer imports the lesson instead of writing the mechanism. The driver's sandbox has
# no kit in view (the package's folder is an empty one there, and Python starts without site-packages).
from s09_jsonl_transcript.code import JSONLTranscript  # noqa: F401
