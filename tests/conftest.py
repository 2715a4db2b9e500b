"""Test-wide settings.

- The kernels are checked in float64, as the runner uses them.
- One persistent XLA compilation cache for the whole session, shared through
  the environment with the subprocesses (CLI runs, killed drivers) and Ray
  workers the tests start, and with the other xdist workers: each compiles
  nothing another has compiled.
  A cached executable is the same program, so results stay bit-identical.
- Under pytest-xdist (the default: ``-n 2`` in ``pyproject.toml``) a
  module's tests stay on one worker, so its module-scoped fixtures (a NUTS
  fit of 212 lanes, a reference sweep) are computed once, and the modules
  that start Ray run one after another on one worker, so that no test sees
  another's instance (:func:`pytest_xdist_make_scheduler`).
"""

import gc
import os
import pathlib
import shutil
import tempfile

import pytest

# xdist workers take the directory of the process that started them (the
# controller, which sets it before they start and removes it when all are done).
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("BINMETRIC_SWEEP_TEST_XLA_CACHE"):
    _CACHE = os.environ["BINMETRIC_SWEEP_TEST_XLA_CACHE"]
else:
    _CACHE = tempfile.mkdtemp(prefix="binmetric-sweep-xla-")
os.environ["BINMETRIC_SWEEP_TEST_XLA_CACHE"] = _CACHE
os.environ["JAX_COMPILATION_CACHE_DIR"] = _CACHE
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

import jax  # noqa: E402 - after the cache settings, which jax reads at import

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


#: Modules that start a Ray instance (or a Ray-backed CLI run).
_RAY_MODULES = ("test_ray", "test_ray_faults", "test_ray_local", "test_examples_ray")


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown, and unused, without xdist
def pytest_xdist_make_scheduler(config, log):
    """Each test module whole on one worker, and the modules that start Ray together.

    A runner given no address joins a Ray instance already on the machine (a
    ``ray.cluster_utils.Cluster`` announces its own), so two such modules at
    once on two workers would see each other's instances.
    """
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "ray" if pathlib.PurePath(module).stem in _RAY_MODULES else module

        def remove_node(self, node):
            # xdist 3.8 puts a crashed worker's finished modules back in the queue too; a
            # replacement worker is then sent an empty one it never completes, and the run
            # waits forever (pytest-dev/pytest-xdist#1313). Only unfinished modules go back.
            workload = self.assigned_work.get(node, {})
            for scope in [scope for scope, unit in workload.items() if all(unit.values())]:
                del workload[scope]
            return super().remove_node(node)

        def _reschedule(self, node):
            # A replacement worker is a node from its workerready on, but has no collection
            # until its collectionfinish. xdist 3.8 hands it work anyway: the unit leaves
            # the queue, indexing the missing collection raises KeyError, and
            # worker_errordown swallows it, so the unit is assigned but never sent (and
            # the run ends in an internal error). Its collectionfinish schedules it.
            if node in self.registered_collections:
                super()._reschedule(node)

    return ModuleScheduling(config, log)


@pytest.fixture(scope="module", autouse=True)
def _compiled_programs_freed_after_each_module():
    """Drop JAX's compiled programs once a module is done (the next module that needs one
    loads it from the session's persistent cache).

    Every compiled CPU executable holds memory maps of its code, and a worker that ran
    half the suite held tens of thousands: at the kernel's limit (vm.max_map_count,
    65,530 here) the next compile or load crashes the worker. Measured: the two arena
    modules alone add about 8,000 maps, and clearing the caches after them frees 5,700.
    """
    yield
    jax.clear_caches()
    gc.collect()


def pytest_sessionfinish(session, exitstatus):
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller, or a run without xdist
        shutil.rmtree(_CACHE, ignore_errors=True)
