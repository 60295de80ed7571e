"""The CUDA paths of chapters 6 and 7, run only where a GPU is present.

Without a GPU every test here is skipped with a reason that says what stays unverified.
On a machine with one, `make test` runs them (and chapter 6's notebook measures CUDA itself).
"""

import pytest
import torch

from autograder.chapters.ch06 import hidden as hidden_ch06
from autograder.corpus import all_variants
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden, plan

reference_ch06 = load_reference("ch06")
reference_ch07 = load_reference("ch07")

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA GPU here: chapter 6's fp16 + GradScaler accumulation on CUDA and chapter 7's "
           "Functions on CUDA stay unverified (run this file on a GPU machine)")

CUDA_CASE = 4  # autograder.chapters.ch06.student: case code 4 is CUDA float16 + GradScaler


def test_hidden_cases_include_the_cuda_step():
    for student in ("alumna", "alumno"):
        shapes = [shape for shape, _ in plan("amp_accumulation_steps", hidden_ch06.HIDDEN, student,
                                             secret="pruebas")]
        assert any(shape[4] == CUDA_CASE for shape in shapes), shapes


@pytest.mark.parametrize("variant", all_variants(["ch06"]), ids=lambda v: v.name)
def test_chapter_6_variants_score_as_labelled_with_the_cuda_case(variant):
    result = grade_hidden(variant.exercise, hidden_ch06.HIDDEN, variant.function, "alumna",
                          secret="pruebas")
    if variant.correct:
        assert result.puntos == result.maximo, result.informe(variant.name)
    else:
        assert result.puntos < result.maximo
        assert result.diagnostico == variant.expected, result.informe(variant.name)


def test_reference_accumulation_on_cuda_float16_skips_an_overflowing_cycle():
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    # 2^40 overflows float16's backward; the backoff brings the scale to 2^8 for cycle 2
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 40, backoff_factor=2.0 ** -32)
    before = [p.detach().clone() for p in model.parameters()]
    batches = [(torch.randn(16, 8, device="cuda"), torch.randn(16, 4, device="cuda"))
               for _ in range(3)]
    losses = reference_ch06.amp_accumulation_steps(model, batches[:2], torch.nn.MSELoss(),
                                                   optimizer, scaler, "cuda", torch.float16,
                                                   2, 1.0)
    assert all(torch.equal(b, p) for b, p in zip(before, model.parameters()))
    assert scaler.get_scale() == 2.0 ** 8 and len(losses) == 1
    reference_ch06.amp_accumulation_steps(model, batches, torch.nn.MSELoss(), optimizer, scaler,
                                          "cuda", torch.float16, 2, 1.0)
    assert not all(torch.equal(b, p) for b, p in zip(before, model.parameters()))
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_chapter_7_functions_pass_gradcheck_on_cuda():
    x = torch.randn(6, 5, dtype=torch.float64, device="cuda", requires_grad=True)
    w = torch.randn(3, 5, dtype=torch.float64, device="cuda", requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(reference_ch07.linear_tanh, (x, w, b))
    assert torch.autograd.gradcheck(lambda t: reference_ch07.stable_softplus(t, 2.0), (x,))


def test_chapter_7_checkpoint_passes_gradcheck_on_cuda():
    from autograder.chapters.ch07.student import bloque_mlp

    def make(*shape):
        return torch.randn(*shape, dtype=torch.float64, device="cuda", requires_grad=True)

    inputs = (make(4, 5), make(3, 5), make(3), make(5, 3))
    assert torch.autograd.gradcheck(
        lambda *t: reference_ch07.checkpoint_apply(bloque_mlp, *t), inputs)
