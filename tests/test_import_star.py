"""``from admixspec import *`` exposes exactly the documented public API."""


def test_import_star__exports_every_name_in_all():
    namespace: dict = {}
    exec("from admixspec import *", namespace)
    import admixspec

    for name in admixspec.__all__:
        assert name in namespace, name
        assert getattr(admixspec, name) is namespace[name]


def test_top_level__holds_what_users_call_not_the_papers_baselines():
    import admixspec
    from admixspec.ml import refine
    from admixspec.spectral import binary_latent

    internal = {"fit_als", "fit_oracle", "wls_step", "w_error", "simulate_binary_latent"}
    for name in internal:
        assert name not in admixspec.__all__ and hasattr(binary_latent, name), name
    for name in ("format_iteration", "format_summary"):
        assert name not in admixspec.__all__ and hasattr(refine, name), name
