"""A whole LNS training step as one compiled Lamina program:
:func:`compile_step` records the model's forward and loss once (as lns
ops), differentiates it with lamina-generate-backward (the lns ops'
reverse-mode rules, lib/Dialect/Lamina/Autodiff/LnsRules.cpp), appends the
optimizer's update in lns ops and compiles the module through
lamina-cpu-pipeline. Codes are identical with the eager path
(zero_grad, backward, step) and with the reference.
"""

import numpy as np
import torch

from .. import _lamina
from .._lamina import Program
from . import kernels as K
from . import trace
from .autograd import codes, is_zero
from .elementwise import reference_e
from .optim import LNSOptimizer, _group_base
from .optim.optimizer import code
from .tensor import LNSTensor


# Additions of bases with f <= 16 read precomputed tables: the codes of the
# ideal formula, about twice as fast (lamina-lns-tables).
PIPELINE = "lamina-cpu-pipeline{lns-tables=true}"


class CompileError(Exception):
    """What compile_step cannot compile, and why."""


def _num(base):
    return K.num_type(**base.kw())


def _type(shape, base):
    """An LNS tensor type, or (base None) one of class indices."""
    element = "i64" if base is None else _num(base)
    return "tensor<" + "".join(f"{s}x" for s in shape) + element + ">"


def _is_indices(t):
    """Whether step input `t` holds class indices (an integer tensor)."""
    return torch.is_tensor(t) and not isinstance(t, LNSTensor) and \
        not t.dtype.is_floating_point and not t.is_complex() and \
        t.dtype != torch.bool


