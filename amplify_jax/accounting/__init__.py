"""The accounting layer: the privacy accounting every paper's bound rests on (below the registry, above the core).

One home per building block, each citing its paper:

- :mod:`~amplify_jax.accounting.rdp` -- Rényi DP curves (Gaussian, Laplace, randomized response, the
  Poisson-subsampled Gaussian of Mironov, Talwar, Zhang 2019 with ``_subsampled_gaussian``'s fractional
  orders, sampling without replacement of Wang, Balle, Kasiviswanathan 2019), composition, and
  ``rdp.Accountant`` (``_rdp_accountant``, dp_accounting's interface);
- :mod:`~amplify_jax.accounting.conversions` -- RDP <-> (eps, delta) at the optimal order (``_rdp_conversions``);
- :mod:`~amplify_jax.accounting.approx_dp` -- the approximate-DP building blocks (advanced composition, the
  analytic Gaussian, subsampling, the FMT shuffling closed form);
- :mod:`~amplify_jax.accounting.calibrate` -- the inversion layer (``invert_monotone``, compiled and on the host);
- :mod:`~amplify_jax.accounting.accountants` -- the DP-SGD accountants and their calibration;
- :mod:`~amplify_jax.accounting.pld` -- privacy-loss distributions (connect the dots, FFT composition) and
  ``pld.Accountant``;
- :mod:`~amplify_jax.accounting.dp_events` -- the event vocabulary both accountants share;
- ``_bounds`` -- this layer's bounds in the registry (``dpsgd``, ``rdp.*``, ``pld.*``, ...), declared the way
  each paper's package declares its own.

Users import them by the paths they know: ``amplify_jax.rdp``, ``amplify_jax.pld``, ``amplify_jax.conversions``,
... are these modules (see ``amplify_jax.__init__``'s aliases).
"""
