"""How the components of a system are coupled, in the flat numbers the master steps
with (:class:`Coupling`): where each component's outputs and inputs sit in the coupling
vectors, which output feeds which input, the order in which outputs are read and
inputs set at a communication point (direct feedthrough first; an algebraic loop is
refused), and the default Gauss–Seidel order."""

from __future__ import annotations

import heapq
from typing import Sequence

from fmu.cosim.errors import AlgebraicLoopError
from fmu.cosim.system import System

__all__ = ["Coupling"]


class Coupling:
    """The coupling of ``system``'s components, fixed when the master is made.

    Global output ``g = out_off[i] + j`` is output ``j`` of component ``i``, global input
    likewise; the coupling vectors of a run (``y`` every output, ``u`` every input) and
    its recorded rows (time, outputs, inputs) use these numbers.

    Attributes
    ----------
    components : list of Component
        The system's components (its list), in its order.
    index : dict of str to int
        Component name -> position.
    out_off, in_off : list of int
        Global number of each component's first output and first input.
    n_out, n_in : int
        Number of outputs and of inputs.
    out_names, in_names : list of str
        ``"component.variable"`` of every global output and input.
    out_comp : list of int
        The component of every global output.
    src : list of int
        Global input -> the global output feeding it, -1 if unconnected.
    output_order : list of int
        Global outputs, each after those it depends on through direct feedthrough.
    schedule : list of (int, list of int, list of int)
        Propagation at a communication point: per group of a component's outputs in
        ``output_order``, (component, connected feedthrough inputs set first, outputs
        read).
    final_inputs : list of (int, list of int)
        The other connected inputs, set at the end of the propagation, per component.

    Raises
    ------
    AlgebraicLoopError
        Outputs that depend on themselves through direct feedthrough.
    """

    def __init__(self, system: System):
        comps = self.components = system.components
        self.index = {c.name: i for i, c in enumerate(comps)}
        self.out_off: list[int] = []
        self.in_off: list[int] = []
        no = ni = 0
        for c in comps:
            self.out_off.append(no)
            self.in_off.append(ni)
            no += len(c.outputs)
            ni += len(c.inputs)
        self.n_out, self.n_in = no, ni
        self.out_names = [f"{c.name}.{o}" for c in comps for o in c.outputs]
        self.in_names = [f"{c.name}.{i}" for c in comps for i in c.inputs]
        self.out_comp = [i for i, c in enumerate(comps) for _ in c.outputs]
        out_index = {n: g for g, n in enumerate(self.out_names)}
        in_index = {n: g for g, n in enumerate(self.in_names)}
        self.src = [-1] * ni
        for dst, src in system.connections.items():
            self.src[in_index[dst]] = out_index[src]
        self.output_order = self._output_order()
        self.schedule, self.final_inputs = self._build_schedule()

    @property
    def columns(self) -> list[str]:
        """The recorded columns: ``"time"``, then every output, then every input."""
        return ["time"] + self.out_names + self.in_names

    def units(self) -> dict[str, str]:
        """Column -> unit."""
        units = {}
        for c in self.components:
            for v in (*c.outputs, *c.inputs):
                units[f"{c.name}.{v}"] = c.units.get(v, "")
        units["time"] = "s"
        return units

    def _output_preds(self) -> list[list[tuple[int, int]]]:
        """For each global output: (global output, global input) pairs it depends on directly."""
        preds: list[list[tuple[int, int]]] = []
        for i, c in enumerate(self.components):
            for o in c.outputs:
                p = []
                for inp in c.feedthrough.get(o, ()):
                    gi = self.in_off[i] + c.inputs.index(inp)
                    if self.src[gi] >= 0:
                        p.append((self.src[gi], gi))
                preds.append(p)
        return preds

    def _output_order(self) -> list[int]:
        """Global outputs in an order where every output follows those it depends on."""
        preds = self._output_preds()
        succ: list[list[int]] = [[] for _ in preds]
        indeg = [0] * len(preds)
        for g, p in enumerate(preds):
            for s, _ in p:
                succ[s].append(g)
                indeg[g] += 1
        # Lowest global index first: keeps the outputs of one component together.
        ready = [g for g, d in enumerate(indeg) if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            g = heapq.heappop(ready)
            order.append(g)
            for s in succ[g]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(ready, s)
        if len(order) < len(preds):
            raise self._loop_error(preds, [g for g, d in enumerate(indeg) if d > 0])
        return order

    def _loop_error(self, preds, stuck: list[int]) -> AlgebraicLoopError:
        # Walk backwards along dependencies inside the stuck set until a node repeats.
        stuck_set = set(stuck)
        path, seen = [stuck[0]], {stuck[0]: 0}
        via: list[int] = []
        while True:
            g = path[-1]
            s, gi = next((s, gi) for s, gi in preds[g] if s in stuck_set)
            if s in seen:
                start = seen[s]
                outs = path[start:] + [s]
                ins = via[start:] + [gi]
                break
            seen[s] = len(path)
            path.append(s)
            via.append(gi)
        # path follows dependencies backwards; print it in signal-flow direction
        outs, ins = outs[::-1], ins[::-1]
        chain = [self.out_names[outs[0]]]
        for g_in, g_out in zip(ins, outs[1:]):
            chain += [self.in_names[g_in], self.out_names[g_out]]
        comps = list(dict.fromkeys(n.partition(".")[0] for n in chain))
        return AlgebraicLoopError(
            f"algebraic loop through direct feedthrough between components "
            f"{', '.join(map(repr, comps))}: {' -> '.join(chain)}; break it with a component "
            "whose output does not depend directly on its input (a delay or a plant)", chain)

    def _build_schedule(self) -> tuple[list, list]:
        """Propagation at a communication point: [(component, inputs set, outputs read)],
        and the inputs set at the end [(component, inputs)].

        Consecutive outputs of one component in topological order form one group:
        first the feedthrough inputs of the group are set (their sources are final),
        then the component's outputs are read.  The remaining connected inputs are
        set at the end.
        """
        comps = self.components
        groups: list[tuple[int, list[int]]] = []
        for g in self.output_order:
            i = self.out_comp[g]
            if groups and groups[-1][0] == i:
                groups[-1][1].append(g)
            else:
                groups.append((i, [g]))
        done: set[int] = set()
        schedule = []
        for i, gs in groups:
            c = comps[i]
            need = []
            for g in gs:
                o = c.outputs[g - self.out_off[i]]
                for inp in c.feedthrough.get(o, ()):
                    gi = self.in_off[i] + c.inputs.index(inp)
                    if self.src[gi] >= 0 and gi not in done:
                        done.add(gi)
                        need.append(gi)
            schedule.append((i, need, gs))
        rest: dict[int, list[int]] = {}
        for gi, s in enumerate(self.src):
            if s >= 0 and gi not in done:
                rest.setdefault(self._in_comp(gi), []).append(gi)
        return schedule, sorted(rest.items())

    def _in_comp(self, gi: int) -> int:
        return next(i for i in range(len(self.in_off) - 1, -1, -1) if self.in_off[i] <= gi)

    def default_order(self) -> list[str]:
        """Gauss–Seidel order: sources before their consumers, cycles broken at plants.

        Kahn's algorithm on the component graph of all connections.  When only
        cycles remain, the first remaining component (in system order) whose outputs
        have no direct feedthrough steps next: its new outputs do not need fresh
        inputs, so the components it feeds can use them.
        """
        comps = self.components
        n = len(comps)
        preds = [set() for _ in range(n)]
        for gi, s in enumerate(self.src):
            if s >= 0:
                a, b = self.out_comp[s], self._in_comp(gi)
                if a != b:
                    preds[b].add(a)
        left = list(range(n))
        order: list[int] = []
        while left:
            placed = set(order)
            ready = [i for i in left if preds[i] <= placed]
            if not ready:
                ready = [i for i in left if not any(comps[i].feedthrough.values())] or left
            order.append(ready[0])
            left.remove(ready[0])
        return [comps[i].name for i in order]

    def step_inputs(self, order: Sequence[str],
                    gauss_seidel: bool) -> list[tuple[int, list[int], list[int]]]:
        """Per component in stepping order: (index, fresh inputs, stale inputs).

        Fresh: connected inputs whose source stepped before (Gauss-Seidel only); stale:
        the other connected inputs, which hold (or extrapolate) the values of the
        communication point.
        """
        comps = self.components
        stepped: set[int] = set()
        out = []
        for name in order:
            i = self.index[name]
            fresh, stale = [], []
            for j in range(len(comps[i].inputs)):
                gi = self.in_off[i] + j
                s = self.src[gi]
                if s >= 0:
                    (fresh if self.out_comp[s] in stepped else stale).append(gi)
            out.append((i, fresh, stale))
            if gauss_seidel:
                stepped.add(i)
        return out