class _Emitter:
    """Writes the recorded steps as the body of `@loss`."""

    def __init__(self, recorder, arguments):
        self.recorder = recorder
        self.names = {}       # id(code tensor) -> SSA name
        self.types = {}       # SSA name -> type
        self.shapes = {}      # SSA name -> shape
        self.lines = []
        self.count = 0
        for name, tensor, base in arguments:
            self._define(tensor, name, tensor.shape, base)

    def _define(self, tensor, name, shape, base):
        self.names[id(tensor)] = name
        self.shapes[name] = tuple(shape)
        self.types[name] = _type(shape, base)
        return name

    def _fresh(self, tensor, base):
        self.count += 1
        return self._define(tensor, f"%v{self.count}", tensor.shape, base)

    def value(self, tensor, what, shape=None):
        """The SSA name of code tensor `tensor`; a constant (a number or
        float tensor an operation encoded) is written here, broadcast to
        `shape` when given (constants take no gradient)."""
        name = self.names.get(id(tensor))
        if name is not None:
            return name
        constant = self.recorder.constants.get(id(tensor))
        if constant is None:
            raise CompileError(
                f"an operand of {what} comes from an operation compile_step "
                f"does not record (indexing, concatenation or a tensor made "
                f"outside the model); only LNS operations of Lamina's "
                f"functions compile")
        codes_tensor, base = constant
        values = codes(codes_tensor)
        if shape is not None:
            values = np.array(np.broadcast_to(values, shape))
        self.count += 1
        name = self._define(codes_tensor, f"%v{self.count}", values.shape,
                            base)
        self.lines.append(
            f"{name} = lns.constant dense<{_dense(values)}> : "
            f"{_i64(values.shape)} -> {self.types[name]}")
        return name

    def emit(self, step):
        what = step.op
        shape = tuple(step.result.shape)
        if what == "nll_loss" and len(step.operands) != 1:
            raise CompileError("nll_loss with class weights does not compile; "
                               "weigh the loss outside the step")
        operands = [self.value(t, what, shape if what in _ELEMENTWISE
                               else None) for t in step.operands]
        types = [self.types[o] for o in operands]
        shapes = [self.shapes[o] for o in operands]
        result = self._fresh(step.result, step.base)
        rtype = self.types[result]
        if what in ("exp", "softmax", "log_softmax") and \
                reference_e() != float(np.float32(np.e)):
            raise CompileError(f"{what} compiles with the reference's float32 "
                               f"e; torch's default dtype is "
                               f"{torch.get_default_dtype()}")
        if what in ("add", "sub", "mul", "div"):
            if shapes[0] != shapes[1]:
                raise CompileError(
                    f"{what} of shapes {shapes[0]} and {shapes[1]}: "
                    f"broadcasting operands do not compile; give both "
                    f"operands one shape")
            self.lines.append(f"{result} = lns.{what} {operands[0]}, "
                              f"{operands[1]} : {types[0]}, {types[1]}")
        elif what in ("neg", "relu", "exp", "log", "tanh", "sigmoid"):
            self.lines.append(f"{result} = lns.{what} {operands[0]} : "
                              f"{types[0]}")
        elif what == "leaky_relu":
            self.lines.append(f"{result} = lns.leaky_relu {operands[0]}, "
                              f"{operands[1]} : {types[0]}")
        elif what in ("softmax", "log_softmax"):
            self.lines.append(f"{result} = lns.{what} {operands[0]} dim "
                              f"{step.attrs['dim']} : {types[0]}")
        elif what == "reshape":
            self._reshape(step, operands[0], shapes[0], shape, result)
        elif what == "permute":
            dims = ", ".join(map(str, step.attrs["dims"]))
            self.lines += [
                f"{result}_e = tensor.empty() : {rtype}",
                f"{result} = linalg.transpose ins({operands[0]} : {types[0]}) "
                f"outs({result}_e : {rtype}) permutation = [{dims}]"]
        elif what == "nll_loss":
            self._nll(step, operands, types, result, rtype)
        elif what == "conv2d":
            self._conv2d(step, operands, types, shapes, result, rtype)
        elif what == "powi":
            self.lines.append(f"{result} = lns.powi {operands[0]}, "
                              f"{step.attrs['exponent']} : {types[0]}")
        elif what == "change_base":
            self.lines.append(f"{result} = lns.change_base {operands[0]} : "
                              f"{types[0]} -> {rtype}")
        elif what == "matmul":
            if len(shapes[0]) != 2 or len(shapes[1]) != 2:
                raise CompileError(f"matmul of shapes {shapes[0]} and "
                                   f"{shapes[1]}: only matrices compile")
            self.lines.append(f"{result} = lns.matmul {operands[0]}, "
                              f"{operands[1]} : {types[0]}, {types[1]} -> "
                              f"{rtype}")
        elif what == "linear":
            if len(shapes[0]) < 2:
                raise CompileError("linear of a 1-D input does not compile; "
                                   "give the input a batch dimension")
            bias = f" bias {operands[2]}" if len(operands) == 3 else ""
            self.lines.append(f"{result} = lns.linear {operands[0]}, "
                              f"{operands[1]}{bias} : {', '.join(types)} -> "
                              f"{rtype}")
        elif what == "sum":
            if step.attrs["keepdim"]:
                raise CompileError("sum(keepdim=True) does not compile")
            dims = ", ".join(map(str, step.attrs["dims"]))
            self.lines.append(f"{result} = lns.sum {operands[0]} dims "
                              f"[{dims}] : {types[0]} -> {rtype}")
        elif what == "mse_loss":
            self._mse(step, operands, types, shapes[0], result)
        else:
            raise CompileError(f"{what} does not compile into an LNS "
                               f"training step; it runs eagerly only")

    def _reshape(self, step, source, shape, target, result):
        """A row-major reshape: collapsed to one dimension, expanded to the
        target (the reshapes' reverse-mode rules move the gradient back);
        one of the same shape is the source itself."""
        if shape == target:
            self.names[id(step.result)] = source
            return
        if 0 in (len(shape), len(target)):
            raise CompileError(f"a reshape between {shape} and {target} "
                               f"(a 0-d tensor) does not compile")
        flat = _type((int(np.prod(shape)),), step.base)
        value, value_type = source, self.types[source]
        if len(shape) > 1:
            value = result if len(target) == 1 else f"{result}_flat"
            groups = ", ".join(map(str, range(len(shape))))
            self.lines.append(f"{value} = tensor.collapse_shape {source} "
                              f"[[{groups}]] : {value_type} into {flat}")
        if len(target) > 1:
            groups = ", ".join(map(str, range(len(target))))
            sizes = ", ".join(map(str, target))
            self.lines.append(f"{result} = tensor.expand_shape {value} "
                              f"[[{groups}]] output_shape [{sizes}] : {flat} "
                              f"into {self.types[result]}")

    def _nll(self, step, operands, types, result, rtype):
        target = self.names.get(id(step.attrs["target"]))
        if target is None:
            raise CompileError("nll_loss's target must be the step's last "
                               "input itself (an integer tensor of class "
                               "indices), not a tensor computed from it")
        if len(self.shapes[operands[0]]) != 2:
            raise CompileError(f"nll_loss of log-probabilities of shape "
                               f"{self.shapes[operands[0]]} does not compile; "
                               f"give them the shape [batch, classes]")
        self.lines.append(
            f"{result} = lns.nll_loss {operands[0]}, {target} reduction "
            f"{step.attrs['reduction']} {{ignore_index = "
            f"{step.attrs['ignore_index']} : i64}} : {types[0]}, "
            f"{self.types[target]} -> {rtype}")

    def _conv2d(self, step, operands, types, shapes, result, rtype):
        attrs = step.attrs
        if attrs["groups"] != 1:
            raise CompileError(f"conv2d with groups={attrs['groups']} does "
                               f"not compile; only groups=1 does")
        if len(shapes[0]) != 4:
            raise CompileError(f"conv2d of an input of shape {shapes[0]} does "
                               f"not compile; give it a batch dimension")
        low, high = attrs["padding"]

        def listed(values):
            return "[" + ", ".join(map(str, values)) + "]"
        bias = f" bias {operands[2]}" if len(operands) == 3 else ""
        self.lines.append(
            f"{result} = lns.conv2d {operands[0]}, {operands[1]}{bias} "
            f"strides {listed(attrs['stride'])} dilations "
            f"{listed(attrs['dilation'])} pad_low {listed(low)} pad_high "
            f"{listed(high)} : {', '.join(types)} -> {rtype}")

    def _mse(self, step, operands, types, shape, result):
        """mse_loss as sub, powi 2, a sequential sum and a division by
        enc(numel) (as many as the reduction takes): their reverse-mode
        rules give the spec's mse backward codes (mul and div are exact on
        exponents)."""
        reduction = step.attrs["reduction"]
        t = types[0]
        e = f"{result}_e"
        sq = result if reduction == "none" else f"{result}_sq"
        dims = ", ".join(map(str, range(len(shape))))
        scalar = _type((), step.base)
        self.lines += [
            f"{e} = lns.sub {operands[0]}, {operands[1]} : {t}, {types[1]}",
            f"{sq} = lns.powi {e}, 2 : {t}"]
        if reduction == "none":
            return
        if reduction == "sum":
            self.lines.append(f"{result} = lns.sum {sq} dims [{dims}] : {t} "
                              f"-> {scalar}")
            return
        n = int(K.encode(np.float64(int(np.prod(shape))), **step.base.kw()))
        self.lines += [
            f"{result}_s = lns.sum {sq} dims [{dims}] : {t} -> {scalar}",
            f"{result}_n = lns.constant dense<{n}> : tensor<i64> -> {scalar}",
            f"{result} = lns.div {result}_s, {result}_n : {scalar}, {scalar}"]


