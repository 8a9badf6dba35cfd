"""The MIG GRES Type naming rule and its inverse (plugins/module_utils/mig/gres_type.py)."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import (
    mig_gres_type,
    mig_gres_types,
    mig_type_fits,
)


def test_the_type_is_the_normalized_profile_with_media_extensions_kept():
    assert mig_gres_type("a100", "3g.40gb") == "3g.40gb"
    assert mig_gres_type("h100", "MIG 1g.10gb+me") == "1g.10gb+me"
    assert mig_gres_type(None, "1G.10GB") == "1g.10gb"


def test_counts_per_type_in_natural_order():
    assert mig_gres_types(["3g.40gb", "1g.10gb", "MIG 1g.10gb", "2g.20gb", "1g.10gb+me", "10g.100gb"], "a100") == {
        "1g.10gb": 2, "1g.10gb+me": 1, "2g.20gb": 1, "3g.40gb": 1, "10g.100gb": 1}
    assert list(mig_gres_types(["7g.141gb", "1g.18gb"])) == ["1g.18gb", "7g.141gb"]


def test_the_inverse_matches_a_live_device_by_its_profile_or_gpu_instance_profile():
    device = {"profile": "1c.3g.40gb", "gi_profile": "3g.40gb"}
    assert mig_type_fits("3g.40gb", device)
    assert mig_type_fits("1C.3G.40GB", device)
    assert not mig_type_fits("2g.20gb", device)
    # a +me instance is its own type: a plain 1g.10gb job never lands on it
    assert not mig_type_fits("1g.10gb", {"profile": "1g.10gb+me", "gi_profile": "1g.10gb+me"})
    for profile in ("1g.10gb", "1g.10gb+me", "3g.40gb"):
        assert mig_type_fits(mig_gres_type("a100", profile), {"profile": "MIG " + profile})
