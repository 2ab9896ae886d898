"""The kit's text machinery: English and Chinese.

    i18n.py        the language in use, each module's Chinese text (locale/zh/<module>.json), and the
                   Chinese of the library's own messages (locale/zh/library.json)
    bilingual.py   the Chinese notebooks built from the English ones and notebooks/zh/text/*.md
    saving.py      how every notebook is saved (deterministic; machine-dependent cells keep their verdicts)
    locale/        the Chinese text, one JSON file per module
"""
