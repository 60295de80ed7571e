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


def test_a_check_that_stumbles_is_not_called_the_students_exception():
    """A check that raises on a result (the grader's slip, or an odd result) says so; an
    exception from student code the check runs (a method of what it returned) stays the
    student's."""
    from autograder.chapters.ch05.student import _lista_de_modulos
    from autograder.student.compare import Caso, Parte, puntuar

    class Programado:
        def step(self):
            raise ValueError("paso del estudiante")

    def usa(caso):
        caso.resultado.step()

    # a chapter's check given a case without the data it reads: its own slip
    [(_, propio)] = puntuar([Parte("examina", 1, _lista_de_modulos)],
                            [Caso(["cuerpo.0"], None, {})]).fallos
    assert propio.diagnostico == "resultado_no_comprobable"
    assert "KeyError" in str(propio) and "lanzó" not in str(propio)
    caso = Caso(Programado(), None, {})
    [(_, ajeno)] = puntuar([Parte("usa", 1, usa)], [caso]).fallos
    assert ajeno.diagnostico == "excepcion" and "paso del estudiante" in str(ajeno)
