"""Re-layout after a section changed size: move only what must move, keep alignment, fix segments."""

from __future__ import annotations

from sass_lsp.elf.model import SHT_NULL, Cubin


def relayout(cubin: Cubin, old_sizes: list[int]) -> None:
    """Move only what must move: each section (and the header tables) keeps its old offset unless
    the previous one now ends past it; then segments follow their member sections."""
    h = cubin.header
    old = [(s.offset, size) for s, size in zip(cubin.sections, old_sizes, strict=True)]
    old_phoff, n_ph = h.phoff, len(cubin.segments)
    items: list[tuple[int, str, int]] = [
        (off, "sec", i) for i, (off, _) in enumerate(old) if cubin.sections[i].type != SHT_NULL
    ]
    items += [(h.shoff, "sh", -1), (h.phoff, "ph", -1)]
    items.sort(key=lambda t: (t[0], t[1] != "sec"))
    cursor = h.ehsize
    new_off: dict[int, int] = {}
    for old_off, kind, idx in items:
        if kind == "sec":
            sec = cubin.sections[idx]
            align = max(sec.addralign, 1)
            sec.offset = max(old_off, cursor + (-cursor) % align)
            new_off[idx] = sec.offset
            if sec.occupies_file:
                cursor = sec.offset + sec.size
        else:
            offset = max(old_off, cursor + (-cursor) % 8)
            if kind == "sh":
                h.shoff = offset
                cursor = offset + len(cubin.sections) * h.shentsize
            else:
                h.phoff = offset
                cursor = offset + n_ph * h.phentsize
    for seg in cubin.segments:
        if seg.offset == old_phoff and seg.filesz == n_ph * h.phentsize:
            seg.offset = h.phoff
            continue
        if seg.filesz == 0:
            hit = next(
                (
                    i
                    for i, (off, _) in enumerate(old)
                    if off == seg.offset
                    and not cubin.sections[i].occupies_file
                    and cubin.sections[i].type != SHT_NULL
                ),
                None,
            )
            if hit is not None:
                seg.offset = new_off[hit]
            continue
        members = [
            i
            for i, (off, size) in enumerate(old)
            if cubin.sections[i].occupies_file and seg.offset <= off and off + size <= seg.offset + seg.filesz
        ]
        if not members:
            continue
        extra = seg.memsz - seg.filesz
        first, last = min(members, key=lambda i: old[i][0]), max(members, key=lambda i: old[i][0] + old[i][1])
        seg.offset = new_off[first]
        seg.filesz = cubin.sections[last].offset + cubin.sections[last].size - seg.offset
        seg.memsz = seg.filesz + extra
    cubin.file_size = 0
    cubin.filler = []
