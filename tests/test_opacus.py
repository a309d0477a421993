"""amplify_jax.integrations.opacus.RDPAccountant: Opacus's published value, its interface, and (where torch and
Opacus are installed) Opacus itself: its own RDPAccountant on the same history and a PrivacyEngine loop."""

from __future__ import annotations

import numpy as np
import pytest

from amplify_jax.integrations.opacus import RDPAccountant

#: Opacus's default alphas (opacus.accountants.rdp.RDPAccountant.DEFAULT_ALPHAS)
OPACUS_ALPHAS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))


def _run(acc, steps, noise_multiplier=1.5, sample_rate=0.04):
    for _ in range(steps):
        acc.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate)
    return acc


def test_opacus_published_value():
    """Opacus: q = 0.04, sigma = 1.5, 2250 steps, delta = 1e-5 -> 7.32911117143 (public-values.md).  Ours on
    Opacus's alphas is no larger (exact curve, same conversion) and within 0.1%."""
    acc = _run(RDPAccountant(orders=OPACUS_ALPHAS), 2250)
    eps = acc.get_epsilon(1e-5)
    assert 7.32911117143 * (1 - 1e-3) < eps <= 7.32911117143 * (1 + 1e-9)
    assert RDPAccountant().load_state_dict(acc.state_dict()) is None
    assert _run(RDPAccountant(), 2250).get_epsilon(1e-5) <= eps  # the default grid is a superset


def test_interface():
    acc = RDPAccountant()
    assert len(acc) == 0 and acc.get_epsilon(1e-5) == 0.0 and acc.mechanism() == "rdp"
    _run(acc, 3)
    acc.step(noise_multiplier=2.0, sample_rate=0.04)
    _run(acc, 2)
    assert acc.history == [(1.5, 0.04, 3), (2.0, 0.04, 1), (1.5, 0.04, 2)] and len(acc) == 6
    state = acc.state_dict()
    other = RDPAccountant()
    other.load_state_dict(state)
    assert other.history == acc.history and other.get_epsilon(1e-5) == acc.get_epsilon(1e-5)
    eps, order = acc.get_privacy_spent(delta=1e-5)
    assert eps == acc.get_epsilon(1e-5) and order > 1
    with pytest.raises(ValueError, match="mechanism"):
        other.load_state_dict({"history": [], "mechanism": "prv"})
    with pytest.raises(ValueError, match="sample_rate=1.5"):
        acc.step(noise_multiplier=1.0, sample_rate=1.5)
    with pytest.raises(ValueError, match="noise_multiplier=-1"):
        acc.step(noise_multiplier=-1, sample_rate=0.1)


def test_against_opacus_itself():
    pytest.importorskip("torch", reason="torch (CPU) not installed: Opacus itself not compared")
    opacus = pytest.importorskip("opacus", reason="opacus not installed: Opacus itself not compared")
    from opacus.accountants import IAccountant
    from opacus.accountants import RDPAccountant as Theirs

    ours = RDPAccountant(orders=OPACUS_ALPHAS)
    assert isinstance(ours, IAccountant)
    theirs = Theirs()
    for acc in (ours, theirs):
        _run(acc, 500, 1.1, 0.01)
        _run(acc, 100, 2.0, 0.1)
    e_ours, e_theirs = ours.get_epsilon(1e-5), theirs.get_epsilon(1e-5)
    assert e_ours <= e_theirs * (1 + 1e-9) and e_ours >= e_theirs * (1 - 1e-2)
    # the same history; len is the number of steps (IAccountant's doc), Opacus's RDPAccountant counts entries
    assert ours.history == theirs.history and len(ours) == 600 and len(theirs) == 2
    theirs.load_state_dict({**ours.state_dict()})  # the same state format
    assert theirs.get_epsilon(1e-5) == pytest.approx(e_theirs)
    del opacus


def test_privacy_engine_loop():
    """An Opacus training loop with our accountant: PrivacyEngine takes a mechanism name, so ours is set as
    its ``accountant`` before make_private (which attaches the accountant's hook to the optimizer)."""
    torch = pytest.importorskip("torch", reason="torch (CPU) not installed")
    opacus = pytest.importorskip("opacus", reason="opacus not installed")
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    model = torch.nn.Linear(4, 2)
    engine = opacus.PrivacyEngine(accountant="rdp")
    engine.accountant = RDPAccountant()
    model, optim, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=16), noise_multiplier=1.0, max_grad_norm=1.0)
    for x, y in loader:
        optim.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optim.step()
    assert len(engine.accountant) == 4
    assert engine.accountant.history == [(1.0, 0.25, 4)]
    eps = engine.get_epsilon(1e-5)
    ref = opacus.accountants.RDPAccountant()
    ref.history = list(engine.accountant.history)
    assert 0 < eps <= ref.get_epsilon(1e-5) * (1 + 1e-9)
    assert np.isfinite(eps)
