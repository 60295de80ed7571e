"""Chapter 2 specifics: what the observations measure and what the hidden cases vary (the
shared contract is in test_contract.py)."""

import torch

from autograder.chapters.ch02 import hidden
from autograder.chapters.ch02 import student as public
from autograder.hidden.reference import load_reference

reference = load_reference("ch02")


def observe_predict(function, seed=0):
    inputs = public.construir_prediccion(torch.Generator().manual_seed(seed), (4, 3, 5, 2))
    return public.observar_prediccion(function, inputs)


def test_predict_observation_counts_what_autograd_saves():
    assert observe_predict(reference.predict)["n_guardados"] == 0
    detached = observe_predict(lambda model, x: torch.softmax(model(x), dim=1).detach())
    assert detached["n_guardados"] > 0 and not detached["salida_con_grafo"]
    tracked = observe_predict(lambda model, x: torch.softmax(model(x), dim=1))
    assert tracked["salida_con_grafo"]


def test_predict_observation_restores_grad_mode():
    def switch_off(model, x):
        torch.set_grad_enabled(False)
        return torch.softmax(model(x), dim=1)

    assert observe_predict(switch_off)["grad_desactivado"]
    assert torch.is_grad_enabled()


def test_expected_names_leave_the_hidden_model_untouched():
    inputs = public.construir_congelar(torch.Generator().manual_seed(1), (3, 4, 2, 2, "mlp"))
    names = hidden._expected_names(inputs["model"])
    assert names == ["head.0.weight", "head.0.bias", "head.2.weight", "head.2.bias"]
    assert all(p.requires_grad for p in inputs["model"].parameters())


def test_hidden_freeze_cases_differ_in_head_and_depth():
    generator = torch.Generator().manual_seed(3)
    (a, _), (b, _) = hidden._freeze_shapes(generator)
    assert a[2] != b[2] and a[4] != b[4]
