"""Chapter 1: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "usa_autograd": "Cada gradiente es un producto de matrices, una suma o una máscara: "
                    "escríbelos con `@`, `.sum(dim=0)` y la máscara de la ReLU a partir de "
                    "∂L/∂ŷ, sin activar autograd.",
    "relu_sin_mascara": ("Multiplica ∂L/∂h por la derivada de la ReLU (1 donde "
                         "su entrada es positiva, 0 donde no) antes de seguir hacia ∂L/∂z."),
    "grad_previo_incluido": "Vacía `.grad` (`p.grad = None`) antes del primer `backward()`, o "
                            "usa `torch.autograd.grad`, que no lee ni escribe `.grad`.",
    "perdidas_intercambiadas": "Devuelve primero los gradientes de `F.mse_loss` y después los "
                               "de `F.l1_loss`.",
    "squeeze_en_gradiente": "Quita los `squeeze()`: un gradiente tiene la forma de su tensor.",
    "requires_grad_apagado": "Trabaja sobre `x.detach()`; si cambias `requires_grad`, restaura "
                             "el valor con el que llegó, no uno fijo.",
    "gradientes_sobrescritos": "Guarda `p.grad.clone()` (o usa `torch.autograd.grad`, que "
                               "devuelve tensores nuevos) antes de vaciar `.grad` para la "
                               "segunda pérdida.",
    "modo_cambiado_al_calcular": "No llames a `model.train()` ni a `model.eval()`: calcula con "
                                 "el modelo tal como llega.",
    "modo_no_restaurado": "Si cambias el modo, guarda antes el de cada submódulo "
                          "(`[m.training for m in model.modules()]`) y al terminar devuelve "
                          "a cada uno el suyo; mejor aún, no lo cambies.",
}
