"""Generation with a key/value cache, under the model's own ``generate``.

A model's ``generate`` calls it on the tokens so far, one more each time
(nanoGPT's, llama2.c's). In eval mode with autograd off, a compiled module
whose model has a maximum sequence length (``lamina.build(...,
max_seq_len=)`` or the model's ``block_size`` / ``max_seq_len``) serves such
a call from a cache instead of computing every position again:

- a call on tokens that extend those the cache holds runs the compiled
  *decode step* once per new position: one token, the attention's keys and
  values of the earlier positions from the cache, which the step returns
  with the new position written (program state passed from one step to
  the next);
- a call on tokens that extend the previous call's, the cache holding
  others (the second call of a ``generate``), runs the compiled *prefill*:
  the model on the whole sequence, returning also the cached operands of
  every position;
- any other call (a prompt, a window that moved, a plain inference call)
  runs as a plain call of the compiled model.

The decode step's program is compiled once, at the maximum length, for
each batch size; a prefill once per prompt length. What the step computes
is derived from two traces of the model (importer/kv_cache.py), and checked
once against the model itself on the first call's tokens before it is used:
a model it does not fit is called whole, as before, with a
GenerationWarning naming why (``generation.reason``).
"""

import math
import warnings

import torch

from ..errors import ScheduleError, UnsupportedOperationError
from ..importer.kv_cache import (Analysis, evaluate, row_at, unsupported,
                                 with_results)
from ..importer.model import import_graph, result_tensors, trace_model
from .precision import as_autocast_results, tracing_in_f32

# The attributes where models keep their maximum sequence length.
_LENGTH_ATTRIBUTES = ("max_seq_len", "block_size", "n_positions",
                      "max_position_embeddings")


class GenerationWarning(UserWarning):
    """A model's calls on growing sequences run whole: the decode step does
    not fit it (the message says why)."""


def model_max_length(model):
    """The maximum sequence length `model` declares (on itself or its
    ``config`` / ``params`` / ``args``), or None."""
    for holder in (model, getattr(model, "config", None),
                   getattr(model, "params", None),
                   getattr(model, "args", None)):
        for name in _LENGTH_ATTRIBUTES:
            value = getattr(holder, name, None) if holder is not None \
                else None
            if isinstance(value, int) and value > 1:
                return value
    return None


class Generation:
    """The decode steps and prefills of one compiled module.

    `eval_mode()`: a context in which `model`'s modules are as in the
    compiled module's eval mode (tracing, importing and checking happen in
    it); `compile(imported, element=None)`: a compiled program for an
    imported function (the compiled module's schedule applied, its layer
    matmuls in `element`); `element()`: the lower precision the current
    call computes in (autocast's "bf16"), or None.

    Each batch size and precision has its own decoder and cache; a
    decoder's step is checked in f32, then compiled in its precision."""

    def __init__(self, model, length, eval_mode, compile, element):
        self.model = model
        self.length = length
        self._eval_mode, self._compile = eval_mode, compile
        self._element = element
        self.reason = None
        self._decoders = {}
        self._previous = None  # the tokens of the last call served or not

    def applies(self, inputs):
        """Whether a call on `inputs` may be served here."""
        if self.reason is not None or len(inputs) != 1:
            return False
        tokens = inputs[0]
        return isinstance(tokens, torch.Tensor) and tokens.dim() == 2 and \
            tokens.dtype == torch.int64 and not tokens.requires_grad and \
            1 <= tokens.shape[1] <= self.length

    def __call__(self, tokens):
        """The model's results on `tokens`, or None where the call runs
        whole: a call that neither extends the previous call's tokens nor
        the cache's (a plain call of the model; a prompt), or a model the
        decode step does not fit (the reason, the first time, as a
        GenerationWarning)."""
        previous, self._previous = self._previous, tokens.clone()
        element = self._element()
        key = (tokens.shape[0], element)
        decoder = self._decoders.get(key)
        if decoder is not None and decoder.extends(tokens):
            program, results = decoder.decode(tokens)
        elif previous is not None and _extends(tokens, previous):
            try:
                if decoder is None:
                    decoder = _Decoder(self, tokens, element)
                    self._decoders[key] = decoder
                program, results = decoder.prefill(tokens)
            except (UnsupportedOperationError, ScheduleError) as error:
                self.reason = str(error)
                warnings.warn(f"{self.reason}; calls run on the whole "
                              "sequence", GenerationWarning, stacklevel=4)
                return None
        else:
            return None
        if element is not None and torch.is_autocast_cpu_enabled():
            results = as_autocast_results(results,
                                          program.autocast_elements)
        program.imported.apply_side_effects(self.model, results)
        return program.imported.restructure(results)

    def _trace(self, tokens):
        with self._eval_mode(), tracing_in_f32():
            return trace_model(self.model, (tokens,))

    def _import(self, graph, effects, entry, inputs=None, element=None):
        """The compiled program of `graph` in `element`; its nodes' values
        recorded on `inputs` first when given."""
        with self._eval_mode(), tracing_in_f32():
            if inputs is not None:
                evaluate(graph, self.model, inputs)
            imported = import_graph(self.model, graph, effects, entry=entry)
        return self._compile(imported, element)

    def _reference(self, tokens):
        with self._eval_mode(), torch.no_grad(), tracing_in_f32():
            return self.model(tokens)

    @property
    def steps(self):
        """How many decode steps and prefills ran (all batch sizes)."""
        return {"decode": sum(d.steps for d in self._decoders.values()),
                "prefill": sum(d.prefills for d in
                               self._decoders.values())}


