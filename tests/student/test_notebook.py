"""Notebook utilities: what ``medir_guardado`` counts as saved for backward."""

import torch

from autograder.student.notebook import medir_guardado


def test_counts_what_autograd_saves_once_per_storage():
    z = torch.randn(64, 32, requires_grad=True)
    guardado, salida = medir_guardado(lambda: torch.tanh(z))  # tanh saves its output
    assert guardado == salida.numel() * salida.element_size()
    guardado, _ = medir_guardado(lambda: z * z)  # z saved twice, one storage
    assert guardado == z.numel() * z.element_size()


def test_excluded_tensors_and_ops_that_save_nothing_count_zero():
    z = torch.randn(8, 8, requires_grad=True)
    assert medir_guardado(lambda: z * z, excluir=[z])[0] == 0
    assert medir_guardado(lambda: z + 1)[0] == 0


def test_grows_linearly_with_depth():
    x = torch.randn(4, 16)
    pesos = [torch.randn(16, 16, requires_grad=True) for _ in range(3)]

    def pila(profundidad):
        h = x
        for peso in pesos[:profundidad]:
            h = torch.tanh(h @ peso)
        return h

    por_profundidad = [medir_guardado(lambda p=p: pila(p), excluir=[x, *pesos])[0]
                       for p in (1, 2, 3)]
    assert por_profundidad == [4 * 16 * 4 * p for p in (1, 2, 3)]
