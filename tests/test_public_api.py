"""The names other code and users import from the top-level package."""

import evalcore


def test_lazy_exports_resolve():
    from evalcore.runner.config import EvalConfig
    from evalcore.pipeline import run_evaluation

    assert evalcore.EvalConfig is EvalConfig and evalcore.run_evaluation is run_evaluation
    for name in evalcore.__all__:
        assert getattr(evalcore, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError):
        evalcore.no_such_thing  # noqa: B018
