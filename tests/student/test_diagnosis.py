"""The diagnosis functions name each classic mistake from its numeric fingerprint."""

import re
import string

import pytest
import torch

from autograder.course import ROOT, chapter_modules, chapters
from autograder.student.diagnosis import (
    copiar_buffers,
    diagnosticar_buffers,
    diagnosticar_lista,
    diagnosticar_parametros,
    diagnosticar_tensor,
    diagnosticar_traza,
)
from autograder.student.messages import CATALOGO, texto

chapter_modules("student")  # every chapter registers its own messages on import
G = torch.Generator().manual_seed(0)
REF = torch.randn(4, 3, generator=G, dtype=torch.float64)
FACTORS = {"sin_dividir_por_accum": 4, "media_solo_sobre_lote": 3, "suma_en_vez_de_media": 8,
           "gradiente_aun_escalado": 65536.0}


def diagnosis_id(obtained, expected=REF, **kwargs):
    found = diagnosticar_tensor("g", obtained, expected, **kwargs)
    return None if found is None else found.id


@pytest.mark.parametrize("factor,expected", [
    (4, "sin_dividir_por_accum"), (1 / 4, "dividido_de_mas_por_accum"), (2, "factor_2"),
    (0.5, "factor_2"), (3, "media_solo_sobre_lote"), (8, "suma_en_vez_de_media"),
    (1 / 8, "media_en_vez_de_suma"), (-1, "signo"), (65536.0, "gradiente_aun_escalado"),
    (7.3, "escala_desconocida"),
])
def test_scale_factors_are_named(factor, expected):
    assert diagnosis_id(REF * factor, factores=FACTORS) == expected


def test_a_correct_result_has_no_diagnosis():
    assert diagnosis_id(REF.clone()) is None
    assert diagnosis_id(REF + 1e-12) is None


def test_shape_transpose_dtype_zeros_and_nonfinite():
    assert diagnosis_id(REF.T.contiguous()) == "forma_transpuesta"
    assert diagnosis_id(REF[:2]) == "forma"
    assert diagnosis_id(REF.float()) == "dtype"
    assert diagnosis_id(torch.zeros_like(REF)) == "ceros"
    assert diagnosis_id(REF * float("nan")) == "no_finito"
    assert diagnosis_id([1.0, 2.0]) == "tipo"


def test_none_says_why():
    leaf = torch.ones(2, requires_grad=True)
    assert diagnosticar_tensor("g", None, REF, origen=leaf * 2).id == "none_no_hoja"
    assert diagnosticar_tensor("g", None, REF, origen=torch.ones(2)).id == "none_sin_requires_grad"
    assert diagnosticar_tensor("g", None, REF, origen=leaf).id == "none_sin_backward"
    assert diagnosticar_tensor("g", None, REF).id == "es_none"


def test_gradient_of_the_wrong_tensor():
    a, b = torch.randn(3, generator=G), torch.randn(3, generator=G)
    assert diagnosticar_lista("grads", [b, a], [a, b]).id == "tensor_equivocado"
    assert diagnosticar_lista("grads", [a], [a, b]).id == "longitud"
    assert diagnosticar_lista("grads", [a, b], [a, b]) is None


def test_unrecognised_mismatch_reports_the_plain_facts():
    found = diagnosticar_tensor("g", REF + torch.randn(4, 3, generator=G, dtype=REF.dtype), REF)
    assert found.id == "no_reconocido"
    for fact in ("max_abs", "max_rel", "razon", "forma", "dtype"):
        assert fact in found.hechos
    assert "razón ajustada" in texto(found.id, found.hechos)


def test_parameters_unchanged_means_no_step():
    before = [torch.ones(2), torch.zeros(3)]
    expected = [torch.full((2,), 0.9), torch.full((3,), -0.1)]
    assert diagnosticar_parametros(before, [t.clone() for t in before], expected).id == "sin_step"
    assert diagnosticar_parametros(before, expected, expected) is None
    doubled = [b + 2 * (e - b) for b, e in zip(before, expected)]
    assert diagnosticar_parametros(before, doubled, expected).id == "factor_2"


