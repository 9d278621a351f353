"""Philox-4x32-10 and Lamina's dropout masks, in NumPy.

This is the reference for the masks of compiled dropout: element ``i`` (its
row-major index in the whole, unsharded tensor) of a dropout with seed ``s``,
offset ``o`` and stream ``t`` is kept iff output word ``i & 3`` of
Philox-4x32-10 with key ``(s & 0xffffffff, s >> 32)`` and counter
``(g & 0xffffffff, g >> 32, o, t)``, ``g = i >> 2``, is at least
``round(p * 2**32)``: one Philox call draws four consecutive elements.
Survivors are multiplied by ``float32(1 / (1 - p))``.
"""

import numpy as np

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(counter, key, rounds=10):
    """Philox-4x32 on arrays of counters.

    ``counter``: four uint32 arrays (broadcastable); ``key``: two uint32
    values. Returns the four uint32 output words.
    """
    c = [np.asarray(w, dtype=np.uint32) for w in counter]
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for r in range(rounds):
            if r > 0:
                k0 = np.uint32(k0 + _W0)
                k1 = np.uint32(k1 + _W1)
            p0 = _M0 * c[0].astype(np.uint64)
            p1 = _M1 * c[2].astype(np.uint64)
            hi0 = (p0 >> np.uint64(32)).astype(np.uint32)
            lo0 = (p0 & _MASK32).astype(np.uint32)
            hi1 = (p1 >> np.uint64(32)).astype(np.uint32)
            lo1 = (p1 & _MASK32).astype(np.uint32)
            c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def keep_mask(shape, p, seed, offset=0, stream=0):
    """Boolean mask of the elements a dropout keeps, for a tensor of `shape`."""
    n = int(np.prod(shape))
    groups = (n + 3) // 4
    group = np.arange(groups, dtype=np.uint64)
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    counter = [
        (group & _MASK32).astype(np.uint32),
        (group >> np.uint64(32)).astype(np.uint32),
        np.full(groups, offset & 0xFFFFFFFF, dtype=np.uint32),
        np.full(groups, stream & 0xFFFFFFFF, dtype=np.uint32),
    ]
    words = philox4x32(counter, (seed & 0xFFFFFFFF, seed >> 32))
    # Element 4g + w takes word w of call g.
    word = np.stack(words, axis=1).reshape(-1)[:n]
    threshold = int(round(p * 2.0**32))
    return (word.astype(np.uint64) >= np.uint64(threshold)).reshape(shape)


def apply_dropout(values, p, seed, offset=0, stream=0):
    """Lamina's dropout of a float32 array (training mode)."""
    values = np.asarray(values, dtype=np.float32)
    keep = keep_mask(values.shape, p, seed, offset, stream)
    scale = np.float32(1.0 / (1.0 - p)) if p < 1.0 else np.float32(0.0)
    return np.where(keep, values * scale, np.float32(0.0)).astype(np.float32)
