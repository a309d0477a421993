"""Adapters onto other libraries' accountant interfaces; each loads its library only when used.

- :mod:`amplify_jax.integrations.opacus` -- an accountant with Opacus's ``IAccountant`` interface.

dp_accounting needs no adapter: :class:`amplify_jax.rdp.Accountant` is a ``dp_accounting.PrivacyAccountant``.
"""
