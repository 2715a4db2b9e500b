"""The census of a program's loops (scripts/quadrature_programs.py)."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from quadrature_programs import (  # noqa: E402
    PROGRAMS,
    anatomy,
    kernels_a_call,
    known_trips,
    while_loops,
)


def test_loops_are_found_with_their_trips_and_inner_loops_count_per_outer_trip():
    def program(x):
        def outer(_, y):
            inner = jax.lax.fori_loop(0, 7, lambda _, z: jnp.sin(z) + y, y)
            return jnp.cos(inner) * y

        y = jax.lax.fori_loop(0, 3, outer, x)
        # A data-dependent loop: XLA cannot know its trips.
        return jax.lax.while_loop(lambda z: jnp.sum(z) < 100.0, lambda z: z * 2.0 + 1.0, y)

    hlo = jax.jit(program).lower(jnp.ones(5)).compile().as_text()
    found = while_loops(hlo)
    trips = sorted((n or 0) for loops in found.loops.values() for *_, n in loops)
    assert trips == [0, 3, 7]  # 0: unknown
    # 3 outer trips, each with 7 inner ones, and the unknown loop counted as one trip.
    assert known_trips(found) == 3 * (1 + 7) + 1


#: Compiled HLO as XLA on CPU writes it (shapes, layouts and metadata trimmed): a loop of 3
#: trips inside a call, whose body calls a loop of 7 trips and a conditional,
#: then a loop of unknown trips.
_HLO = """
%fused_computation (param_0: f32[5]) -> f32[5] {
  %param_0 = f32[5]{0} parameter(0)
  ROOT %sine = f32[5]{0} sine(%param_0)
}

%ib (arg: (s32[], f32[5])) -> (s32[], f32[5]) {
  %arg = (s32[], f32[5]) parameter(0)
  %gte = f32[5]{0} get-tuple-element(%arg), index=1
  %sine_fusion = f32[5]{0} fusion(%gte), kind=kLoop, calls=%fused_computation
  %add_fusion = s32[] fusion(%gte), kind=kLoop, calls=%fused_computation
  ROOT %tuple = (s32[], f32[5]) tuple(%add_fusion, %sine_fusion)
}

%ic (arg: (s32[], f32[5])) -> pred[] {
  %arg = (s32[], f32[5]) parameter(0)
  ROOT %compare_fusion = pred[] fusion(%arg), kind=kLoop, calls=%fused_computation
}

%inner (t: (s32[], f32[5])) -> (s32[], f32[5]) {
  %t = (s32[], f32[5]) parameter(0)
  ROOT %w1 = s32[] while(%t), condition=%ic, body=%ib, backend_config={"known_trip_count":{"n":"7"}}
}

%ba (p: f32[5]) -> f32[5] {
  %p = f32[5]{0} parameter(0)
  ROOT %a = f32[5]{0} fusion(%p), kind=kLoop, calls=%fused_computation
}

%bb (p: f32[5]) -> f32[5] {
  %p = f32[5]{0} parameter(0)
  %b1 = f32[5]{0} fusion(%p), kind=kLoop, calls=%fused_computation
  ROOT %b2 = f32[5]{0} fusion(%b1), kind=kLoop, calls=%fused_computation
}

%ob (arg: (s32[], f32[5])) -> (s32[], f32[5]) {
  %arg = (s32[], f32[5]) parameter(0)
  %copy.1 = f32[5]{0} copy(%arg)
  %call = (s32[], f32[5]) call(%arg), to_apply=%inner
  %gte = f32[5]{0} get-tuple-element(%call), index=1
  %cond = f32[5]{0} conditional(%gte, %gte, %gte), true_computation=%ba, false_computation=%bb
  ROOT %tuple = (s32[], f32[5]) tuple(%copy.1, %cond)
}

%oc (arg: (s32[], f32[5])) -> pred[] {
  %arg = (s32[], f32[5]) parameter(0)
  ROOT %compare_fusion = pred[] fusion(%arg), kind=kLoop, calls=%fused_computation
}

%outer (t: (s32[], f32[5])) -> (s32[], f32[5]) {
  %t = (s32[], f32[5]) parameter(0)
  ROOT %w2 = s32[] while(%t), condition=%oc, body=%ob, backend_config={"known_trip_count":{"n":"3"}}
}

%sb (x: f32[5]) -> f32[5] {
  %x = f32[5]{0} parameter(0)
  ROOT %step = f32[5]{0} fusion(%x), kind=kLoop, calls=%fused_computation
}

%sc (x: f32[5]) -> pred[] {
  %x = f32[5]{0} parameter(0)
  ROOT %more = pred[] fusion(%x), kind=kLoop, calls=%fused_computation
}

ENTRY %main (x: f32[5]) -> f32[5] {
  %x = f32[5]{0} parameter(0)
  %constant = s32[] constant(0)
  %copy.2 = f32[5]{0} copy(%x)
  %tuple = (s32[], f32[5]) tuple(%constant, %copy.2)
  %call.1 = (s32[], f32[5]) call(%tuple), to_apply=%outer
  %gte = f32[5]{0} get-tuple-element(%call.1), index=1
  ROOT %while.3 = f32[5]{0} while(%gte), condition=%sc, body=%sb
}
"""


def test_kernels_a_call_count_each_loop_body_once_per_trip():
    found = while_loops(_HLO)
    assert found.entry == "main"
    assert found.calls == {
        "main": ["outer"],
        "ob": ["inner", "ba", "bb"],
    }
    assert known_trips(found) == 3 * (1 + 7) + 1
    inner = 7 * (2 + 1)  # the body's two fusions and the condition's one, 7 times
    outer_body = 1 + inner + 1 + (1 + 2)  # copy, inner loop, the conditional, both branches
    assert kernels_a_call(found) == 1 + 3 * (outer_body + 1) + (1 + 1)


def test_a_rule_s_anatomy_names_its_quantile_loops_and_its_costs():
    found = anatomy(PROGRAMS["nested_exact_s"](), 8)
    # The interval's two ends, Newton within a bracket, searched in one loop: on an
    # accelerator each trip launches the body's kernels, so two loops cost twice.
    assert found["loops"].count(16) == 1
    assert found["trips"] >= 16
    assert found["kernels"] > found["trips"]  # every trip runs at least one kernel
    assert set(found["per_lane"]) >= {"flops", "transcendentals", "bytes accessed"}
    assert found["scratch_bytes_per_lane"] > 0
