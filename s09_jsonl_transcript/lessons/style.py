"""One colour-blind-safe palette (Okabe and Ito) for every figure in the kit, and the verdicts' names."""

from ..code import EVENT_TYPES
from ..text import i18n

tr = i18n.translator("style")

OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}

# One colour per event type, in the order of the lesson's table (code.EVENT_TYPES): a type added
# there takes the next colour here.
EVENT_COLORS = dict(zip(EVENT_TYPES, (OKABE_ITO[name] for name in (
    "blue", "grey", "orange", "yellow", "green", "purple", "sky", "vermillion", "black"))))

VERDICT_COLORS = {
    "clean": OKABE_ITO["green"],
    "partial tail ignored": OKABE_ITO["sky"],
    "corrupt": OKABE_ITO["orange"],
    "accepted with different content": OKABE_ITO["vermillion"],
}


def verdict_label(kind: str) -> str:
    """A reader's verdict (damage.CLEAN, PARTIAL_TAIL, CORRUPT, SILENT) in the language in use, for display."""
    labels = {
        "clean": tr("clean"),
        "partial tail ignored": tr("partial tail ignored"),
        "corrupt": tr("corrupt"),
        "accepted with different content": tr("accepted with different content"),
    }
    return labels.get(kind, kind)
