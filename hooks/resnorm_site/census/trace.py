"""One forward pass of a toy model, recorded: every module call in order, with copies of
the tensors it received and returned, and the torch functions each module called itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Call:
    start: int
    name: str  # the module's qualified name in the model
    module: object
    args: tuple
    kwargs: dict
    end: int = -1
    outputs: list = field(default_factory=list)
    functions: list = field(default_factory=list)  # (function name, output shape) in order
    order: list = field(default_factory=list)  # when each function ran, on the call clock

    @property
    def inputs(self) -> list:
        return tensors(self.args) + tensors(tuple(self.kwargs.values()))

    @property
    def main_input(self):
        """The tensor a layer or sublayer transforms: hidden_states, or the first tensor."""
        if "hidden_states" in self.kwargs and is_tensor(self.kwargs["hidden_states"]):
            return self.kwargs["hidden_states"]
        found = self.inputs
        return found[0] if found else None

    @property
    def output(self):
        return self.outputs[0] if self.outputs else None


def is_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def tensors(values, depth: int = 0) -> list:
    found = []
    for value in values:
        if is_tensor(value):
            found.append(value)
        elif isinstance(value, tuple | list) and depth < 1:
            found += tensors(value, depth + 1)
        elif hasattr(value, "to_tuple") and depth < 1:  # a ModelOutput
            found += tensors(value.to_tuple(), depth + 1)
    return found


def _copy(value):
    if is_tensor(value):
        return value.detach().clone()
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


class Recorder:
    """Hooks on every module of ``model`` and a torch function mode while active."""

    def __init__(self, model):
        self.model = model
        self.calls: list[Call] = []
        self._stack: list[Call] = []
        self._handles: list = []
        self._clock = 0

    def __enter__(self):
        from torch.overrides import TorchFunctionMode

        recorder = self

        class Functions(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                if recorder._stack:
                    shape = tuple(out.shape) if is_tensor(out) else None
                    name = getattr(func, "__name__", str(func))
                    recorder._stack[-1].functions.append((name, shape))
                    recorder._stack[-1].order.append(recorder._clock)
                    recorder._clock += 1
                return out

        for name, module in self.model.named_modules():
            self._handles.append(
                module.register_forward_pre_hook(self._pre(name), with_kwargs=True)
            )
            self._handles.append(module.register_forward_hook(self._post, with_kwargs=True))
        self._mode = Functions()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        for handle in self._handles:
            handle.remove()

    def _pre(self, name):
        def hook(module, args, kwargs):
            call = Call(self._clock, name, module, _copy(args), _copy(kwargs))
            self._clock += 1
            self.calls.append(call)
            self._stack.append(call)

        return hook

    def _post(self, module, args, kwargs, output):
        call = self._stack.pop()
        call.end = self._clock
        self._clock += 1
        call.outputs = [t.detach().clone() for t in tensors((output,))]

    def within(self, outer: Call) -> list[Call]:
        """The calls made while ``outer`` ran, in order."""
        return [c for c in self.calls if outer.start < c.start and c.end < outer.end]

    def children(self, outer: Call) -> list[Call]:
        """The calls of ``outer``'s module's direct children made while it ran."""
        prefix = f"{outer.name}." if outer.name else ""

        def direct(rest: str) -> bool:
            # a member of a list of children counts as a child (LongCat's self_attn.0)
            parts = rest.split(".")
            return len(parts) == 1 or (len(parts) == 2 and parts[1].isdigit())

        return [
            c
            for c in self.within(outer)
            if c.name.startswith(prefix) and direct(c.name[len(prefix) :])
        ]
