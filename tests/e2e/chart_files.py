"""What the end-to-end tests of `dptrain plot` read back: a PNG's size, and the sections of the text
file gnuplot writes for --table (a line "# TITLE", then the rows gnuplot printed)."""

import struct


def png_size(path):
    """(width, height) of a PNG; fails when the file is not one."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR", f"{path}: no IHDR chunk first"
    return struct.unpack(">II", data[16:24])


def table_sections(path):
    """TITLE -> the section's non-empty lines, stripped; gnuplot's own comments ('# Curve ...', '# x ...') skipped."""
    sections, title = {}, None
    for line in open(path):
        line = line.strip()
        if line.startswith("# ") and not line.startswith("# Curve") and not line.startswith("# x "):
            title = line[2:]
            sections[title] = []
        elif line and not line.startswith("#") and title is not None:
            sections[title].append(line)
    return sections
