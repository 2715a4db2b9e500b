"""What each quadrature rule's program is made of, as an accelerator runs it (lanes vmapped whole).

On an H100 a Gauss–Hermite call cost about the same whatever its lanes
(5.3 ms with 16,384 lanes, 6.5 with 1024): its cost is not its arithmetic.
This prints, for each rule's program compiled on the machine it runs on:

- ``loops``: each while loop XLA left in the program, with its trip count where
  XLA knows it (None where it depends on the data: a Newton search until it
  stops moving), and ``trips``, the known trips of one call (inner loops
  counted once per outer trip, a loop of unknown trips as one). On a GPU
  XLA runs a loop of known trips by launching its body that many times
  from the host without waiting (``WhileThunk`` with a trip count); at each
  trip of any other loop the host copies the condition back and waits;
- ``kernels``: the kernels one call launches, each loop's body and condition
  counted once per trip (a loop of unknown trips as one): the fusions and
  other instructions XLA left outside fusions. A fusion is one kernel on a
  GPU, so on a GPU this counts its launches; on CPU, where it is counted
  from XLA's CPU fusions, it only approximates them;
- XLA's cost analysis a lane: flops, transcendentals and bytes accessed, each
  loop body counted once (so a lower bound where loops do real work);
- the program's scratch memory a lane, and how long it took to compile.

``python scripts/quadrature_programs.py --lanes 1024`` writes
``benchmarks/results/quadrature-programs-<device>-<time>.json``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import NamedTuple

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from result_record import provenance, write_record  # noqa: E402 - beside this script

from binmetric_sweep.kernels.counts import Counts  # noqa: E402
from binmetric_sweep.kernels.gauss_hermite import AlphaTRule, LaplaceRule  # noqa: E402
from binmetric_sweep.kernels.quadrature import HermiteTRule, QuadratureRule  # noqa: E402
from binmetric_sweep.kernels.t_outer import TOuterRule  # noqa: E402
from binmetric_sweep.sweep.fits import (  # noqa: E402
    _alpha_t_fn,
    _hermite_t_fn,
    _laplace_fn,
    _quadrature_fn,
    _t_outer_fn,
)

LEVEL = 0.95

#: Each rule's program as the driver builds it on an accelerator (no groups:
#: lanes vmapped whole), with its default settings; the factories are
#: sweep.fits' own, so this reads the programs the driver runs.
PROGRAMS = {
    "gauss_hermite_logit": lambda: _laplace_fn(False, LEVEL, LaplaceRule()),
    "gauss_hermite_ridge": lambda: _laplace_fn(True, LEVEL, LaplaceRule()),
    "hermite_alpha_t": lambda: _alpha_t_fn(LEVEL, QuadratureRule(), AlphaTRule(), None),
    "t_outer": lambda: _t_outer_fn(LEVEL, TOuterRule(), None),
    "hermite_t": lambda: _hermite_t_fn(LEVEL, QuadratureRule(), HermiteTRule(), None, False),
    "hermite_t_exact_s": lambda: _hermite_t_fn(LEVEL, QuadratureRule(), HermiteTRule(), None, True),
    "nested": lambda: _quadrature_fn("full", LEVEL, QuadratureRule(), None, False),
    "nested_exact_s": lambda: _quadrature_fn("full", LEVEL, QuadratureRule(), None, True),
}

_HEADER = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$")
#: An instruction's opcode: the first ``name(`` after its ``=`` and result shape.
_OPCODE = re.compile(r"=\s.*?\s([a-z][a-z0-9\-]*)\(")
_WHILE = re.compile(r"condition=%?([\w.\-]+), body=%?([\w.\-]+)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
#: The computations a call or conditional runs (not a fusion's or a reduction's).
_RUNS = re.compile(
    r"(?:to_apply=|_computation=|branch_computations=\{)%?([\w.\-]+(?:, %[\w.\-]+)*)"
)
#: Instructions that launch nothing: they name, pack or unpack buffers.
_NO_KERNEL = frozenset({"parameter", "get-tuple-element", "tuple", "constant", "bitcast"})


class Loops(NamedTuple):
    """The while loops of compiled HLO text, and what runs what.

    Attributes:
        loops: per computation, its while loops' (condition, body, known trips or None).
        calls: per computation, the computations its call and conditional
            instructions run (control flow; not the bodies of fusions).
        kernels: per computation, its instructions that launch a kernel of
            their own (anything but a loop, a call, a conditional, or one that
            only names buffers; a conditional's own predicate counts one).
        entry: the entry computation's name.
    """

    loops: dict[str, list[tuple[str, str, int | None]]]
    calls: dict[str, list[str]]
    kernels: dict[str, int]
    entry: str


def while_loops(hlo: str) -> Loops:
    """The while loops of compiled HLO text (a ``Compiled.as_text()``)."""
    loops: dict[str, list[tuple[str, str, int | None]]] = {}
    calls: dict[str, list[str]] = {}
    kernels: dict[str, int] = {}
    computation = entry = None
    for line in hlo.splitlines():
        header = _HEADER.match(line)
        if header:
            computation = header.group(1)
            entry = computation if line.startswith("ENTRY") else entry
            continue
        opcode = _OPCODE.search(line) if computation is not None else None
        if opcode is None:
            continue
        op = opcode.group(1)
        if op == "while":
            found = _WHILE.search(line)
            trips = _TRIPS.search(line)
            loops.setdefault(computation, []).append(
                (found.group(1), found.group(2), int(trips.group(1)) if trips else None)
            )
        elif op in ("call", "conditional"):
            for names in _RUNS.findall(line):
                calls.setdefault(computation, []).extend(n.lstrip("%") for n in names.split(", "))
            kernels[computation] = kernels.get(computation, 0) + (op == "conditional")
        elif op not in _NO_KERNEL:
            kernels[computation] = kernels.get(computation, 0) + 1
    return Loops(loops, calls, kernels, entry)


def known_trips(program: Loops, computation: str | None = None) -> int:
    """Loop trips one run of ``computation`` (by default the entry) makes.

    A loop inside another counts once per outer trip, a loop of unknown trips
    as one trip; loops in called computations count where they are called.
    """
    return _tally(program, computation or program.entry, lambda _: 0, 1)


def kernels_a_call(program: Loops, computation: str | None = None) -> int:
    """Kernels one run of ``computation`` (by default the entry) launches.

    Each loop's body and condition count once per trip (a loop of unknown
    trips as one trip); a conditional counts every branch (an upper bound).
    """
    return _tally(program, computation or program.entry, lambda c: program.kernels.get(c, 0), 0)


def _tally(program: Loops, computation: str, own, per_trip: int) -> int:
    """``own(c)`` summed over a run of ``computation`` and all it runs, plus ``per_trip`` a trip.

    Called computations count where they are called, a loop's body and
    condition once a trip (a loop of unknown trips as one trip).
    """
    total = own(computation)
    for callee in program.calls.get(computation, []):
        total += _tally(program, callee, own, per_trip)
    for condition, body, trips in program.loops.get(computation, []):
        inner = _tally(program, body, own, per_trip) + _tally(program, condition, own, per_trip)
        total += (trips or 1) * (per_trip + inner)
    return total


def anatomy(program, lanes: int) -> dict:
    """The loops, costs and memory of ``program`` (a :data:`PROGRAMS` factory's) at ``lanes``."""
    zeros = Counts(
        **{f: jnp.zeros(lanes, bool if f == "rho_eta_known" else float) for f in Counts._fields}
    )
    lowered = program.lower(zeros)
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - start
    hlo = compiled.as_text()
    program = while_loops(hlo)
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    memory = compiled.memory_analysis()
    return {
        "compile_s": round(compile_s, 2),
        "loops": [trips for found in program.loops.values() for _, _, trips in found],
        "trips": known_trips(program),
        "kernels": kernels_a_call(program),
        "per_lane": {
            key: cost[key] / lanes
            for key in ("flops", "transcendentals", "bytes accessed")
            if key in cost
        },
        "scratch_bytes_per_lane": memory.temp_size_in_bytes / lanes if memory else None,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=1024)
    parser.add_argument("--rules", nargs="+", choices=sorted(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    result = {**provenance("quadrature_programs.py", argv), "lanes": args.lanes, "programs": {}}
    for rule in args.rules:
        result["programs"][rule] = anatomy(PROGRAMS[rule](), args.lanes)
        print(rule, result["programs"][rule], flush=True)
    path = write_record(result, args.out, f"quadrature-programs-{jax.devices()[0].platform}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
