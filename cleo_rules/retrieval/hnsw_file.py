"""One hnswlib index on disk, with a sidecar that vouches for it.

hnswlib trusts its input: a truncated or corrupted index file can crash the
process on load or on the first query, with no exception to catch. So an
index file is never loaded unless its sidecar (``<name>.json``, the index's
manifest) says what the file must be and the file matches, byte for byte.

**One step replaces the pair.** Each save writes a new generation: the index
file under a name of its own (``<name>.g<16 hex digits>``) and a sidecar that
names it. The sidecar is written last, and renamed over the old one in one
step; until then readers find the old sidecar naming the old file, after it
the new sidecar naming the new file. Files of older generations are removed
after the switch, and any left by a save that died are removed by the next
save. A store of the old layout (``<name>`` beside a sidecar of format 1
that names no file) is read as it is and moves to the new layout at its
next save.

* the index and its sidecar are written to temporary files (mode 0600),
  flushed to disk and checked (the index file must end exactly where its
  own structure says, since hnswlib reports no failed write), so a failed
  save (a full disk, a crash) leaves the old pair in place;
* the sidecar records the file's size and SHA-256, the element count, the
  dimension, the space, the model that made the vectors, the database
  generation it reflects and the labels that are marked deleted in the file
  (hnswlib cannot say which those are);
* :meth:`VectorIndex.load` checks all of that before calling hnswlib, hashing
  the very file descriptor it then hands to hnswlib, so the file cannot be
  swapped between the check and the load. Both files are opened without
  blocking and must be regular files (a FIFO or a link to a device is
  refused unread); the sidecar is read up to :data:`MAX_SIDECAR_BYTES`.

Anything that does not match raises :class:`IndexInvalid`; the caller
(:class:`~cleo_rules.retrieval.index_set.IndexSet`) rebuilds from the vectors
kept in SQLite. When only the file's bytes disagree with a sound sidecar
(``IndexInvalid.mismatch``), :meth:`VectorIndex.salvage` may still load the
file once :func:`~cleo_rules.retrieval.hnsw_layout.read_whole` has checked
every field hnswlib would trust; the caller then reconciles it with SQLite.
Labels are the SQLite row ids of the snippets or passages.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import hnswlib
import numpy as np

from .hnsw_layout import LayoutError, Visit, check_hnsw_file, read_whole

#: The distance spaces hnswlib knows.
Space = Literal["l2", "ip", "cosine"]
SIDECAR_FORMAT = 2
"""Format 2 names the index file of its generation; format 1 (the old layout) vouched for ``<name>`` itself."""
LEGACY_SIDECAR_FORMAT = 1
HNSWLIB_VERSION = "0.8.0"
MIN_CAPACITY = 1024
MAX_SIDECAR_BYTES = 64 << 20
"""A sidecar is read only up to this size (its list of deleted labels grows with the index: about 4M labels)."""

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class IndexInvalid(Exception):
    """An index file cannot be trusted; ``reason`` says why in a few words.

    ``mismatch`` is the sidecar (sound, and of this store) when only the
    file's size or checksum differ from it: the pair disagrees.
    """

    def __init__(self, reason: str, *, mismatch: dict | None = None):
        super().__init__(reason)
        self.reason = reason
        self.mismatch = mismatch


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _generation_name(path: Path) -> str:
    return f"{path.name}.g{secrets.token_hex(8)}"


def _is_generation(path: Path, name: str) -> bool:
    return re.fullmatch(re.escape(path.name) + r"\.g[0-9a-f]{16}", name) is not None


def index_file(path: Path) -> Path:
    """The index file the sidecar of ``path`` names (``path`` itself in the old layout); :class:`IndexInvalid`."""
    return path.with_name(VectorIndex.read_sidecar(path)["file"])


def remove_old_generations(path: Path, keep: str | None) -> list[Path]:
    """Delete the index files of ``path``'s other generations (and the old layout's file when ``keep`` is new).

    Called by the one writer that holds ``index.lock``, after its sidecar is in place.
    """
    removed = []
    for candidate in path.parent.glob(f"{glob.escape(path.name)}*"):
        old_layout = candidate.name == path.name and keep is not None and keep != path.name
        if candidate.name != keep and (old_layout or _is_generation(path, candidate.name)):
            try:
                if stat.S_ISREG(candidate.lstat().st_mode) or candidate.is_symlink():
                    candidate.unlink()
                    removed.append(candidate)
            except OSError:  # pragma: no cover - gone meanwhile, or not ours to remove
                pass
    return removed


def _sha256_fd(fd: int) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        block = os.read(fd, 1 << 20)
        if not block:
            break
        digest.update(block)
        size += len(block)
    return digest.hexdigest(), size


def _open_regular(path: Path, what: str) -> int:
    """A read-only descriptor of ``path`` if it is a regular file; :class:`IndexInvalid` otherwise.

    Opened with ``O_NONBLOCK``, so a FIFO cannot hang the open, and checked
    with ``fstat`` on the very descriptor that is then read: a FIFO, a
    directory or a link to ``/dev/zero`` is refused before a byte is read.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise IndexInvalid(f"{what} missing") from None
    except OSError as exc:
        raise IndexInvalid(f"{what} unreadable ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        from .sqlite_schema import describe_mode

        raise IndexInvalid(f"{what} is {describe_mode(mode)}, not a regular file")
    return fd


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _temp_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.tmp.{os.getpid()}.{secrets.token_hex(4)}")


def _write_file(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file (mode 0600), flushed to disk; a short write raises ``OSError``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
        if os.fstat(fd).st_size != len(data):
            raise OSError(errno.ENOSPC, f"{path.name} was written short: is the disk full?")
    finally:
        os.close(fd)


def remove_stale_temp_files(directory: Path) -> list[Path]:
    """Delete temporary index files left by processes that no longer run."""
    removed = []
    for tmp in directory.glob("*.tmp.*.*"):
        parts = tmp.name.split(".tmp.", 1)[1].split(".")
        try:
            pid = int(parts[0])
        except (ValueError, IndexError):
            continue
        alive = True
        if pid != os.getpid():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                alive = False
            except PermissionError:  # pragma: no cover - someone else's process
                alive = True
        if not alive:
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:  # pragma: no cover
                pass
    return removed


def _load_hnsw(source: str, space: Space, dim: int, capacity: int) -> hnswlib.Index:
    """Load a verified index file. The only place hnswlib reads a file."""
    raw = hnswlib.Index(space=space, dim=dim)
    raw.load_index(source, max_elements=capacity, allow_replace_deleted=True)  # pyright: ignore[reportCallIssue]  # hnswlib 0.8.0 takes it; its stubs are older
    return raw


class VectorIndex:
    """An hnswlib cosine index whose labels are SQLite row ids.

    It grows on its own (``add`` resizes when full), keeps track of which
    labels are live, and is saved only through :meth:`save`.
    """

    def __init__(
        self,
        path: Path,
        dim: int,
        *,
        space: Space = "cosine",
        M: int = 16,
        ef_construction: int = 200,
        ef_search: int = 64,
        capacity: int = MIN_CAPACITY,
        _index: hnswlib.Index | None = None,
    ):
        self.path = Path(path)
        self.dim = int(dim)
        self.space = space
        self.M = M
        self.ef_construction = ef_construction
        self.ef_search = ef_search
        if _index is None:
            _index = hnswlib.Index(space=space, dim=self.dim)
            _index.init_index(
                max_elements=max(int(capacity), MIN_CAPACITY),
                M=M,
                ef_construction=ef_construction,
                random_seed=100,
                allow_replace_deleted=True,  # pyright: ignore[reportCallIssue]  # hnswlib 0.8.0 takes it; its stubs are older
            )
            self._labels: set[int] = set()
        else:
            self._labels = {int(x) for x in _index.get_ids_list()}
        self._index = _index
        self._index.set_ef(ef_search)
        self.dirty = False

    # -- loading ------------------------------------------------------------

    @staticmethod
    def read_sidecar(path: Path) -> dict:
        """The sidecar of the index at ``path``; :class:`IndexInvalid` when unusable."""
        fd = _open_regular(sidecar_path(path), "sidecar")
        try:
            raw = os.read(fd, MAX_SIDECAR_BYTES + 1) if os.fstat(fd).st_size <= MAX_SIDECAR_BYTES else None
        except OSError as exc:
            raise IndexInvalid(f"sidecar unreadable ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        if raw is None or len(raw) > MAX_SIDECAR_BYTES:
            raise IndexInvalid(f"sidecar is over {MAX_SIDECAR_BYTES} bytes")
        try:
            meta = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise IndexInvalid("sidecar is not valid JSON") from None
        if not isinstance(meta, dict) or meta.get("format") not in (SIDECAR_FORMAT, LEGACY_SIDECAR_FORMAT):
            raise IndexInvalid("sidecar has an unknown format")
        if meta["format"] == LEGACY_SIDECAR_FORMAT:
            meta["file"] = Path(path).name  # the old layout: the index sits at the path itself
        else:
            name = meta.get("file")
            if not isinstance(name, str) or not _is_generation(Path(path), name):
                raise IndexInvalid("sidecar names no index file of this index")
        types = {
            "elements": int, "slots": int, "capacity": int, "dim": int, "space": str,
            "model": str, "generation": int, "sha256": str, "bytes": int, "M": int,
            "ef_construction": int,
        }
        for key, kind in types.items():
            value = meta.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise IndexInvalid(f"sidecar field {key!r} missing or of the wrong type")
        deleted = meta.get("deleted")
        if not isinstance(deleted, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in deleted):
            raise IndexInvalid("sidecar field 'deleted' missing or of the wrong type")
        if not (0 <= meta["elements"] <= meta["slots"] <= meta["capacity"]) or meta["dim"] < 1:
            raise IndexInvalid("sidecar counts are inconsistent")
        if meta["elements"] + len(deleted) > meta["slots"]:
            raise IndexInvalid("sidecar counts are inconsistent")
        return meta

    @classmethod
    def load(cls, path: Path, *, dim: int | None, model: str | None, space: Space = "cosine", ef_search: int = 64,
             expect: Callable[[dict], None] | None = None):
        """Load the index at ``path`` after checking it against its sidecar.

        ``dim`` and ``model``, when given, must match what the sidecar says;
        ``expect(sidecar)`` may raise :class:`IndexInvalid` for more checks.
        Returns ``(index, sidecar)``; raises :class:`IndexInvalid` without
        touching hnswlib when anything is off. A sidecar naming a file that a
        writer removed meanwhile is read again (its new one names the new file).
        """
        path = Path(path)
        fd, meta = cls._open_named(path, dim=dim, model=model, space=space, expect=expect)
        try:
            cls._verify(fd, meta)
            # hand hnswlib the descriptor we hashed, not the name, which may
            # point to another file by now
            source = f"/proc/self/fd/{fd}" if os.path.exists(f"/proc/self/fd/{fd}") else str(path)
            try:
                raw = _load_hnsw(source, space, meta["dim"], meta["capacity"])
            except Exception as exc:  # pragma: no cover - a verified file loads
                raise IndexInvalid(f"hnswlib could not load the file ({exc})") from None
        finally:
            os.close(fd)
        if raw.element_count != meta["slots"]:
            raise IndexInvalid("element count does not match the sidecar")  # pragma: no cover
        index = cls(
            path, meta["dim"], space=space, M=meta["M"], ef_construction=meta["ef_construction"],
            ef_search=ef_search, _index=raw,
        )
        # hnswlib lists deleted labels too; the sidecar says which ones they are
        index._labels.difference_update(meta["deleted"])
        if len(index._labels) != meta["elements"]:
            raise IndexInvalid("live labels do not match the sidecar")
        return index, meta

    @classmethod
    def _open_named(cls, path: Path, **checks) -> tuple[int, dict]:
        """A descriptor of the index file the checked sidecar names, and the sidecar."""
        attempt = 0
        while True:
            meta = cls._checked_sidecar(path, **checks)
            try:
                return _open_regular(path.with_name(meta["file"]), "index file"), meta
            except IndexInvalid as exc:
                attempt += 1
                if attempt >= 3 or exc.reason != "index file missing" or not cls._renamed(path, meta):
                    raise

    @classmethod
    def _checked_sidecar(cls, path: Path, *, dim, model, space, expect) -> dict:
        meta = cls.read_sidecar(path)
        if meta["space"] != space:
            raise IndexInvalid(f"space is {meta['space']!r}, expected {space!r}")
        if dim is not None and meta["dim"] != dim:
            raise IndexInvalid(f"dimension is {meta['dim']}, expected {dim}")
        if model is not None and meta["model"] != model:
            raise IndexInvalid(f"built with model {meta['model']!r}, expected {model!r}")
        if expect is not None:
            expect(meta)
        return meta

    @classmethod
    def _renamed(cls, path: Path, meta: dict) -> bool:
        try:
            return cls.read_sidecar(path)["file"] != meta["file"]
        except IndexInvalid:
            return False

    @staticmethod
    def _verify(fd: int, meta: dict) -> None:
        """Check the file on ``fd`` against the sidecar, byte for byte (size, then SHA-256)."""
        size = os.fstat(fd).st_size
        if size != meta["bytes"]:
            raise IndexInvalid(f"index file is {size} bytes, sidecar says {meta['bytes']}", mismatch=meta)
        try:
            digest, size = _sha256_fd(fd)
        except OSError as exc:
            raise IndexInvalid(f"index file unreadable ({exc.strerror or exc})") from None
        if size != meta["bytes"]:
            raise IndexInvalid(f"index file is {size} bytes, sidecar says {meta['bytes']}", mismatch=meta)
        if digest != meta["sha256"]:
            raise IndexInvalid("index file checksum does not match its sidecar", mismatch=meta)

    @classmethod
    def salvage(cls, path: Path, meta: dict, *, space: Space = "cosine", ef_search: int = 64,
                visit: Visit | None = None):
        """Load the file ``meta`` names although its bytes differ from ``meta``, if it is whole and sound.

        The file is checked in full first (:func:`~cleo_rules.retrieval.hnsw_layout.read_whole`:
        every offset, neighbour and level hnswlib would trust), on the very
        descriptor then handed to hnswlib. Returns ``(index, layout)``: the
        index with the file's live labels, and what the file holds, for the
        caller to reconcile with SQLite (``visit`` sees the stored vectors
        block by block as the check reads them). :class:`IndexInvalid` when
        unsound.
        """
        path = Path(path)
        fd = _open_regular(path.with_name(meta["file"]), "index file")
        try:
            try:
                layout = read_whole(fd, dim=meta["dim"], M=meta["M"], visit=visit)
            except LayoutError as exc:
                raise IndexInvalid(f"index file is not whole either: {exc}") from None
            except OSError as exc:
                raise IndexInvalid(f"index file unreadable ({exc.strerror or exc})") from None
            source = f"/proc/self/fd/{fd}" if os.path.exists(f"/proc/self/fd/{fd}") else str(path)
            try:
                raw = _load_hnsw(source, space, meta["dim"], max(len(layout.labels), MIN_CAPACITY))
            except Exception as exc:  # pragma: no cover - a checked file loads
                raise IndexInvalid(f"hnswlib could not load the file ({exc})") from None
        finally:
            os.close(fd)
        index = cls(path, meta["dim"], space=space, M=meta["M"], ef_construction=meta["ef_construction"],
                    ef_search=ef_search, _index=raw)
        index._labels = {int(x) for x in layout.labels[~layout.deleted]}
        return index, layout

    # -- contents -----------------------------------------------------------

    @property
    def labels(self) -> frozenset[int]:
        """The live labels (deleted ones excluded)."""
        return frozenset(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    @property
    def capacity(self) -> int:
        return self._index.get_max_elements()

    @property
    def slots(self) -> int:
        """Elements stored, deleted ones included (they are reused by later adds)."""
        return self._index.element_count

    def add(self, vectors: np.ndarray, labels) -> None:
        """Add vectors under new labels, growing the index when it is full."""
        labels = np.asarray(list(labels), dtype=np.int64)
        if len(labels) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(labels), self.dim)
        needed = self._index.element_count + len(labels)
        if needed > self._index.get_max_elements():
            self._index.resize_index(max(needed, 2 * self._index.get_max_elements(), MIN_CAPACITY))
        self._index.add_items(vectors, labels.astype(np.uint64), replace_deleted=True)
        self._labels.update(int(x) for x in labels)
        self.dirty = True

    def put(self, vectors: np.ndarray, labels) -> None:
        """Add vectors, or overwrite the ones stored under ``labels``; a label marked deleted is revived."""
        labels = [int(x) for x in labels]
        for label in labels:
            if label not in self._labels:
                try:
                    self._index.unmark_deleted(label)
                except RuntimeError:  # not in the index at all: added below
                    pass
        self.add(vectors, labels)

    def delete(self, labels) -> int:
        """Mark labels deleted; unknown or already deleted labels are ignored."""
        count = 0
        for label in labels:
            label = int(label)
            try:
                self._index.mark_deleted(label)
            except RuntimeError:  # not in the index, or deleted already
                pass
            else:
                count += 1
            if label in self._labels:
                self._labels.discard(label)
                self.dirty = True
        return count

    def query(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest live labels of each row of ``vectors``.

        Returns ``(labels, scores)``, both of shape ``(n, min(k, len(self)))``,
        scores being cosine similarities, best first.
        """
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        k = min(int(k), len(self._labels))
        if k <= 0 or len(vectors) == 0:
            return np.zeros((len(vectors), 0), dtype=np.int64), np.zeros((len(vectors), 0), dtype=np.float32)
        self._index.set_ef(max(self.ef_search, k))
        try:
            labels, distances = self._index.knn_query(vectors, k=k)
        except RuntimeError:
            # too few reachable elements (many deletions, small ef): exact search
            return self._exact(vectors, k)
        return labels.astype(np.int64), (1.0 - distances).astype(np.float32)

    def _exact(self, vectors: np.ndarray, k: int):
        live = np.fromiter(self._labels, dtype=np.int64, count=len(self._labels))
        stored = np.asarray(self._index.get_items(live.astype(np.uint64)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        scores = (vectors / np.where(norms == 0, 1, norms)) @ stored.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return live[order], np.take_along_axis(scores, order, axis=1).astype(np.float32)

    # -- saving -------------------------------------------------------------

    def save(self, *, model: str, generation: int, extra: dict | None = None) -> dict:
        """Write a new generation of the index and switch to it in one step; return the sidecar.

        The index file and its sidecar are written to temporary files (mode
        0600), flushed to disk and checked first: the index file must end
        exactly where its structure says (hnswlib reports no failed write, so
        a full disk would otherwise leave a short file that the sidecar vouches
        for). The index file then takes its generation's own name, and the
        sidecar naming it is renamed over the old sidecar: that one rename is
        the switch. Any failure before it raises ``OSError`` and leaves the
        previous pair in place; after it, the older generations' files are
        removed. ``extra`` adds fields to the sidecar (the store records which
        store and source the index belongs to).
        """
        directory = self.path.parent
        tmp = _temp_path(self.path)
        target = self.path.with_name(_generation_name(self.path))
        side = sidecar_path(self.path)
        side_tmp = _temp_path(side)
        switched = False
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
            self._index.save_index(str(tmp))  # into the file just made, which keeps its mode
            fd = os.open(tmp, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            try:
                os.fsync(fd)
                check_hnsw_file(fd, slots=self._index.element_count, dim=self.dim)
                digest, size = _sha256_fd(fd)
            finally:
                os.close(fd)
            meta = {
                "format": SIDECAR_FORMAT,
                "file": target.name,
                "elements": len(self._labels),
                "slots": self._index.element_count,
                "capacity": self._index.get_max_elements(),
                "dim": self.dim,
                "space": self.space,
                "model": model,
                "generation": int(generation),
                "sha256": digest,
                "bytes": size,
                "M": self.M,
                "ef_construction": self.ef_construction,
                "deleted": sorted(int(x) for x in set(self._index.get_ids_list()) - self._labels),
                "hnswlib": HNSWLIB_VERSION,
                "saved_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **(extra or {}),
            }
            _write_file(side_tmp, json.dumps(meta, indent=1).encode())
            os.replace(tmp, target)  # the new generation's file, named by no sidecar yet
            _fsync_dir(directory)
            os.replace(side_tmp, side)  # the switch: one rename replaces the pair
            switched = True
        finally:
            for leftover in (tmp, side_tmp) if switched else (tmp, side_tmp, target):
                if leftover.exists():
                    leftover.unlink()
        _fsync_dir(directory)
        remove_old_generations(self.path, keep=target.name)
        self.dirty = False
        return meta
