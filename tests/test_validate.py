"""Bad input: a ValueError naming the parameter and its value, at the Python boundary."""

import numpy as np
import pytest

import amplify_jax as aj
from amplify_jax.accounting import accountants as A


@pytest.mark.parametrize(
    "call,needle",
    [
        (lambda: aj.rdp.gaussian_rdp([2.0], sigma=0.0), "sigma=0.0"),
        (lambda: aj.rdp.gaussian_rdp([2.0], sigma=-1.0), "sigma=-1.0"),
        (lambda: aj.rdp.gaussian_rdp([0.5], sigma=1.0), "orders=0.5"),
        (lambda: aj.rdp.gaussian_rdp([1.0], sigma=1.0), "orders=1.0"),
        (lambda: aj.rdp.gaussian_rdp([2.0], sigma=np.nan), "sigma=nan"),
        (lambda: aj.rdp.gaussian_rdp([2.0], sigma=np.inf), "sigma=inf"),
        (lambda: aj.rdp.poisson_subsampled_gaussian_rdp([2.0], q=1.5, sigma=1.0), "q=1.5"),
        (lambda: aj.rdp.poisson_subsampled_gaussian_rdp([2.0], q=-0.1, sigma=1.0), "q=-0.1"),
        (lambda: aj.rdp.poisson_subsampled_gaussian_rdp([2.0], q=[0.1, 0.2], sigma=[1.0, 2.0, 3.0]), "broadcast"),
        (lambda: aj.rdp.randomized_response_rdp([2.0], eps0=1.0, k=1), "k=1"),
        (lambda: aj.rdp.randomized_response_rdp([2.0], eps0=1.0, k=2.5), "k=2.5"),
        (lambda: aj.rdp.laplace_rdp([2.0], scale="x"), "scale='x'"),
        (lambda: aj.conversions.epsilon_from_rdp([2.0], [0.1], delta=0.0), "delta=0.0"),
        (lambda: aj.conversions.epsilon_from_rdp([2.0], [0.1], delta=1.0), "delta=1.0"),
        (lambda: aj.conversions.epsilon_from_rdp([2.0], [-0.1], delta=1e-5), "rdp"),
        (lambda: aj.conversions.epsilon_from_rdp([2.0], [0.1], delta=1e-5, method="x"), "method='x'"),
        (lambda: aj.conversions.delta_from_rdp([2.0], [0.1], epsilon=-1.0), "epsilon=-1.0"),
        (lambda: aj.rdp.without_replacement_rdp([[0.1, 0.2]], q=2.0), "q=2.0"),
        (lambda: A.dpsgd_epsilon(sigma=1.0, q=0.1, steps=-1, delta=1e-5), "steps=-1.0"),
        (lambda: A.dpsgd_calibrate_sigma(target_epsilon=0.0, q=0.1, steps=10, delta=1e-5), "target_epsilon=0.0"),
        (lambda: aj.rdp.compose([np.ones(3)], steps=[-2.0]), "steps[0]=-2.0"),
        (lambda: aj.calibrate.invert_monotone(lambda x: x, 1.0, lo=2.0, hi=1.0), "lo < hi"),
    ],
)
def test_value_error_names_parameter(call, needle):
    with pytest.raises(ValueError) as info:
        call()
    msg = str(info.value)
    assert needle in msg, msg
    assert "\n" not in msg
