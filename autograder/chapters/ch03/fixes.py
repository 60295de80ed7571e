"""Chapter 3: how to fix each mistake, shown only in the feedback after grading
(see ``autograder/hidden/fixes.py``; never injected into the notebook)."""

ARREGLOS = {
    "grad_previo_sin_borrar": "Empieza con `model.zero_grad()` (u `optimizer.zero_grad()`) "
                              "antes del primer `backward()`.",
    "zero_grad_en_cada_micro_lote": "Pon los gradientes a cero una vez por paso del "
                                    "optimizador, antes del primer micro-lote, fuera del bucle.",
    "grad_borrado_al_final": "Pon `.grad` a cero al empezar, nunca al final.",
    "micro_lotes_incorrectos": "Parte `x` e `y` con `x.chunk(accum)` y `y.chunk(accum)` y haz un "
                               "pase hacia adelante por trozo.",
    "micro_lotes_no_consecutivos": "Usa `x.chunk(accum)` o `x[i * m:(i + 1) * m]`, no "
                                   "`x[i::accum]`.",
    "dividido_por_filas": "Divide la pérdida de cada micro-lote por `accum`.",
    "perdida_sumada_sin_dividir": "Devuelve la suma de las pérdidas ya divididas por `accum` "
                                  "(o la media de las pérdidas sin dividir).",
    "perdida_del_ultimo_micro_lote": "Acumula `loss.item()` de cada micro-lote en el bucle y "
                                     "devuelve su media.",
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
    "paso_sin_gradientes": "El orden es `optimizer.zero_grad()`, `loss.backward()`, recorte, "
                           "`optimizer.step()`.",
    "recorte_fuera_de_sitio": "El orden es `loss.backward()`, "
                              "`clip_grad_norm_(model.parameters(), max_norm)`, "
                              "`optimizer.step()`.",
    "recorte_por_parametro": "Llama una sola vez a "
                             "`torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`.",
    "recorte_por_valor": "Usa `torch.nn.utils.clip_grad_norm_`: reescala todos los gradientes "
                         "por el mismo factor.",
    "recorte_siempre": "El factor es `min(1, max_norm / (norma + 1e-6))`.",
    "recorte_a_otra_norma": "Pasa a `clip_grad_norm_` el `max_norm` que recibe la función.",
    "norma_l1": "La norma total es `torch.sqrt(sum(g.pow(2).sum() for g in grads))`, o lo que "
                "devuelve `clip_grad_norm_`.",
    "devuelve_la_perdida": "Devuelve lo que devuelve `clip_grad_norm_`: la norma total antes "
                           "del recorte.",
    "norma_tras_recorte": "Guarda lo que devuelve `clip_grad_norm_` y devuélvelo.",
}
