"""Chapter 2: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "dimension_suprimida": "Quita el `squeeze()` o el `[0]`: devuelve el tensor con la forma "
                           "que pide el enunciado.",
    "tensor_de_inferencia_guardado": "Calcula la salida del profesor dentro de "
                                     "`with torch.no_grad():` (o haz `target = "
                                     "target.clone()` fuera de `inference_mode`).",
    "perdida_sin_grafo": "Deja dentro de `with torch.no_grad():` solo `teacher(x)` y su "
                         "softmax; calcula `student(x)` y la pérdida fuera del bloque.",
    "alumno_sin_gradiente": "Calcula `student(x)` fuera de cualquier bloque sin grafo y usa "
                            "esa salida en la pérdida.",
    "gradiente_al_profesor": "Calcula el objetivo con `with torch.no_grad(): target = "
                             "F.softmax(teacher(x) / temperature, dim=1)`.",
    "profesor_congelado": "No toques `requires_grad`: envuelve `teacher(x)` en "
                          "`with torch.no_grad():`.",
    "backward_dentro": "Quita el `loss.backward()`: devuelve la pérdida y deja el pase hacia "
                       "atrás a quien llama.",
    "perdida_no_escalar": "Usa `F.kl_div(log_q, p, reduction=\"batchmean\")`, que suma sobre "
                          "las clases y divide por N.",
    "kl_media_por_elemento": "Usa `reduction=\"batchmean\"` en lugar de `\"mean\"`.",
    "kl_suma_del_lote": "Usa `reduction=\"batchmean\"`: divide la suma por N.",
    "sin_temperatura_al_cuadrado": "Multiplica la KL por `temperature ** 2`.",
    "lote_suprimido": "Quita el `squeeze()`: con N = 1 los logits siguen teniendo forma "
                      "(1, K), y `dim=1` es el de las clases.",
    "temperatura_sin_cuadrado": "Multiplica la KL por `temperature ** 2`, no por "
                                "`temperature`.",
    "kl_con_probabilidades": "Pasa `F.log_softmax(student(x) / temperature, dim=1)` como "
                             "primer argumento de `F.kl_div`.",
    "temperatura_solo_alumno": "Divide también los logits del profesor: "
                               "`F.softmax(teacher(x) / temperature, dim=1)`.",
    "kl_invertida": "`F.kl_div(log_q, p)` calcula KL(p ‖ q): el objetivo (el profesor) va "
                    "en el segundo argumento.",
    "prediccion_con_grafo": "Haz el pase hacia adelante dentro de "
                            "`with torch.inference_mode():` (o `with torch.no_grad():`).",
    "salida_sin_modelo": "Calcula los logits con `model(x)` dentro de "
                         "`with torch.inference_mode():` y aplica `torch.softmax(logits, dim=1)`.",
    "tensores_guardados": "Envuelve el pase hacia adelante en `with torch.inference_mode():` (o "
                          "`with torch.no_grad():`).",
    "grafo_construido_y_descartado": "Envuelve el pase hacia adelante en "
                                     "`with torch.inference_mode():` en lugar de hacer "
                                     "`detach()` al final.",
    "grad_desactivado_global": "Usa `with torch.set_grad_enabled(False):` (o el decorador), "
                               "que restaura el modo al salir.",
    "grad_reactivado": "Usa un bloque `with` (o el decorador): al salir devuelve el modo que "
                       "había, sea cual sea.",
    "grafo_construido": "Envuelve el pase hacia adelante en `with torch.inference_mode():`.",
    "softmax_otra_dim": "Normaliza sobre las clases: `dim=1` (o `dim=-1`).",
    "prediccion_sin_softmax": "Aplica `torch.softmax(logits, dim=1)` a la salida del modelo.",
    "cabeza_congelada": "Congela solo los parámetros cuyo nombre no empieza por `head.`.",
    "encoder_sin_congelar": "Llama a `p.requires_grad_(False)` en cada parámetro que no es de "
                            "la cabeza.",
    "congelado_parcial": "Recorre `model.named_parameters()` entero y congela todo lo que no "
                         "empieza por `head.`.",
    "cabeza_sin_descongelar": "Termina con `model.head.requires_grad_(True)`.",
    "ultimo_hijo_como_cabeza": "Usa `model.head` (o los parámetros cuyo nombre empieza por "
                               "`head.`).",
    "grad_borrado": "No toques `p.grad`: cambia solo `requires_grad` (el optimizador ya no "
                    "recibirá los congelados si le pasas solo los entrenables).",
    "nombre_parecido_a_cabeza": "Usa `name.startswith('head.')` (con el punto), o recorre "
                                "`model.head.parameters()`.",
    "parametro_del_modelo_sin_congelar": "Recorre `model.named_parameters()` (o usa "
                                         "`model.requires_grad_(False)` y luego descongela "
                                         "la cabeza).",
}
