"""Make ``ansible_collections.hpc.slurm_gres`` and the shared test helpers importable from a plain checkout."""
import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
COLLECTIONS = os.path.join(ROOT, ".cache", "collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "hpc", "slurm_gres")
if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    try:
        os.symlink(ROOT, LINK)
    except FileExistsError:  # another pytest-xdist worker made it first
        pass
# helpers/ (fixture loaders, paths), emulator/ (fake sysfs, emulated nvidia-smi machines), integration/ (oracles)
for path in (COLLECTIONS, os.path.join(TESTS, "helpers"), os.path.join(TESTS, "emulator"),
             os.path.join(TESTS, "integration")):
    if path not in sys.path:
        sys.path.insert(0, path)

try:  # hypothesis profiles for the property tests: HYPOTHESIS_PROFILE=dev for a long local run
    from hypothesis import HealthCheck, Phase, settings

    # ci: the same examples every run, and no shrinking (on a shared 2-core machine it can take minutes).
    settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True,
                              phases=[Phase.explicit, Phase.reuse, Phase.generate],
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.register_profile("dev", deadline=None, print_blob=True,
                              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # pragma: no cover - hypothesis is in requirements.txt
    pass


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ansible_core: where ansible-core itself takes part (argument specs, AnsiballZ, check mode, "
        "failures, inventories, templating, playbooks); `make test` reruns these on the lowest ansible-core "
        "meta/runtime.yml admits (scripts/compat.sh --min), `make compat` runs everything on every version")
