"""Random mutations of a valid JSON document for the fuzz tests (Hypothesis): a value
replaced by one of the wrong type or of an extreme size, a key deleted or added, a list
emptied or grown, a value nested deeply.  ``mutated(document, data)`` draws from a
Hypothesis ``st.data()``, so a failing case shrinks and is replayed by its seed."""
from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import strategies as st

#: Values of the wrong type or of an extreme size that a field may receive
ODD_VALUES = [None, True, False, 0, -1, 1, 2**31, 2**63, 10**400, 0.0, -0.0, 1e-320, 1e308,
              -1e308, 1.7976931348623157e308, math.nan, math.inf, -math.inf, "", "x", "NaN",
              "1e308", "ground", "ground.O", "a.b.c", "\n", "=cmd|' /C calc'!A0", "\u202e",
              "x" * 10_000, [], [0], [0, 0], [0, 0, 0], [[0, 0, 0]] * 3, [None] * 3,
              ["a", "b"], [1e308] * 3, {}, {"type": "x"}, {"": 0}]


def deeply_nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _places(doc: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value of ``doc``, the document itself included (not inside what a
    mutation nested deeply)."""
    out = [path]
    if len(path) > 40:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _places(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _places(v, path + (i,))
    return out


def _parent(doc: Any, path: tuple) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _leaf_values() -> st.SearchStrategy:
    return st.one_of(
        st.sampled_from(ODD_VALUES).map(copy.deepcopy),   # fresh: later mutations edit it
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.text(max_size=12),
    )


def mutated(document: Any, data, max_mutations: int = 3) -> tuple[Any, list[str]]:
    """A copy of ``document`` with 1 to ``max_mutations`` random mutations, and what was
    done (for the failure message)."""
    doc = copy.deepcopy(document)
    done = []
    for _ in range(data.draw(st.integers(1, max_mutations), label="mutations")):
        places = _places(doc)
        path = data.draw(st.sampled_from(places), label="where")
        op = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add",
                                        "nest", "duplicate"]), label="operation")
        if not path:                               # the document itself
            if op == "replace":
                doc = data.draw(_leaf_values(), label="document")
                done.append(f"document = {doc!r:.60}")
            continue
        parent, key = _parent(doc, path), path[-1]
        if op == "replace":
            parent[key] = data.draw(_leaf_values(), label="value")
            done.append(f"{path} = {parent[key]!r:.60}")
        elif op == "delete":
            del parent[key]
            done.append(f"del {path}")
        elif op == "add" and isinstance(parent, dict):
            name = data.draw(st.text(max_size=8), label="key")
            parent[name] = data.draw(_leaf_values(), label="value")
            done.append(f"{path[:-1]} + {name!r}")
        elif op == "nest":
            depth = data.draw(st.sampled_from([2, 50, 5000]), label="depth")
            parent[key] = deeply_nested(depth)
            done.append(f"{path} nested {depth} deep")
        elif op == "duplicate" and isinstance(parent, list):
            try:
                parent.append(copy.deepcopy(parent[key]))
            except RecursionError:          # a deep nest: shared (no later edit reaches it)
                parent.append(parent[key])
            done.append(f"{path} appended again")
    return doc, done
