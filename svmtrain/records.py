"""`record`: a dataclass whose methods are closures, not source code compiled at import.

`@dataclass` writes `__init__`, `__repr__`, `__eq__` (and, when frozen, `__setattr__`,
`__delattr__` and `__hash__`) as source text and compiles each with `exec` when the class is
defined (Python 3.11 once per method, 3.13 once per class): the 24 dataclasses a `train` run
defines cost 30 ms of its 250 ms on pendigits on a slow machine, paid by every command of a
Makefile pipeline. `record` lets `dataclasses.dataclass` do what costs little (the fields, their
defaults and factories, `__match_args__`, the checks on mutable defaults; 0.2 ms a class) and
gives the class methods that read its field list when called: about 2 microseconds more per
instance, and records are made per chunk or per epoch, never per row or per example.

A record is a dataclass to everything that asks: `dataclasses.fields`, `replace`, `asdict` and
`is_dataclass` work on it, it pickles like one, and `inspect.signature` shows its fields. What
differs: `__dataclass_params__` says `frozen=False` for a frozen record (the methods that make it
frozen are these, not dataclasses'), and a frozen record may derive from a plain one.
"""

import dataclasses
import inspect
from dataclasses import MISSING, FrozenInstanceError

__all__ = ["record"]


def record(cls=None, /, *, frozen=False, eq=True):
    """@record, @record(frozen=True), @record(eq=False): as @dataclass with the same arguments."""
    def wrap(cls):
        return _make(cls, frozen, eq)
    return wrap if cls is None else wrap(cls)


class _Factory:
    """What a signature shows for a field's default_factory, as dataclasses' does."""
    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()


def _default_shown(f):
    if f.default is not MISSING:
        return f.default
    return inspect.Parameter.empty if f.default_factory is MISSING else _FACTORY


def _missing(names):
    """The end of the TypeError Python gives for these missing arguments."""
    quoted = [repr(n) for n in names]
    listed = quoted[0] if len(quoted) == 1 else (
        " and ".join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + ", and " + quoted[-1])
    return f"missing {len(names)} required positional argument{'s' * (len(names) > 1)}: {listed}"


def _field_hash(compared, qualname):
    def __hash__(self):
        return hash(tuple(getattr(self, n) for n in compared))
    __hash__.__qualname__ = f"{qualname}.__hash__"
    return __hash__


def _make(cls, frozen, eq):
    # dataclasses gives a class without a docstring one from inspect.signature(cls), which for a
    # class without its own __init__ parses object.__init__'s text signature with tokenize: its
    # regular expressions compile on first use (8 ms of a process). The docstring is written
    # below, from the signature of the __init__ made here, as @dataclass's would read
    undocumented = not cls.__dict__.get("__doc__")
    if undocumented:
        cls.__doc__ = cls.__name__
    cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False)
    every = dataclasses.fields(cls)
    fields = [f for f in every if f.init]
    names = tuple(f.name for f in fields)
    known = frozenset(names)
    # every field in order, so that the instance's __dict__ keeps the fields' order; a required
    # field's None and a factory's are overwritten below
    template = {f.name: None if f.default is MISSING else f.default for f in fields}
    factories = tuple((f.name, f.default_factory) for f in fields
                      if f.default is MISSING and f.default_factory is not MISSING)
    required = frozenset(f.name for f in fields if f.default is MISSING and f.default_factory is MISSING)
    compared = tuple(f.name for f in every if f.compare)
    shown = tuple(f.name for f in every if f.repr)
    post_init = getattr(cls, "__post_init__", None) is not None
    qualname = cls.__qualname__

    def __init__(self, *args, **kwargs):
        if args:
            if len(args) > len(names):
                takes = f"from {len(required) + 1} to " if len(required) < len(names) else ""
                raise TypeError(f"{qualname}.__init__() takes {takes}{len(names) + 1} positional "
                                f"arguments but {len(args) + 1} were given")
            for name, value in zip(names, args):
                if name in kwargs:
                    raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
                kwargs[name] = value
        if not known.issuperset(kwargs):
            name = next(n for n in kwargs if n not in known)
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {name!r}")
        if not required.issubset(kwargs):
            raise TypeError(f"{qualname}.__init__() "
                            + _missing([n for n in names if n in required and n not in kwargs]))
        # the instance's dict directly, as a frozen dataclass's __init__ sets its fields through
        # object.__setattr__: no field is a descriptor (dataclasses would not allow it either)
        values = self.__dict__
        values.update(template)
        for name, factory in factories:
            if name not in kwargs:
                values[name] = factory()
        values.update(kwargs)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{qualname}.__init__"
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=f.type,
                             default=_default_shown(f))
           for f in fields])
    cls.__init__ = __init__
    if undocumented:
        shown_signature = __init__.__signature__.replace(
            parameters=list(__init__.__signature__.parameters.values())[1:])
        cls.__doc__ = cls.__name__ + str(shown_signature)

    if "__repr__" not in cls.__dict__:
        def __repr__(self):
            return f"{type(self).__qualname__}(" \
                + ", ".join(f"{name}={getattr(self, name)!r}" for name in shown) + ")"
        __repr__.__qualname__ = f"{qualname}.__repr__"
        cls.__repr__ = __repr__

    if eq and "__eq__" not in cls.__dict__:
        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
        __eq__.__qualname__ = f"{qualname}.__eq__"
        cls.__eq__ = __eq__
        if "__hash__" not in cls.__dict__:
            # as @dataclass: a frozen record hashes its compared fields, a mutable one is unhashable
            cls.__hash__ = _field_hash(compared, qualname) if frozen else None

    if frozen:
        field_names = frozenset(f.name for f in every)

        def __setattr__(self, name, value):
            if type(self) is cls or name in field_names:
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self, name):
            if type(self) is cls or name in field_names:
                raise FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)
        cls.__setattr__, cls.__delattr__ = __setattr__, __delattr__
    return cls