# Ops whose constant operands are broadcast to the result's shape.
_ELEMENTWISE = ("add", "sub", "mul", "div", "leaky_relu")


def _base_of(t):
    """An input's base; None for class indices."""
    return t.lns_base if isinstance(t, LNSTensor) else None


def _step_value(t):
    """What the recorded operations name an input by: its codes, or the
    integer tensor itself."""
    return t.lns if isinstance(t, LNSTensor) else t


def _i64(shape):
    return "tensor<" + "".join(f"{s}x" for s in shape) + "i64>"


def _dense(values):
    if values.ndim == 0:
        return str(int(values))
    return np.array2string(values, separator=", ", threshold=np.inf,
                           max_line_width=np.inf).replace("\n", "")


class CompiledStep:
    """Calls of one compiled training step: `step(*inputs)` runs forward,
    backward and the optimizer update as one program, writes the new
    parameters, gradients and optimizer state back (as zero_grad,
    loss.backward() and optimizer.step() would) and returns the loss."""

    def __init__(self, model, loss_fn, optimizer, example_inputs):
        if not isinstance(optimizer, LNSOptimizer):
            raise CompileError(f"compile_step takes an LNS optimizer "
                               f"(lamina.lns.optim), got "
                               f"{type(optimizer).__name__}")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.entries = [(p, _group_base(group), group)
                        for group in optimizer.param_groups
                        for p in group["params"]]
        if not all(isinstance(t, LNSTensor) or _is_indices(t)
                   for t in example_inputs):
            raise CompileError("compile_step takes LNS tensors "
                               "(lamina.lns.lnstensor) and integer tensors of "
                               "class indices as example inputs")
        self.shapes = [tuple(t.shape) for t in example_inputs]
        self.bases = [_base_of(t) for t in example_inputs]
        self.loss_module = self._record(example_inputs)
        try:
            # The inputs take no gradient: nothing is computed for them
            # (the first layer's dX).
            inputs = ",".join(map(str, range(len(example_inputs))))
            self.differentiated = _lamina.Module(self.loss_module).transform(
                pipeline=f"lamina-generate-backward{{function=loss "
                         f"constants={inputs}}}")
        except ValueError as error:
            raise CompileError(f"the loss cannot be differentiated: "
                               f"{str(error).strip()}") from None
        self._programs = {}
        # An update the IR arithmetic cannot write fails here, not at the
        # first call; the source is kept for that call.
        variant = self._variant()
        self._sources = {variant: self._module(variant)}

    # -- the loss function ------------------------------------------------

    def _record(self, inputs):
        detached = [t.detach() for t in inputs]
        with trace.recording() as recorder:
            loss = self.loss_fn(self.model(*detached[:-1]), detached[-1])
        if not isinstance(loss, LNSTensor) or loss.ndim != 0:
            raise CompileError("the loss must be a scalar LNS tensor")
        self.loss_base = loss.lns_base
        arguments = [(f"%in{i}", _step_value(t), _base_of(t))
                     for i, t in enumerate(detached)]
        arguments += [(f"%p{i}", p, base)
                      for i, (p, base, _) in enumerate(self.entries)]
        emitter = _Emitter(recorder, arguments)
        for step in recorder.steps:
            emitter.emit(step)
        result = emitter.names.get(id(loss.lns))
        if result is None:
            raise CompileError("the loss was not computed by recorded LNS "
                               "operations")
        used = {id(t) for s in recorder.steps for t in s.operands}
        missing = [i for i, (p, _, _) in enumerate(self.entries)
                   if id(p) not in used]
        if missing:
            raise CompileError(f"optimizer parameters {missing} do not take "
                               f"part in the loss")
        signature = ", ".join(f"{n}: {emitter.types[n]}"
                              for n, _, _ in arguments)
        body = "\n  ".join(emitter.lines)
        self.loss_type = emitter.types[result]
        return (f"func.func @loss({signature}) -> {self.loss_type} {{\n  "
                f"{body}\n  return {result} : {self.loss_type}\n}}\n")

    # -- the step program -------------------------------------------------

    def _variant(self):
        """The plan of every parameter's update (a program per variant)."""
        return tuple(self.optimizer.plan(group, base,
                                         self.optimizer.state.get(p, {}))
                     for p, base, group in self.entries)

    def _program(self, variant):
        compiled = self._programs.get(variant)
        if compiled is None:
            source, updates = self._sources.pop(variant, None) or \
                self._module(variant)
            compiled = (Program(source, "step", PIPELINE), updates)
            self._programs[variant] = compiled
        return compiled

    def _module(self, variant):
        try:
            return self._write_module(variant)
        except NotImplementedError as error:
            raise CompileError(f"{type(self.optimizer).__name__} does not "
                               f"compile into an LNS training step: {error}"
                               ) from None

    def _write_module(self, variant):
        differentiated = str(self.differentiated)
        saved = self.differentiated.result_types("loss_forward")
        gradients = self.differentiated.result_types("loss_backward")
        inputs = [(f"%in{i}", _type(s, b))
                  for i, (s, b) in enumerate(zip(self.shapes, self.bases))]
        params = [(f"%p{i}", _type(p.shape, base))
                  for i, (p, base, _) in enumerate(self.entries)]
        states, hypers, lines, results = [], [], [], []
        all_args = ", ".join(n for n, _ in inputs + params)
        all_types = ", ".join(t for _, t in inputs + params)
        lines.append(f"%fw:{len(saved)} = func.call @loss_forward({all_args}) "
                     f": ({all_types}) -> ({', '.join(saved)})")
        lines.append(f"%seed = lns.constant dense<0> : tensor<i64> -> "
                     f"{self.loss_type}")
        back_args = ", ".join([n for n, _ in inputs + params]
                              + [f"%fw#{i}" for i in range(1, len(saved))]
                              + ["%seed"])
        back_types = ", ".join([all_types] + saved[1:] + [self.loss_type])
        lines.append(f"%g:{len(gradients)} = func.call @loss_backward("
                     f"{back_args}) : ({back_types}) -> "
                     f"({', '.join(gradients)})")
        results.append(("%fw#0", self.loss_type))
        new_params, new_states, grads, updates = [], [], [], []
        for i, ((p, base, group), plan) in enumerate(zip(self.entries,
                                                         variant)):
            grad = f"%g#{len(gradients) - len(self.entries) + i}"
            grads.append((grad, params[i][1]))
            update = _UpdateProgram(i, p.shape, base, lines, states, hypers)
            p_new, state_out = update.emit(self.optimizer, plan,
                                           params[i][0], grad)
            new_params.append((p_new, params[i][1]))
            new_states += state_out
            updates.append(update)
        results += new_params + new_states + grads
        signature = ", ".join(f"{n}: {t}" for n, t in inputs + params + states
                              + hypers)
        body = "\n  ".join(lines)
        source = (differentiated.rstrip().rstrip("}") +
                  f"  func.func @step({signature}) -> "
                  f"({', '.join(t for _, t in results)}) {{\n  {body}\n  "
                  f"return {', '.join(n for n, _ in results)} : "
                  f"{', '.join(t for _, t in results)}\n  }}\n}}\n")
        return source, updates

    # -- calls ------------------------------------------------------------

    def __call__(self, *inputs):
        if [tuple(t.shape) for t in inputs] != self.shapes or \
                [_base_of(t) for t in inputs] != self.bases:
            raise ValueError(f"the step was compiled for inputs of shapes "
                             f"{self.shapes}; got "
                             f"{[tuple(t.shape) for t in inputs]}")
        variant = self._variant()
        program, updates = self._program(variant)
        optimizer = self.optimizer
        arrays = [codes(_step_value(t)) for t in inputs]
        arrays += [codes(p) for p, _, _ in self.entries]
        state_arrays, hyper_arrays = [], []
        for (p, base, group), plan, update in zip(self.entries, variant,
                                                  updates):
            s, h = update.arguments(optimizer, plan, p, group, base)
            state_arrays += s
            hyper_arrays += h
        results = program.run(program.prepare(arrays + state_arrays +
                                              hyper_arrays))
        loss, rest = results[0], list(results[1:])
        count = len(self.entries)
        new_params, rest = rest[:count], rest[count:]
        new_states, grads = rest[:-count], rest[-count:]
        with torch.no_grad():
            for (p, _, _), update, new, grad in zip(self.entries, updates,
                                                    new_params, grads):
                p.copy_(torch.from_numpy(np.asarray(new, np.float64)))
                total = torch.from_numpy(np.asarray(grad, np.float64))
                # .grad is its own tensor (as graph.accumulate makes it): a
                # torch optimizer zeroing it in place keeps the sum.
                p._lns_incoming, p._lns_total = [total], total
                p.grad = total.clone()
                written = len(update.new_state_names)
                optimizer.store(optimizer.state[p], dict(
                    zip(update.new_state_names, new_states[:written])))
                new_states = new_states[written:]
        return LNSTensor(torch.tensor(float(np.asarray(loss)),
                                      dtype=torch.float64), self.loss_base)


