"""Chapter 3: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "grad_previo_sin_borrar": "Empieza con `optimizer.zero_grad()` antes del primer "
                              "`backward()`.",
    "zero_grad_en_cada_micro_lote": "Pon los gradientes a cero una vez por paso del "
                                    "optimizador, antes del primer micro-lote, fuera del bucle.",
    "ciclo_final_olvidado": "Da también un paso tras el último micro-lote: "
                            "`if (i + 1) % accum == 0 or i + 1 == len(batches):`.",
    "ciclo_final_dividido_por_accum": "En el ciclo final incompleto, divide la pérdida por el "
                                      "número de micro-lotes que tiene de verdad.",
    "micro_lote_mal_pesado": "Calcula el divisor de cada ciclo una vez, con los micro-lotes que "
                             "tiene ese ciclo, y úsalo en todos ellos.",
    "registro_dividido": "Registra la media de las pérdidas sin dividir del ciclo (o la suma de "
                         "las divididas).",
    "numero_de_perdidas": "Añade la pérdida media del ciclo a la lista justo cuando llamas a "
                          "`optimizer.step()`.",
    "pasos_del_optimizador": "Llama a `optimizer.step()` una vez por ciclo de acumulación, "
                             "también en el ciclo final incompleto.",
    "parametros_fuera_del_optimizador": "Deja que solo `optimizer.step()` actualice los "
                                        "parámetros.",
    "paso_sin_gradientes": "Pon los gradientes a cero después de `optimizer.step()` (o antes "
                           "del primer micro-lote del ciclo), nunca entre `backward()` y "
                           "`step()`.",
    "estadisticas_de_batchnorm": "Pasa cada micro-lote por el modelo una sola vez, en su "
                                 "ciclo, sin cambiar el modo de ningún submódulo: la pérdida "
                                 "que registras sale de ese mismo pase.",
    "ciclo_unido": "Haz un `backward()` por micro-lote, cada uno con su propio pase hacia "
                   "adelante: `loss_fn(model(xb), yb) / len(ciclo)`.",
    "entrenado_en_otro_modo": "No llames a `model.train()` ni a `model.eval()`: usa el modelo "
                              "con los modos que trae cada submódulo.",
    "grupo_sin_borrar": "Usa `optimizer.zero_grad()`, que borra los gradientes de todos sus "
                        "grupos.",
    # micro_batch_weights
    "longitud_pesos": "Devuelve `[peso(n) for n in sizes]`: un peso por micro-lote.",
    "pesos_a_escala": "La media del lote entero divide por N = `sum(sizes)`: con "
                      "`reduction=\"mean\"` el peso es `n / sum(sizes)`; con `\"sum\"`, "
                      "`1 / sum(sizes)`.",
    "pesos_sin_tamano": "Con `reduction=\"mean\"`, la pérdida del micro-lote i es "
                        "`suma_i / n_i`; para que aporte `suma_i / N`, su peso es "
                        "`n_i / sum(sizes)`.",
    "tamano_contado_dos_veces": "Con `reduction=\"sum\"`, la pérdida del micro-lote i ya es "
                                "`suma_i`; para que aporte `suma_i / N`, su peso es "
                                "`1 / sum(sizes)`, el mismo para todos.",
    # clip_by_global_norm
    "recorte_por_parametro": "Calcula una sola norma, `sqrt(sum(g.pow(2).sum() for g in "
                             "vivos))`, y multiplica todos los tensores por el mismo factor.",
    "recorte_por_valor": "No uses `clamp`: multiplica cada tensor por "
                         "`min(1, max_norm / (norma + 1e-6))`.",
    "recorte_siempre": "El factor es `min(1, max_norm / (norma + 1e-6))`: nunca mayor que 1.",
    "norma_l1": "La norma total es `torch.sqrt(sum(g.pow(2).sum() for g in vivos))`, no la suma "
                "de los valores absolutos.",
    "norma_suma_de_normas": "Suma los cuadrados de las normas y saca la raíz: "
                            "`torch.linalg.vector_norm(torch.stack([g.norm() for g in vivos]))`.",
    "sin_epsilon": "Usa `max_norm / (norma + 1e-6)`.",
    "norma_tras_recorte": "Calcula la norma antes de multiplicar por el factor y devuelve esa.",
    "generador_agotado": "Convierte `grads` en lista al empezar, `grads = list(grads)`, y "
                         "recorre esa lista las veces que quieras.",
    "nones_perdidos": "Construye el resultado recorriendo `grads` entero: "
                      "`[None if g is None else g * factor for g in grads]`.",
    "none_cambiado": "`[None if g is None else g * factor for g in grads]` deja cada None en su "
                     "sitio.",
    "sin_recortar": "Multiplica cada tensor por `min(1, max_norm / (norma + 1e-6))` antes de "
                    "devolverlo.",
}
