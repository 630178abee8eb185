"""Task clustering for G-Memory's periodic insight merge.

The reference code (``GMemory.py: TaskLayer.cluster_tasks``) clusters the embeddings of all
stored tasks with FINCH (Sarfraz et al., CVPR 2019; the ``finch`` package's
``FINCH(metric='cosine').fit_predict``), and falls back to a single cluster when that raises.
This module is memarena's own implementation of the same procedure, with numpy only:

1. first-neighbour partition: every point is linked to its nearest other point (cosine
   distance, ties by the lower index); the partition is the connected components of those
   links (the FINCH adjacency: ``j`` is ``i``'s first neighbour, or the reverse, or both
   share their first neighbour);
2. the next level clusters the (normalised) means of the current clusters the same way, until
   one cluster remains;
3. ``fit_predict`` returns the level with the highest mean silhouette (cosine), never the first
   level, the later level on ties. When no level qualifies (fewer than two levels with more
   than one cluster) the package raises and the reference catches it: one cluster for all.

Cost: one ``n x n`` cosine matrix per call (it runs every ``merge_every`` tasks).
"""

from __future__ import annotations

import numpy as np


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def cosine_distances(x: np.ndarray) -> np.ndarray:
    unit = _unit_rows(np.asarray(x, dtype=np.float64))
    return np.clip(1.0 - unit @ unit.T, 0.0, 2.0)


def first_neighbour_partition(points: np.ndarray) -> np.ndarray:
    """Labels ``0..c-1`` (numbered by first appearance) of FINCH's first-neighbour partition."""
    n = len(points)
    if n < 2:
        return np.zeros(n, dtype=np.int64)
    dist = cosine_distances(points)
    np.fill_diagonal(dist, np.inf)
    nearest = np.argmin(dist, axis=1)  # ties: lowest index
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in enumerate(nearest):
        a, b = find(i), find(int(j))
        if a != b:
            parent[max(a, b)] = min(a, b)
    roots = [find(i) for i in range(n)]
    numbering: dict[int, int] = {}
    return np.array([numbering.setdefault(r, len(numbering)) for r in roots], dtype=np.int64)


def silhouette(dist: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette coefficient from a distance matrix (a point alone in its cluster scores
    0, as in scikit-learn)."""
    n_clusters = int(labels.max()) + 1
    onehot = np.zeros((len(labels), n_clusters))
    onehot[np.arange(len(labels)), labels] = 1.0
    sizes = onehot.sum(axis=0)
    sums = dist @ onehot  # row i, column c: summed distance from i to the members of c
    own = labels
    own_size = sizes[own]
    a = sums[np.arange(len(labels)), own] / np.maximum(own_size - 1, 1)
    others = sums / sizes
    others[np.arange(len(labels)), own] = np.inf
    b = others.min(axis=1)
    denom = np.maximum(a, b)
    s = np.where((own_size > 1) & (denom > 0), (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    return float(s.mean())


def finch_labels(x: np.ndarray) -> np.ndarray:
    """Cluster labels of the rows of ``x`` as the reference's FINCH ``fit_predict`` chooses
    them (see the module docstring); all zeros when no level qualifies."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n < 2:
        return np.zeros(n, dtype=np.int64)
    dist = cosine_distances(x)
    labels, points, level = np.arange(n), x, 0
    best, best_score = None, -1.0
    while True:
        labels = first_neighbour_partition(points)[labels]
        n_clusters = int(labels.max()) + 1
        if n_clusters == 1:
            break
        score = silhouette(dist, labels)
        if level > 0 and best_score <= score:
            best, best_score = labels, score
        points = np.stack([x[labels == c].mean(axis=0) for c in range(n_clusters)])
        level += 1
    return best if best is not None else np.zeros(n, dtype=np.int64)