STEP = ["optimizer.zero_grad", "backward", "optimizer.step", "scheduler.step"]
AMP = ["scaler.scale", "backward", "scaler.unscale_", "clip_grad_norm_", "scaler.step",
       "scaler.update", "optimizer.zero_grad"]


@pytest.mark.parametrize("trace,expected,diagnosis", [
    (STEP, STEP, None),
    (["optimizer.zero_grad", "backward", "scheduler.step", "optimizer.step"], STEP,
     "scheduler_antes_que_optimizer"),
    (STEP + STEP[-1:], STEP, "scheduler_veces"),
    (["optimizer.zero_grad", "backward"], STEP[:2] + ["optimizer.step"], "sin_step"),
    (["scaler.scale", "backward", "clip_grad_norm_", "scaler.unscale_", "scaler.step",
      "scaler.update", "optimizer.zero_grad"], AMP, "clip_antes_de_unscale"),
    (["backward", "optimizer.step", "backward", "optimizer.step"],
     ["optimizer.zero_grad", "backward", "optimizer.step"] * 2, "zero_grad_ausente"),
    (["backward", "optimizer.zero_grad", "optimizer.step"],
     ["optimizer.zero_grad", "backward", "optimizer.step"], "orden_llamadas"),
])
def test_call_traces(trace, expected, diagnosis):
    found = diagnosticar_traza(trace, expected)
    assert (found.id if found else None) == diagnosis


def test_batchnorm_buffers():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    before = copiar_buffers(model)
    model(torch.randn(8, 3, generator=G))  # a forward in train mode updates running stats
    assert diagnosticar_buffers(before, copiar_buffers(model)).id == "buffers_cambiados"
    model.eval()
    before = copiar_buffers(model)
    model(torch.randn(8, 3, generator=G))
    assert diagnosticar_buffers(before, copiar_buffers(model)) is None


# ------------------------------------------------------------------ the catalogue
def placeholders(template):
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_catalogue_entries_are_complete_in_both_languages():
    for key, (title, es, hint, en) in CATALOGO.items():
        assert title and es and hint and en, key
        assert placeholders(en) <= placeholders(es) | {"razon"}, key


def test_every_diagnosis_the_code_raises_is_in_the_catalogue():
    used = set()
    selected = {c.key for c in chapters()}  # only these registered their messages
    for path in (ROOT / "autograder").rglob("*.py"):
        chapter = next((part for part in path.parts if re.fullmatch(r"ch\d\d", part)), None)
        if chapter is not None and chapter not in selected:
            continue
        source = path.read_text()
        used |= set(re.findall(r'(?:Diagnostico|fallar)\(\s*"([a-z_0-9]+)"', source))
        used |= set(re.findall(r'return "([a-z_]+)"', source)) & set(CATALOGO)
    assert used, "no diagnosis found in the sources"
    assert used <= set(CATALOGO), used - set(CATALOGO)


def example_facts(templates):
    """A value for every placeholder: numbers where the format asks for one."""
    facts = {}
    for template in templates:
        for _, name, spec, _ in string.Formatter().parse(template):
            if name and name not in facts:
                facts[name] = 1.5 if spec and spec[-1] in "gfe%d" else "x"
    return facts


def test_messages_render_with_their_facts():
    facts = {"nombre": "g", "razon": 4.0, "inversa": 4.0, "forma": (2, 3),
             "forma_esperada": (3, 2), "dtype": "float32", "dtype_esperado": "float64",
             "tipo": "list", "esperado": "un tensor", "longitud": 1, "longitud_esperada": 2,
             "otro": "`b`", "llamadas": 2, "veces": 3, "veces_esperadas": 2, "orden": "a → b",
             "orden_esperado": "b → a", "detalle": "Error", "que": "torch.allclose",
             "motivo": "tiempo agotado"}
    for key, entry in CATALOGO.items():
        facts_for_key = {**example_facts(entry), **facts}
        assert texto(key, facts_for_key) and texto(key, facts_for_key, idioma="en")
