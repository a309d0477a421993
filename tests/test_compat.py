import warnings

import pytest

from amplify_jax._compat import renamed_function, renamed_params


@renamed_params(rounds="steps")
def _f(*, n, steps):
    return n * steps


def test_renamed_param_warns_and_forwards():
    assert _f(n=2, steps=3) == 6
    with pytest.warns(DeprecationWarning, match="'rounds' is renamed 'steps'"):
        assert _f(n=2, rounds=3) == 6
    with pytest.raises(ValueError, match="steps"):
        _f(n=2, rounds=3, steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _f(n=1, steps=1)  # the new name does not warn


def test_renamed_function_warns():
    old = renamed_function(_f, "old_f")
    with pytest.warns(DeprecationWarning, match="old_f is renamed"):
        assert old(n=1, steps=5) == 5
