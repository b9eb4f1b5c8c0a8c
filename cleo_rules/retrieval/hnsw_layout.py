"""The layout of an hnswlib 0.8.0 index file, checked in full before hnswlib reads it.

An index file is normally vouched for by its sidecar (size and SHA-256).
When the sidecar describes another save of the same index (a save cut
short in the old layout, or a file damaged later), the file may still be
whole: :func:`read_whole` then checks every field hnswlib would trust, so
that handing the file to hnswlib cannot read or write out of bounds:

* the header: offsets and the bytes per element agree with the dimension
  and ``M`` the sidecar records, the level multiplier is hnswlib's own, the
  entry point is an element on the top level;
* level 0 of every element: at most ``2 * M`` neighbours, each an element
  of the file; labels are unique;
* every upper level list: a whole number of lists, at most ``M``
  neighbours each, each an element that itself reaches that level;
* the file ends exactly where its structure does.

It returns the labels and the deletion marks, and shows the caller each
block of stored vectors as it goes (``visit``), so the caller can compare
them with SQLite's. The file is read once, in blocks of elements, into one
buffer reused for every block. Pure numpy: nothing here calls hnswlib.
"""

from __future__ import annotations

import errno
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

HEADER = struct.Struct("<QQQQQQiIQQQdQ")
"""hnswlib 0.8.0's file header: offsets, capacity, element count, bytes per element, ..., M, mult, ef_construction."""

_DELETE_MARK = 0x01
_MAX_LEVEL = 64
_MAX_EF_CONSTRUCTION = 1 << 16


def check_hnsw_file(fd: int, *, slots: int, dim: int) -> int:
    """Check that the hnswlib file open on ``fd`` is whole; return its size.

    hnswlib writes its file through a C++ stream and never reports a failed
    write: on a full disk it leaves a short file behind. This walks the
    file's own structure (header, ``slots`` elements of the expected size,
    then one link list per element) and raises ``OSError`` (ENOSPC) unless
    the file ends exactly where its structure does.
    """
    size = os.fstat(fd).st_size
    head = os.pread(fd, HEADER.size, 0)
    if len(head) < HEADER.size:
        raise OSError(errno.ENOSPC, f"index file was written short ({size} bytes, not even a header): is the disk full?")
    _, _, count, per_element, *_ = HEADER.unpack(head)
    if count != slots:
        raise OSError(errno.EIO, f"index file holds {count} elements, not {slots}")
    if per_element < dim * 4:
        raise OSError(errno.EIO, f"index file has {per_element} bytes per element, too few for {dim} dimensions")
    offset = HEADER.size + count * per_element
    if size < offset + 4 * count:
        raise OSError(errno.ENOSPC, f"index file was written short ({size} bytes of at least {offset + 4 * count}): "
                                    "is the disk full?")
    tail = os.pread(fd, size - offset, offset)
    at = 0
    for _ in range(count):
        if at + 4 > len(tail):
            raise OSError(errno.ENOSPC, f"index file was written short ({size} bytes): is the disk full?")
        (links,) = struct.unpack_from("<I", tail, at)
        at += 4 + links
    if at != len(tail):
        raise OSError(errno.ENOSPC if at > len(tail) else errno.EIO,
                      f"index file is {size} bytes, its structure says {offset + at}: is the disk full?")
    return size


class LayoutError(Exception):
    """The file is not a whole, sound hnswlib index of the expected shape; the message says why."""


@dataclass(frozen=True)
class Layout:
    """What a sound index file holds: one row per element, in file order."""

    labels: np.ndarray  # uint64
    deleted: np.ndarray  # bool


#: ``visit(labels, vectors)``: one block of elements, their labels and stored vectors (normalised for cosine),
#: views into a buffer that the next block overwrites.
Visit = Callable[[np.ndarray, np.ndarray], None]

_BLOCK_ELEMENTS = 8192


def _pread_into(fd: int, view: memoryview, offset: int) -> None:
    at = 0
    while at < len(view):
        got = os.preadv(fd, [view[at:]], offset + at)
        if not got:
            raise LayoutError("the file ended while it was read (it shrank meanwhile)")
        at += got


def _pread(fd: int, size: int, offset: int) -> bytearray:
    data = bytearray(size)
    with memoryview(data) as view:
        _pread_into(fd, view, offset)
    return data


def _check_header(fields: tuple, *, dim: int, M: int) -> tuple[int, int, int, int]:
    (offset0, _, count, per_element, label_offset, offset_data, max_level, entry, max_m, max_m0, m, mult,
     ef_construction) = fields
    links0 = max_m0 * 4 + 4
    if offset0 != 0 or m != M or max_m != M or max_m0 != 2 * M:
        raise LayoutError(f"header parameters differ from the sidecar's (M {m}, maxM {max_m}, maxM0 {max_m0})")
    if offset_data != links0 or label_offset != links0 + dim * 4 or per_element != label_offset + 8:
        raise LayoutError("header offsets do not fit the dimension")
    if not (math.isfinite(mult) and abs(mult - 1 / math.log(M)) < 1e-9) or not 0 < ef_construction <= _MAX_EF_CONSTRUCTION:
        raise LayoutError("header construction parameters are out of range")
    if count == 0:
        if max_level != -1:
            raise LayoutError("an empty index has levels")
    elif not (0 <= max_level <= _MAX_LEVEL and entry < count):
        raise LayoutError("entry point or top level out of range")
    return count, per_element, links0, max_level


