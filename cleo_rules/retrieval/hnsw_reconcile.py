"""An index file whose pair disagrees, reconciled with the vectors SQLite holds.

When an index file's sidecar is sound but describes other bytes (a save of
the old layout killed between its two renames, or a file changed after its
save), the sidecar no longer vouches for anything the file holds. The file
is then checked in full (:func:`~cleo_rules.retrieval.hnsw_layout.read_whole`),
and everything it holds that a search can return is checked against SQLite,
the store's one source of truth:

* **labels**: the file's live labels that SQLite no longer holds (or holds
  with a damaged embedding) are marked deleted; SQLite's labels that the
  file lacks, or marks deleted, are added;
* **vectors**: every vector the file stores under a label SQLite holds is
  compared with SQLite's (normalised as hnswlib stores it, within 1e-5 per
  component); one that differs is replaced by SQLite's.

So the reconciled index holds exactly SQLite's labels and vectors, as a
rebuild would, whatever the file held; only its graph (the neighbour
lists, checked to be sound, not to be the best) comes from the file. The
vectors are read from SQLite once, in label order, and compared block by
block while the file is read (:meth:`Comparison.visit`), so the file is read
once and never held in memory whole.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from .hnsw_file import VectorIndex
from .hnsw_layout import Layout

_BLOCK = 10_000  # rows fetched from SQLite at a time
_TOLERANCE = 1e-5


class Comparison:
    """SQLite's vectors of one source, sorted by label, and the file's labels whose vector differs from them.

    ``damaged`` are labels SQLite holds with an embedding of the wrong type
    or length: with no vector to compare, they are left out of the index, as
    a rebuild leaves them out.
    """

    def __init__(self, labels: np.ndarray, vectors: np.ndarray, damaged: np.ndarray):
        self.labels = labels
        self.vectors = vectors
        self.damaged = damaged
        self._differs: list[np.ndarray] = []
        self._scratch = np.zeros((0, vectors.shape[1]), dtype=np.float32)  # reused by every block

    @classmethod
    def read(cls, conn: sqlite3.Connection, pieces: str, dim: int) -> Comparison:
        """Every vector of the table ``pieces`` whose embedding is ``dim`` float32s, in one pass by label.

        The vectors go straight into one array sized by a count of the rows
        (SQLite counts them from its smallest index); the table is scanned
        a second time for damaged embeddings only when some rows were left out.
        """
        sound = "typeof(embedding) = 'blob' AND length(embedding) = ?"
        (total,) = conn.execute(f"SELECT count(*) FROM {pieces}").fetchone()
        labels = np.empty(total, dtype=np.int64)
        vectors = np.empty((total, dim), dtype=np.float32)
        more: list[tuple[np.ndarray, np.ndarray]] = []  # rows added since the count
        cursor = conn.execute(f"SELECT label, embedding FROM {pieces} WHERE {sound} ORDER BY label", (dim * 4,))
        got = 0
        while rows := cursor.fetchmany(_BLOCK):
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            block = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            fits = max(0, min(len(rows), total - got))
            labels[got : got + fits], vectors[got : got + fits] = ids[:fits], block[:fits]
            if fits < len(rows):
                more.append((ids[fits:], block[fits:]))
            got += len(rows)
        if more:
            labels = np.concatenate([labels, *(m[0] for m in more)])
            vectors = np.concatenate([vectors, *(m[1] for m in more)])
        labels, vectors = labels[:got], vectors[:got]
        damaged: list[int] = []
        if got < total:
            damaged = [r[0] for r in conn.execute(f"SELECT label FROM {pieces} WHERE NOT ({sound})", (dim * 4,))]
        return cls(labels, vectors, np.asarray(sorted(damaged), dtype=np.int64))

    def visit(self, file_labels: np.ndarray, file_vectors: np.ndarray) -> None:
        """Compare one block of the file (labels, stored vectors) with SQLite's vectors under those labels."""
        if not len(self.labels):
            return
        file_labels = file_labels.astype(np.int64)
        at = np.minimum(np.searchsorted(self.labels, file_labels), len(self.labels) - 1)
        known = self.labels[at] == file_labels
        if not known.any():
            return
        rows = at[known]
        if len(self._scratch) < len(rows):
            self._scratch = np.empty((len(rows), self.vectors.shape[1]), dtype=np.float32)
        wanted = np.take(self.vectors, rows, axis=0, out=self._scratch[: len(rows)])
        norms = np.sqrt(np.einsum("ij,ij->i", wanted, wanted))[:, None]
        wanted /= np.where(norms == 0, 1, norms)  # as hnswlib stores it
        wanted -= file_vectors if len(rows) == len(file_labels) else file_vectors[known]
        differs = np.abs(wanted, out=wanted).max(axis=1) > _TOLERANCE
        if differs.any():
            self._differs.append(file_labels[known][differs])

    def apply(self, index: VectorIndex, layout: Layout) -> tuple[int, int, int]:
        """Make ``index`` (loaded from the file ``layout`` describes) hold SQLite's labels and vectors.

        Call after :meth:`visit` has seen every block. Returns ``(added,
        removed, replaced)``.
        """
        live = np.sort(layout.labels[~layout.deleted].astype(np.int64))  # unique: the layout check says so
        removed = index.delete(live[~_within(live, self.labels)])  # a damaged embedding's too, as a rebuild would
        fresh = self.labels[~_within(self.labels, live)]  # absent from the file, or marked deleted there
        differs = np.unique(np.concatenate(self._differs)) if self._differs else np.zeros(0, dtype=np.int64)
        replaced = differs[_within(differs, live)]
        put = np.union1d(fresh, replaced)
        if len(put):
            index.put(self.vectors[np.searchsorted(self.labels, put)], put)
        return len(fresh), removed, len(replaced)


def _within(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``ordered`` (sorted, unique): one binary search each."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    return ordered[np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)] == values
