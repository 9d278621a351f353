"""A whole LNS training step as one compiled Lamina program:
:func:`compile_step` records the model's forward and loss once (as lns
ops), differentiates it with lamina-generate-backward (the lns ops'
reverse-mode rules, lib/Dialect/Lamina/Autodiff/LnsRules.cpp), appends the
optimizer's update in lns ops and compiles the module through
lamina-cpu-pipeline. Codes are identical with the eager path
(zero_grad, backward, step) and with the reference.
"""

import re

import numpy as np
import torch

from .. import _lamina
from .._lamina import Program
from . import kernels as K
from . import trace
from .autograd import ZERO, codes
from .optim import LNSAdam, LNSSGD, _group_base
from .tensor import LNSTensor


class CompileError(Exception):
    """What compile_step cannot compile, and why."""


def _num(base):
    return K.num_type(**base.kw())


def _type(shape, base):
    return "tensor<" + "".join(f"{s}x" for s in shape) + _num(base) + ">"


class _Emitter:
    """Writes the recorded steps as the body of `@loss`."""

    def __init__(self, recorder, arguments):
        self.recorder = recorder
        self.names = {}       # id(code tensor) -> SSA name
        self.types = {}       # SSA name -> type
        self.shapes = {}      # SSA name -> shape
        self.lines = []
        for name, tensor, base in arguments:
            self._define(tensor, name, tensor.shape, base)

    def _define(self, tensor, name, shape, base):
        self.names[id(tensor)] = name
        self.shapes[name] = tuple(shape)
        self.types[name] = _type(shape, base)
        return name

    def _fresh(self, tensor, base):
        return self._define(tensor, f"%v{len(self.lines)}", tensor.shape, base)

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
                f"does not record (a reshape, transpose, indexing or a "
                f"tensor made outside the model); only LNS operations of "
                f"Lamina's functions compile")
        codes_tensor, base = constant
        values = codes(codes_tensor)
        if shape is not None:
            values = np.array(np.broadcast_to(values, shape))
        name = self._define(codes_tensor, f"%v{len(self.lines)}",
                            values.shape, base)
        self.lines.append(
            f"{name} = lns.constant dense<{_dense(values)}> : "
            f"{_i64(values.shape)} -> {self.types[name]}")
        return name

    def emit(self, step):
        what = step.op
        shape = tuple(step.result.shape)
        operands = [self.value(t, what, shape if what in _ELEMENTWISE
                               else None) for t in step.operands]
        types = [self.types[o] for o in operands]
        shapes = [self.shapes[o] for o in operands]
        result = self._fresh(step.result, step.base)
        rtype = self.types[result]
        if what in ("add", "sub", "mul", "div"):
            if shapes[0] != shapes[1]:
                raise CompileError(
                    f"{what} of shapes {shapes[0]} and {shapes[1]}: "
                    f"broadcasting operands do not compile; give both "
                    f"operands one shape")
            self.lines.append(f"{result} = lns.{what} {operands[0]}, "
                              f"{operands[1]} : {types[0]}, {types[1]}")
        elif what in ("neg", "relu"):
            self.lines.append(f"{result} = lns.{what} {operands[0]} : "
                              f"{types[0]}")
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


_ELEMENTWISE = ("add", "sub", "mul", "div")


def _i64(shape):
    return "tensor<" + "".join(f"{s}x" for s in shape) + "i64>"


def _dense(values):
    if values.ndim == 0:
        return str(int(values))
    return np.array2string(values, separator=", ", threshold=np.inf,
                           max_line_width=np.inf).replace("\n", "")


def _signature(module, name):
    """The result types of function @name in printed `module`."""
    match = re.search(r"func\.func @" + name + r"\((.*?)\) -> (.*?) \{",
                      module)
    results = match.group(2)
    if results.startswith("("):
        results = results[1:-1]
    return results.split(", ")


