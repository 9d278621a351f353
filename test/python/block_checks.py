"""What the training pair of a built model shows of its outlined blocks
(lamina-outline-blocks before lamina-generate-backward)."""


def assert_blocks_differentiated_once(built, block_list, instances):
    """Every training pair `built` compiled has one forward and one backward
    function for the blocks of `block_list` (`layers` →
    `@layers_block_forward`, `@layers_block_backward`): the backward calls
    the second once per instance, and the program and its forward each call
    the first once per instance."""
    pairs = [pair for pair in built._last.call._pairs.values()
             if not isinstance(pair, str)]
    assert pairs
    name = block_list.replace(".", "_") + "_block"
    for pair in pairs:
        module = str(pair.module)
        for part, calls in (("forward", 2 * instances),
                            ("backward", instances)):
            assert module.count(f"func.func private @{name}_{part}(") == 1
            assert module.count(f"call @{name}_{part}(") == calls
