# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health check's library as the deploy ships it: this collection's own module_utils files (controller only)."""
import functools
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.program import PROGRAM_FILES, library_digest

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@functools.lru_cache(maxsize=1)
def library():
    """``({relative path: text}, sha256)`` of :data:`PROGRAM_FILES`, read once from this collection."""
    files = {}
    for rel in PROGRAM_FILES:
        with open(os.path.join(COLLECTION_ROOT, rel), encoding="utf-8") as handle:
            files[rel] = handle.read()
    return files, library_digest(files)


def deploy_health(health):
    """The render result's ``health``: the model's settings plus the library's digest (the files themselves are
    read again where they are installed, so they never travel through a fact)."""
    return dict(health, library_sha256=library()[1])