class CompiledStep:
    """Calls of one compiled training step: `step(*inputs)` runs forward,
    backward and the optimizer update as one program, writes the new
    parameters, gradients and optimizer state back (as zero_grad,
    loss.backward() and optimizer.step() would) and returns the loss."""

    def __init__(self, model, loss_fn, optimizer, example_inputs):
        if not isinstance(optimizer, (LNSSGD, LNSAdam)):
            raise CompileError("compile_step takes an LNSSGD or LNSAdam "
                               "optimizer")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.entries = [(p, _group_base(group), group)
                        for group in optimizer.param_groups
                        for p in group["params"]]
        if not all(isinstance(t, LNSTensor) for t in example_inputs):
            raise CompileError("compile_step takes LNS tensors as example "
                               "inputs (lamina.lns.lnstensor)")
        self.shapes = [tuple(t.shape) for t in example_inputs]
        self.bases = [t.lns_base for t in example_inputs]
        self.loss_module = self._record(example_inputs)
        try:
            self.differentiated = _lamina.transform_ir(
                self.loss_module, "",
                "lamina-generate-backward{function=loss}")
        except ValueError as error:
            raise CompileError(f"the loss cannot be differentiated: "
                               f"{str(error).strip()}") from None
        self._programs = {}

    # -- the loss function ------------------------------------------------

    def _record(self, inputs):
        detached = [t.detach() for t in inputs]
        with trace.recording() as recorder:
            loss = self.loss_fn(self.model(*detached[:-1]), detached[-1])
        if not isinstance(loss, LNSTensor) or loss.ndim != 0:
            raise CompileError("the loss must be a scalar LNS tensor")
        arguments = [(f"%in{i}", t.lns, t.lns_base)
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
        optimizer = self.optimizer
        keys = []
        for p, base, group in self.entries:
            state = optimizer.state.get(p, {})
            decay = not bool(_is_zero(group["weight_decay"].code_in(base)))
            if isinstance(optimizer, LNSSGD):
                momentum = not bool(_is_zero(group["momentum"].code_in(base)))
                keys.append(("sgd", decay, momentum,
                             "momentum_buffer" in state, group["nesterov"],
                             group["maximize"]))
            else:
                keys.append(("adam", decay, group["amsgrad"],
                             group["maximize"]))
        return tuple(keys)

    def _program(self, variant):
        program = self._programs.get(variant)
        if program is None:
            program = Program(self._module(variant), "step")
            self._programs[variant] = program
        return program

    def _module(self, variant):
        differentiated = self.differentiated
        saved = _signature(differentiated, "loss_forward")
        gradients = _signature(differentiated, "loss_backward")
        inputs = [(f"%in{i}", _type(s, b))
                  for i, (s, b) in enumerate(zip(self.shapes, self.bases))]
        params = [(f"%p{i}", _type(p.shape, base))
                  for i, (p, base, _) in enumerate(self.entries)]
        states, hypers, lines, results = [], [], [], []
        n_in = len(inputs)
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
        updates = _Update(lines, states, hypers)
        new_params, new_states, grads = [], [], []
        for i, ((p, base, group), key) in enumerate(zip(self.entries, variant)):
            grad = f"%g#{n_in + i}"
            grads.append((grad, params[i][1]))
            p_new, state_out = updates.parameter(i, key, params[i][0],
                                                 params[i][1], grad, base,
                                                 len(p.shape))
            new_params.append((p_new, params[i][1]))
            new_states += state_out
        results += new_params + new_states + grads
        signature = ", ".join(f"{n}: {t}" for n, t in inputs + params + states
                              + hypers)
        body = "\n  ".join(lines)
        return (differentiated.rstrip().rstrip("}") +
                f"  func.func @step({signature}) -> "
                f"({', '.join(t for _, t in results)}) {{\n  {body}\n  "
                f"return {', '.join(n for n, _ in results)} : "
                f"{', '.join(t for _, t in results)}\n  }}\n}}\n")

    # -- calls ------------------------------------------------------------

    def __call__(self, *inputs):
        if [tuple(t.shape) for t in inputs] != self.shapes or \
                [t.lns_base for t in inputs] != self.bases:
            raise ValueError(f"the step was compiled for inputs of shapes "
                             f"{self.shapes}; got "
                             f"{[tuple(t.shape) for t in inputs]}")
        variant = self._variant()
        program = self._program(variant)
        optimizer = self.optimizer
        arrays = [codes(t.lns) for t in inputs]
        arrays += [codes(p) for p, _, _ in self.entries]
        state_arrays, hyper_arrays = [], []
        for (p, base, group), key in zip(self.entries, variant):
            state = optimizer.state[p]
            s, h = _Update.arguments(optimizer, key, group, base, state)
            state_arrays += s
            hyper_arrays += h
        results = program.run(program.prepare(arrays + state_arrays +
                                               hyper_arrays))
        loss, rest = results[0], list(results[1:])
        count = len(self.entries)
        new_params, rest = rest[:count], rest[count:]
        new_states, grads = rest[:-count], rest[-count:]
        with torch.no_grad():
            for (p, base, group), key, new, grad in zip(
                    self.entries, variant, new_params, grads):
                p.copy_(torch.from_numpy(np.asarray(new, np.float64)))
                p.grad = torch.from_numpy(np.asarray(grad, np.float64))
                p._lns_incoming, p._lns_total = [p.grad], p.grad
                new_states = _Update.store(optimizer, key,
                                           optimizer.state[p], new_states)
        return LNSTensor(torch.tensor(float(np.asarray(loss)),
                                      dtype=torch.float64), self.bases[-1])


def _is_zero(code):
    return (np.int64(code) | 1) == ZERO


class _Update:
    """The optimizer's update of one parameter in lns ops (the algorithm of
    lamina.lns.optim, spec §4), and the host side of its arguments."""

    def __init__(self, lines, states, hypers):
        self.lines, self.states, self.hypers = lines, states, hypers

    def _hyper(self, i, name, base, rank, shape_type):
        """A 0-d hyper-parameter argument broadcast to the parameter."""
        scalar = _type((), base)
        arg = f"%h{i}_{name}"
        self.hypers.append((arg, scalar))
        dims = ", ".join(map(str, range(rank)))
        self.lines += [
            f"{arg}_e = tensor.empty() : {shape_type}",
            f"{arg}_b = linalg.broadcast ins({arg} : {scalar}) outs({arg}_e "
            f": {shape_type}) dimensions = [{dims}]"]
        return f"{arg}_b"

    def parameter(self, i, key, p, t, grad, base, rank):
        """The update of parameter `p` (type `t`) from gradient `grad`:
        its new value and the new state values."""
        counter = iter(range(1 << 30))

        def emit(kind, *operands):
            name = f"%u{i}_{next(counter)}"
            types = t if len(operands) == 1 else ", ".join([t] * len(operands))
            self.lines.append(f"{name} = {kind} {', '.join(operands)} : "
                              f"{types}")
            return name

        def hyper(name):
            return self._hyper(i, name, base, rank, t)

        def state(name):
            arg = f"%s{i}_{name}"
            self.states.append((arg, t))
            return arg

        g = grad
        maximize, decay = key[-1], key[1]
        if maximize:
            g = emit("lns.neg", g)
        if decay:
            g = emit("lns.add", g, emit("lns.mul", p, hyper("wd")))
        new_states = []
        if key[0] == "sgd":
            momentum, has_buffer, nesterov = key[2], key[3], key[4]
            if momentum:
                mom = hyper("momentum")
                if has_buffer:
                    buf_in = state("buf")
                    keep = hyper("keep")
                    buf = emit("lns.add", emit("lns.mul", buf_in, mom),
                               emit("lns.mul", g, keep))
                else:
                    buf = g
                new_states.append((buf, t))
                g = (emit("lns.add", g, emit("lns.mul", buf, mom))
                     if nesterov else buf)
            step = emit("lns.mul", g, hyper("lr"))
            return emit("lns.sub", p, step), new_states
        amsgrad = key[2]
        beta1, beta2 = hyper("beta1"), hyper("beta2")
        omb1, omb2 = hyper("omb1"), hyper("omb2")
        m_in, v_in = state("m"), state("v")
        m = emit("lns.add", emit("lns.mul", m_in, beta1),
                 emit("lns.mul", g, omb1))
        v = emit("lns.add", emit("lns.mul", v_in, beta2),
                 emit("lns.mul", emit("lns.mul", g, g), omb2))
        bc1, bc2 = hyper("bc1"), hyper("bc2")
        mhat = emit("lns.div", m, bc1)
        new_states += [(m, t), (v, t)]
        if amsgrad:
            vmax = emit("lns.max", state("vmax"), v)
            new_states.append((vmax, t))
            dsq = emit("lns.div", vmax, bc2)
        else:
            dsq = emit("lns.div", v, bc2)
        denom = emit("lns.add", emit("lns.sqrt", dsq), hyper("eps"))
        step = emit("lns.mul", hyper("lr"), emit("lns.div", mhat, denom))
        return emit("lns.sub", p, step), new_states

    @staticmethod
    def arguments(optimizer, key, group, base, state):
        """The state and hyper-parameter arrays of one parameter, in the
        order `parameter` declares them."""
        kw = base.kw()
        code = lambda name: np.asarray(group[name].code_in(base),  # noqa: E731
                                       dtype=np.int64).reshape(())
        states, hypers = [], []
        if key[0] == "sgd":
            _, decay, momentum, has_buffer, _, _ = key
            if decay:
                hypers.append(code("weight_decay"))
            if momentum:
                hypers.append(code("momentum"))
                if has_buffer:
                    states.append(codes(state["momentum_buffer"]))
                    hypers.append(np.asarray(K.sub(np.int64(0),
                                                   code("dampening"), **kw),
                                             np.int64).reshape(()))
            hypers.append(code("lr"))
            return states, hypers
        _, decay, amsgrad, _ = key
        if decay:
            hypers.append(code("weight_decay"))
        if not state:
            state["step"] = 0
            for name in ("exp_avg", "exp_avg_sq") + (
                    ("max_exp_avg_sq",) if amsgrad else ()):
                state[name] = None
        t = state["step"] + 1
        shape = group["params"][0].shape
        for name in ("exp_avg", "exp_avg_sq") + (
                ("max_exp_avg_sq",) if amsgrad else ()):
            value = state.get(name)
            states.append(np.full(tuple(shape), ZERO, np.int64)
                          if value is None else codes(value))
        beta1, beta2 = code("beta1"), code("beta2")
        one = np.int64(0)
        eps = code("eps")
        if _is_zero(eps):
            raise CompileError("the compiled Adam step needs eps > 0: its "
                               "denominator would be zero for a zero "
                               "gradient, which the compiled code does not "
                               "check")
        bc1 = K.sub(one, K.powi(beta1, t, **kw), **kw)
        bc2 = K.sub(one, K.powi(beta2, t, **kw), **kw)
        for divisor, name in ((bc1, "beta1"), (bc2, "beta2")):
            if _is_zero(divisor):
                raise ZeroDivisionError(f"1 - {name}^{t} is zero in LNS")
        hypers += [beta1, beta2, np.asarray(K.sub(one, beta1, **kw)),
                   np.asarray(K.sub(one, beta2, **kw)),
                   np.asarray(bc1), np.asarray(bc2), eps, code("lr")]
        return states, [np.asarray(h, np.int64).reshape(()) for h in hypers]

    @staticmethod
    def store(optimizer, key, state, new_states):
        """Writes the step's new state of one parameter; returns the rest."""
        def tensor(a):
            return torch.from_numpy(np.asarray(a, np.float64))
        if key[0] == "sgd":
            if key[2]:
                state["momentum_buffer"] = tensor(new_states[0])
                return new_states[1:]
            return new_states
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if key[2]
                                             else [])
        for name, value in zip(names, new_states):
            state[name] = tensor(value)
        state["step"] += 1
        return new_states[len(names):]


def compile_step(model, loss_fn, optimizer, example_inputs):
    """One LNS training step of `model` as one compiled program.

    `loss_fn(model(*inputs[:-1]), inputs[-1])` must be a scalar LNS loss
    computed by Lamina's LNS functions (linear, relu, element-wise
    arithmetic of equal shapes, powers, sums, matmul of matrices,
    mse_loss); `optimizer` an LNSSGD or LNSAdam over the model's LNS
    parameters. Returns a :class:`CompiledStep`; calling it with inputs of
    the example shapes and bases is one zero_grad / backward / step,
    bit-identical with the eager path. Raises CompileError naming what does
    not compile."""
    return CompiledStep(model, loss_fn, optimizer, list(example_inputs))
