"""svmtrain.records.record against dataclasses.dataclass: the same class body decorated by each
behaves the same to everything a user of a record does with it."""

import copy
import dataclasses
import inspect
import pathlib
import pickle
from dataclasses import FrozenInstanceError, field

import pytest

from svmtrain.records import record


def _body(documented=True):
    class Options:
        C: float
        epsilon: float = 0.1
        labels: list = field(default_factory=list)
        name: str = field(default="x", repr=False, compare=False)

        def __post_init__(self):
            if self.C <= 0:
                raise ValueError("C must be positive")
    if documented:
        Options.__doc__ = "Some options."
    return Options


def _pair(documented=True, **params):
    return (dataclasses.dataclass(**params)(_body(documented)),
            record(**params)(_body(documented)))


def _outcome(call):
    try:
        return ("value", call())
    except Exception as e:                  # noqa: BLE001 - the kind and text are compared
        return (type(e).__name__, str(e).replace("_body.<locals>.", ""))


CALLS = [
    lambda cls: vars(cls(1.0)),
    lambda cls: vars(cls(2.0, 0.5, [1], "y")),
    lambda cls: vars(cls(C=3.0, name="z")),
    lambda cls: repr(cls(1.0, labels=[2])).replace("_body.<locals>.", ""),
    lambda cls: cls(1.0) == cls(1.0),
    lambda cls: cls(1.0, name="a") == cls(1.0, name="b"),   # not compared
    lambda cls: cls(1.0) == cls(2.0),
    lambda cls: cls(1.0).__eq__(object()),
    lambda cls: cls(1.0).labels is not cls(1.0).labels,     # a fresh list each time
    lambda cls: cls(),
    lambda cls: cls(1.0, 2.0, [], "n", 5),
    lambda cls: cls(labels=[]),
    lambda cls: cls(1.0, C=2.0),
    lambda cls: cls(1.0, gamma=2.0),
    lambda cls: cls(-1.0),                                   # __post_init__ ran
    lambda cls: [f.name for f in dataclasses.fields(cls)],
    lambda cls: dataclasses.asdict(cls(1.0, labels=[3])),
    lambda cls: vars(dataclasses.replace(cls(1.0, labels=[3]), epsilon=0.2)),
    lambda cls: vars(copy.deepcopy(cls(1.0, labels=[3]))),
    lambda cls: dataclasses.is_dataclass(cls),
    lambda cls: cls.__match_args__,
    lambda cls: cls.__doc__,
    lambda cls: str(inspect.signature(cls)).replace(" -> None", ""),
]


@pytest.mark.parametrize("params", [{}, {"frozen": True}, {"eq": False},
                                    {"documented": False}, {"documented": False, "frozen": True}])
def test_a_record_behaves_as_the_dataclass(params):
    for call in CALLS:
        expected, got = (_outcome(lambda: call(cls)) for cls in _pair(**params))
        assert got == expected


def test_an_undocumented_record_costs_no_signature_parsing(monkeypatch):
    """(dataclasses would read object.__init__'s text signature through tokenize, whose regular
    expressions compile on first use: 8 ms of a process)"""
    import inspect as inspect_module
    calls = []
    monkeypatch.setattr(inspect_module, "_signature_fromstr",
                        lambda *a, **k: calls.append(a) or pytest.fail("parsed a text signature"))
    cls = record(_body(documented=False))
    assert cls.__doc__.startswith("Options(C: float, epsilon: float = 0.1") and not calls


def test_argument_errors_say_what_python_says():
    def body():
        class Required:
            a: int
            b: int
            c: int
        return Required
    plain, ours = dataclasses.dataclass(body()), record(body())
    for args in [(), (1,), (1, 2), (1, 2, 3, 4)]:
        assert _outcome(lambda: ours(*args)) == _outcome(lambda: plain(*args))


def test_hash_and_frozen():
    mutable, frozen = record(_body()), record(frozen=True)(_body())
    with pytest.raises(TypeError):
        hash(mutable(1.0))
    a = frozen(1.0, labels=(1,))
    assert hash(a) == hash(frozen(1.0, labels=(1,))) and {a: 1}[frozen(1.0, labels=(1,))] == 1
    with pytest.raises(FrozenInstanceError):
        a.C = 2.0
    with pytest.raises(FrozenInstanceError):
        a.other = 2.0
    with pytest.raises(FrozenInstanceError):
        del a.C
    assert a.C == 1.0
    plain = record(eq=False)(_body())(1.0)
    assert hash(plain) == object.__hash__(plain) and plain != record(eq=False)(_body())(1.0)


def test_the_library_records_pickle():
    """Records go to Dask workers and into checkpoints by pickle."""
    from svmtrain.options import Dask, Problem
    problem = Problem(task="multiclass", C=0.5, seed=7)
    assert pickle.loads(pickle.dumps(problem)) == problem
    with pytest.raises(FrozenInstanceError):
        problem.C = 1.0
    assert vars(pickle.loads(pickle.dumps(Dask()))) == vars(Dask())


def test_inherited_fields():
    @record
    class Base:
        a: int
        b: int = 2


    @record(frozen=True)
    class Child(Base):
        c: int = 3

    x = Child(1, c=4)
    assert (x.a, x.b, x.c) == (1, 2, 4) and repr(x).endswith("Child(a=1, b=2, c=4)")
    assert x != Base(1, 2) and Child(1, 2, 4) == x
    with pytest.raises(FrozenInstanceError):
        x.a = 5


def test_svmtrain_defines_no_dataclass():
    """Every record in svmtrain is a `record`: a @dataclass would bring back its exec'd methods
    (30 ms of a train run's start-up for 24 classes)."""
    root = pathlib.Path(__file__).resolve().parents[1] / "svmtrain"
    using = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if p.name != "records.py" and "@dataclass" in p.read_text()]
    assert using == []
