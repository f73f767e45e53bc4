"""``from admixspec import *`` exposes exactly the documented public API."""


def test_import_star__exports_every_name_in_all():
    namespace: dict = {}
    exec("from admixspec import *", namespace)
    import admixspec

    for name in admixspec.__all__:
        assert name in namespace, name
        assert getattr(admixspec, name) is namespace[name]