def _check_level0(block: np.ndarray, count: int, max_m0: int) -> np.ndarray:
    """Check level 0's neighbour lists; return the deletion marks."""
    links = np.ascontiguousarray(block[:, : max_m0 * 4 + 4]).view("<u4")
    sizes = links[:, 0] & 0xFFFF
    flags = (links[:, 0] >> 16) & 0xFF
    if (sizes > max_m0).any():
        raise LayoutError("a level-0 neighbour list is longer than 2*M")
    used = np.arange(max_m0)[None, :] < sizes[:, None]
    if (links[:, 1:][used] >= count).any():
        raise LayoutError("a level-0 neighbour is not an element of the file")
    return (flags & _DELETE_MARK).astype(bool)


def _upper_lists(data: bytearray, base: int, count: int, list_bytes: int, max_level: int) -> tuple[np.ndarray, list]:
    """Walk the per-element upper-level lists (``data``: the file from offset ``base`` on).

    Returns each element's level and ``(element, offset in data, levels)``.
    """
    levels = np.zeros(count, dtype=np.int64)
    lists = []
    at = 0
    end = len(data)
    unpack = struct.Struct("<I").unpack_from
    for element in range(count):
        if at + 4 > end:
            raise LayoutError("the file ends inside its link lists")
        (size,) = unpack(data, at)
        at += 4
        if size:
            if size % list_bytes or size // list_bytes > max_level or at + size > end:
                raise LayoutError("an upper-level link list has an impossible size")
            levels[element] = size // list_bytes
            lists.append((element, at, size // list_bytes))
            at += size
    if at != end:
        raise LayoutError(f"the file is {base + end} bytes, its structure says {base + at}")
    return levels, lists


def _check_upper(data: bytearray, lists: list, levels: np.ndarray, M: int) -> None:
    if not lists:
        return
    width = M + 1
    rows = np.concatenate([np.frombuffer(data, dtype="<u4", count=width * n, offset=at).reshape(n, width)
                           for _, at, n in lists])
    level_of_row = np.concatenate([np.arange(1, n + 1) for _, _, n in lists])
    sizes = rows[:, 0] & 0xFFFF
    if (sizes > M).any():
        raise LayoutError("an upper-level neighbour list is longer than M")
    used = np.arange(M)[None, :] < sizes[:, None]
    neighbours = rows[:, 1:][used].astype(np.int64)
    if (neighbours >= len(levels)).any():
        raise LayoutError("an upper-level neighbour is not an element of the file")
    needed = np.broadcast_to(level_of_row[:, None], used.shape)[used]
    if (levels[neighbours] < needed).any():
        raise LayoutError("an upper-level neighbour does not reach that level")


def read_whole(fd: int, *, dim: int, M: int, visit: Visit | None = None) -> Layout:
    """Check the hnswlib file open on ``fd`` in full (see the module); :class:`LayoutError` when unsound.

    ``visit`` sees each block's labels and vectors as they are read; the
    layout is sound only if this returns (a caller discards what it saw when
    it raises).
    """
    size = os.fstat(fd).st_size
    if size < HEADER.size:
        raise LayoutError(f"the file is {size} bytes, shorter than a header")
    fields = HEADER.unpack(_pread(fd, HEADER.size, 0))
    count, per_element, links0, max_level = _check_header(fields, dim=dim, M=M)
    start = HEADER.size + count * per_element
    if start + 4 * count > size:
        raise LayoutError(f"the file is {size} bytes, too short for {count} elements")
    tail = _pread(fd, size - start, start)
    levels, lists = _upper_lists(tail, start, count, M * 4 + 4, max_level)
    if count and levels[fields[7]] != max_level:
        raise LayoutError("the entry point is not on the top level")
    _check_upper(tail, lists, levels, M)
    del tail
    labels = np.empty(count, dtype=np.uint64)
    deleted = np.empty(count, dtype=bool)
    buffer = bytearray(min(count, _BLOCK_ELEMENTS) * per_element)
    for first in range(0, count, _BLOCK_ELEMENTS):
        n = min(_BLOCK_ELEMENTS, count - first)
        with memoryview(buffer) as view:
            _pread_into(fd, view[: n * per_element], HEADER.size + first * per_element)
        block = np.frombuffer(buffer, dtype=np.uint8, count=n * per_element).reshape(n, per_element)
        deleted[first : first + n] = _check_level0(block, count, 2 * M)
        labels[first : first + n] = np.ascontiguousarray(block[:, links0 + dim * 4 :]).view("<u8").reshape(n)
        if visit is not None:
            # each element's vector bytes as one (n, dim) float32 view, without copying
            visit(labels[first : first + n], np.ndarray((n, dim), dtype="<f4", buffer=buffer, offset=links0,
                                                        strides=(per_element, 4)))
    ordered = np.sort(labels)
    if (ordered[1:] == ordered[:-1]).any():
        raise LayoutError("two elements share a label")
    return Layout(labels=labels, deleted=deleted)
