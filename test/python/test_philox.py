"""The NumPy Philox is itself checked against Random123's known answers."""

import numpy as np

from lamina import philox


def words(values):
    return [np.array([v], dtype=np.uint32) for v in values]


def test_known_answer_zero():
    out = philox.philox4x32(words([0, 0, 0, 0]), (0, 0))
    assert [int(w[0]) for w in out] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C,
                                        0x9B00DBD8]


def test_known_answer_ones():
    out = philox.philox4x32(words([0xFFFFFFFF] * 4), (0xFFFFFFFF, 0xFFFFFFFF))
    assert [int(w[0]) for w in out] == [0x408F276D, 0x41C83B0E, 0xA20BC7C6,
                                        0x6D5451FD]


def test_known_answer_pi():
    out = philox.philox4x32(
        words([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]),
        (0xA4093822, 0x299F31D0))
    assert [int(w[0]) for w in out] == [0xD16CFE09, 0x94FDCCEB, 0x5001E420,
                                        0x24126EA1]


def test_keep_rate():
    keep = philox.keep_mask((1000, 100), 0.3, seed=7)
    rate = keep.mean()
    # 99.9% binomial bound around 0.7 for 1e5 draws.
    assert abs(rate - 0.7) < 3.3 * np.sqrt(0.7 * 0.3 / keep.size)