class _IrArithmetic:
    """LNS arithmetic emitting lns ops on tensors of one type: the compiled
    evaluation of an optimizer's update (lamina.lns.optim)."""

    _OPS = {"add": "lns.add", "sub": "lns.sub", "mul": "lns.mul",
            "div": "lns.div", "sqrt": "lns.sqrt", "maximum": "lns.max",
            "minimum": "lns.min", "abs": "lns.abs", "neg": "lns.neg"}

    def __init__(self, lines, prefix, type_):
        self.lines, self.prefix, self.type = lines, prefix, type_
        self.count = 0

    def __getattr__(self, name):
        op = self._OPS.get(name)
        if op is None:
            raise AttributeError(name)

        def emit(*operands):
            result = f"{self.prefix}_{self.count}"
            self.count += 1
            types = ", ".join([self.type] * len(operands))
            self.lines.append(f"{result} = {op} {', '.join(operands)} : "
                              f"{types}")
            return result
        return emit


class _UpdateProgram:
    """One parameter's update in the step program, and the host side of
    its arguments: the hyper-parameters and state values it reads, in the
    order the update first asks for them."""

    def __init__(self, i, shape, base, lines, states, hypers):
        self.i, self.rank = i, len(shape)
        self.type, self.scalar = _type(shape, base), _type((), base)
        self.lines, self.states, self.hypers = lines, states, hypers
        self.hyper_names, self.state_names, self.new_state_names = [], [], []
        self._hyper_values = {}

    def _hyper(self, name):
        """A 0-d hyper-parameter argument broadcast to the parameter."""
        if name not in self._hyper_values:
            scalar = self.scalar
            arg = f"%h{self.i}_{name}"
            self.hypers.append((arg, scalar))
            dims = ", ".join(map(str, range(self.rank)))
            self.lines += [
                f"{arg}_e = tensor.empty() : {self.type}",
                f"{arg}_b = linalg.broadcast ins({arg} : {scalar}) outs("
                f"{arg}_e : {self.type}) dimensions = [{dims}]"]
            self.hyper_names.append(name)
            self._hyper_values[name] = f"{arg}_b"
        return self._hyper_values[name]

    def _state(self, name):
        arg = f"%s{self.i}_{name}"
        self.states.append((arg, self.type))
        self.state_names.append(name)
        return arg

    def emit(self, optimizer, plan, p, grad):
        """The update's lns ops: (new parameter, [(new state, type)])."""
        arithmetic = _IrArithmetic(self.lines, f"%u{self.i}", self.type)
        new_p, new_state = optimizer.update(arithmetic, plan, p, grad,
                                            self._hyper, self._state)
        self.new_state_names = list(new_state)
        return new_p, [(value, self.type) for value in new_state.values()]

    def arguments(self, optimizer, plan, p, group, base):
        """The state and hyper-parameter arrays of this call, in the order
        `emit` declared them."""
        state = optimizer.state[p]
        # Every update that reads eps divides by a term that eps keeps
        # above zero; the compiled division does not check its divisor
        # (the eager one raises), so eps = 0 is refused before the step.
        if "eps" in self.hyper_names and is_zero(code(group, "eps", base)):
            raise CompileError(f"the compiled {type(optimizer).__name__} "
                               f"step needs eps > 0: its denominator would "
                               f"be zero for a zero gradient, which the "
                               f"compiled code does not check")
        hyper = optimizer.hyper_codes(group, base, state)
        current = optimizer.initial_state(plan, p)
        current.update({name: codes(state[name]) for name in plan.state_in
                        if name in state})
        return ([current[name] for name in self.state_names],
                [np.asarray(hyper[name], np.int64).reshape(())
                 for name in self.hyper_names])


def compile_step(model, loss_fn, optimizer, example_inputs):
    """One LNS training step of `model` as one compiled program.

    `loss_fn(model(*inputs[:-1]), inputs[-1])` must be a scalar LNS loss
    computed by Lamina's LNS functions (linear, relu, element-wise
    arithmetic of equal shapes, powers, sums, matmul of matrices,
    mse_loss); `optimizer` an LNS optimizer (lamina.lns.optim) over the
    model's LNS parameters — every one compiles except LNSRprop, whose
    update selects by comparisons the lns dialect cannot express. Returns a :class:`CompiledStep`; calling it with inputs of
    the example shapes and bases is one zero_grad / backward / step,
    bit-identical with the eager path. Raises CompileError naming what does
    not compile."""
    return CompiledStep(model, loss_fn, optimizer, list(example_inputs))