class _Decoder:
    """The decode step and prefills for one batch size, and the cache."""

    def __init__(self, generation, tokens, element):
        self.generation = generation
        self.element = element
        length = generation.length
        longest = tokens.repeat(1, math.ceil(length / tokens.shape[1]))
        longest = longest[:, :length].contiguous()
        graph, self.effects = generation._trace(longest)
        if any(effect.nodes for effect in self.effects):
            raise unsupported("the model's forward sets an attribute to a "
                              "computed tensor")
        shorter, _ = generation._trace(longest[:, :-1].contiguous())
        self.analysis = Analysis(graph, shorter, length)
        if not self.analysis.cached:
            raise unsupported("the model has no attention over earlier "
                              "positions")
        self.step = self.analysis.step()
        self.caches = None
        self.tokens = None
        self._prefills = {}
        self.steps = self.prefills = 0
        self.program = self._compile_step(longest[:, :1])
        self._check(tokens)
        if element is not None:
            self.program = generation._compile(self.program.imported,
                                               element)

    # -- programs -------------------------------------------------------

    def _compile_step(self, token):
        inputs = [token] + self._rows(0) + self._cache_inputs(
            self._empty_caches(token.shape[0]), 0)
        return self.generation._import(self.step.graph, self.effects,
                                       "decode_step", inputs)

    def _prefill_program(self, length, tokens):
        program = self._prefills.get(length)
        if program is None:
            graph, effects = self.generation._trace(tokens)
            nodes = list(graph.nodes)
            analysed = list(self.analysis.graph.nodes)
            if len(nodes) != len(analysed):
                raise unsupported("the model's trace changes with the "
                                  "prompt's length")
            index = {node: i for i, node in enumerate(analysed)}
            extra = [nodes[index[o]] for o in self.analysis.cached_operands()]
            program = self._prefills[length] = self.generation._import(
                with_results(graph, extra), effects, "prefill",
                element=self.element)
        return program

    # -- inputs ---------------------------------------------------------

    def _rows(self, position):
        return [row_at(value, axis, position)
                for value, axis in self.step.rows]

    def _empty_caches(self, batch):
        caches = []
        for shape, axis, dtype in self.step.caches:
            caches.append(torch.zeros((batch,) + shape[1:], dtype=dtype))
        return caches

    @staticmethod
    def _cache_inputs(caches, position):
        return [torch.tensor([position])] + list(caches)

    # -- calls ----------------------------------------------------------

    def extends(self, tokens):
        """Whether `tokens` extend those whose positions the cache holds."""
        return self.tokens is not None and _extends(tokens, self.tokens)

    def decode(self, tokens):
        """One decode step per position of `tokens` after the cache's; the
        last one's (program, results)."""
        for position in range(self.tokens.shape[1], tokens.shape[1]):
            results = self._decode(tokens[:, position:position + 1],
                                   position)
        self.tokens = tokens.clone()
        return results

    def prefill(self, tokens):
        """The prefill of `tokens`, filling the cache: (program,
        results)."""
        results = self._prefill(tokens)
        self.tokens = tokens.clone()
        return results

    def _decode(self, token, position):
        program = self.program
        inputs = [token] + self._rows(position) + self._cache_inputs(
            self.caches, position)
        results = list(program.call(inputs, None, keep=False))
        self.caches = [results[i] for i in program.imported.extra_results]
        self.steps += 1
        return program, results

    def _prefill(self, tokens):
        length = tokens.shape[1]
        program = self._prefill_program(length, tokens)
        results = list(program.call([tokens], None, keep=False))
        imported = program.imported
        self.caches = self._empty_caches(tokens.shape[0])
        for cache, (shape, axis, _), index in zip(
                self.caches, self.step.caches, imported.extra_results):
            cache.narrow(axis, 0, length).copy_(results[index])
        self.prefills += 1
        return program, results

    def _check(self, tokens):
        """Runs the step from an empty cache over the first positions of
        `tokens` and compares the last with the model's own results."""
        count = min(tokens.shape[1], self.generation.length, 4)
        self.caches = self._empty_caches(tokens.shape[0])
        for position in range(count):
            program, results = self._decode(
                tokens[:, position:position + 1], position)
        ours = program.imported.restructure(results)
        theirs = self.generation._reference(tokens[:, :count])
        flat_ours, flat_theirs = result_tensors(ours), result_tensors(theirs)
        if len(flat_ours) != len(flat_theirs) or not all(
                a.shape == b.shape and torch.allclose(a, b, rtol=1e-3,
                                                      atol=1e-4)
                for a, b in zip(flat_ours, flat_theirs)):
            raise unsupported("the decode step does not reproduce the "
                              "model's results (an op mixes positions "
                              "otherwise than attention)")
        self.caches, self.tokens = None, None
        self.steps = 0


def _extends(tokens, earlier):
    """Whether `tokens` are `earlier` followed by more positions."""
    return tokens.shape[0] == earlier.shape[0] and \
        tokens.shape[1] > earlier.shape[1] and \
        torch.equal(tokens[:, :earlier.shape[1]], earlier)
