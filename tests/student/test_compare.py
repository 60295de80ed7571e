"""The side-effect snapshot (``estado``/``cambios``) of the student-side comparisons."""

import torch

from autograder.student.compare import cambios, estado


def _adam_after_one_step():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()  # state mixes 0-dim steps with matrices and vectors
    return model, optimizer


def test_optimizer_state_of_mixed_ranks_is_snapshotted_and_a_step_is_seen():
    model, optimizer = _adam_after_one_step()
    before = estado({"model": model, "optimizer": optimizer})
    assert cambios(before, estado({"model": model, "optimizer": optimizer})) == []
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    changed = cambios(before, estado({"model": model, "optimizer": optimizer}))
    assert "optimizer.state" in changed and "model.0.weight" in changed


def test_a_changed_mode_grad_flag_or_hyperparameter_is_named():
    model, optimizer = _adam_after_one_step()
    before = estado({"model": model, "optimizer": optimizer})
    model[1].eval()
    model[0].bias.requires_grad_(False)
    optimizer.param_groups[0]["lr"] = 0.5
    assert cambios(before, estado({"model": model, "optimizer": optimizer})) == [
        "model.0.bias.requires_grad", "model.1.training", "optimizer.param_groups[0].lr"]
    assert cambios(before, estado({"model": model, "optimizer": optimizer}),
                   permitidos=["model.", "optimizer.param_groups["]) == []
