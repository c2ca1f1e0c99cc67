"""Debian package descriptions -> archive section: a public corpus beside 20NG and the bug reports.

Why this corpus: like bug triage, it is software text routed to one of many
hand-assigned categories, and every Debian (or Ubuntu) machine carries a copy,
so anyone can rebuild it without a download from us.

Data: the ``Packages`` index of a Debian release (``Package``, ``Source``,
``Section``, ``Description-md5``) and its ``Translation-en`` file (the long
descriptions, keyed by ``Description-md5``), as apt stores them.  On a Debian
machine::

    apt-get update -o Acquire::Languages=en
    mkdir -p ~/data/debian && cd ~/data/debian
    /usr/lib/apt/apt-helper cat-file /var/lib/apt/lists/*_dists_bookworm_main_binary-amd64_Packages.lz4 > Packages
    /usr/lib/apt/apt-helper cat-file /var/lib/apt/lists/*_dists_bookworm_main_i18n_Translation-en.lz4 > Translation-en

(plain, ``.gz`` or ``.xz`` files are read).  The figures in ``RESULTS.md`` use
Debian 12 "bookworm" main, amd64, index dated 2026-07-11: 63,440 binary
packages from 34,169 source packages.

Documents: one per *source* package (binary packages of one source share
their descriptions almost word for word, so keeping several would leak the
test set into training): the alphabetically first binary package whose section
is one of :data:`SECTIONS`, its short description line followed by the long
one.  Label: that section.  :data:`SECTIONS` are the sections that say what a
program *does* and hold at least 100 source packages; left out are the
sections that say what a package *is* (``libs``, ``libdevel``, ``doc``,
language ecosystems such as ``python`` or ``perl``, ``debug``, ...) and the
catch-all ``misc``.  Split: by source name, a stable CRC-32 hash, 30% test.
"""

from __future__ import annotations

import gzip
import lzma
import zlib
from pathlib import Path

import numpy as np

SECTIONS = ("admin", "database", "devel", "editors", "electronics", "games", "gnome", "graphics",
            "hamradio", "interpreters", "kde", "mail", "math", "net", "otherosfs", "science",
            "sound", "text", "utils", "video", "web", "x11", "fonts")
TEST_SHARE = 0.3


def _open(folder: Path, name: str):
    for suffix, opener in (("", open), (".gz", gzip.open), (".xz", lzma.open)):
        path = folder / (name + suffix)
        if path.is_file():
            return opener(path, "rt", encoding="utf-8", errors="replace")
    raise FileNotFoundError(f"no {name}, {name}.gz or {name}.xz in {folder} "
                            "(see experiments/debian.py for how to get them)")


def _stanzas(handle):
    """Deb822 stanzas as dicts; continuation lines are joined with newlines."""
    cur, key = {}, None
    for line in handle:
        if not line.strip():
            if cur:
                yield cur
            cur, key = {}, None
        elif line[0] in " \t" and key is not None:
            cur[key] += "\n" + line[1:].rstrip("\n")
        else:
            key, _, value = line.partition(":")
            cur[key] = value.strip()
    if cur:
        yield cur


def _text(description: str) -> str:
    """Short + long description as plain text (the ``.`` paragraph separators dropped)."""
    lines = [ln.strip() for ln in description.split("\n")]
    return " ".join(ln for ln in lines if ln and ln != ".")


def load_documents(folder):
    """``(sources, texts, sections)`` of every kept source package, sorted by source name."""
    folder = Path(folder)
    with _open(folder, "Translation-en") as fh:
        descriptions = {s["Description-md5"]: s.get("Description-en", "")
                        for s in _stanzas(fh) if "Description-md5" in s}
    first = {}
    kept = set(SECTIONS)
    with _open(folder, "Packages") as fh:
        for s in _stanzas(fh):
            section = s.get("Section", "").split("/")[-1]
            md5 = s.get("Description-md5")
            if section not in kept or md5 not in descriptions:
                continue
            source = s.get("Source", s["Package"]).split()[0]
            if source not in first or s["Package"] < first[source][0]:
                first[source] = (s["Package"], section, md5)
    sources = sorted(first)
    texts = [_text(descriptions[first[src][2]]) for src in sources]
    sections = np.array([first[src][1] for src in sources])
    return sources, texts, sections


def is_test(source: str) -> bool:
    """The stable split: CRC-32 of the source name, 30% test."""
    return zlib.crc32(source.encode()) % 1000 < TEST_SHARE * 1000


def load_split(folder, quick=False):
    """``(train_texts, y_train, test_texts, y_test, None, None)`` as the accuracy study reads."""
    sources, texts, sections = load_documents(folder)
    test = np.array([is_test(s) for s in sources])
    idx_tr, idx_te = np.flatnonzero(~test), np.flatnonzero(test)
    if quick:
        idx_tr, idx_te = idx_tr[::8], idx_te[::8]
    return ([texts[i] for i in idx_tr], sections[idx_tr], [texts[i] for i in idx_te],
            sections[idx_te], None, None)
