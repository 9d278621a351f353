"""The key/value cache of a decode step (importer/kv_cache.py): one
position's row written into a cache at a position the program takes as an
input (`tensor.insert_slice` at a dynamic offset)."""

from .. import ir
from ..kv_cache import write_row
from . import converts


@converts(write_row)
def cache_row(emitter, node):
    """`tensor.insert_slice` of a row (size 1 along the cache's sequence
    axis) into a key/value cache at the position an int64 [1] tensor holds
    (a decode step's cache update)."""
    cache = emitter.value(node, node.args[0])
    row = emitter.value(node, node.args[1])
    position = emitter.value(node, node.args[2])
    axis = node.args[3]
    if row.type.element != cache.type.element or \
            position.type.element is not ir.I64 or \
            position.type.shape != (1,):
        emitter.fail(node, f"a cache row {row.type} written into "
                     f"{cache.type} at {position.type}")
    builder = emitter.builder
    zero = builder.op("arith.constant", "0", types="index",
                      results=[ir.INDEX])
    code = builder.op("tensor.extract", f"{position.name}[{zero.name}]",
                      types=position.type, results=[ir.I64])
    offset = builder.op("arith.index_cast", code, types="i64 to index",
                        results=[ir.INDEX])
    offsets = ["0"] * cache.type.rank
    offsets[axis] = offset.name
    return builder.op(
        "tensor.insert_slice", row.name, "into",
        f"{cache.name}[{', '.join(offsets)}]", ir.int_list(row.type.shape),
        ir.int_list([1] * cache.type.rank),
        types=f"{row.type} into {cache.type}", results=[cache.type])
